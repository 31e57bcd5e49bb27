"""Snakemake's command line with one fix to its job scheduler:
`python -m fudbench.snakemake_main ARGS` is `python -m snakemake ARGS`
(`./fud run` and `./fud snakemake` start it; docs/performance.md, "Snakemake's
own CPU").

Snakemake 9's scheduler ends every pass of its loop by starting a timer that
wakes the loop again after the job rate limiter's timespan
(`--max-jobs-per-timespan`, default 100/1s). A pass woken by a finished job
starts one more timer, and every timer that fires starts the next, so after
N finished jobs N timers wake the loop every second, each for a full pass
(job selection, input sizes of every ready job). Measured on the meta
profile (2 cores): after 195 finished jobs the Snakemake process used 38% of
a core and held 167 threads, 27 CPU minutes in 80 minutes of run. Here at
most one such timer is pending at a time (and it does not keep the process
alive at exit): the rate limit is still re-checked one timespan after a pass,
which is all the timer is for. Snakemake versions without that method run
unchanged.
"""
from __future__ import annotations

import sys
import threading


def one_pending_timer(scheduler, delay: float) -> None:
    """The scheduler's re-evaluation after `delay` seconds, unless one is already pending."""
    pending = getattr(scheduler, "_fud_reevaluation", None)
    if pending is not None and pending.is_alive():
        return
    timer = threading.Timer(delay, scheduler._open_jobs.release)
    timer.daemon = True
    scheduler._fud_reevaluation = timer
    timer.start()


def patch_scheduler() -> bool:
    """Replace JobScheduler._schedule_reevalutation (sic) by one_pending_timer; False if absent."""
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    if not hasattr(JobScheduler, "_schedule_reevalutation"):
        return False
    JobScheduler._schedule_reevalutation = one_pending_timer
    return True


def main(argv: list[str]) -> None:
    patch_scheduler()
    from snakemake.cli import main as snakemake_main

    sys.argv = ["snakemake", *argv]
    snakemake_main()


if __name__ == "__main__":
    main(sys.argv[1:])
