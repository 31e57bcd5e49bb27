"""bench/dag_build_time.py (the paper DAG's build time, formerly a machine-
dependent test assertion) runs and reports what it claims."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import dag_build_time  # noqa: E402


@pytest.mark.workflow
def test_dag_build_time_reports_cpu_wall_and_jobs(tmp_path):
    rows = dag_build_time.main(["--configs", "paper", "--repeats", "1", "--csv", str(tmp_path / "t.csv")])
    assert [r["config"] for r in rows] == ["paper"]
    assert rows[0]["jobs"] > 100 and rows[0]["cpu_s"] > 0 and rows[0]["wall_s"] > 0
    assert (tmp_path / "t.csv").read_text().startswith("config,jobs,repeats,cpu_s,wall_s")
