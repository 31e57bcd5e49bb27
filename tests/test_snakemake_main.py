"""fudbench.workflow.snakemake_main: Snakemake's scheduler with at most one pending
re-evaluation timer (its own starts one per pass, so they pile up with the
finished jobs: docs/performance.md, "Snakemake's own CPU")."""

import threading
import time

from fudbench.workflow.snakemake_main import one_pending_timer, patch_scheduler


class FakeScheduler:
    def __init__(self):
        self._open_jobs = threading.Semaphore(0)


def test_one_timer_is_pending_at_a_time_and_the_loop_is_woken_after_the_delay():
    s = FakeScheduler()
    for _ in range(50):  # fifty passes within one timespan: one wake-up, not fifty
        one_pending_timer(s, 0.2)
    assert s._fud_reevaluation.daemon  # does not hold the process open at exit
    assert not s._open_jobs.acquire(timeout=0.05)
    assert s._open_jobs.acquire(timeout=1.0)
    time.sleep(0.3)
    assert not s._open_jobs.acquire(blocking=False)  # no second wake-up
    one_pending_timer(s, 0.05)  # after it fired, the next pass arms a new one
    assert s._open_jobs.acquire(timeout=1.0)


def test_the_installed_snakemake_gets_the_fix():
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert patch_scheduler()
    assert JobScheduler._schedule_reevalutation is one_pending_timer
