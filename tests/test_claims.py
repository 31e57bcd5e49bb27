"""The claims (fudbench.meta.claims): derived from the run's curves and
config, each cell a mean of a per-image statistic with inference.mean_interval's
interval, raw and Holm-adjusted p within the claim, decided on the adjusted p;
the family gate, the macro claims, the scatter claims and images_to_decide
with its bootstrap interval."""

import numpy as np
import pandas as pd
import pytest

from fudbench.meta.claims import (
    GATED_OUT,
    decide_claims,
    headline_claims,
    images_to_decide_interval,
    per_image_recovery,
    verdict,
)
from fudbench.meta.inference import holm, mean_interval, simultaneous_level

EXPLAINERS = {
    "random": {},
    "background": {},
    "ig_d00": {"method": "degrade", "base": "ig", "fraction": 0.0},
    "ig_d20": {"method": "degrade", "base": "ig", "fraction": 0.2},
    "ig_d40": {"method": "degrade", "base": "ig", "fraction": 0.4},
    "ig_r000": {"method": "randomise_model", "base": "ig", "fraction": 0.0},
    "ig_r100": {"method": "randomise_model", "base": "ig", "fraction": 1.0},
}
CURVES = {
    "fud": ("FUD", True, "auc"),
    "fud_symmetric": ("FUD symmetric", True, "auc"),
    "infidelity": ("INFID", False, "value"),
    "road_morf": ("ROAD MoRF", False, "auc"),
    "fud@fud_patch": ("FUD [fud_patch]", True, "auc"),
    "quantus_pixel_flipping": ("Quantus PixelFlipping", False, "value"),
}
FRACTION = {
    "ig_d00": 0.0,
    "ig_d20": 0.2,
    "ig_d40": 0.4,
    "ig_r000": 0.0,
    "ig_r100": 1.0,
    "random": 0.5,
    "background": 0.5,
}


