"""bench/compare_results.py: the check that a refactoring changed no number."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

spec = importlib.util.spec_from_file_location(
    "compare_results", Path(__file__).resolve().parents[1] / "bench/compare_results.py"
)
compare_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_results)


def _run(root: Path, confidence=0.5, seconds=1.0, sample=0.0, rows=("a", "b")):
    (root / "records/m/e/fud").mkdir(parents=True)
    (root / "samples/m/e/fud").mkdir(parents=True)
    (root / "tables").mkdir()
    pd.DataFrame(
        {"curve": "fud", "image": [0, 1], "confidence": [confidence, 0.25], "seconds": [seconds, seconds]}
    ).to_parquet(root / "records/m/e/fud/shard0.parquet")
    np.savez(root / "samples/m/e/fud/shard0.npz", fud=np.full((2, 1), sample, np.float16))
    pd.DataFrame({"row": list(rows), "value": [1.0, 2.0] if rows[0] == "a" else [2.0, 1.0]}).to_csv(
        root / "tables/t.csv", index=False
    )
    return root


def test_identical_runs_ignore_wall_clock_and_row_order(tmp_path, capsys):
    a = _run(tmp_path / "a")
    b = _run(tmp_path / "b", seconds=9.0, rows=("b", "a"))
    assert compare_results.main([str(a), str(b), "--tables"]) == 0
    out = capsys.readouterr().out
    assert "reordered: tables/t.csv" in out and out.strip().endswith("identical")


def test_a_changed_number_or_sample_or_missing_file_is_reported(tmp_path, capsys):
    a = _run(tmp_path / "a")
    assert compare_results.main([str(a), str(_run(tmp_path / "b", confidence=0.5000001))]) == 1
    assert "differs: records/m/e/fud/shard0.parquet" in capsys.readouterr().out
    c = _run(tmp_path / "c", sample=1.0)
    assert compare_results.main([str(a), str(c)]) == 1
    assert "arrays ['fud'] differ" in capsys.readouterr().out
    (c / "records/m/e/fud/shard1.parquet").write_bytes((a / "records/m/e/fud/shard0.parquet").read_bytes())
    assert compare_results.main([str(a), str(c)]) == 1
    assert "only in B: records/m/e/fud/shard1.parquet" in capsys.readouterr().out
