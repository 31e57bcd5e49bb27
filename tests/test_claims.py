"""The headline claims (fudbench.analysis.claims): each a mean of a per-image
statistic with a bootstrap interval over images, decided holds / fails /
undecided, and comparisons paired by image."""
import numpy as np
import pandas as pd
import pytest

from fudbench.analysis.claims import decide_claims, headline_claims, per_image_recovery, verdict

EXPLAINERS = {
    "random": {}, "background": {},
    "ig_d00": {"method": "degrade", "base": "ig", "fraction": 0.0},
    "ig_d20": {"method": "degrade", "base": "ig", "fraction": 0.2},
    "ig_d40": {"method": "degrade", "base": "ig", "fraction": 0.4},
    "ig_r000": {"method": "randomise_model", "base": "ig", "fraction": 0.0},
    "ig_r100": {"method": "randomise_model", "base": "ig", "fraction": 1.0},
}
CURVES = {"fud": ("FUD", True, "auc"), "fud_symmetric": ("FUD symmetric", True, "auc"),
          "infidelity": ("INFID", False, "value"), "road_morf": ("ROAD MoRF", False, "auc"),
          "fud@fud_patch": ("FUD [fud_patch]", True, "auc"),
          "quantus_pixel_flipping": ("Quantus PixelFlipping", False, "value")}
FRACTION = {"ig_d00": 0.0, "ig_d20": 0.2, "ig_d40": 0.4, "ig_r000": 0.0, "ig_r100": 1.0, "random": 0.5,
            "background": 0.5}


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
                scores = {"fud_symmetric": -f + noise, "fud": f + noise, "fud@fud_patch": f + noise,
                          "infidelity": (0.0 if anchor else 1.0) + noise, "road_morf": rng.normal(),
                          "quantus_pixel_flipping": f + noise}   # lower better: recovers
                rows += [{"model": model, "explainer": explainer, "curve": c, "image": image, "score": v}
                         for c, v in scores.items()]
    return pd.DataFrame(rows)


def test_claims_are_decided_both_ways_and_undecided_at_n():
    claims = decide_claims(_per_image(), EXPLAINERS, CURVES, n_boot=500, seed=1)
    assert set(claims["claim"]) == {"symmetric FUD beats paper FUD", "paper FUD recovers the family",
                                    "INFID ranks the anchors first", "ROAD MoRF recovers the family",
                                    "FUD [fud_patch] beats paper FUD", "Quantus PixelFlipping recovers the family"}
    get = claims.set_index(["claim", "model", "family"])
    for model in ("cnn", "vit"):
        for family in ("ig", "ig_randomised"):
            assert get.loc[("symmetric FUD beats paper FUD", model, family), "verdict"] == "holds"
            assert get.loc[("paper FUD recovers the family", model, family), "verdict"] == "fails"
            assert get.loc[("paper FUD recovers the family", model, family), "estimate"] == pytest.approx(-1.0)
            # identical scores: the difference is 0 on every image, an interval [0, 0] that decides nothing
            same = get.loc[("FUD [fud_patch] beats paper FUD", model, family)]
            assert same["estimate"] == 0 and same["verdict"] == "undecided at n = 24"
            field = get.loc[("Quantus PixelFlipping recovers the family", model, family)]
            assert field["verdict"] == "holds" and field["estimate"] == pytest.approx(1.0)
        lead = get.loc[("INFID ranks the anchors first", model, "anchors")]
        assert lead["verdict"] == "holds" and lead["estimate"] == pytest.approx(1.0, abs=0.02)
    assert (claims["n_images"] == 24).all()


def test_a_beats_claim_is_the_mean_of_per_image_differences():
    """Paired by image: the estimate is the mean of r_i(A) - r_i(B) over the images both have."""
    per_image = _per_image(n_images=10, seed=3)
    per_image = per_image[~((per_image["curve"] == "fud") & (per_image["image"] == 9))]  # one image missing
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=200)
    row = claims[(claims["claim"] == "symmetric FUD beats paper FUD") & (claims["model"] == "cnn")
                 & (claims["family"] == "ig")].iloc[0]
    members, fractions = ["ig_d00", "ig_d20", "ig_d40"], [0.0, 0.2, 0.4]
    a = per_image_recovery(per_image, "cnn", "fud_symmetric", 1.0, members, fractions, "total")
    b = per_image_recovery(per_image, "cnn", "fud", 1.0, members, fractions, "total")
    assert row["n_images"] == 9 and row["estimate"] == pytest.approx((a - b).dropna().mean())


def test_ties_count_as_no_information_and_claims_follow_the_curves():
    per_image = _per_image(n_images=4)
    per_image.loc[per_image["curve"] == "road_morf", "score"] = 0.5   # ties every member
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=100)
    road = claims[claims["claim"] == "ROAD MoRF recovers the family"]
    assert (road["estimate"] == 0).all() and road["verdict"].str.startswith("undecided").all()
    assert [c.text for c in headline_claims(["fud", "insertion"])] == ["paper FUD recovers the family"]
    assert verdict(0.1, 0.3, 5) == "holds" and verdict(-0.3, -0.1, 5) == "fails"
    assert verdict(np.nan, np.nan, 5) == "undecided at n = 5"


def test_images_to_decide_is_the_80_percent_power_count_of_the_claims_statistic():
    """From the per-image statistic's mean and sd: a clear claim needs few images,
    a noisy one many, a mean of exactly 0 never decides (inf); the LaTeX says '--'."""
    from fudbench.analysis.order_stats import power_factor
    from fudbench.report.meta import claims_table

    per_image = _per_image(n_images=12, seed=4)
    claims = decide_claims(per_image, EXPLAINERS, CURVES, n_boot=100)
    get = claims.set_index(["claim", "model", "family"])
    road = get.loc[("ROAD MoRF recovers the family", "cnn", "ig")]
    members, fractions = ["ig_d00", "ig_d20", "ig_d40"], [0.0, 0.2, 0.4]
    r = per_image_recovery(per_image, "cnn", "road_morf", -1.0, members, fractions, "total").dropna().to_numpy()
    expected = max(2, int(np.ceil(power_factor(0.8, 0.05) * (r.std(ddof=1) / r.mean()) ** 2)))
    assert road["images_to_decide"] == expected
    # a reversed claim is decided too (fails): the count is for deciding it either way
    assert get.loc[("paper FUD recovers the family", "cnn", "ig"), "images_to_decide"] == 2
    same = get.loc[("FUD [fud_patch] beats paper FUD", "cnn", "ig")]
    assert np.isinf(same["images_to_decide"])
    assert "n to decide" in claims_table(claims) and " -- " in claims_table(claims)
