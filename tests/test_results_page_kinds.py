"""The results page reads each kind of metric as its kind asks (EvaluatorSpec.category): faithfulness
against `random`, localisation against the mask itself (its ceiling), robustness and complexity against
the trivial maps that win them (never "worse than random" as bad news), randomisation as a pass / fail
check per explainer; one interval per cell, the score tables' own; counts to two significant figures;
explainers named as the config names them. Unit tests on synthetic scores and fake metrics of each
category (plug-in EvaluatorSpecs written to a temporary file), no workflow."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

from fudbench.evaluators.base import COMPLEXITY, FAITHFULNESS, LOCALISATION, RANDOMISATION, ROBUSTNESS
from fudbench.report import results_page as rp

PLUGIN = '''
from dataclasses import dataclass

from fudbench.core.auc import mean_of
from fudbench.core.settings import Settings
from fudbench.evaluators.base import CurveSpec, EvaluatorSpec


@dataclass(frozen=True)
class NoSettings(Settings):
    pass


def _spec(name, label, higher, value_range, category):
    curve = CurveSpec(name, label, higher, mean_of("value"), value_range=value_range)
    return EvaluatorSpec(name, label, NoSettings, lambda s: [curve], "nowhere:build", category=category)


FAITH = _spec("fake_faith", "Faith", True, (0.0, 1.0), "faithfulness")
MAXSENS = _spec("fake_maxsens", "Max-Sens", False, (0.0, float("inf")), "robustness")
SPARSE = _spec("fake_sparse", "Sparse", True, (0.0, 1.0), "complexity")
MPRT = _spec("fake_mprt", "MPRT", False, (-1.0, 1.0), "randomisation")
'''

EXPLAINERS = {"gradcam": {"method": "cam"}, "sm": {}, "random": {}, "oracle": {}}
N = 8

# per curve, per explainer: the mean of its per-image scores (a small spread is added image by image)
MEANS = {
    "fake_faith": {"gradcam": 0.8, "sm": 0.5, "random": 0.3, "oracle": 0.7},
    "rma": {"gradcam": 0.6, "sm": 0.4, "random": 0.2, "oracle": 1.0},
    # a random map here is the least sensitive: no bad news for the others
    "fake_maxsens": {"gradcam": 0.5, "sm": 0.9, "random": 0.01, "oracle": 0.02},
    "fake_sparse": {"gradcam": 0.7, "sm": 0.5, "random": 0.2, "oracle": 0.9},
    "fake_mprt": {"gradcam": 0.1, "sm": 0.9, "random": 0.98, "oracle": 0.55},
}


@pytest.fixture
def evaluators(tmp_path):
    path = tmp_path / "kinds.py"
    path.write_text(textwrap.dedent(PLUGIN))
    return {
        "fake_faith": {"method": f"{path}:FAITH"},
        "rma": {},
        "fake_maxsens": {"method": f"{path}:MAXSENS"},
        "fake_sparse": {"method": f"{path}:SPARSE"},
        "fake_mprt": {"method": f"{path}:MPRT"},
    }


def _curve_name(entry: str, evaluators: dict) -> str:
    """The records' curve of an entry: an entry aliasing a plug-in writes <curve>@<entry>."""
    from fudbench.evaluators import entry_curves

    return entry_curves(entry, evaluators[entry])[0].name


def per_image_scores(evaluators: dict) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for entry, means in MEANS.items():
        curve = _curve_name(entry, evaluators)
        for ex, mean in means.items():
            spread = 0.0 if (entry, ex) == ("rma", "oracle") else 0.03  # the mask scores RMA 1 exactly
            for image in range(N):
                score = mean + spread * rng.standard_normal()
                if (entry, ex) == ("fake_mprt", "oracle"):  # a similarity whose interval straddles the line
                    score = 0.3 if image % 2 else 0.8
                score = float(np.clip(score, 0.0, None) if entry == "fake_maxsens" else np.clip(score, 0.0, 1.0))
                rows.append({"model": "cnn", "explainer": ex, "curve": curve, "image": image, "score": score})
    return pd.DataFrame(rows)


@pytest.fixture
def page(evaluators):
    per_image = per_image_scores(evaluators)
    summary, paired = rp.summarise(per_image, EXPLAINERS, evaluators, ["cnn"], 0.95, n_boot=200, seed=3)
    return per_image, summary, paired


def _rows(summary, label):
    return summary[summary["metric"].str.startswith(label)].set_index("explainer")


def test_each_metric_carries_its_evaluators_category(page):
    _, summary, _ = page
    kinds = dict(zip(summary["metric"].str.split(" ").str[0], summary["category"]))
    assert kinds == {
        "Faith": FAITHFULNESS,
        "RMA": LOCALISATION,
        "Max-Sens": ROBUSTNESS,
        "Sparse": COMPLEXITY,
        "MPRT": RANDOMISATION,
    }


def test_faithfulness_is_compared_with_random_image_by_image(page):
    _, summary, paired = page
    faith = _rows(summary, "Faith")
    assert faith.loc["gradcam", "verdict"] == rp.BETTER and faith.loc["gradcam", "n_pairs"] == N
    assert set(paired["metric"].str.split(" ").str[0]) == {"Faith", "RMA"}  # only the kinds compared


