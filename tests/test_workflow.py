"""Workflow tests: lint, the default DAG (per-shard jobs), and the smoke
config end to end in a temporary directory. Snakemake is slow to start here,
so the suite shares one smoke run (conftest.smoke_run)."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from workflow_support import TIMEOUT, job_counts, snakemake
from fudbench.config.files import resolve_config

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
    # one evaluate job per model x evaluator x shard, covering every explainer
    assert counts["evaluate"] == n_models * len(cfg["evaluators"]) * shards
    # R-OMS does not depend on the explainer: once per model x shard
    assert counts.get("srg_reference", 0) == (n_models * shards if "srg" in cfg["evaluators"] else 0)


def test_default_profile_verifies_its_shipped_models(repo, tmp_path):
    """The default run's classifiers and surrogates come from assets/ (issue 25): verified, not trained."""
    import json

    models = ["cnn", "vit"]
    targets = [f"results/synthetic/models/{m}{suffix}_metrics.json" for m in models for suffix in ("", "_surrogate")]
    res = snakemake(
        repo, "--cores", "2", "--configfile", str(repo / "config/config.yaml"), "--directory", str(tmp_path), *targets
    )
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout + res.stderr
    assert "rule verify_classifier" in out and "rule verify_surrogate" in out
    assert "rule train_classifier" not in out and "rule train_surrogate" not in out
    for m in models:
        metrics = json.loads((tmp_path / f"results/synthetic/models/{m}_metrics.json").read_text())
        manifest = json.loads((repo / f"assets/classifier_synthetic_{m}.json").read_text())
        assert metrics["source"] == "shipped" and metrics["sha256"] == manifest["sha256"]
        assert abs(metrics["verified_test_accuracy"] - manifest["metrics"]["test_accuracy"]) <= 1 / 400
        assert (tmp_path / f"results/synthetic/models/{m}.pt").read_bytes() == (
            repo / f"assets/classifier_synthetic_{m}.pt"
        ).read_bytes()


