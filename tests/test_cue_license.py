"""The planted cue licensed (issue 38, item 3): the dose-response check on a tiny cue
dataset, the verdicts under the three truths with and without ISA, and the endpoint
cells on hand-made per-image frames (fudbench.meta.cue, fudbench.data.synthetic)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fudbench.meta.cue import (
    DOSES,
    TRUTHS,
    cue_verdict_frames,
    dose_response,
    dose_response_rows,
    endpoint_rows,
    isa_explainers,
)
from fudbench.meta.inference import mean_interval
from fudbench.data.synthetic import (
    CUE_REMOVAL_ORDERS,
    SyntheticSpec,
    cue_dose_images,
    cue_removal_ranks,
    generate_cue_split,
    n_removed,
)

SYNTHETIC = {
    "image_size": 32,
    "shapes": ["circle", "square"],
    "dark": 0.2,
    "light": 0.8,
    "object_scale": [0.3, 0.45],
    "cue": {"size": 4, "margin": 1, "colours": {"red": [1, 0, 0], "green": [0, 1, 0], "blue": [0, 0, 1]}},
}


@pytest.fixture(scope="module")
def split():
    return generate_cue_split(SyntheticSpec.from_config(SYNTHETIC), 12, 3, "test", counterfactuals=True)


# ------------------------------------------------------------------ dose images


@pytest.mark.parametrize("order", CUE_REMOVAL_ORDERS)
def test_dose_images_remove_nested_cue_pixels_in_distribution(split, order):
    ranks = cue_removal_ranks(split["masks"], 3, "test", order)
    cue = split["masks"].astype(bool)
    assert ((ranks >= 0) == cue).all()
    assert all(sorted(r[m].tolist()) == list(range(16)) for r, m in zip(ranks, cue))
    doses = [cue_dose_images(split["images"], split["no_cue"], ranks, q) for q in DOSES]
    # dose 0 is the image and dose 1 the generator's cue-free rendering, bit for bit
    assert doses[0].dtype == np.uint8 and np.array_equal(doses[0], split["images"])
    assert np.array_equal(doses[-1], split["no_cue"])
    removed = [(d != split["images"]).any(1) for d in doses]
    for q, d, r in zip(DOSES, doses, removed):
        assert not (r & ~cue).any()  # nothing outside the cue changes
        assert ((ranks < n_removed(q, 16)) & cue).sum((1, 2)).tolist() == [n_removed(q, 16)] * 12
        gone = (ranks >= 0) & (ranks < n_removed(q, 16))
        # removed pixels are the background the generator drew there, the kept ones the cue
        assert np.array_equal(np.where(gone[:, None], d, 0), np.where(gone[:, None], split["no_cue"], 0))
        assert np.array_equal(np.where(~gone[:, None], d, 0), np.where(~gone[:, None], split["images"], 0))
    for a, b in zip(removed, removed[1:]):
        assert not (a & ~b).any()  # nested: what a dose removes, every larger dose removes too
    assert [n_removed(q, 16) for q in DOSES] == [0, 4, 8, 12, 16]


def test_removal_orders_centre_and_border(split):
    cue = split["masks"].astype(bool)
    centre = cue_removal_ranks(split["masks"], 3, "test", "centre_first")
    border = cue_removal_ranks(split["masks"], 3, "test", "border_first")
    for i in range(len(cue)):
        ys, xs = np.nonzero(cue[i])
        inner = np.zeros_like(cue[i])
        inner[ys.min() + 1 : ys.max(), xs.min() + 1 : xs.max()] = True  # the 2 x 2 centre of a 4 x 4 cue
        assert set(centre[i][inner]) == {0, 1, 2, 3}
        assert set(border[i][inner]) == {12, 13, 14, 15}
    again = cue_removal_ranks(split["masks"], 3, "test", "random")
    assert np.array_equal(again, cue_removal_ranks(split["masks"], 3, "test", "random"))  # seeded
    assert not np.array_equal(again, cue_removal_ranks(split["masks"], 4, "test", "random"))
    with pytest.raises(ValueError, match="order"):
        cue_removal_ranks(split["masks"], 3, "test", "spiral")


# ------------------------------------------------------------------ dose-response statistics


def _probs(target: np.ndarray, n_classes: int = 3) -> np.ndarray:
    """(D, N) probability of label 0 -> (D, N, C) with the rest shared out."""
    rest = (1 - target[..., None]) / (n_classes - 1) * np.ones(n_classes - 1)
    return np.concatenate([target[..., None], rest], -1)


def test_dose_response_verdicts_on_hand_made_probabilities():
    rng = np.random.default_rng(0)
    labels = np.zeros(200, dtype=int)
    noise = rng.uniform(-0.02, 0.02, (5, 200))
    falling = np.clip(np.linspace(0.95, 0.3, 5)[:, None] + noise, 0, 1)
    rows = pd.DataFrame(dose_response_rows("m", "random", _probs(falling), labels, k=16))
    assert rows["n_removed"].tolist() == [0, 4, 8, 12, 16]
    assert rows["step_verdict"].tolist() == ["", "falls", "falls", "falls", "falls"]
    assert (rows["monotone"] == "falls at every step").all()
    assert rows.loc[0, "accuracy"] == 1 and rows.loc[4, "accuracy"] == 0
    m, lo, hi, _ = mean_interval(falling[2], (0, 1))
    assert rows.loc[2, ["target_prob", "target_prob_ci_low", "target_prob_ci_high"]].tolist() == pytest.approx(
        [m, lo, hi]
    )
    # a cliff: the label holds until the last pixels go
    cliff = np.clip(np.array([0.95, 0.95, 0.95, 0.95, 0.3])[:, None] + noise, 0, 1)
    rows = pd.DataFrame(dose_response_rows("m", "random", _probs(cliff), labels))
    assert rows["step_verdict"].tolist() == ["", "flat", "flat", "flat", "falls"]
    assert rows.loc[0, "monotone"] == "non-increasing (flat: 0->0.25, 0.25->0.5, 0.5->0.75)"
    bump = np.clip(np.array([0.9, 0.6, 0.9, 0.5, 0.3])[:, None] + noise, 0, 1)
    rows = pd.DataFrame(dose_response_rows("m", "random", _probs(bump), labels))
    assert rows.loc[0, "monotone"] == "not monotone (rises: 0.25->0.5)"
    with pytest.raises(ValueError, match="doses"):
        dose_response_rows("m", "random", _probs(bump[:3]), labels)


def test_dose_response_finds_the_part_of_the_cue_a_model_reads(split):
    """Two stand-in classifiers on the tiny dataset: one whose confidence is the share of
    the cue left, one that reads only the cue's 2 x 2 centre."""
    cue = split["masks"].astype(bool)
    ranks = {o: cue_removal_ranks(split["masks"], 3, "test", o) for o in CUE_REMOVAL_ORDERS}
    centre = (ranks["centre_first"] >= 0) & (ranks["centre_first"] <= 3)

    def left(images, where):
        kept = ((images == split["images"]).all(1) & where).sum((1, 2)) / where.sum((1, 2))
        probs = np.full((len(images), 3), 0.0)
        probs[np.arange(len(images)), split["labels"]] = 0.2 + 0.8 * kept
        wrong = (split["labels"] + 1) % 3
        probs[np.arange(len(images)), wrong] = 0.8 * (1 - kept)
        return probs

    whole = pd.DataFrame(
        dose_response("share", lambda x: left(x, cue), split["images"], split["no_cue"], ranks, split["labels"])
    )
    assert (whole.groupby("order")["monotone"].first() == "falls at every step").all()
    assert whole.query("dose == 0")["accuracy"].eq(1).all() and whole.query("dose == 1")["accuracy"].eq(0).all()
    reads_centre = pd.DataFrame(
        dose_response("centre", lambda x: left(x, centre), split["images"], split["no_cue"], ranks, split["labels"])
    ).set_index(["order", "dose"])
    assert reads_centre.loc[("centre_first", 0.25), "accuracy"] == 0  # the centre gone, the class gone
    assert reads_centre.loc[("border_first", 0.75), "accuracy"] == 1  # the border gone, the class kept
    assert reads_centre.loc[("border_first", 0.0), "monotone"].startswith("non-increasing")


