"""The metric report card (fudbench.meta.report_card) on hand-built per-image scores."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from fudbench.meta.families import anchor_explainers, degraded_explainers
from fudbench.meta.report_card import card_families, entry_cost, images_needed, report_card, seed_groups

EXPLAINERS = {
    "random": {},
    "background": {},
    "ig_d00": {"method": "degrade", "base": "ig", "fraction": 0.0},
    "ig_d50": {"method": "degrade", "base": "ig", "fraction": 0.5},
    "ig_d90": {"method": "degrade", "base": "ig", "fraction": 0.9},
    "ig_r000": {"method": "randomise_model", "base": "ig", "fraction": 0.0},
    "ig_r100": {"method": "randomise_model", "base": "ig", "fraction": 1.0},
}
# INS/DEL: Insertion (higher better) and Deletion (lower better) from one entry
EVALUATORS = {"insdel": {}}
CNN = {"arch": "small_cnn", "width": 8}


def _per_image(quality: dict, n_images: int = 40, noise: float = 0.05, seed: int = 0, models=("cnn",)):
    """Insertion = quality + noise, Deletion = -quality + noise, per image; the
    `seconds` records: 0.1 s per row, 3 rows per image and curve."""
    rng = np.random.default_rng(seed)
    rows, secs = [], []
    for model in models:
        for explainer, q in quality.items():
            for image in range(n_images):
                e = noise * rng.standard_normal()
                rows.append(
                    {"model": model, "explainer": explainer, "curve": "insertion", "image": image, "score": q + e}
                )
                rows.append(
                    {"model": model, "explainer": explainer, "curve": "deletion", "image": image, "score": 1 - q + e}
                )
                for curve in ("insertion", "deletion"):
                    secs += [
                        {"model": model, "explainer": explainer, "curve": curve, "image": image, "seconds": 0.1}
                    ] * 3
    return pd.DataFrame(rows), pd.DataFrame(secs)


QUALITY = {
    "ig_d00": 0.9,
    "ig_d50": 0.6,
    "ig_d90": 0.4,
    "ig_r000": 0.8,
    "ig_r100": 0.45,
    "random": 0.35,
    "background": 0.1,
}


def test_families_and_anchors_from_config():
    assert degraded_explainers(EXPLAINERS) == {
        "ig_d00": ("ig", 0.0),
        "ig_d50": ("ig", 0.5),
        "ig_d90": ("ig", 0.9),
        "ig_r000": ("ig_randomised", 0.0),
        "ig_r100": ("ig_randomised", 1.0),
    }
    assert anchor_explainers({**EXPLAINERS, "noise": {"method": "random"}}) == {
        "random": "random",
        "background": "background",
        "noise": "random",
    }


def test_seed_groups_are_identical_entries():
    groups = seed_groups({"cnn": CNN, "vit": {"arch": "small_vit"}, "cnn_s1": dict(CNN), "cnn_w": {**CNN, "width": 4}})
    assert groups == {"cnn": "cnn", "vit": "vit", "cnn_s1": "cnn", "cnn_w": "cnn_w"}


def test_faithful_metric_gets_a_perfect_card():
    per_image, seconds = _per_image(QUALITY)
    card = report_card(per_image, seconds, EXPLAINERS, EVALUATORS, {"cnn": CNN}, n_boot=200)
    assert list(card["metric"]) == ["Insertion", "Deletion"]
    assert card_families(card) == ["ig", "ig_randomised"]
    assert (card["ig_statistic"] == "spearman").all() and (card["ig_randomised_statistic"] == "known_pairs").all()
    for f in ("ig", "ig_randomised"):
        assert (card[f"{f}_recovery"] == 1.0).all()  # Deletion's direction is taken into account
        assert (card[f"{f}_ci_low"] == 1.0).all() and card[f"{f}_powered"].all()
        assert card[f"{f}_ci"].iloc[0] == "[1.00, 1.00]"
        assert card[f"{f}_seed_spread"].isna().all()  # one seed only
        assert (card[f"{f}_needed_status"] == "ok").all()
    # 7 explainers: background worst, random above it only: both where expected
    assert (card["background_rank"] == 7).all() and (card["random_rank"] == 6).all()
    assert (card["background_expected_rank"] == 7).all() and (card["random_expected_rank"] == 6).all()
    assert (card["anchor_note"] == "").all()
    assert (card["n_explainers"] == 7).all()
    assert np.allclose(card["agreement_tau"], 1.0)  # the two metrics rank all explainers alike
    assert np.allclose(card["seconds_per_image"], 0.6)  # the insdel entry: 3 rows x 0.1 s x 2 curves
    assert (card["n_images"] == 40).all()


def test_reversed_metric_and_underpowered_cells_are_reported():
    # the metric sees the family in reverse, with noise as large as the gaps: wide intervals
    reversed_quality = {**QUALITY, "ig_d00": 0.4, "ig_d90": 0.9}
    per_image, seconds = _per_image(reversed_quality, n_images=8, noise=0.5, seed=1)
    card = report_card(per_image, seconds, EXPLAINERS, EVALUATORS, {"cnn": CNN}, n_boot=200)
    row = card.set_index("metric").loc["Insertion"]
    assert row["ig_recovery"] < 0
    assert not row["ig_powered"] and row["ig_ci_high"] - row["ig_ci_low"] > 0.4
    # the metric sees the order reversed: no number of images recovers it (was a finite count)
    assert row["ig_images_needed"] == math.inf and row["ig_needed_status"] == "reversed"


def test_seed_spread_between_two_seeds_of_one_model():
    a, sa = _per_image(QUALITY, models=("cnn",))
    swapped = {**QUALITY, "ig_d50": 0.3}  # the second seed's model orders the family differently
    b, sb = _per_image(swapped, models=("cnn_s1",), seed=2)
    card = report_card(
        pd.concat([a, b]), pd.concat([sa, sb]), EXPLAINERS, EVALUATORS, {"cnn": CNN, "cnn_s1": dict(CNN)}, n_boot=100
    )
    assert set(card["seed_group"]) == {"cnn"}
    ins = card[card["metric"] == "Insertion"].set_index("model")
    expected = ins.loc["cnn", "ig_recovery"] - ins.loc["cnn_s1", "ig_recovery"]
    assert expected > 0 and np.allclose(ins["ig_seed_spread"], expected)
    assert np.allclose(ins["ig_randomised_seed_spread"], 0.0)


def test_images_needed_at_80_percent_power_signed():
    rng = np.random.default_rng(0)
    # two members, per-image difference mean 1, sd 1: ((1.96 + 0.84) * 1 / 1)^2 -> 8 images
    diff = rng.standard_normal(20000) + 1.0
    m = np.stack([diff, np.zeros_like(diff)], axis=1)
    factor = (NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)) ** 2
    assert factor == pytest.approx(7.849, abs=1e-3)
    assert images_needed(m) == (math.ceil(factor * diff.var(ddof=1) / diff.mean() ** 2), "ok")
    # the same pair in reverse: the known order is not what the metric sees, at any number of images
    assert images_needed(m[:, ::-1]) == (math.inf, "reversed")
    assert images_needed(np.zeros((10, 3))) == (math.inf, "tied")  # ties on every image
    assert images_needed(np.array([[2.0, 1.0], [2.0, 1.0]])) == (2, "ok")  # no spread: resolved, 2 at least
    assert images_needed(np.array([[1.0, 0.0], [0.0, 1.0]])) == (math.inf, "tied")  # spread, no mean difference
    n, status = images_needed(np.array([[1.0, 0.0]]))  # one image: no sd
    assert math.isnan(n) and status == "undefined"
    # worst pair decides: one pair fine, the next reversed
    three = np.stack([diff + 2, diff + 1, diff + 1.5], axis=1)
    assert images_needed(three)[1] == "reversed"


def test_partial_order_family_scores_only_the_known_pairs():
    """randomise_model: f = 0 before each f > 0 is known, f = 0.5 vs 1 is not. A
    metric that orders f = 1 above f = 0.5 (but both below f = 0) recovers every
    known pair: +1, where a full Spearman would say 0.5."""
    quality = {**QUALITY, "ig_r050": 0.5, "ig_r100": 0.6}
    explainers = {**EXPLAINERS, "ig_r050": {"method": "randomise_model", "base": "ig", "fraction": 0.5}}
    per_image, seconds = _per_image(quality)
    card = report_card(per_image, seconds, explainers, EVALUATORS, {"cnn": CNN}, n_boot=0)
    assert (card["ig_randomised_recovery"] == 1.0).all()
    assert (card["ig_randomised_needed_status"] == "ok").all()  # f = 0.5 vs 1 is no known pair
    worse = {**quality, "ig_r000": 0.55}  # now f = 0 sits between them: one of two known pairs reversed
    card = report_card(_per_image(worse)[0], None, explainers, EVALUATORS, {"cnn": CNN}, n_boot=0)
    assert (card["ig_randomised_recovery"] == 0.0).all()
    assert (card["ig_randomised_needed_status"] == "reversed").all()


def test_anchor_ranks_against_their_expected_ranks():
    # random ranks last, below background: both off by one place, and background above random
    swapped = {**QUALITY, "random": 0.05, "background": 0.1}
    card = report_card(_per_image(swapped)[0], None, EXPLAINERS, EVALUATORS, {"cnn": CNN}, n_boot=0)
    row = card.set_index("metric").loc["Insertion"]
    assert (row["random_rank"], row["random_expected_rank"]) == (7, 6)
    assert (row["background_rank"], row["background_expected_rank"]) == (6, 7)
    assert "random 1 place(s) below its expected rank 6" in row["anchor_note"]
    assert "background above random" in row["anchor_note"]
    assert "not guaranteed by construction" in row["anchor_note"] and row["score_kind"] == "one-sided"
    # without background, random is expected last
    no_bg = {k: v for k, v in EXPLAINERS.items() if k != "background"}
    per_image = _per_image({k: v for k, v in QUALITY.items() if k != "background"})[0]
    card = report_card(per_image, None, no_bg, EVALUATORS, {"cnn": CNN}, n_boot=0)
    assert (card["random_expected_rank"] == 6).all() and (card["random_rank"] == 6).all()
    assert card["background_rank"].isna().all() and (card["anchor_note"] == "").all()


def test_score_kinds_and_expected_ranks():
    from fudbench.meta.families import anchor_expected_ranks, score_kind

    assert anchor_expected_ranks({"random", "background"}, 20) == {"background": 20.0, "random": 19.0}
    assert anchor_expected_ranks({"random"}, 20) == {"random": 20.0}
    assert [
        score_kind(c)
        for c in (
            "fud_symmetric",
            "fud_symmetric@fud_sym",
            "srg__telea",
            "srg_mif__telea",
            "mrg__telea",
            "fud",
            "insertion",
        )
    ] == ["antisymmetric", "antisymmetric", "antisymmetric", "one-sided", "one-sided", "one-sided", "one-sided"]


def test_agreement_is_refused_below_three_explainers():
    two = {"random": 0.35, "background": 0.1}
    card = report_card(_per_image(two)[0], None, {"random": {}, "background": {}}, EVALUATORS, {"cnn": CNN}, n_boot=0)
    assert card["agreement_tau"].isna().all()
    assert card["agreement_note"].str.contains("fewer than 3 explainers").all()


def test_entry_cost_sums_an_entrys_curves():
    seconds = pd.DataFrame(
        {
            "model": "cnn",
            "explainer": ["a", "a", "a", "b"],
            "curve": ["x", "y", "y", "x"],
            "image": [0, 0, 0, 0],
            "seconds": [1.0, 2.0, 3.0, 4.0],
        }
    )
    assert entry_cost(seconds, {"x": "e", "y": "e"}) == {("cnn", "e"): (6.0 + 4.0) / 2}


def test_report_card_without_scores_is_an_error():
    per_image = pd.DataFrame(
        {"model": ["cnn"], "explainer": ["random"], "curve": ["energy_only"], "image": [0], "score": [0.1]}
    )
    with pytest.raises(ValueError, match="no scored curve"):
        report_card(per_image, None, EXPLAINERS, EVALUATORS, {"cnn": CNN})


def test_report_card_table_and_figure(tmp_path):
    from fudbench.report.meta import report_card_figure, report_card_table

    per_image, seconds = _per_image(QUALITY, n_images=8, noise=0.3)
    card = report_card(per_image, seconds, EXPLAINERS, EVALUATORS, {"cnn": CNN}, n_boot=100)
    tex = report_card_table(card)
    assert "\\toprule" in tex and "Insertion $\\uparrow$" in tex and "Deletion $\\downarrow$" in tex
    row = card.iloc[0]
    assert f"{row['ig_recovery']:.2f} [{row['ig_ci_low']:.2f}, {row['ig_ci_high']:.2f}]" in tex
    assert "7 / 7" in tex  # background's rank
    assert "ig\\_randomised (pairs)" in tex  # a partial order: its known pairs
    body = tex.split("\\midrule", 1)[1]
    assert ("\\dagger" in body) == (not card["ig_powered"].all() or not card["ig_randomised_powered"].all())
    report_card_figure(card, [tmp_path / "card.png"], {"dpi": 50})
    assert (tmp_path / "card.png").stat().st_size > 1000


def test_uninformative_intervals_gate_and_scatter_columns(tmp_path):
    """An interval spanning (almost) the whole range prints "uninformative"; the
    family gate (family_gate.csv) and the scatter reaction per pair are columns;
    the caption says why the card and the claims can disagree."""
    from fudbench.report.meta import report_card_figure, report_card_table

    explainers = {**EXPLAINERS, "random_smooth": {"method": "random_smooth", "sigma": 2.0}}
    # the ig family tied (a blind metric: every order compatible); random_smooth 0.2 above random
    quality = {**QUALITY, "ig_d00": 0.6, "ig_d50": 0.6, "ig_d90": 0.6, "random_smooth": 0.55}
    per_image, seconds = _per_image(quality, n_images=16, noise=0.05, seed=3)
    gate = pd.DataFrame(
        {
            "model": ["cnn", "cnn"],
            "family": ["ig", "ig_randomised"],
            "best_member": ["ig_d00", "ig_r000"],
            "truth": "mass_inside",
            "estimate": [0.2, -0.1],
            "ci_low": [0.1, -0.2],
            "ci_high": [0.3, 0.05],
            "p": [0.001, 0.2],
            "passes": [True, False],
            "n_images": 16,
        }
    )
    gate.to_csv(tmp_path / "family_gate.csv", index=False)
    card = report_card(
        per_image, seconds, explainers, EVALUATORS, {"cnn": CNN}, n_boot=0, gate=tmp_path / "family_gate.csv"
    )
    assert card["ig_uninformative"].all() and not card["ig_randomised_uninformative"].any()
    assert (card["ig_ci_low"] == -1).all() and (card["ig_ci_high"] == 1).all()
    assert (card["ig_gate"] == "passes").all() and (card["ig_randomised_gate"] == "fails").all()
    assert np.allclose(card["ig_gate_ci_low"], 0.1) and np.allclose(card["ig_randomised_gate_estimate"], -0.1)
    # scatter: compact (random_smooth) minus scattered (random), oriented: +0.2 for both metrics
    assert np.allclose(card["scatter_random_reaction"], 0.2, atol=0.03)
    assert (card["scatter_random_ci_low"] > 0).all() and (card["scatter_random_n"] == 16).all()
    tex = report_card_table(card)
    body = tex.split("\\midrule", 1)[1]
    assert "uninformative" in body and "[-1.00, 1.00]" not in body
    assert "passes [0.10, 0.30]" in body and "fails [-0.20, 0.05]" in body and "$^{G}$" in body
    assert "Scatter random" in tex and "favours compact" in tex
    assert "per-image statistic" in tex and "Holm" in tex  # the card vs the claims
    report_card_figure(card, [tmp_path / "card.png"], {"dpi": 50})
    assert (tmp_path / "card.png").stat().st_size > 1000
    # without a gate: said in the caption, no gate column
    card = report_card(per_image, seconds, explainers, EVALUATORS, {"cnn": CNN}, n_boot=0)
    assert (card["ig_gate"] == "no gate").all()
    tex = report_card_table(card)
    assert "No family gate" in tex and "ig gate" not in tex
