"""Shared set-up for Snakemake script jobs: logging to the rule's log file,
thread count, device. Keeps the scripts in scripts/ thin."""
from __future__ import annotations

import logging
import sys


def setup_job(smk, name: str | None = None) -> logging.Logger:
    """Log to the rule's log file and stderr; limit torch to the job's threads."""
    import torch

    handlers = [logging.StreamHandler(sys.stderr)]
    if smk.log:
        handlers.append(logging.FileHandler(smk.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    torch.set_num_threads(max(1, int(smk.threads)))
    return logging.getLogger(name or smk.rule)