def _per_image(n_images=24, seed=0):
    """fud_symmetric: recovers every family; fud: reverses them; fud@fud_patch = fud;
    infidelity: lowest (best) for the anchors; road_morf: noise only."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("cnn", "vit"):
        for image in range(n_images):
            for explainer, f in FRACTION.items():
                noise = rng.normal(0, 0.01)
                anchor = explainer in ("random", "background")
                scores = {
                    "fud_symmetric": -f + noise,
                    "fud": f + noise,
                    "fud@fud_patch": f + noise,
                    "infidelity": (0.0 if anchor else 1.0) + noise,
                    "road_morf": rng.normal(),
                    "quantus_pixel_flipping": f + noise,
                }  # lower better: recovers
                rows += [
                    {"model": model, "explainer": explainer, "curve": c, "image": image, "score": v}
                    for c, v in scores.items()
                ]
    return pd.DataFrame(rows)


def _get(claims):
    return claims.set_index(["claim", "model", "family"])


def test_claims_follow_the_curves_and_are_decided_both_ways():
    claims = decide_claims(_per_image(), EXPLAINERS, CURVES, n_boot=200, seed=1)
    labels = [label for label, *_ in CURVES.values()]
    assert set(claims["claim"]) == {
        "FUD symmetric beats paper FUD",
        "FUD [fud_patch] beats paper FUD",
        *[f"{x} recovers the family (macro)" for x in ("FUD", "FUD symmetric", "FUD [fud_patch]")],
        *[f"{x} recovers the family" for x in labels],
        *[f"{x} ranks the anchors below the rest" for x in labels],
    }
    get = _get(claims)
    for model in ("cnn", "vit"):
        for family in ("ig", "ig_randomised"):
            assert get.loc[("FUD symmetric beats paper FUD", model, family), "verdict"] == "holds"
            assert get.loc[("FUD recovers the family", model, family), "verdict"] == "fails"
            assert get.loc[("FUD recovers the family", model, family), "estimate"] == pytest.approx(-1.0)
            # identical scores: the difference is 0 on every image; it decides nothing
            same = get.loc[("FUD [fud_patch] beats paper FUD", model, family)]
            assert same["estimate"] == 0 and same["verdict"] == "undecided at n = 24"
            assert same["ci_low"] < 0 < same["ci_high"] and same["p"] == pytest.approx(1.0)
            field = get.loc[("Quantus PixelFlipping recovers the family", model, family)]
            assert field["verdict"] == "holds" and field["estimate"] == pytest.approx(1.0)
            assert field["ci_high"] == 1.0 and field["ci_low"] < 1.0  # all 1: still an interval
        infid = get.loc[("INFID ranks the anchors below the rest", model, "anchors")]
        assert infid["verdict"] == "fails" and infid["estimate"] == pytest.approx(-1.0, abs=0.02)
        assert infid["bounds_from"] == "observed range"  # INFID's range [0, inf) is not finite
    assert (claims["n_images"] == 24).all()
    assert (claims["gate"].isin(["no gate", "n/a"])).all()
    assert any(c.kind == "scatter_neutral" for c in headline_claims(CURVES))  # every curve gets one ...
    assert "scatter" not in " ".join(claims["family"])  # ... but this config has no scatter pair


def test_a_made_up_new_curve_appears_in_the_claims():
    """Claims come from the run's curves (the registry and config), not a list:
    a curve no module knows gets its recovery, anchor and scatter claims."""
    per_image = _per_image(n_images=8)
    new = per_image[per_image["curve"] == "quantus_pixel_flipping"].assign(curve="my_aopc")
    curves = {**CURVES, "my_aopc": ("AOPC (mine)", False, "value")}
    claims = decide_claims(pd.concat([per_image, new]), EXPLAINERS, curves, n_boot=50)
    mine = claims[claims["metric"] == "AOPC (mine)"]
    assert set(mine["claim"]) == {"AOPC (mine) recovers the family", "AOPC (mine) ranks the anchors below the rest"}
    assert "AOPC (mine) is scatter-neutral" in [c.text for c in headline_claims(curves, {"my_aopc": "AOPC (mine)"})]
    assert (mine[mine["kind"] == "recovers"]["verdict"] == "holds").all()
    # FUD's curves and only they get "beats paper FUD" and the macro claim, aliased and bottom ones included
    kinds = {(c.curve, c.kind) for c in headline_claims(["fud", "fud_bottom", "fud_symmetric@sym", "insertion"])}
    assert {c for c, k in kinds if k == "beats"} == {"fud_bottom", "fud_symmetric@sym"}
    assert {c for c, k in kinds if k == "recovers_macro"} == {"fud", "fud_bottom", "fud_symmetric@sym"}


def test_a_beats_claim_is_the_mean_of_per_image_differences():
    """Paired by image: the estimate is the mean of r_i(A) - r_i(B) over the images
    both have; its interval is mean_interval's with bounds [-2, 2]."""
    per_image = _per_image(n_images=10, seed=3)
    per_image = per_image[~((per_image["curve"] == "fud") & (per_image["image"] == 9))]  # one image missing
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=50)
    row = _get(claims).loc[("FUD symmetric beats paper FUD", "cnn", "ig")]
    members, fractions = ["ig_d00", "ig_d20", "ig_d40"], [0.0, 0.2, 0.4]
    a = per_image_recovery(per_image, "cnn", "fud_symmetric", 1.0, members, fractions, "total")
    b = per_image_recovery(per_image, "cnn", "fud", 1.0, members, fractions, "total")
    d = (a - b).dropna()
    assert row["n_images"] == 9 and row["estimate"] == pytest.approx(d.mean())
    assert (row["bound_low"], row["bound_high"]) == (-2.0, 2.0)
    assert (row["ci_low"], row["ci_high"], row["p"]) == pytest.approx(mean_interval(d, (-2, 2))[1:])


def test_verdicts_follow_the_holm_adjusted_p_within_each_claim():
    """Each claim's cells (models x families) form its Holm family; a cell whose raw
    p is below 0.05 but whose adjusted p is not stays undecided."""
    rng = np.random.default_rng(16)
    per_image = _per_image(n_images=12, seed=2)
    # ROAD MoRF: a weak order on every cell (seeded so that raw and adjusted p straddle 0.05 on two cells)
    mask = per_image["curve"] == "road_morf"
    f = per_image.loc[mask, "explainer"].map(FRACTION)
    per_image.loc[mask, "score"] = 0.3 * f + rng.normal(0, 0.3, mask.sum())
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=50)
    for text, cells in claims.groupby("claim"):
        if cells["kind"].iloc[0] == "recovers_macro":
            assert cells["p"].isna().all()
            continue
        assert np.allclose(cells["p_holm"], holm(cells["p"]), equal_nan=True), text
        assert (cells["holm_m"] == len(cells)).all()
        assert np.allclose(cells["sim_level"], simultaneous_level(0.95, len(cells)))
        for _, r in cells.iterrows():
            if r["p_holm"] < 0.05:
                assert r["verdict"] == ("holds" if r["estimate"] > 0 else "fails")
            else:
                assert r["verdict"].startswith("undecided at n = ")
            assert r["sim_low"] <= r["ci_low"] and r["ci_high"] <= r["sim_high"]
    road = claims[claims["claim"] == "ROAD MoRF recovers the family"]
    straddle = road[(road["p"] < 0.05) & (road["p_holm"] >= 0.05)]
    assert len(straddle) and straddle["verdict"].str.startswith("undecided").all()


