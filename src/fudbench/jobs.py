"""Shared set-up for Snakemake script jobs: logging to the rule's log file and
the thread count. Keeps the scripts in scripts/ thin."""
from __future__ import annotations

import logging
import os
import sys


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
    return logging.getLogger(name or smk.rule)
