"""The metric report card (fudbench.analysis.report_card) on hand-built per-image scores."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fudbench.analysis.meta import anchor_explainers, degraded_explainers
from fudbench.analysis.report_card import (card_families, entry_cost, images_needed, report_card, seed_groups)

EXPLAINERS = {
    "random": {}, "background": {},
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
                rows.append({"model": model, "explainer": explainer, "curve": "insertion", "image": image,
                             "score": q + e})
                rows.append({"model": model, "explainer": explainer, "curve": "deletion", "image": image,
                             "score": 1 - q + e})
                for curve in ("insertion", "deletion"):
                    secs += [{"model": model, "explainer": explainer, "curve": curve, "image": image,
                              "seconds": 0.1}] * 3
    return pd.DataFrame(rows), pd.DataFrame(secs)


QUALITY = {"ig_d00": 0.9, "ig_d50": 0.6, "ig_d90": 0.4, "ig_r000": 0.8, "ig_r100": 0.45, "random": 0.35,
           "background": 0.1}


def test_families_and_anchors_from_config():
    assert degraded_explainers(EXPLAINERS) == {"ig_d00": ("ig", 0.0), "ig_d50": ("ig", 0.5), "ig_d90": ("ig", 0.9),
                                               "ig_r000": ("ig_randomised", 0.0),
                                               "ig_r100": ("ig_randomised", 1.0)}
    assert anchor_explainers({**EXPLAINERS, "noise": {"method": "random"}}) == {
        "random": "random", "background": "background", "noise": "random"}


def test_seed_groups_are_identical_entries():
    groups = seed_groups({"cnn": CNN, "vit": {"arch": "small_vit"}, "cnn_s1": dict(CNN), "cnn_w": {**CNN, "width": 4}})
    assert groups == {"cnn": "cnn", "vit": "vit", "cnn_s1": "cnn", "cnn_w": "cnn_w"}


def test_faithful_metric_gets_a_perfect_card():
    per_image, seconds = _per_image(QUALITY)
    card = report_card(per_image, seconds, EXPLAINERS, EVALUATORS, {"cnn": CNN}, n_boot=200)
    assert list(card["metric"]) == ["Insertion", "Deletion"]
    assert card_families(card) == ["ig", "ig_randomised"]
    for f in ("ig", "ig_randomised"):
        assert (card[f"{f}_spearman"] == 1.0).all()  # Deletion's direction is taken into account
        assert (card[f"{f}_ci_low"] == 1.0).all() and card[f"{f}_powered"].all()
        assert card[f"{f}_ci"].iloc[0] == "[1.00, 1.00]"
        assert card[f"{f}_seed_spread"].isna().all()  # one seed only
    # 7 explainers: background worst, random above it only
    assert (card["background_rank"] == 7).all() and (card["random_rank"] == 6).all()
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
    assert row["ig_spearman"] < 0
    assert not row["ig_powered"] and row["ig_ci_high"] - row["ig_ci_low"] > 0.4
    assert row["ig_images_needed"] > 8


def test_seed_spread_between_two_seeds_of_one_model():
    a, sa = _per_image(QUALITY, models=("cnn",))
    swapped = {**QUALITY, "ig_d50": 0.3}  # the second seed's model orders the family differently
    b, sb = _per_image(swapped, models=("cnn_s1",), seed=2)
    card = report_card(pd.concat([a, b]), pd.concat([sa, sb]), EXPLAINERS, EVALUATORS,
                       {"cnn": CNN, "cnn_s1": dict(CNN)}, n_boot=100)
    assert set(card["seed_group"]) == {"cnn"}
    ins = card[card["metric"] == "Insertion"].set_index("model")
    expected = ins.loc["cnn", "ig_spearman"] - ins.loc["cnn_s1", "ig_spearman"]
    assert expected > 0 and np.allclose(ins["ig_seed_spread"], expected)
    assert np.allclose(ins["ig_randomised_seed_spread"], 0.0)


def test_images_needed():
    rng = np.random.default_rng(0)
    # two members, per-image difference mean 1, sd 1: (1.96 * 1 / 1)^2 -> 4 images
    diff = rng.standard_normal(20000) + 1.0
    m = np.stack([diff, np.zeros_like(diff)], axis=1)
    assert images_needed(m) == pytest.approx(math.ceil(1.96 ** 2 * diff.var(ddof=1) / diff.mean() ** 2))
    assert images_needed(np.zeros((10, 3))) == math.inf  # ties on every image: no number of images orders them
    assert images_needed(np.array([[2.0, 1.0], [2.0, 1.0]])) == 2  # no spread: resolved with the images at hand
    assert images_needed(np.array([[1.0, 0.0], [0.0, 1.0]])) == math.inf  # spread, but no mean difference


def test_entry_cost_sums_an_entrys_curves():
    seconds = pd.DataFrame({"model": "cnn", "explainer": ["a", "a", "a", "b"], "curve": ["x", "y", "y", "x"],
                            "image": [0, 0, 0, 0], "seconds": [1.0, 2.0, 3.0, 4.0]})
    assert entry_cost(seconds, {"x": "e", "y": "e"}) == {("cnn", "e"): (6.0 + 4.0) / 2}


def test_report_card_without_scores_is_an_error():
    per_image = pd.DataFrame({"model": ["cnn"], "explainer": ["random"], "curve": ["energy_only"], "image": [0],
                              "score": [0.1]})
    with pytest.raises(ValueError, match="no scored curve"):
        report_card(per_image, None, EXPLAINERS, EVALUATORS, {"cnn": CNN})


def test_report_card_table_and_figure(tmp_path):
    from fudbench.report.meta import report_card_figure, report_card_table

    per_image, seconds = _per_image(QUALITY, n_images=8, noise=0.3)
    card = report_card(per_image, seconds, EXPLAINERS, EVALUATORS, {"cnn": CNN}, n_boot=100)
    tex = report_card_table(card)
    assert "\\toprule" in tex and "Insertion $\\uparrow$" in tex and "Deletion $\\downarrow$" in tex
    row = card.iloc[0]
    assert f"{row['ig_spearman']:.2f} [{row['ig_ci_low']:.2f}, {row['ig_ci_high']:.2f}]" in tex
    assert "7 / 7" in tex  # background's rank
    assert ("$^\\dagger$" in tex) == (not card["ig_powered"].all() or not card["ig_randomised_powered"].all())
    report_card_figure(card, [tmp_path / "card.png"], {"dpi": 50})
    assert (tmp_path / "card.png").stat().st_size > 1000
