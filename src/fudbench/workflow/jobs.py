"""Shared set-up for Snakemake script jobs: logging to the rule's log file and
the thread count. Keeps the scripts in scripts/ thin."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time


def setup_job(smk, name: str | None = None) -> logging.Logger:
    """Log to the rule's log file and stderr; limit math libraries to the job's threads.

    torch is configured only if the job already imported it: jobs that make
    tables and figures never pay its multi-second import.
    FUD_PROFILE_DIR=<folder>: the job's Python profile goes there (profile_job).
    """
    profile_job(smk)
    threads = str(max(1, int(smk.threads)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = threads
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(threads))
    handlers = [logging.StreamHandler(sys.stderr)]
    if smk.log:
        handlers.append(logging.FileHandler(smk.log[0], mode="w"))
    logging.basicConfig(
        level=logging.INFO, handlers=handlers, force=True, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    log = logging.getLogger(name or smk.rule)
    _log_timing(log, smk.log[0] if smk.log else None)
    log_uncaught_exceptions(smk.log[0] if smk.log else None, log.name)
    return log


PROFILE_ENV = "FUD_PROFILE_DIR"


def profile_job(smk) -> str | None:
    """With FUD_PROFILE_DIR=<folder> set (e.g. `FUD_PROFILE_DIR=/tmp/prof ./fud run`): profile the
    job with cProfile from here (its setup_job, after the imports) to its exit and write
    <folder>/<run>.<rule>[_<wildcard values>].prof (read with `python -m pstats FILE`, or
    bench/job_profiles.py for a table of every job). Where the time of a run's script jobs goes, per
    rule and per Python function, without editing a script (issue 47). Returns the file it will
    write; None without the variable, or when another profiler is active in the process."""
    folder = os.environ.get(PROFILE_ENV)
    if not folder:
        return None
    import cProfile
    import re

    if sys.getprofile() is not None:  # someone profiles this process already: leave it to them
        return None
    values = [str(v) for v in dict(getattr(smk, "wildcards", None) or {}).values()]
    config = getattr(smk, "config", None)
    run = config.get("run_name") if isinstance(config, dict) else None
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", "_".join([str(smk.rule), *values]))
    name = f"{run}.{name}" if run else name
    path = os.path.join(folder, f"{name}.prof")
    profiler = cProfile.Profile()

    def dump():
        profiler.disable()
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        profiler.dump_stats(tmp)
        os.replace(tmp, path)

    atexit.register(dump)
    profiler.enable()
    return path


def optional_input(smk, key: str) -> str | None:
    """The path of an optional named input (a rule gives it as a list of none or
    one file), None when the rule gives none. Snakemake hands a one-file entry
    over as the path itself and an empty one as an empty list."""
    value = getattr(smk.input, key, None)
    if isinstance(value, str):
        return value
    return next(iter(value or []), None)


def log_uncaught_exceptions(log_file, name: str = "job") -> None:
    """Make an uncaught exception write its full traceback (chained causes included)
    to the job's log file before the process exits non-zero; Python's own hook
    still prints it to stderr (Snakemake's console). Without this only the console
    shows it, and a cluster job's log ends without saying why."""
    previous = sys.__excepthook__

    def hook(exc_type, exc, tb):
        if log_file and not issubclass(exc_type, KeyboardInterrupt):
            try:
                import traceback

                stamp = time.strftime("%Y-%m-%d %H:%M:%S")
                text = "".join(traceback.format_exception(exc_type, exc, tb))
                with open(log_file, "a") as fh:
                    fh.write(f"{stamp} {name} ERROR: the job failed with an uncaught exception:\n{text}")
            except OSError:
                pass
        previous(exc_type, exc, tb)

    sys.excepthook = hook


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0.0 where unavailable):
    the job's start-up, i.e. the interpreter, Snakemake's script preamble and
    the imports, when called at the first line of work. A job run by the job
    server (fudbench.workflow.prefork) adds its job process's age at the hand-over."""
    from fudbench.workflow import prefork

    return prefork.process_age() + (prefork.HANDED_OVER_AFTER if prefork.IN_CHILD else 0.0)


HEAVY_LIBRARIES = ("torch", "diffusers", "piq", "captum", "pandas", "matplotlib", "skimage", "cv2")


def heavy_libraries() -> str:
    """The heavy libraries this process has imported (what its start-up paid for)."""
    return ", ".join(m for m in HEAVY_LIBRARIES if m in sys.modules) or "none"


_TIMING: dict = {}  # the current job's timing state (one job per process)


def _log_timing(log: logging.Logger, log_file) -> None:
    """One line at the start and one at exit, read by bench/workflow_overhead.py.
    The exit line is appended to the log file directly: at exit, logging's
    handlers may already be closed (and tests call setup_job many times)."""
    log.info("fudbench-timing startup %.3f s (imports: %s)", process_age(), heavy_libraries())
    if not _TIMING:
        atexit.register(_log_work)
    _TIMING.update(name=log.name, log_file=log_file, t0=time.perf_counter())


def _log_work() -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S") + ",%03d" % (time.time() % 1 * 1000)
    line = (
        f"{stamp} {_TIMING['name']} INFO: fudbench-timing work {time.perf_counter() - _TIMING['t0']:.3f} s "
        f"(loaded: {heavy_libraries()})\n"
    )
    if _TIMING["log_file"]:
        try:
            with open(_TIMING["log_file"], "a") as fh:
                fh.write(line)
        except OSError:
            pass
