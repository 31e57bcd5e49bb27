"""Workflow tests: lint, the default DAG (per-shard jobs), and the smoke
config end to end in a temporary directory. Snakemake is slow to start here,
so the suite shares one smoke run (conftest.smoke_run)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from workflow_support import job_counts, snakemake

pytestmark = pytest.mark.workflow


def test_lint_is_clean(repo):
    res = snakemake(repo, "--lint")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Congratulations, your workflow is in a good condition" in res.stdout + res.stderr


def test_default_dag_has_per_shard_jobs(repo, tmp_path):
    cfg = yaml.safe_load((repo / "config/config.yaml").read_text())
    res = snakemake(repo, "-n", "--configfile", str(repo / "config/config.yaml"), "--directory", str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    counts = job_counts(res.stdout)
    shards = math.ceil(cfg["data"]["n_eval"] / cfg["data"]["shard_size"])
    n_models, n_explainers = len(cfg["models"]["classifiers"]), len(cfg["explainers"])
    assert shards < cfg["data"]["n_eval"]  # shards, not images
    assert counts["explain"] == n_models * n_explainers * shards
    assert counts["evaluate"] == n_models * n_explainers * len(cfg["evaluators"]) * shards


@pytest.mark.parametrize("table", ["table4_kendall", "table7_scores", "table2_ood", "table3_quality"])
def test_smoke_tables_exist_and_are_finite(smoke_run, table):
    results, _ = smoke_run
    csv = pd.read_csv(results / "tables" / f"{table}.csv")
    assert len(csv) > 0
    value = "value" if table == "table2_ood" else "mean"
    assert np.isfinite(csv[value]).all()
    tex = (results / "tables" / f"{table}.tex").read_text()
    assert "\\toprule" in tex and "\\bottomrule" in tex
    assert "nan" not in tex.lower()
    # models x evaluators x explainers; models x explainers x metrics; evaluators x models x OOD metrics
    expected_rows = {"table4_kendall": 2 * 2 * 2, "table7_scores": 2 * 2 * 5, "table2_ood": 4 * 2 * 4,
                     "table3_quality": 4 * 7}[table]  # ... evaluators x quality metrics
    assert len(csv) == expected_rows


def test_smoke_outputs_and_temp_samples(smoke_run):
    results, res = smoke_run
    for fig in ("confidence_vs_ratio", "dataset_examples", "score_model_samples", "qualitative_samples",
                "fig2_quality_radar"):
        assert (results / "figures" / f"{fig}.png").stat().st_size > 1000
    assert not list((results / "samples").rglob("*.npz")), "intermediate images must be temp()"
    gallery = np.load(results / "gallery" / "gallery.npz")
    assert gallery["cnn__ig__fud"].shape[:2] == (2, 9)  # gallery_images x ratios
    records = pd.read_parquet(results / "analysis" / "records.parquet")
    assert {"image", "step", "confidence", "seconds", "energy", "l2"} <= set(records.columns)
    assert records["image"].nunique() == 6 and np.isfinite(records["confidence"]).all()
    assert "[gate] classifier cnn: test accuracy" in res.stdout + res.stderr
