"""Snakemake's command line with one fix to its job scheduler:
`python -m fudbench.workflow.snakemake_main ARGS` is `python -m snakemake ARGS`
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

`./fud report` on a run that is not finished: Snakemake stops at the first file of the
report that is missing ("File ... marked for report but does not exist"). Here the
report's files are checked first (check_report_files), and a missing one stops the
report with an error that lists them and says which command finishes the run (the
`./fud run` command that fudbench.config.files.report_argv passes in FUD_FINISH_COMMAND).
"""

from __future__ import annotations

import itertools
import os
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


FINISH_ENV = "FUD_FINISH_COMMAND"


def missing_report_files(dag) -> list[str]:
    """The files of the report (inputs and outputs of the DAG's jobs flagged `report(...)`)
    that do not exist, each once, in the DAG's order."""
    from snakemake.io import is_flagged

    missing = []
    for job in dag.jobs:
        for f in itertools.chain(job.output, job.input):
            if is_flagged(f, "report") and str(f) not in missing and not os.path.exists(str(f)):
                missing.append(str(f))
    return missing


def unfinished_message(missing: list[str], finish: str | None) -> str:
    listed = "\n  ".join(missing[:20]) + (f"\n  ... ({len(missing) - 20} more)" if len(missing) > 20 else "")
    how = (
        f"finish it with `{finish}` (it reruns only what is missing), then make the report again"
        if finish
        else "finish the run (the same command without --report), then make the report again"
    )
    return (
        f"the run is not finished: {len(missing)} file(s) that the report shows do not exist yet:\n  {listed}\n"
        f"{how}; nothing was written"
    )


def check_report_files() -> bool:
    """Make Snakemake's report refuse an unfinished run with unfinished_message (before it
    writes anything) instead of naming the first missing file; False if this Snakemake has
    no auto_report to wrap."""
    try:
        import snakemake.report as report
    except ImportError:
        return False
    original = getattr(report, "auto_report", None)
    if original is None or getattr(original, "_fud_checked", False):
        return original is not None

    async def auto_report(dag, *args, **kwargs):
        missing = missing_report_files(dag)
        if missing:  # SystemExit: the message alone (a WorkflowError comes with Snakemake's traceback lines)
            print(f"Error: {unfinished_message(missing, os.environ.get(FINISH_ENV))}", file=sys.stderr, flush=True)
            raise SystemExit(1)
        return await original(dag, *args, **kwargs)

    auto_report._fud_checked = True
    report.auto_report = auto_report
    return True


def main(argv: list[str]) -> None:
    patch_scheduler()
    from fudbench.workflow.progress import patch_progress

    patch_progress()  # "N of M steps (x%) done" with the elapsed time and an ETA (fudbench.workflow.progress)
    check_report_files()
    from snakemake.cli import main as snakemake_main

    from fudbench.workflow import prefork

    sys.argv = ["snakemake", *argv]
    if not prefork.wanted(argv):
        snakemake_main()
        return
    with prefork.Server():  # script jobs start as forks of a process with torch & co. imported
        snakemake_main()


if __name__ == "__main__":
    main(sys.argv[1:])