def test_gated_out_families_leave_the_holm_family(tmp_path):
    gate = pd.DataFrame(
        {
            "model": ["cnn", "cnn", "vit"],
            "family": ["ig", "ig_randomised", "ig"],
            "best_member": ["ig_d00", "ig_r000", "ig_d00"],
            "truth": "mass_inside",
            "estimate": [0.2, 0.1, -0.05],
            "ci_low": [0.1, 0.02, -0.1],
            "ci_high": [0.3, 0.2, 0.01],
            "p": [0.001, 0.02, 0.1],
            "passes": [True, True, False],
            "n_images": 24,
        }
    )
    gate.to_csv(tmp_path / "family_gate.csv", index=False)
    for given in (gate, tmp_path / "family_gate.csv"):
        claims = decide_claims(_per_image(), EXPLAINERS, CURVES, n_boot=50, gate=given)
        get = _get(claims)
        row = get.loc[("FUD symmetric recovers the family", "vit", "ig")]
        assert row["verdict"] == GATED_OUT and row["gate"] == "fails" and np.isnan(row["p_holm"])
        assert np.isfinite(row["p"])  # still computed and shown, just not tested
        assert get.loc[("FUD symmetric recovers the family", "cnn", "ig"), "gate"] == "passes"
        assert get.loc[("FUD symmetric recovers the family", "vit", "ig_randomised"), "gate"] == "not computed"
        fam = claims[claims["claim"] == "FUD symmetric recovers the family"]
        assert (fam["holm_m"] == 3).all()
        assert get.loc[("FUD symmetric beats paper FUD", "vit", "ig"), "verdict"] == GATED_OUT
        assert get.loc[("FUD symmetric recovers the family (macro)", "vit", "ig"), "verdict"] == GATED_OUT
        assert get.loc[("INFID ranks the anchors below the rest", "vit", "anchors"), "gate"] == "n/a"
    with pytest.raises(ValueError, match="passes"):
        decide_claims(_per_image(n_images=4), EXPLAINERS, CURVES, gate=gate.drop(columns="passes"))


def test_macro_symmetric_claim_uses_the_compatible_interval_at_the_simultaneous_level():
    """The macro claim: the family's statistic of the members' mean scores,
    decided by order_stats.compatible_interval at the Bonferroni level of the
    claim's cells; per-image noise that hides the order on each image does not
    hide it from the means."""
    from fudbench.meta.families import _image_matrix
    from fudbench.meta.order_stats import compatible_interval

    rng = np.random.default_rng(4)
    per_image = _per_image(n_images=40, seed=5)
    mask = per_image["curve"] == "fud_symmetric"
    f = per_image.loc[mask, "explainer"].map(FRACTION)
    # an image effect (shared by the members) plus member noise as large as the gaps: the per-image Spearman is
    # noisy, the means are ordered
    image_effect = per_image.loc[mask, "image"].map(dict(enumerate(rng.normal(0, 1, 40))))
    per_image.loc[mask, "score"] = -f + image_effect + rng.normal(0, 0.25, mask.sum())
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=50)
    get = _get(claims)
    macro = get.loc[("FUD symmetric recovers the family (macro)", "cnn", "ig")]
    d = per_image[mask & (per_image["model"] == "cnn")]
    members = ["ig_d00", "ig_d20", "ig_d40"]
    s = _image_matrix(d, "score", members, "image").to_numpy()
    level = simultaneous_level(0.95, 4)
    assert (macro["sim_low"], macro["sim_high"]) == compatible_interval(s, [0, 0.2, 0.4], "total", level)
    assert (macro["ci_low"], macro["ci_high"]) == compatible_interval(s, [0, 0.2, 0.4], "total", 0.95)
    assert macro["estimate"] == 1.0 and macro["sim_low"] > 0 and macro["verdict"] == "holds"
    micro = get.loc[("FUD symmetric recovers the family", "cnn", "ig")]
    assert micro["estimate"] < 0.9  # image by image the order is blurred
    assert np.isnan(macro["p"]) and macro["statistic"] == "macro recovery"
    paper = get.loc[("FUD recovers the family (macro)", "cnn", "ig")]
    assert paper["verdict"] == "fails"


