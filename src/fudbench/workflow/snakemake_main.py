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

`./fud report` on a run that is out of date (issue 60): a config change since the run
(analysis.bootstrap, evaluation.ratios, plots.dpi ...) leaves every file in place, so the
presence check passes while the tables are the old run's and the captions the new config's.
The report's DAG is the run's own (rule all, or the targets given), and Snakemake has already
decided which of its jobs would run (`dag.needrun_jobs()`, by the run's rerun triggers:
changed params, code, input sets, missing or older files), so asking it costs no second dry
run. A run with jobs to run, or one whose files another Snakemake holds locked (a running
`./fud run`), is refused with its outdated outputs and the `./fud run` command that updates
them; `./fud report --stale` (FUD_REPORT_STALE) writes it anyway with a banner on every page
of report.html: "stale: N outputs out of date" (stale_stylesheet).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import tempfile
import threading
from collections import Counter


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


STALE_ENV = "FUD_REPORT_STALE"  # set by `./fud report --stale`: report an out-of-date run, stamped as such
REPORT_ENV = "FUD_REPORT_COMMAND"  # the ./fud report command given, for the refusal's `--stale` hint
ABOUT_ENV = "FUD_REPORT_ABOUT"  # which run it is (fudbench.workflow.report_run.describe)
LISTED = 20  # outdated outputs named in a refusal; the rest counted

# Snakemake's reasons for running a job (snakemake.jobs.Reason's fields), in words, first match wins.
REASONS = (
    ("params_changed", "params changed"),
    ("code_changed", "code changed"),
    ("input_changed", "input set changed"),
    ("software_stack_changed", "software changed"),
    ("incomplete_output", "incomplete output"),
    ("missing_output", "missing output"),
    ("updated_input", "newer input"),
    ("updated_input_run", "an input is remade"),
    ("forced", "forced"),
)


def why(reason) -> str:
    for field, words in REASONS:
        if getattr(reason, field, None):
            return words
    return "other"


def outdated_outputs(dag) -> tuple[list[str], Counter]:
    """(the outputs of the jobs the DAG would run, each once; how many jobs run for each reason): what
    is out of date in the run the report addresses."""
    outputs, reasons = {}, Counter()
    for job in dag.needrun_jobs():
        if not job.output:  # rule all and other aggregates: no file of their own
            continue
        reasons[why(dag.reason(job))] += 1
        outputs.update(dict.fromkeys(map(str, job.output)))
    # tables and figures first (what the report shows), then the intermediates; sorted (the DAG's set has no order)
    return sorted(outputs, key=lambda f: ("/tables/" not in f and "/figures/" not in f, f)), reasons


def listed(paths: list[str], limit: int = LISTED) -> str:
    more = f"\n  ... ({len(paths) - limit} more)" if len(paths) > limit else ""
    return "\n  ".join(paths[:limit]) + more


def unfinished_message(missing: list[str], finish: str | None) -> str:
    how = (
        f"finish it with `{finish}` (it reruns only what is missing), then make the report again"
        if finish
        else "finish the run (the same command without --report), then make the report again"
    )
    return (
        f"the run is not finished: {len(missing)} file(s) that the report shows do not exist yet:\n  "
        f"{listed(missing)}\n{how}; nothing was written"
    )


def stale_hint() -> str:
    report = os.environ.get(REPORT_ENV)
    how = f"`{report} --stale`" if report else "the same command with --stale"
    return f'or report it as it is with {how} (every page then says "stale: N outputs out of date")'


def outdated_message(outputs: list[str], reasons: Counter, finish: str | None) -> str:
    n_jobs = sum(reasons.values())
    because = ", ".join(f"{words}: {n}" for words, n in reasons.most_common())
    how = f"`{finish}`" if finish else "the same command without --report"
    return (
        f"the run is out of date: {n_jobs} job(s) would run ({because}), so {len(outputs)} output(s) the "
        f"report reads are not those of its config:\n  {listed(outputs)}\nbring it up to date with {how} (it "
        f"reruns only these jobs), then make the report again; {stale_hint()}; nothing was written"
    )


