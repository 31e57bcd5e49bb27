"""Interrupted runs and determinism (docs/reliability.md).

test_killed_run_resumes_to_identical_tables is also the determinism check: the
resumed run remakes the ViT's chain from its attributions on and every job
that reads both models (tables included) from a copy of the session's smoke run
(conftest.smoke_run), so its CSV tables must equal, byte for byte, that run's
on the CPU (tests/test_slurm.py does the same for the CNN's chain). Timing tables are
the documented exception: their wall-time columns are compared by presence
only, every other column byte for byte.
"""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fudbench.report import TIMING_COLUMNS
from workflow_support import remove_recomputed, snakemake, snakemake_command

pytestmark = pytest.mark.workflow


def _load_complete(path: Path) -> None:
    """Read a final output fully; raises if it is truncated or partial."""
    suffix = path.suffix
    if suffix == ".parquet":
        pd.read_parquet(path)
    elif suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            for k in z.files:
                z[k]
    elif suffix == ".csv":
        assert len(pd.read_csv(path).columns) > 0
    elif suffix == ".tex":
        assert "\\bottomrule" in path.read_text()
    elif suffix == ".json":
        json.loads(path.read_text())
    elif suffix == ".jsonl":  # invocations.jsonl: one JSON object per line, each line complete
        lines = path.read_text().splitlines()
        assert lines and all(isinstance(json.loads(line), dict) for line in lines)
    elif suffix == ".rst":  # report/front.rst: the results page's text for the report
        assert path.read_text().strip()
    elif suffix == ".png":
        from PIL import Image

        with Image.open(path) as im:
            im.load()
    elif suffix == ".pdf":
        data = path.read_bytes()
        assert data.startswith(b"%PDF") and b"%%EOF" in data[-1024:]
    elif suffix == ".pt":
        import torch

        torch.load(path, map_location="cpu", weights_only=False)
    elif suffix == ".html":
        assert "</html>" in path.read_text().lower()
    else:
        raise AssertionError(f"{path}: no completeness check for {suffix!r} files; add one to this test")


def _wait_for(condition, proc, log: Path, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc={proc.returncode}) before {what}:\n" + log.read_text()[-4000:])
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _running_outputs(work: Path) -> list[str]:
    """Outputs of the jobs Snakemake has started and not finished: its
    .snakemake/incomplete markers, each named by the url-safe base64 of the
    output path (long names split into '@'-prefixed directories)."""
    root = work / ".snakemake" / "incomplete"
    names = (
        ["".join(part.removeprefix("@") for part in p.relative_to(root).parts) for p in root.rglob("*") if p.is_file()]
        if root.exists()
        else []
    )
    out = []
    for name in names:
        try:
            out.append(base64.urlsafe_b64decode(name).decode())
        except (ValueError, UnicodeDecodeError):
            pass  # not a marker (e.g. Snakemake's migration flag)
    return out


def _freeze_while(proc, found, log: Path, timeout: float, what: str):
    """Stop the run's whole process group (SIGSTOP), look with `found()`, and
    return its non-empty result with the group still stopped; otherwise let
    the run go on (SIGCONT) and look again. While the group is stopped no job
    can finish, so what `found()` saw is still true when the caller kills it,
    however fast the machine."""
    deadline = time.monotonic() + timeout
    while True:
        os.killpg(proc.pid, signal.SIGSTOP)
        seen = found()
        if seen:
            return seen
        os.killpg(proc.pid, signal.SIGCONT)
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc={proc.returncode}) before {what}:\n" + log.read_text()[-4000:])
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _group_gone(pgid: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _upstream_differences(results: Path, reference: Path) -> list[str]:
    """Where two runs first part ways (for the failure message): arrays of the
    data, weights of the models, attributions, records without timings."""
    import torch

    def same_npz(a, b):  # timings (e.g. attributions' seconds_per_image) aside
        with np.load(a) as x, np.load(b) as y:
            return x.files == y.files and all(
                np.array_equal(x[k], y[k], equal_nan=True) for k in x.files if "seconds" not in k
            )

    def same_pt(a, b):
        x, y = (torch.load(f, map_location="cpu", weights_only=False).get("state_dict", {}) for f in (a, b))
        return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)

    def same_parquet(a, b):
        x, y = (pd.read_parquet(f).drop(columns=["seconds"], errors="ignore") for f in (a, b))
        return x.equals(y)

    checks = {
        "data": ("*.npz", same_npz),
        "models": ("*.pt", same_pt),
        "attributions": ("*.npz", same_npz),
        "records": ("*.parquet", same_parquet),
    }
    out = []
    for folder, (pattern, same) in checks.items():
        for a in sorted((results / folder).rglob(pattern)):
            b = reference / a.relative_to(results)
            if b.exists() and not same(a, b):
                out.append(str(a.relative_to(results)))
    return out