# ------------------------------------------------------------------ verdicts under three truths

EXPLAINERS = {
    "ig": {},
    "sm": {},
    "gig": {},
    "agi": {},
    "la": {},
    "isa": {},
    "oracle": {},
    "random": {},
    "background": {},
}


def _coverage(n_images: int = 16, seed: int = 0) -> pd.DataFrame:
    """Precision, AUROC and mass that order the paper explainers differently; ISA at 0."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_images):
        base = rng.permutation(5) / 5 + 0.1
        for j, e in enumerate(["ig", "sm", "gig", "agi", "la"]):
            rows.append(
                {"explainer": e, "image": i, "precision": base[j], "auroc": base[::-1][j], "mass": base[(j + 1) % 5]}
            )
        for e, v in {"isa": 0.0, "oracle": 1.0, "random": 0.02, "background": 0.0}.items():
            rows.append({"explainer": e, "image": i, "precision": v, "auroc": v, "mass": v})
    return pd.DataFrame(rows).assign(model="cnn")


def _scores(coverage: pd.DataFrame, fn) -> pd.DataFrame:
    return coverage.assign(curve="m", score=[fn(r) for _, r in coverage.iterrows()])[
        ["model", "explainer", "curve", "image", "score"]
    ]


def test_verdicts_under_three_truths_with_and_without_isa():
    assert isa_explainers({"isa": {}, "isa2": {"method": "isa"}, "ig": {}}) == ["isa", "isa2"]
    cov = _coverage()
    v, rho = cue_verdict_frames(
        _scores(cov, lambda r: r["mass"]), cov, EXPLAINERS, {"m": ("M", True)}, n_boot=200, seed=0
    )
    assert set(v["truth"]) == set(TRUTHS) and set(v["with_isa"]) == {True, False}
    assert len(v) == 2 * 3 * 2  # explainer sets x truths x with / without ISA
    v = v.set_index(["explainers", "truth", "with_isa"])
    # a metric that reads mass agrees perfectly with the mass truth, on every image and on the means
    assert v.loc[("no_controls", "mass", False), "spearman"] == pytest.approx(1)
    assert v.loc[("no_controls", "mass", False), "macro_spearman"] == pytest.approx(1)
    assert v.loc[("no_controls", "mass", False), "verdict"] == "recovers"
    assert v.loc[("no_controls", "mass", True), "n_explainers"] == 6
    assert v.loc[("no_controls", "mass", False), "n_explainers"] == 5
    assert v.loc[("all", "mass", True), "n_explainers"] == 9
    # under another truth the same metric agrees less
    assert v.loc[("no_controls", "precision", False), "spearman"] < 0.9
    # the per-image frame holds what the means average
    key = (rho["explainers"] == "no_controls") & (rho["truth"] == "precision") & ~rho["with_isa"]
    assert len(rho[key]) == 16
    assert rho[key]["spearman"].mean() == pytest.approx(v.loc[("no_controls", "precision", False), "spearman"])
    est, lo, hi, p = mean_interval(rho[key]["spearman"], (-1, 1))
    assert v.loc[("no_controls", "precision", False), ["ci_low", "ci_high", "p"]].tolist() == pytest.approx([lo, hi, p])
    for _, r in v.iterrows():
        if np.isfinite(r["macro_ci_low"]):
            assert r["macro_ci_low"] - 1e-9 <= r["macro_spearman"] <= r["macro_ci_high"] + 1e-9


def test_a_metric_that_only_ranks_isa_last_scores_only_with_isa():
    cov = _coverage(32, seed=1)
    rng = np.random.default_rng(2)
    v, _ = cue_verdict_frames(
        _scores(cov, lambda r: -1.0 if r["explainer"] == "isa" else rng.random()),
        cov,
        EXPLAINERS,
        {"m": ("M", True)},
        truths=("precision",),
        n_boot=200,
        seed=0,
    )
    v = v.set_index(["explainers", "with_isa"])
    with_isa, without = v.loc[("no_controls", True), "spearman"], v.loc[("no_controls", False), "spearman"]
    assert with_isa > 0.2 and v.loc[("no_controls", True), "verdict"] == "recovers"
    assert abs(without) < 0.15 and v.loc[("no_controls", False), "verdict"].startswith("undecided")


# ------------------------------------------------------------------ endpoint


def _rho_frame(values: dict, truth="precision", with_isa=True, model="cnn", explainers="no_controls"):
    """{curve: per-image Spearman list} -> cue_verdict_frames' per-image rows."""
    return pd.DataFrame(
        [
            {
                "model": model,
                "curve": c,
                "metric": c,
                "explainers": explainers,
                "truth": truth,
                "with_isa": with_isa,
                "image": i,
                "spearman": x,
            }
            for c, xs in values.items()
            for i, x in enumerate(xs)
            if x is not None
        ]
    )


