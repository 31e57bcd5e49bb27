"""Running Snakemake from tests (each invocation costs seconds of start-up)."""
from __future__ import annotations

import os
import re
import subprocess
import sys


# A smoke run takes ~4 min on an idle 2-core machine and much longer on a shared
# one; FUD_TEST_TIMEOUT overrides the limit (seconds).
TIMEOUT = int(os.environ.get("FUD_TEST_TIMEOUT", 3000))


def snakemake(repo, *args, cwd=None, timeout=TIMEOUT):
    # Snakemake as ./fud starts it (fudbench.snakemake_main: its scheduler's timers do not pile up)
    # (the checkout's src/ first on PYTHONPATH: a test may have set its own for a plug-in module)
    cmd = [sys.executable, "-m", "fudbench.snakemake_main", "-s", str(repo / "Snakefile"), *args]
    path = os.pathsep.join(p for p in (str(repo / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(cmd, cwd=cwd or repo, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": path})


def job_counts(output: str) -> dict[str, int]:
    stats = output[output.index("Job stats:"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)}