def test_ties_count_as_no_information():
    per_image = _per_image(n_images=4)
    per_image.loc[per_image["curve"] == "road_morf", "score"] = 0.5  # ties every member
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=20)
    road = claims[claims["claim"] == "ROAD MoRF recovers the family"]
    assert (road["estimate"] == 0).all() and road["verdict"].str.startswith("undecided").all()
    # a raw-score statistic of a metric constant on the model: bounds from ROAD's value range [0, 1] (the
    # registry's), so an interval that says "no evidence" ...
    anchors = claims[claims["claim"] == "ROAD MoRF ranks the anchors below the rest"]
    assert (anchors["bounds_from"] == "metric range").all() and (anchors["bound_high"] == 1.0).all()
    assert (anchors["ci_low"] < 0).all() and (anchors["ci_high"] > 0).all()
    # ... and without a known range the observed one, of width 0: no interval at all
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=20, value_ranges={})
    anchors = claims[claims["claim"] == "ROAD MoRF ranks the anchors below the rest"]
    assert (anchors["bounds_from"] == "observed range").all() and anchors["ci_low"].isna().all()
    assert anchors["verdict"].str.startswith("undecided").all()
    assert verdict(0.1, 0.3, 5) == "holds" and verdict(-0.3, -0.1, 5) == "fails"
    assert verdict(np.nan, np.nan, 5) == "undecided at n = 5"


def test_images_to_decide_and_its_bootstrap_interval():
    """From the per-image statistic's mean and sd: a clear claim needs few images,
    a noisy one many, a mean of exactly 0 never decides (inf); the percentile
    bootstrap interval of the count brackets it; the LaTeX says '--'."""
    from fudbench.meta.order_stats import power_factor
    from fudbench.report.meta import claims_table

    per_image = _per_image(n_images=12, seed=4)
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=400)
    get = _get(claims)
    road = get.loc[("ROAD MoRF recovers the family", "cnn", "ig")]
    members, fractions = ["ig_d00", "ig_d20", "ig_d40"], [0.0, 0.2, 0.4]
    r = per_image_recovery(per_image, "cnn", "road_morf", -1.0, members, fractions, "total").dropna().to_numpy()
    expected = max(2, int(np.ceil(power_factor(0.8, 0.05) * (r.std(ddof=1) / r.mean()) ** 2)))
    assert road["images_to_decide"] == expected
    assert road["images_to_decide_low"] <= expected <= road["images_to_decide_high"]
    assert road["images_to_decide_low"] < road["images_to_decide_high"]  # noisy: an uncertain count
    clear = get.loc[("FUD recovers the family", "cnn", "ig")]  # decided either way: 2 images, no doubt
    assert (clear["images_to_decide"], clear["images_to_decide_low"], clear["images_to_decide_high"]) == (2, 2, 2)
    same = get.loc[("FUD [fud_patch] beats paper FUD", "cnn", "ig")]
    assert np.isinf(same["images_to_decide"]) and np.isinf(same["images_to_decide_high"])
    tex = claims_table(claims)
    assert "n to decide" in tex and " -- " in tex and "Holm" in tex and "No family gate" in tex
    # the bootstrap: a larger spread of the count with fewer images
    rng = np.random.default_rng(0)
    v = rng.normal(0.3, 0.5, 200)
    lo8, hi8 = images_to_decide_interval(v[:8], 500, 0.95, 1)
    lo200, hi200 = images_to_decide_interval(v, 500, 0.95, 1)
    assert lo200 <= 22 <= hi200 and hi200 / lo200 < hi8 / lo8  # truth: 7.85 x (0.5 / 0.3)^2 = 21.8