def test_endpoint_cells_on_hand_made_frames():
    paper = [0.2, 0.4, -0.1, 0.3, 0.0, 0.5]
    sym = [0.6, 0.5, 0.3, 0.3, 0.4, None]  # image 5 has no symmetric value: left out of that pair
    bottom = [0.1, 0.4, -0.3, 0.2, -0.2, 0.4]
    rho = pd.concat(
        [
            _rho_frame({"fud": paper, "fud_symmetric": sym, "fud_bottom": bottom}),
            _rho_frame({"fud": paper, "fud_symmetric": sym, "fud_bottom": bottom}, with_isa=False),
            _rho_frame({"fud": paper, "fud_symmetric": paper}, truth="mass"),
            _rho_frame({"fud": [1.0] * 6, "fud_symmetric": [-1.0] * 6}, explainers="all"),
        ]
    )
    e = endpoint_rows(rho)
    assert list(e.columns[:4]) == ["model", "comparison", "truth", "with_isa"]
    assert {"estimate", "ci_low", "ci_high", "p", "n_images"} <= set(e.columns)
    assert set(e["explainers"]) == {"no_controls"}  # the `all` set is not an endpoint cell
    cell = e.set_index(["comparison", "truth", "with_isa"])
    sym_diff = np.array(sym[:5]) - np.array(paper[:5])
    assert cell.loc[
        ("symmetric_minus_paper", "precision", True), ["estimate", "ci_low", "ci_high", "p"]
    ].tolist() == pytest.approx(list(mean_interval(sym_diff, (-2, 2))))
    assert cell.loc[("symmetric_minus_paper", "precision", True), "n_images"] == 5
    assert cell.loc[("bottom_minus_paper", "precision", True), "estimate"] == pytest.approx(-0.7 / 6)
    assert cell.loc[("bottom_minus_paper", "precision", True), "n_images"] == 6
    assert cell.loc[("symmetric_minus_paper", "mass", True), "estimate"] == 0
    assert cell.loc[("symmetric_minus_paper", "mass", True), "p"] == 1
    assert ("bottom_minus_paper", "mass", True) not in cell.index  # no bottom curve under that truth
    assert e["primary"].sum() == 2 and set(e[e["primary"]]["truth"]) == {"precision"}
    assert e[e["primary"]]["with_isa"].all()
    # ordered: model, comparison, precision / auroc / mass, with ISA first
    assert e["truth"].tolist()[:2] == ["precision", "precision"] and e["with_isa"].tolist()[:2] == [True, False]


