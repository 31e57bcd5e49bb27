"""Checks made once when a workflow run starts, before any job runs.

The Snakefile calls `check_results_path` at parse time (a results path that
is a file breaks Snakemake's DAG building) and `check_results_writable` from
its `onstart:` handler,
which Snakemake runs only for a real run with jobs to do (never for dry-runs,
--summary or --list-changes), so inspecting a read-only results directory
still works. The check neither creates nor deletes any result file: a failed
preflight leaves everything already computed in place.

`check_free_space` (also from `onstart:`) refuses a run whose results file
system has less free space than the run still needs, a rough estimate from the
config (`estimated_run_mb`) less what the results directory already holds;
FUD_MIN_FREE_MB=N sets the minimum instead (0 turns the check off).
"""

from __future__ import annotations

import math
import os
import shutil
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
        raise PreflightError(
            f"results directory {results_dir} cannot be created: {base} is a file, not a "
            f"directory; move or delete {base}, or choose another config key 'run_name'"
        )


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
    fix = (
        "make it writable (e.g. chmod -R u+w, or remount it read-write), or run elsewhere with "
        "--directory DIR or another config key 'run_name'; nothing was run or deleted"
    )
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


MIN_FREE_ENV = "FUD_MIN_FREE_MB"
BASE_MB = 256  # models, logs, tables, figures, Snakemake's metadata


def estimated_run_mb(config: dict) -> int:
    """A rough size of a complete run's results in MB, from the config: the data
    (uint8 images), the attributions (float32, models x explainers x n_eval) and
    the kept intermediate samples (float16, models x explainers x evaluators x
    kept images x ratios), uncompressed, plus BASE_MB."""
    data, evaluation = config["data"], config["evaluation"]
    source = data["source"]
    side = (data.get(source) or {}).get("image_size" if source == "synthetic" else "crop") or 224
    image = 3 * side * side  # values per image
    n_eval, shard = data["n_eval"], data["shard_size"]
    stored = n_eval  # the evaluated images, and the synthetic benchmark's splits
    if source == "synthetic":
        stored += sum(data["synthetic"].get(k, 0) for k in ("n_train", "n_val", "n_test"))
    per_shard = evaluation["quality"]["images_per_shard"]
    n_shards = -(-n_eval // shard)
    kept = n_eval if per_shard is None else min(n_eval, n_shards * max(per_shard, evaluation["gallery_images"]))
    pairs = len(config["models"]["classifiers"]) * len(config["explainers"])
    total = (
        stored * image
        + pairs * n_eval * image * 4
        + pairs * len(config["evaluators"]) * kept * len(evaluation["ratios"]) * image * 2
    )
    return BASE_MB + int(total / 2**20)


def _size_mb(root: Path) -> float:
    """MB of the files under root (links not followed; a file vanishing meanwhile counts 0)."""
    total = 0
    for d, _, files in os.walk(root):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    return total / 2**20


def check_free_space(results_dir, config: dict, environ=os.environ) -> None:
    """Raise PreflightError if the results directory's file system has less free
    space than the run still needs: FUD_MIN_FREE_MB if set (0: no check), else
    estimated_run_mb(config) less what results_dir already holds (at least BASE_MB)."""
    results_dir = Path(results_dir).absolute()
    setting = environ.get(MIN_FREE_ENV, "").strip()
    if setting:
        try:
            needed = float(setting)
        except ValueError:
            needed = math.nan
        if not math.isfinite(needed) or needed < 0:  # -5 or nan turned the check off silently (`needed <= 0`)
            raise PreflightError(
                f"{MIN_FREE_ENV}={setting!r} is not a number of MB >= 0 (0 turns the free-space check off)"
            ) from None
        how = f"{MIN_FREE_ENV}={setting}"
    else:
        held = _size_mb(results_dir) if results_dir.is_dir() else 0.0
        estimate = estimated_run_mb(config)
        needed = max(BASE_MB, estimate - held)
        how = f"estimated: about {estimate} MB for the whole run, {held:.0f} MB of it already there"
    if needed <= 0:
        return
    free = shutil.disk_usage(_nearest_existing(results_dir)).free / 2**20
    if free < needed:
        raise PreflightError(
            f"only {free:.0f} MB free on the file system of results directory {results_dir}, "
            f"this run needs about {needed:.0f} MB ({how}); free some space, or run elsewhere "
            f"with --directory DIR, or set {MIN_FREE_ENV}=N to require N MB instead (0 turns "
            f"this check off); nothing was run or deleted"
        )


def start_run(results_dir, config: dict, repo, machine: dict | None = None) -> list[str]:
    """The Snakefile's `onstart:` (a real run with jobs to do, before any job): every check above, the
    assets (fudbench.assets.check: missing or wrong checkpoints, unreadable images of data.folder),
    and only then this invocation's line in results/<run>/invocations.jsonl (fudbench.workflow
    .invocations). A refused run leaves no line and, if it had none, no results folder: the asset
    checksums' cache is written into it only once every check passed. Returns the asset notes."""
    from fudbench.assets.check import check_assets
    from fudbench.workflow.invocations import record_invocation

    check_results_writable(results_dir)
    check_free_space(results_dir, config)  # FUD_MIN_FREE_MB=N overrides the estimate (0: off)
    cache = Path(results_dir) / "logs" / "asset_digests.json"
    with tempfile.TemporaryDirectory(prefix="fud-assets-") as scratch:
        work = cache if cache.is_file() else Path(scratch) / cache.name  # a new run's: kept if every check passed
        notes = check_assets(config, repo, cache_file=work)
        record_invocation(results_dir, repo, machine=machine, config=config)
        if work != cache and work.is_file():
            cache.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(work, cache)
    return notes
