"""Scatter claims (fudbench.meta.claims, "<metric> is scatter-neutral"): a
simulated metric that reacts only to spatial scatter is flagged by the scatter
pairs and does not recover a scatter-matched (translate) family, although it
"recovers" the pixel-shuffle family, whose scatter grows with p; a metric that
reads only the information in a map is scatter-neutral and recovers both.

Per-image frames: each explainer has an `information` (what its map says
about the model) and a `scatter` (how spread its top set is). The pixel
shuffle raises scatter and lowers information together; the translate family
keeps scatter fixed and lowers information; the scatter pairs keep
information fixed and change scatter only."""

import numpy as np
import pandas as pd
import pytest

from fudbench.meta.claims import decide_claims
from fudbench.meta.families import scatter_pairs

EXPLAINERS = {
    "random": {},
    "random_smooth": {"method": "random_smooth", "sigma": 2.0},
    "background": {},
    "oracle": {},
    "oracle_compact": {"method": "reorder", "base": "oracle", "order": "compact"},
    "oracle_scattered": {"method": "reorder", "base": "oracle", "order": "scattered"},
    **{
        f"oracle_d{int(p * 100):02d}": {"method": "degrade", "base": "oracle", "fraction": p}
        for p in (0.0, 0.2, 0.4, 0.6, 0.8)
    },
    **{f"oracle_t{d}": {"method": "translate", "base": "oracle", "shift": d} for d in (0, 2, 4, 6, 8)},
}
# explainer -> (information, scatter)
TRUTH = {
    "random": (0.0, 1.0),
    "random_smooth": (0.0, 0.2),
    "background": (-1.0, 0.2),
    "oracle": (1.0, 0.2),
    "oracle_compact": (1.0, 0.1),
    "oracle_scattered": (1.0, 0.9),
    **{f"oracle_d{int(p * 100):02d}": (1.0 - p, 0.2 + p) for p in (0.0, 0.2, 0.4, 0.6, 0.8)},
    **{f"oracle_t{d}": (1.0 - d / 10, 0.2) for d in (0, 2, 4, 6, 8)},
}
CURVES = {"scatter_only": ("Scatter only", True, "auc"), "faithful": ("Faithful", True, "auc")}
RANGES = {"scatter_only": (0.0, 1.0), "faithful": (0.0, 1.0)}


def _per_image(n_images, seed=0, noise=0.02):
    """scatter_only = 0.9 - 0.8 x scatter; faithful = 0.5 + 0.4 x information (both + noise, in [0, 1])."""
    rng = np.random.default_rng(seed)
    rows = []
    for image in range(n_images):
        for explainer, (information, scatter) in TRUTH.items():
            scores = {"scatter_only": 0.9 - 0.8 * scatter, "faithful": 0.5 + 0.4 * information}
            rows += [
                {
                    "model": "cnn",
                    "explainer": explainer,
                    "curve": c,
                    "image": image,
                    "score": float(np.clip(v + rng.normal(0, noise), 0, 1)),
                }
                for c, v in scores.items()
            ]
    return pd.DataFrame(rows)


def test_scatter_pairs_of_the_config():
    assert scatter_pairs(EXPLAINERS) == {
        "random": ("random_smooth", "random"),
        "oracle": ("oracle_compact", "oracle_scattered"),
    }


@pytest.fixture(scope="module")
def claims():
    return decide_claims(_per_image(64), EXPLAINERS, CURVES, n_boot=50, value_ranges=RANGES).set_index(
        ["claim", "family"]
    )


def test_a_scatter_only_metric_is_flagged_and_does_not_recover_the_translate_family(claims):
    for pair in ("random", "oracle"):
        row = claims.loc[("Scatter only is scatter-neutral", f"scatter:{pair}")]
        assert row["verdict"] == "fails (favours compact)" and row["p_holm"] < 0.05 and row["estimate"] > 0
        assert row["holm_m"] == 2 and row["bounds_from"] == "metric range"
    shifted = claims.loc[("Scatter only recovers the family", "oracle_shifted")]
    assert abs(shifted["estimate"]) < 0.2 and shifted["verdict"].startswith("undecided")
    # the pixel shuffle confounds scatter with information: a scatter-only metric "recovers" it
    assert claims.loc[("Scatter only recovers the family", "oracle"), "verdict"] == "holds"


def test_a_faithful_metric_is_scatter_neutral_and_recovers_both_families(claims):
    for pair in ("random", "oracle"):
        row = claims.loc[("Faithful is scatter-neutral", f"scatter:{pair}")]
        # contrast: the smallest information signal, the oracle family's best minus worst member (1 vs 0.2:
        # 0.32; oracle minus random is 0.4); the simultaneous interval within +-0.032
        assert row["contrast"] == pytest.approx(0.32, abs=0.03)
        assert row["verdict"] == "holds", row[["estimate", "sim_low", "sim_high", "p_holm"]].to_dict()
        assert -row["contrast"] / 10 <= row["sim_low"] and row["sim_high"] <= row["contrast"] / 10
    for family in ("oracle", "oracle_shifted"):
        assert claims.loc[("Faithful recovers the family", family), "verdict"] == "holds"


def test_scatter_claims_undecided_with_few_images_and_favours_scattered():
    """At 8 images the pseudo-observations at the metric's bounds (+-1) keep the
    interval wider than +-10% of the contrast: neither neutral nor flagged
    unless the reaction is large; a metric that prefers scattered maps is
    flagged the other way."""
    per_image = _per_image(8, seed=1)
    flipped = per_image[per_image["curve"] == "scatter_only"].assign(
        curve="prefers_scatter", score=lambda d: 1 - d["score"]
    )
    curves = {**CURVES, "prefers_scatter": ("Prefers scatter", True, "auc")}
    claims = decide_claims(
        pd.concat([per_image, flipped]),
        EXPLAINERS,
        curves,
        n_boot=50,
        value_ranges={**RANGES, "prefers_scatter": (0, 1)},
    ).set_index(["claim", "family"])
    assert claims.loc[("Faithful is scatter-neutral", "scatter:oracle"), "verdict"] == "undecided at n = 8"
    assert (
        claims.loc[("Prefers scatter is scatter-neutral", "scatter:oracle"), "verdict"] == "fails (favours scattered)"
    )


def test_contrast_falls_back_to_the_family_without_an_oracle_map():
    explainers = {k: v for k, v in EXPLAINERS.items() if k not in ("oracle",)}
    per_image = _per_image(16)
    per_image = per_image[per_image["explainer"] != "oracle"]
    claims = decide_claims(per_image, explainers, CURVES, n_boot=0, value_ranges=RANGES)
    row = claims[(claims["claim"] == "Faithful is scatter-neutral") & (claims["family"] == "scatter:oracle")]
    # the oracle map is now the degrade family's best member (oracle_d00, information 1); the smallest
    # contrast is still the family's best minus worst member
    assert row["contrast"].iloc[0] == pytest.approx(0.32, abs=0.03)
    no_random = {k: v for k, v in explainers.items() if k != "random"}
    claims = decide_claims(
        per_image[per_image["explainer"] != "random"], no_random, CURVES, n_boot=0, value_ranges=RANGES
    )
    row = claims[(claims["claim"] == "Faithful is scatter-neutral") & (claims["family"] == "scatter:oracle")]
    # no random: the oracle family's best minus worst member (information 1 vs 0.2: 0.32)
    assert row["contrast"].iloc[0] == pytest.approx(0.32, abs=0.03)