# Killed and resumed from the local smoke run's data and trained models on (training is not what is
# killed here: an evaluate job is): the run remakes the ViT's chain and every job that reads both models
# (workflow_support.recomputed; test_slurm remakes the CNN's).
RECOMPUTED_MODEL = "vit"


def test_killed_run_resumes_to_identical_tables(repo, smoke_run, tmp_path):
    import shutil

    reference, _ = smoke_run
    work = tmp_path / "work"
    results = work / "results" / "smoke"
    # cp -a keeps mtimes and Snakemake's metadata: data and models are up to date, the rest is remade
    subprocess.run(["cp", "-a", str(reference.parent.parent), str(work)], check=True)
    remove_recomputed(results, RECOMPUTED_MODEL)
    shutil.rmtree(results / "logs" / "evaluate", ignore_errors=True)  # the wait below looks for a new one
    log = tmp_path / "killed_run.log"
    cmd, env = snakemake_command(
        repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(work), "--cores", "2"
    )
    with open(log, "w") as fh:
        # Own process group: SIGKILL reaches Snakemake and every job it started, like a node failure.
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # An evaluate job has started its work once it opened its log (after its imports) ...
        _wait_for(
            lambda: any((results / "logs" / "evaluate").rglob("*.log")), proc, log, 1500, "an evaluate job started"
        )
        # ... then kill the run at a moment when an evaluate job is running (no race, see _freeze_while).
        running = _freeze_while(
            proc, lambda: [p for p in _running_outputs(work) if "/records/" in p], log, 600, "an evaluate job running"
        )
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert _group_gone(proc.pid), "processes of the killed run survived SIGKILL"
    assert running, "the kill did not interrupt a running job (no .snakemake/incomplete markers)"

    # No file under a final name is partial: atomic writes leave only hidden '.<name>.*.part' temporaries.
    finals = [
        p
        for p in results.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.relative_to(results).parts[0] not in ("logs", "benchmarks")
    ]
    assert finals
    for p in finals:
        _load_complete(p)
    leftovers = [p for p in results.rglob(".*") if p.is_file()]
    assert all(p.name.endswith(".part") for p in leftovers), leftovers

    # Resume: a SIGKILLed Snakemake leaves its lock behind; unlock, then rerun to completion.
    unlock = snakemake(repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(work), "--unlock")
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    res = snakemake(
        repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(work), "--cores", "2", timeout=1800
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
    assert "Nothing to be done" not in res.stdout + res.stderr

    # Determinism: identical CSV tables, byte for byte, to the uninterrupted run.
    ours = sorted(p.name for p in (results / "tables").glob("*.csv"))
    assert ours == sorted(p.name for p in (reference / "tables").glob("*.csv"))
    differ = []
    for name in ours:
        a, b = (results / "tables" / name).read_bytes(), (reference / "tables" / name).read_bytes()
        if name in TIMING_COLUMNS:
            fa, fb = (pd.read_csv(io.BytesIO(x)) for x in (a, b))
            assert list(fa.columns) == list(fb.columns)
            a, b = (f.drop(columns=list(TIMING_COLUMNS[name])).to_csv(index=False).encode() for f in (fa, fb))
        if a != b:
            differ.append(name)
    assert not differ, (
        f"tables differ from the uninterrupted run: {differ}; upstream files that differ: "
        f"{_upstream_differences(results, reference)}"
    )