def test_robustness_and_complexity_are_never_called_worse_than_random(page):
    """A random map is the least sensitive here; the page must not read that as bad news for the others."""
    _, summary, _ = page
    for label in ("Max-Sens", "Sparse"):
        rows = _rows(summary, label)
        assert (rows["versus"] == "").all() and (rows["n_pairs"] == 0).all() and (rows["verdict"] == "").all()
    text = "\n".join(rp.sentences(summary, "cnn", "random"))
    robust = next(x for x in text.splitlines() if x.startswith("Max-Sens"))
    assert "a constant map, the same whatever the input, scores 0.000, the best possible value" in robust
    assert "robustness alone does not make a map good" in robust
    assert "no map is compared with random here" in robust and "``random`` 0.0" in robust  # a map, not a yardstick
    sparse = next(x for x in text.splitlines() if x.startswith("Sparse"))
    assert "all its weight on one pixel scores at or near 1.000" in sparse and "a constant map the worst" in sparse
    for line in text.splitlines():
        if line.startswith(("Max-Sens", "Sparse")):
            assert "worse" not in line and "ahead of" not in line and "better than random" not in line


def test_randomisation_is_a_pass_fail_check_per_explainer_with_its_interval(page):
    _, summary, _ = page
    rows = _rows(summary, "MPRT")
    assert rows.loc["gradcam", "verdict"] == rp.PASSES  # similarity about 0.1: the map changed
    assert rows.loc["sm", "verdict"] == rp.FAILS and rows.loc["random", "verdict"] == rp.FAILS
    assert rows.loc["oracle", "verdict"].startswith("not decided")  # interval around the 0.5 line
    head = rp.sentence_parts(summary, "cnn", "random")[0]
    check = next(x for x in head if x.startswith("Randomisation check MPRT"))
    assert "passed by ``gradcam``" in check and "failed by ``sm`` and ``random``" in check
    detail = next(x for x in rp.sentences(summary, "cnn", "random") if x.startswith("MPRT"))
    low, high = rows.loc["gradcam", ["ci_low", "ci_high"]]
    assert f"``gradcam`` {rp._interval_text(rows.loc['gradcam', 'mean'], low, high)}" in detail
    assert "lies below 0.5" in detail


def test_localisation_reads_the_mask_as_its_ceiling_not_as_a_method_near_a_decision(page):
    _, summary, _ = page
    rma = _rows(summary, "RMA")
    assert rma.loc["oracle", "verdict"] == rp.CEILING and rma.loc["oracle", "n_pairs"] == 0
    assert rma.loc["gradcam", "n_pairs"] == N  # the other maps: against random, the floor
    text = rp.sentences(summary, "cnn", "random")
    ceiling = next(x for x in text if x.startswith("RMA"))
    assert "read against the mask itself, its ceiling: the mask as a map (``oracle``) scores 1.000" in ceiling
    near = [x for x in text if "nearest to a decision" in x]
    assert not any("``oracle`` on RMA" in x for x in near)


def test_the_table_groups_metrics_by_kind_and_compares_only_where_the_kind_allows(page):
    _, summary, _ = page
    table = rp.html_table(summary, "cnn", list(EXPLAINERS))
    assert table.startswith("<div class='fud-panel fud-table'>")
    rows = table.split("<tr")
    kind_rows = [r for r in rows if "fud-kind" in r]
    assert [r.split("'>")[-1].split(":")[0] for r in kind_rows] == [
        "faithfulness",
        "localisation",
        "robustness",
        "randomisation",
        "complexity",
    ]
    robust = next(r for r in rows if "Max-Sens" in r)
    assert "vs random" not in robust and "<b>" not in robust  # no comparison, no 'best' for a trivial win
    assert "the mask: ceiling" in next(r for r in rows if "'>RMA<br>" in r)
    mprt = next(r for r in rows if "'>MPRT [" in r)
    assert "passes" in mprt and "fails" in mprt


def test_a_cell_shows_the_same_interval_as_the_score_tables(page, evaluators):
    """One interval per cell: the page's is the tables' bootstrap (same resamples, same seed)."""
    from fudbench.report.tables import score_table

    per_image, summary, _ = page
    curve = _curve_name("fake_faith", evaluators)
    label = summary.loc[summary["curve"] == curve, "metric"].iloc[0]
    table, tex = score_table(
        per_image, ["cnn"], list(EXPLAINERS), [curve], {curve: (label, True)}, 200, 0.95, 3, "c", "t"
    )
    for ex in EXPLAINERS:
        page_row = summary[(summary["curve"] == curve) & (summary["explainer"] == ex)].iloc[0]
        table_row = table[table["explainer"] == ex].iloc[0]
        assert (page_row["mean"], page_row["ci_low"], page_row["ci_high"]) == pytest.approx(
            (table_row["mean"], table_row["ci_low"], table_row["ci_high"]), abs=1e-12
        )
    # the tables name explainers as the config does
    assert "& gradcam &" in tex and "GRADCAM" not in tex and "RANDOM" not in tex


@pytest.mark.parametrize(
    "count, text",
    [(660435, "660,000"), (53, "53"), (8.0, "8"), (1234, "1,200"), (99.6, "100"), (15501, "16,000")],
)
def test_images_to_decide_is_given_to_two_significant_figures(count, text):
    assert rp.count_text(count) == text


def test_without_random_no_kind_claims_a_comparison_and_the_mask_is_still_the_ceiling(evaluators):
    per_image = per_image_scores(evaluators)
    per_image = per_image[per_image["explainer"] != "random"]
    explainers = {e: c for e, c in EXPLAINERS.items() if e != "random"}
    summary, paired = rp.summarise(per_image, explainers, evaluators, ["cnn"], 0.95, n_boot=200, seed=3)
    assert paired.empty
    table = rp.html_table(summary, "cnn", list(explainers))
    assert "against random" not in table and "this run has no random map" in table
    text = rp.sentences(summary, "cnn", None)
    assert any(x.startswith("RMA (localisation") and "its ceiling" in x for x in text)
    assert not any(x.startswith("RMA (higher is better): best mean ``oracle``") for x in text)
