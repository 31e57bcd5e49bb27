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
    """
    threads = str(max(1, int(smk.threads)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = threads
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(threads))
    handlers = [logging.StreamHandler(sys.stderr)]
    if smk.log:
        handlers.append(logging.FileHandler(smk.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    log = logging.getLogger(name or smk.rule)
    _log_timing(log)
    return log


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0.0 where unavailable):
    the job's start-up, i.e. the interpreter, Snakemake's script preamble and
    the imports, when called at the first line of work."""
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _log_timing(log: logging.Logger) -> None:
    """One line at the start and one at exit, read by bench/workflow_overhead.py."""
    startup, t0 = process_age(), time.perf_counter()
    log.info("fudbench-timing startup %.3f s (imports: %s)", startup,
             ", ".join(m for m in ("torch", "diffusers", "piq", "captum", "pandas", "matplotlib")
                       if m in sys.modules))
    atexit.register(lambda: log.info("fudbench-timing work %.3f s", time.perf_counter() - t0))