def locked_message(finish: str | None) -> str:
    unlock = f"`{finish} --unlock`" if finish else "the run's command with --unlock"
    return (
        "another Snakemake is running on this run (it holds the lock on its files in .snakemake/locks), "
        "so its files are half updated: make the report when it has finished; if none is running (a run "
        f"killed hard leaves its lock), remove the lock with {unlock}; {stale_hint()}; nothing was written"
    )


def stale_stylesheet(n_outputs: int, given=None) -> str:
    """The report's stylesheet (`given`, the user's --report-stylesheet, kept) with a banner on
    every page of report.html (a single page: the banner is the body's, above every view):
    "stale: N outputs out of date"."""
    own = ""
    if given is not None:
        with open(given, encoding="utf-8") as fh:
            own = fh.read() + "\n"
    text = f"stale: {n_outputs} outputs out of date (./fud run updates them; this report shows the old ones)"
    fd, path = tempfile.mkstemp(prefix="fud-stale-", suffix=".css")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(
            own + 'body::before { content: "' + text + '"; position: fixed; top: 0; left: 0; right: 0; '
            "z-index: 100000; padding: 4px 12px; background: #b00020; color: #fff; font: bold 14px sans-serif; "
            "text-align: center; }\nbody { padding-top: 28px; }\n"
        )
    return path


def refuse(message: str) -> None:
    """Stop the report with `message` alone (a WorkflowError comes with Snakemake's traceback lines),
    after the sentence naming the run (fudbench.workflow.report_run)."""
    about = os.environ.get(ABOUT_ENV)
    print(f"{about}\n" if about else "", f"Error: {message}", sep="", file=sys.stderr, flush=True)
    raise SystemExit(1)


def check_report_files() -> bool:
    """Make Snakemake's report refuse an unfinished run with unfinished_message (before it
    writes anything) instead of naming the first missing file, a run another Snakemake holds
    locked or one with jobs to run (outdated_message); with STALE_ENV those two are written,
    stamped (stale_stylesheet). False if this Snakemake has no auto_report to wrap."""
    try:
        import snakemake.report as report
    except ImportError:
        return False
    original = getattr(report, "auto_report", None)
    if original is None or getattr(original, "_fud_checked", False):
        return original is not None

    async def auto_report(dag, report_plugin, report_settings, *args, **kwargs):
        finish, stale = os.environ.get(FINISH_ENV), bool(os.environ.get(STALE_ENV))
        persistence = getattr(dag.workflow, "persistence", None)
        locked = bool(persistence is not None and persistence.locked)
        if locked and not stale:
            refuse(locked_message(finish))
        missing = missing_report_files(dag)
        if missing:
            refuse(unfinished_message(missing, finish))
        outputs, reasons = outdated_outputs(dag)
        if outputs and not stale:
            refuse(outdated_message(outputs, reasons, finish))
        stamp = None
        if outputs or locked:
            field = "stylesheet_path"
            if not hasattr(report_settings, field):
                refuse("this Snakemake's report takes no stylesheet, so a stale report cannot be stamped")
            stamp = stale_stylesheet(len(outputs), getattr(report_settings, field))
            report_settings = dataclasses.replace(report_settings, **{field: stamp})
            print(
                f"note: the report is stale ({len(outputs)} outputs out of date"
                f"{', a workflow holds the lock' if locked else ''}); every page says so",
                file=sys.stderr,
                flush=True,
            )
        try:
            written = await original(dag, report_plugin, report_settings, *args, **kwargs)
        finally:
            if stamp:
                os.unlink(stamp)
        if os.environ.get(ABOUT_ENV):  # which run this was, last (Snakemake's lines bury the first telling)
            print(os.environ[ABOUT_ENV], file=sys.stderr, flush=True)
        return written

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
