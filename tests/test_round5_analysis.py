"""Round five's registered pass rules (studies/round5/round5_analysis.py) on made-up recoveries: a pair
decided on the deciding model (vit) passes only with the same sign in the replication and under opposing
scatter, a FUD pair is "fill-dependent" when the cue-naive fill reverses it, and cnn (reported beside)
decides nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies" / "round5"))
import round5_analysis as r5  # noqa: E402


def made_up(flip: dict | None = None, n: int = 48, seed: int = 0, flip_models=("vit", "vit_seed1")) -> pd.DataFrame:
    """Recoveries where fud beats deletion by 0.4 everywhere, except the (run, family) cells in `flip`."""
    rng = np.random.default_rng(seed)
    flip = flip or {}
    rows = []
    cells = [("primary", m, f) for m in r5.PRIMARY_MODELS for f in r5.ARMS]
    cells += [("replication", m, "oracle_graded") for m in r5.REPLICATION_MODELS]
    cells += [("naive", m, "oracle_graded") for m in r5.PRIMARY_MODELS]
    for run, model, family in cells:
        gap = -0.4 if (run, family) in flip and model in flip_models else 0.4
        for image in range(n):
            base = rng.uniform(0.2, 0.5)
            rows.append(
                {
                    "run": run,
                    "model": model,
                    "family": family,
                    "curve": "fud",
                    "image": image,
                    "r": base + gap + rng.normal(0, 0.1),
                }
            )
            rows.append({"run": run, "model": model, "family": family, "curve": "deletion", "image": image, "r": base})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "flip, verdict",
    [
        ({}, "fud over deletion"),
        ({("naive", "oracle_graded"): 1}, "fill-dependent: fud over deletion"),
        ({("replication", "oracle_graded"): 1}, "fails: replication"),
        ({("primary", "oracle_graded_opposing"): 1}, "fails: opposing scatter"),
    ],
)
def test_the_pass_rules(flip, verdict):
    pairs = r5.pairs_table(made_up(flip))
    assert (pairs.groupby(["run", "model", "family"]).size() == 1).all()  # one pair: Holm over one
    assert r5.verdicts(pairs)["verdict"].tolist() == [verdict]


def test_the_reported_models_decide_nothing():
    """cnn and cnn_seed1 reversed everywhere: the verdict is vit's alone."""
    rec = made_up(
        {("primary", f): 1 for f in r5.ARMS} | {("replication", "oracle_graded"): 1}, flip_models=("cnn", "cnn_seed1")
    )
    assert r5.verdicts(r5.pairs_table(rec))["verdict"].tolist() == ["fud over deletion"]


def test_an_undecided_pair_is_undecided():
    rec = made_up()
    rec.loc[rec["curve"] == "fud", "r"] = rec.loc[rec["curve"] == "deletion", "r"].to_numpy()
    assert r5.verdicts(r5.pairs_table(rec))["verdict"].tolist() == ["undecided"]


def test_the_naive_run_borrows_the_fill_independent_curves_of_the_primary_on_its_images():
    """The cue-naive run has FUD only: deletion's recoveries come from the primary on the same images, so
    the pair is decided, not "fill-dependent" for want of a cell."""
    rec = made_up()
    rec = rec[~((rec["run"] == "naive") & (rec["curve"] == "deletion"))].assign(fill="cue")
    rec = rec[~((rec["run"] == "naive") & (rec["image"] >= 24))]  # the naive run's images: the first 24
    out = r5.with_fill_independent_curves(rec)
    naive = out[out["run"] == "naive"]
    assert set(naive["curve"]) == {"fud", "deletion"} and naive["image"].max() == 23
    assert r5.verdicts(r5.pairs_table(out))["verdict"].tolist() == ["fud over deletion"]


def test_a_zero_that_rounding_makes_negative_has_no_sign():
    """The review's finding 1: differences summing to 0 gave a mean of -1.7e-18, read as a sign."""
    assert r5.sign_of(-1.7347e-18) == 0.0 and r5.sign_of(0.003) == 1.0 and r5.sign_of(-0.003) == -1.0
    rec = made_up()
    rep = (rec["run"] == "replication") & (rec["curve"] == "fud")
    rec.loc[rep, "r"] = rec.loc[(rec["run"] == "replication") & (rec["curve"] == "deletion"), "r"].to_numpy()
    assert r5.verdicts(r5.pairs_table(rec))["verdict"].tolist() == ["fails: replication"]