def test_endpoint_cells_carry_both_curves_macro_spearman():
    cov = _coverage(12, seed=3)
    rng = np.random.default_rng(4)
    per_image = pd.concat(
        [
            _scores(cov, lambda r: r["precision"]).assign(curve="fud_symmetric"),  # the truth itself
            _scores(cov, lambda r: r["precision"] + rng.normal(0, 1.0)).assign(curve="fud"),  # a noisy copy
        ]
    )
    curves = {"fud": ("FUD", True), "fud_symmetric": ("FUD symmetric", True)}
    v, rho = cue_verdict_frames(per_image, cov, EXPLAINERS, curves, truths=("precision",), n_boot=100, seed=0)
    e = endpoint_rows(rho, verdicts=v).set_index(["comparison", "with_isa"])
    assert list(e.index) == [("symmetric_minus_paper", True), ("symmetric_minus_paper", False)]
    cell = e.loc[("symmetric_minus_paper", True)]
    assert cell["macro_challenger"] == pytest.approx(1) and cell["macro_challenger_low"] == pytest.approx(1)
    paper = v[(v["curve"] == "fud") & (v["explainers"] == "no_controls") & v["with_isa"]].iloc[0]
    assert [cell["macro_paper"], cell["macro_paper_low"], cell["macro_paper_high"]] == pytest.approx(
        [paper["macro_spearman"], paper["macro_ci_low"], paper["macro_ci_high"]]
    )
    assert cell["macro_difference"] == pytest.approx(1 - paper["macro_spearman"])
    assert cell["estimate"] > 0 and cell["p"] < 0.05  # the exact copy agrees better per image
    assert endpoint_rows(rho)["macro_paper"].isna().all()  # without the verdicts: no macro columns filled
