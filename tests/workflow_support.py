"""Running Snakemake from tests (each invocation costs seconds of start-up)."""

from __future__ import annotations

import os
import re
import subprocess
import sys


# A smoke run takes ~4 min on an idle 2-core machine and much longer on a shared
# one; FUD_TEST_TIMEOUT overrides the limit (seconds).
TIMEOUT = int(os.environ.get("FUD_TEST_TIMEOUT", 3000))


def snakemake_command(repo, *args) -> tuple[list[str], dict[str, str]]:
    """(command, environment) of Snakemake as ./fud starts it (fudbench.workflow.snakemake_main: its
    scheduler's timers do not pile up), the checkout's src/ first on PYTHONPATH (a test may have
    set its own for a plug-in module)."""
    cmd = [sys.executable, "-m", "fudbench.workflow.snakemake_main", "-s", str(repo / "Snakefile"), *args]
    path = os.pathsep.join(p for p in (str(repo / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return cmd, {**os.environ, "PYTHONPATH": path}


def snakemake(repo, *args, cwd=None, timeout=TIMEOUT):
    cmd, env = snakemake_command(repo, *args)
    return subprocess.run(cmd, cwd=cwd or repo, capture_output=True, text=True, timeout=timeout, env=env)


def job_counts(output: str) -> dict[str, int]:
    stats = output[output.index("Job stats:") :]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)}


# Folders and files of a smoke run that a rerun test removes from its copy of the local run, so that the
# rerun remakes one model's chain from its attributions on (explain, evaluate, diagnostics) and every job
# that reads both models (OOD scores, quality, Table 10's timing, tables, figures). Data, trained models,
# references and the other model's records stay the local run's: each remade job pays seconds of start-up
# (a SLURM job, Snakemake's too), and the other model's jobs are the same rules. test_slurm remakes the
# CNN's chain and test_resume the ViT's, so between them both models' chains are rerun and compared.
def recomputed(model: str) -> tuple[str, ...]:
    return (
        f"attributions/{model}",
        f"records/{model}",
        f"samples/{model}",
        f"cache/evaluate/{model}",
        f"diagnostics/{model}_*",
        "analysis",
        "tables",
        "figures",
        "gallery",
        "quality",
        "timing",
        "benchmarks",
    )


def remove_recomputed(results, model: str) -> None:
    """Remove recomputed(model) from a copy of a run's results folder."""
    import shutil

    for pattern in recomputed(model):
        for path in results.glob(pattern):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert not list(results.glob(f"records/{model}/**/*.parquet")), f"{model}'s records were not removed"
