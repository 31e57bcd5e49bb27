"""Checks made once when a workflow run starts, before any job runs.

The Snakefile calls `check_results_path` at parse time (a results path that
is a file breaks Snakemake's DAG building) and `check_results_writable` from
its `onstart:` handler,
which Snakemake runs only for a real run with jobs to do (never for dry-runs,
--summary or --list-changes), so inspecting a read-only results directory
still works. The check neither creates nor deletes any result file: a failed
preflight leaves everything already computed in place.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


class PreflightError(RuntimeError):
    """The run cannot succeed; the message names the path and what to do."""


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _unwritable_dirs(root: Path, limit: int = 5) -> list[Path]:
    """Existing directories under root (root included) where a job could not
    create its outputs; os.access also reports read-only mounts for root."""
    found = []
    for d, _, _ in os.walk(root):
        if not os.access(d, os.W_OK | os.X_OK):
            found.append(Path(d))
            if len(found) >= limit:
                break
    return found


def check_results_path(results_dir) -> None:
    """At parse time (dry-runs included; writes nothing): the results directory,
    or its nearest existing parent, must be a directory. Snakemake would
    otherwise fail while building the DAG with a NotADirectoryError traceback."""
    results_dir = Path(results_dir).absolute()
    base = _nearest_existing(results_dir)
    if not base.is_dir():
        raise PreflightError(f"results directory {results_dir} cannot be created: {base} is a file, not a "
                             f"directory; move or delete {base}, or choose another config key 'run_name'")


def check_results_writable(results_dir) -> None:
    """Raise PreflightError unless jobs can write under `results_dir`.

    A missing directory is fine if its nearest existing parent is a writable
    directory (Snakemake creates it). Existing sub-directories are checked
    too, since a job writes into them and Snakemake removes stale outputs
    there before rerunning a job.
    """
    check_results_path(results_dir)
    results_dir = Path(results_dir).absolute()
    base = _nearest_existing(results_dir)
    fix = ("make it writable (e.g. chmod -R u+w, or remount it read-write), or run elsewhere with "
           "--directory DIR or another config key 'run_name'; nothing was run or deleted")
    bad = _unwritable_dirs(base) if base == results_dir else ([] if os.access(base, os.W_OK | os.X_OK) else [base])
    if not bad:
        # Permission bits can lie (ACLs, network file systems): try a real write.
        try:
            fd, probe = tempfile.mkstemp(prefix=".fud-preflight.", dir=base)
            os.close(fd)
            os.unlink(probe)
        except OSError:
            bad = [base]
    if bad:
        listed = ", ".join(str(d) for d in bad)
        raise PreflightError(f"results directory {results_dir} is not writable (read-only: {listed}); {fix}")
