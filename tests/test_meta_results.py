"""studies/meta_profile_runs/results: the committed verdict of the meta profile
(tools/export_meta_results.py). With FUD_META_RESULTS=<a finished meta run of
the same commit on the same kind of CPU> its CSVs must equal the run's (but
for the timing columns, fudbench.report.TIMING_COLUMNS; a run of another CPU
kind, by its run_info.json, is skipped: issue 56); without it only the export
tool is checked."""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from export_meta_results import TABLES, exported_files, main  # noqa: E402


def test_export_refuses_an_unfinished_run_and_copies_a_finished_one(tmp_path):
    results = tmp_path / "results"
    with pytest.raises(FileNotFoundError, match="not a finished meta run"):
        exported_files(results)
    (results / "tables").mkdir(parents=True)
    (results / "figures").mkdir()
    for stem in TABLES:
        (results / "tables" / f"{stem}.csv").write_text("a,b\n1,2\n")
        (results / "tables" / f"{stem}.tex").write_text("x")
    (results / "figures" / "report_card.png").write_bytes(b"png")
    (results / "run_info.json").write_text('{"commit": "abc1234", "cpu_model": "AMD EPYC", "cores": 2}')
    assert main([str(results), str(tmp_path / "out"), "--command", "./fud run", "--wall", "1 h"]) == 0
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "abc1234" in readme and "AMD EPYC" in readme and "1 h" in readme
    assert (tmp_path / "out" / "claims.csv").read_text() == "a,b\n1,2\n"


# What makes two runs' numbers bit for bit the same (fudbench.core.hardware.run_info's fields).
CPU_KIND = (
    "cpu_model",
    "cpu_flags",
    "aten_cpu_capability",
    "onednn_max_cpu_isa",
    "fud_precision",
    "torch",
    "torch_threads",
    "device",
)


@pytest.mark.numerics
def test_committed_verdict_equals_a_run_of_its_commit():
    where = os.environ.get("FUD_META_RESULTS")
    committed = REPO / "studies" / "meta_profile_runs" / "results"
    if not where:
        pytest.skip(
            "FUD_META_RESULTS is not set: point it at a finished meta run of the commit in "
            "studies/meta_profile_runs/README.md"
        )
    if not committed.is_dir():
        pytest.skip("studies/meta_profile_runs/results has not been exported yet")
    import json

    import pandas as pd

    from fudbench.report import TIMING_COLUMNS

    # Bit for bit only on the CPU kind that made the verdict: another kind's kernels round in other places
    # (batch-size-dependent oneDNN kernels on an Intel Xeon, bf16 on AMX vs AVX512-BF16, AVX2 vs AVX-512),
    # which moves the cells in the last digits and can flip a near-tie of a ranking (a verdict); no
    # tolerance for that has been measured (tests/test_default_run.py's MEASURED is for the default run).
    info = Path(where) / "run_info.json"
    if not info.is_file():
        pytest.skip(f"FUD_META_RESULTS={where}: no run_info.json, so the run's CPU kind is unknown")
    ran_kind, kept_kind = (json.loads(p.read_text()) for p in (info, committed / "run_info.json"))
    other = [
        f"{k}: {ran_kind.get(k)!r} here, {kept_kind.get(k)!r} committed"
        for k in CPU_KIND
        if ran_kind.get(k) != kept_kind.get(k)
    ]
    if other:
        pytest.skip(
            "the run is of another CPU kind than the committed verdict's (" + "; ".join(other) + "): "
            "its tables are not expected to match bit for bit"
        )
    for stem in TABLES:
        timing = list(TIMING_COLUMNS.get(f"{stem}.csv", ()))  # seconds per image: the machine's, not the run's
        ran, kept = (pd.read_csv(d / f"{stem}.csv").drop(columns=timing) for d in (Path(where) / "tables", committed))
        pd.testing.assert_frame_equal(ran, kept, check_exact=True, obj=stem)


def test_exports_under_docs_results_are_not_ignored_by_git():
    """The workflow's results/ folder is ignored, the studies' results/ must not be: an
    earlier `results/` pattern also ignored docs/results/meta (now in studies/), so its export
    was never committed."""
    import subprocess

    if subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    ignored = subprocess.run(
        ["git", "-C", str(REPO), "check-ignore", "-q", "studies/meta_profile_runs/results/claims.csv"]
    )
    assert ignored.returncode == 1, "studies/*/results/ is ignored by .gitignore"
    root = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "results/synthetic/tables/x.csv"])
    assert root.returncode == 0, "the workflow's results/ should stay ignored"