def test_configfiles_merge_in_order_through_fud(repo, tmp_path):
    """Issue 26 case 7: `./fud snakemake --configfile A --configfile B` used to keep only
    B; now the files merge in order (B a partial overlay of the complete smoke config)."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("run_name: merged\ndata: {n_eval: 8, shard_size: 4}\n")
    res = subprocess.run(
        [
            str(repo / "fud"),
            "snakemake",
            "-n",
            "--configfile",
            str(repo / "config/smoke.yaml"),
            "--configfile",
            str(overlay),
            "--directory",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    counts = job_counts(res.stdout)
    assert counts["explain"] == 2 * 3 * 2  # smoke's 2 models x 3 explainers, now in 2 shards of 4
    assert "results/merged/attributions/" in res.stdout and "results/smoke/" not in res.stdout


def test_a_config_without_fud_builds_its_dag(repo, tmp_path):
    """Issue 26 case 8: the smoke config without the evaluator `fud` used to fail
    building the DAG (KeyError: 'fud' in rule plot_fud_diagnostics); now FUD's
    diagnostics, timing and the unused score model are left out."""
    cfg = resolve_config([repo / "config/smoke.yaml"])
    del cfg["evaluators"]["fud"]
    assert cfg["analysis"]["meta_metrics"] is None  # every curve: nothing to take fud out of
    (tmp_path / "nofud.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    res = snakemake(repo, "-n", "--configfile", str(tmp_path / "nofud.yaml"), "--directory", str(tmp_path / "w"))
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    counts = job_counts(res.stdout)
    assert counts["evaluate"] == 2 * (len(cfg["evaluators"])) and counts["table"] > 0 and counts["gallery"] == 1
    left_out = {
        "fud_diagnostics",
        "plot_fud_diagnostics",
        "table5_constraint",
        "fud_timing",
        "table10_timing",
        "train_score_model",
        "check_score_model",
        "plot_score_model_samples",
    }
    assert not left_out & set(counts), counts


def _smoke_counts() -> dict:
    """From the smoke config's specs, so that a new evaluator moves them with it:
    the evaluators whose samples go to the main / appendix OOD and quality
    tables, and the scored curves (per-image and derived) of the report card."""
    from fudbench.analysis.curves import configured_curve_scores
    from fudbench.evaluators import configured_curves
    from fudbench.evaluators.base import APPENDIX_SAMPLES, MAIN_SAMPLES

    evaluators = resolve_config([Path(__file__).resolve().parents[1] / "config/smoke.yaml"])["evaluators"]
    curves = configured_curves(evaluators).values()
    main = {c.samples_label for c in curves if MAIN_SAMPLES in c.samples_tables}
    appendix = {c.samples_label for c in curves if APPENDIX_SAMPLES in c.samples_tables} | {"FUD"}
    # a curve with a per-image score, or a derived score (no score function, but a table: SRG's gains)
    scored = [
        c
        for c in configured_curve_scores(evaluators)
        if configured_curves(evaluators)[c].score is not None or configured_curves(evaluators)[c].table
    ]
    return {"main": len(main), "appendix": len(appendix), "scored": len(scored)}


# smoke config: 2 models, 3 explainers (ig and two degraded copies), the main
# evaluators (+ the appendix ones), 7 quality metrics, 4 OOD metrics, 2 timed step counts.
# table -> expected rows (None: not fixed), all entries finite?
N = _smoke_counts()
SMOKE_TABLES = {
    # (evaluators + the sanity row) x detectors (energy, mahalanobis, knn) x models x OOD metrics (CSV keeps all four)
    "table2_ood": ((N["main"] + 1) * 3 * 2 * 4, True),
    "table8_ood": ((N["main"] + 1) * 3 * 2 * 4, True),
    "table11_ood": ((N["appendix"] + 1) * 3 * 2 * 4, True),  # IDSDS, ROAD, Distill, Gevaert, IROF, FUD + sanity
    "table3_quality": (N["main"] * 7, True),  # evaluators x quality metrics
    "table9_quality": (N["appendix"] * 7, True),
    "table4_kendall": (2 * 2 * 3, True),  # models x evaluators x explainers
    "table5_constraint": (2 * 7, True),  # hard / soft x quality metrics
    "table7_scores": (2 * 3 * 5, True),  # models x explainers x metrics
    "table10_timing": (2, True),  # step counts
    "srg_scores": (2 * 3 * 3, False),  # MRG, LRG, SRG for one imputer; NaN allowed on a 1-epoch model
    "road_scores": (2 * 3 * 4, True),
    "ffidelity_scores": (2 * 3 * 6, True),
    "appendix_scores": (None, False),
    "meta_ground_truth": (None, False),  # Spearman is undefined when a 1-epoch model ties everything
    "metric_agreement": (None, False),
    "report_card": (2 * N["scored"], False),  # models x scored curves of the configured evaluators
    "claims": (None, False),  # claims x models x families the smoke config allows
}


@pytest.mark.parametrize("table", sorted(SMOKE_TABLES))
def test_smoke_tables_exist_and_are_finite(smoke_run, table):
    results, _ = smoke_run
    expected_rows, all_finite = SMOKE_TABLES[table]
    csv = pd.read_csv(results / "tables" / f"{table}.csv")
    assert len(csv) > 0
    if expected_rows is not None:
        assert len(csv) == expected_rows
    if all_finite:
        value = "value" if "value" in csv.columns else "mean"
        assert np.isfinite(csv[value]).all()
    tex = results / "tables" / f"{table}.tex"
    if tex.exists():
        text = tex.read_text()
        assert "\\toprule" in text and "\\bottomrule" in text
        if all_finite:
            assert "nan" not in text.lower()


def test_smoke_outputs_and_kept_samples(smoke_run):
    results, res = smoke_run
    for fig in (
        "confidence_vs_ratio",
        "dataset_examples",
        "score_model_samples",
        "qualitative_samples",
        "fig2_quality_radar",
        "fig3_auroc_by_step",
        "fig4_qualitative",
        "fig5_l2_by_step",
        "fig6_final_l2",
        "metric_agreement",
        "report_card",
    ):
        assert (results / "figures" / f"{fig}.png").stat().st_size > 1000
    # evaluate jobs keep the intermediate images of the first images only (quality: 3, gallery: 2)
    fud = np.load(results / "samples" / "cnn" / "ig" / "fud" / "shard0.npz")
    assert fud["fud"].shape[:2] == (3, 9) and fud["removed_fud"].shape == (9,)
    gallery = np.load(results / "gallery" / "gallery.npz")
    assert gallery["cnn.ig.samples.fud"].shape[:2] == (2, 9)  # gallery_images x ratios
    records = pd.read_parquet(results / "analysis" / "records.parquet")
    assert {"image", "step", "confidence", "seconds", "energy", "l2"} <= set(records.columns)
    assert records["image"].nunique() == 6 and np.isfinite(records["confidence"]).all()
    assert "[gate] classifier cnn: test accuracy" in res.stdout + res.stderr


def test_smoke_report_has_every_table_and_figure(repo, smoke_run, tmp_path):
    """`snakemake --report` (./fud report) on the finished smoke run: one HTML
    file with the tables and figures and their captions."""
    results, _ = smoke_run
    work = results.parent.parent
    report = tmp_path / "report.html"
    res = snakemake(
        repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(work), "--report", str(report)
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    html = report.read_text(errors="replace")
    assert len(html) > 100_000
    for name in (
        "table2_ood.csv",
        "table5_constraint.csv",
        "table10_timing.csv",
        "fig3_auroc_by_step.png",
        "fig4_qualitative.png",
        "meta_ground_truth.csv",
        "report_card.csv",
        "claims.csv",
    ):
        assert name in html, name
