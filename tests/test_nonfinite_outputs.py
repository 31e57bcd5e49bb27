"""A model that is finite on the clean images but NaN on perturbed ones (standardising each image without
an epsilon: NaN on deletion's all-zero image) no longer makes a metric vanish: the evaluate job counts and
names the images per model x evaluator x curve x explainer, the per-image scores carry n_nonfinite, every
score table keeps the row with the mark 'n/a: N of M non-finite', and evaluation.strict_nonfinite fails
the job. On 13c472e Table 7 and results.csv held Insertion only, with no mark, no log line and rc 0."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.analysis.curves import per_image_scores
from fudbench.core.io import read_parquet, write_npz
from fudbench.report import tables
from fudbench.report.results_page import html_table, summarise
from fudbench.workflow import pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_nonfinite_logits import nan_assets  # noqa: E402, F401  (the fixture: a shard of 4 synthetic images)

N = 4
INSDEL = {"n_steps": 2, "blur_kernel": 3, "blur_sigma": 1.0, "batch_size": 8}
EVALUATION = {"ratios": [0.5, 0.7], "reduction": "abs_sum"}


class PerImageStandardised(torch.nn.Module):
    """Standardises each image by its own mean and SD, without an epsilon: finite on every image with
    some contrast, NaN on a constant one (deletion's last step)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)

    def forward(self, x):
        z = (x - x.mean((1, 2, 3), keepdim=True)) / x.std((1, 2, 3), keepdim=True)
        return self.lin(z.abs().mean((2, 3)))


@pytest.fixture
def shard(tmp_path, monkeypatch, nan_assets):  # noqa: F811 (the fixture imported above)
    shutil.copy(nan_assets / "eval.npz", tmp_path / "eval.npz")  # 4 synthetic 16 px images
    write_npz(
        tmp_path / "attr.npz",
        attributions=np.random.default_rng(0).random((N, 3, 16, 16)).astype(np.float32),
        targets=np.zeros(N, np.int64),
        ids=np.arange(N),
    )
    torch.manual_seed(0)
    model = PerImageStandardised().eval()
    (tmp_path / "model.pt").write_bytes(b"stands in: load_classifier is replaced")
    monkeypatch.setattr("fudbench.models.classifiers.load_classifier", lambda path, device="cpu": model)
    return tmp_path


def _evaluate(shard, evaluation=EVALUATION):
    return pipeline.evaluate_explainers(
        "std",
        "insdel",
        {"ig": (shard / "attr.npz", shard / "rec.parquet", shard / "samples.npz")},
        model_path=shard / "model.pt",
        images_path=shard / "eval.npz",
        shard=0,
        shard_size=N,
        settings=INSDEL,
        evaluation=evaluation,
        assets={},
        seed=0,
        device="cpu",
    )


def test_the_evaluate_job_names_the_non_finite_outputs_and_keeps_the_records(shard, caplog):
    with caplog.at_level(logging.WARNING):
        _evaluate(shard)
    assert (
        f"model std, evaluator insdel, curve deletion, explainer ig: the model's outputs are NaN or inf on the "
        f"perturbed inputs of {N} of {N} images (ids [0, 1, 2, 3]; finite on the clean images); their scores "
        f"are left out of the means and marked in the tables" in caplog.text
    )
    assert "curve insertion" not in caplog.text  # a blurred substrate is never constant
    per_image = per_image_scores(read_parquet(shard / "rec.parquet"))
    deletion = per_image[per_image["curve"] == "deletion"]
    assert deletion["score"].isna().all() and (deletion["n_nonfinite"] == 1).all()  # the kept = 0 step
    assert (per_image.loc[per_image["curve"] == "insertion", "n_nonfinite"] == 0).all()


def test_strict_nonfinite_fails_the_job_naming_them(shard):
    with pytest.raises(pipeline.NonFiniteOutputsError, match=r"(?s)strict_nonfinite.*curve deletion, explainer ig"):
        _evaluate(shard, {**EVALUATION, "strict_nonfinite": True})
    # the records are written (and cached) before it fails: strict_nonfinite: false reads them again
    assert (shard / "rec.parquet").is_file()


def test_every_score_table_keeps_the_metric_with_a_mark(shard):
    _evaluate(shard)
    per_image = per_image_scores(read_parquet(shard / "rec.parquet"))
    summary, tex = tables.table7_scores(per_image, ["std"], ["ig"], 20, 0.95, 0)
    deletion = summary[summary["metric"] == "Deletion"].iloc[0]
    assert deletion["n_images"] == 0 and deletion["n_nonfinite"] == N and np.isnan(deletion["mean"])
    assert f"n/a: {N} of {N} non-finite" in tex
    assert summary.loc[summary["metric"] == "Insertion", "n_nonfinite"].iloc[0] == 0
    # the results page's CSV and table
    evaluators = {"insdel": INSDEL}
    page, _ = summarise(per_image, {"ig": {}}, evaluators, ["std"])
    row = page[page["metric"] == "Deletion"].iloc[0]
    assert row["n_images"] == 0 and row["n_nonfinite"] == N
    assert f"n/a: {N} of {N} non-finite" in html_table(page, "std", ["ig"])


def test_a_partly_non_finite_cell_averages_the_rest_and_says_how_many_were_left_out():
    rng = np.random.default_rng(1)
    per_image = pd.DataFrame(
        {
            "model": "m",
            "explainer": "ig",
            "curve": "insertion",
            "image": np.arange(5),
            "score": np.r_[rng.random(4), np.nan],
            "n_nonfinite": [0, 0, 0, 0, 2],
        }
    )
    summary, tex = tables.table7_scores(per_image, ["m"], ["ig"], 20, 0.95, 0)
    row = summary.iloc[0]
    assert row["n_images"] == 4 and row["n_nonfinite"] == 1
    assert row["mean"] == pytest.approx(per_image["score"][:4].mean())
    assert "(1 of 5 non-finite)" in tex
    # Kendall's tau table: the same rule
    tau = per_image.assign(curve="fud", tau=np.r_[rng.random(4), np.nan], constant=False)
    summary, tex = tables.table4_kendall(tau, ["m"], ["ig"], 20, 0.95, 0)
    assert summary.iloc[0]["n_nonfinite"] == 1 and "(1 of 5 non-finite)" in tex


def test_a_run_without_non_finite_outputs_writes_the_columns_it_always_did():
    per_image = pd.DataFrame(
        {
            "model": "m",
            "explainer": "ig",
            "curve": "insertion",
            "image": np.arange(3),
            "score": [0.1, 0.2, 0.3],
            "n_nonfinite": 0,
        }
    )
    summary, _ = tables.table7_scores(per_image, ["m"], ["ig"], 20, 0.95, 0)
    assert "n_nonfinite" not in summary.columns
    assert list(summary.columns) == list(
        tables.table7_scores(per_image.drop(columns="n_nonfinite"), ["m"], ["ig"], 20, 0.95, 0)[0].columns
    )


def test_the_api_warns_as_the_evaluate_job_does(caplog):
    import fudbench

    x = torch.rand(2, 3, 8, 8)
    with caplog.at_level(logging.WARNING):
        tidy = fudbench.evaluate(
            PerImageStandardised(), x, torch.zeros(2, dtype=torch.long), torch.rand(2, 3, 8, 8), metrics=["insdel"]
        )
    assert "evaluator insdel, curve deletion, explainer" in caplog.text and "of 2 of 2 images" in caplog.text
    assert tidy.loc[tidy["curve"] == "deletion", "score"].isna().all()
