"""ROAD and SRG final scores (analysis.curves: per-image AUCs, ROAD accuracy,
MRG / LRG / SRG) and their appendix tables, against values worked out by hand
on two images.

The per-image scores go through the same steps as the workflow's
aggregate_records and table jobs: per_image_scores + derived_scores, then
score_table with the table's SCORE_TABLES entry.
"""

import pandas as pd
import pytest

from fudbench.report import sanity
from fudbench.analysis.curves import derived_scores, per_image_scores
from fudbench.core.io import write_csv, write_text
from fudbench.report.paper_tables import SCORE_TABLES, score_labels, score_table_caption
from fudbench.report.tables import score_table


def _rows(curve, image, removed, confidence, accuracy=None):
    return [
        {
            "model": "cnn",
            "explainer": "ig",
            "curve": curve,
            "image": image,
            "step": j,
            "removed": r,
            "kept": 1 - r,
            "confidence": c,
            **({"accuracy": accuracy[j]} if accuracy else {}),
        }
        for j, (r, c) in enumerate(zip(removed, confidence))
    ]


def _per_image(records):
    per_image = per_image_scores(records)
    return pd.concat([per_image, derived_scores(records, per_image)], ignore_index=True)


def _table(name, per_image, tmp_path=None):
    spec, labels = SCORE_TABLES[name], score_labels()
    curves = [c for c in labels if spec["select"](c) and c in set(per_image["curve"])]
    summary, tex = score_table(
        per_image,
        ["cnn"],
        ["ig"],
        curves,
        labels,
        400,
        0.95,
        0,
        caption=score_table_caption(name, curves),
        tex_label=spec["tex_label"],
    )
    if tmp_path is not None:
        write_csv(tmp_path / f"{name}.csv", summary, index=False, float_format="%.6g")
        write_text(tmp_path / f"{name}.tex", tex)
    return summary.set_index("metric"), tex


P = [0.1, 0.5, 0.9]


def _road_records():
    """Normalised trapezoid over removed in [0.1, 0.9] (h = 0.4, span 0.8):
    image 0  MoRF conf .8 .4 .2 -> (.4*.6 + .4*.3)/.8 = .45;   acc 1 0 0 -> .25
             LeRF (removed .9 .5 .1, i.e. listed in reverse) conf .9 .9 .95 -> (.4*.925 + .4*.9)/.8 = .9125;
                  acc 1 1 1 -> 1
    image 1  MoRF conf .6 .6 .6 -> .6;   acc 1 1 0 -> (.4 + .2)/.8 = .75
             LeRF conf at removed .1 .5 .9: .7 .5 .3 -> (.4*.6 + .4*.4)/.8 = .5;  acc 1 0 0 -> .25"""
    rows = []
    rows += _rows("road_morf", 0, P, [0.8, 0.4, 0.2], [1, 0, 0])
    rows += _rows("road_lerf", 0, P[::-1], [0.9, 0.9, 0.95], [1, 1, 1])
    rows += _rows("road_morf", 1, P, [0.6, 0.6, 0.6], [1, 1, 0])
    rows += _rows("road_lerf", 1, P, [0.7, 0.5, 0.3], [1, 0, 0])
    return pd.DataFrame(rows)


ROAD = {
    "ROAD MoRF": (0.45, 0.6, False),
    "ROAD LeRF": (0.9125, 0.5, True),
    "ROAD MoRF acc.": (0.25, 0.75, False),
    "ROAD LeRF acc.": (1.0, 0.25, True),
}


def test_road_per_image_scores_by_hand():
    per_image = _per_image(_road_records()).set_index(["curve", "image"])["score"]
    curve = {
        "ROAD MoRF": "road_morf",
        "ROAD LeRF": "road_lerf",
        "ROAD MoRF acc.": "road_morf_accuracy",
        "ROAD LeRF acc.": "road_lerf_accuracy",
    }
    for label, (a, b, _) in ROAD.items():
        assert per_image[curve[label], 0] == pytest.approx(a), label
        assert per_image[curve[label], 1] == pytest.approx(b), label


def test_road_table_by_hand(tmp_path):
    s, tex = _table("road_scores", _per_image(_road_records()), tmp_path)
    assert list(s.index) == list(ROAD)
    for label, (a, b, higher) in ROAD.items():
        assert s.loc[label, "mean"] == pytest.approx((a + b) / 2), label
        assert (s.loc[label, "ci_low"], s.loc[label, "ci_high"]) == pytest.approx((min(a, b), max(a, b)))
        assert s.loc[label, "higher_is_better"] == higher, label
    assert "ROAD MoRF $\\downarrow$ & ROAD LeRF $\\uparrow$" in tex
    assert "cnn & ig & 0.5250\\,{\\scriptsize$\\pm$0.0750} & 0.706" in tex  # LeRF 0.70625: either rounding
    assert sanity.tex_matches_csv(tmp_path) == []


def _srg_records():
    """AUC over the occluded fraction 0, .5, 1 (h = .5, span 1), imputer 'mean':
    image 0  MIF 1 .2 0 -> .35;  LIF 1 .9 .5 -> .825;  R-OMS 1 .6 .2 -> .6
             MRG = R-OMS - MIF = .25, LRG = LIF - R-OMS = .225, SRG = LIF - MIF = .475
    image 1  MIF 1 .5 .5 -> .625;  LIF 1 1 1 -> 1;  R-OMS 1 .7 .4 -> .7
             MRG .075, LRG .3, SRG .375"""
    x = [0.0, 0.5, 1.0]
    rows = []
    for image, (mif, lif, roms) in enumerate(
        [([1, 0.2, 0], [1, 0.9, 0.5], [1, 0.6, 0.2]), ([1, 0.5, 0.5], [1, 1, 1], [1, 0.7, 0.4])]
    ):
        rows += _rows("srg_mif__mean", image, x, mif)
        rows += _rows("srg_lif__mean", image, x, lif)
        rows += _rows("srg_roms__mean", image, x, roms)
    return pd.DataFrame(rows)


SRG = {"MRG (mean)": (0.25, 0.075), "LRG (mean)": (0.225, 0.3), "SRG (mean)": (0.475, 0.375)}


def test_srg_per_image_gains_by_hand():
    per_image = _per_image(_srg_records()).set_index(["curve", "image"])["score"]
    assert (
        per_image["srg_mif__mean", 0],
        per_image["srg_lif__mean", 0],
        per_image["srg_roms__mean", 0],
    ) == pytest.approx((0.35, 0.825, 0.6))
    for label, (a, b) in SRG.items():
        curve = label[:3].lower() + "__mean"
        assert (per_image[curve, 0], per_image[curve, 1]) == pytest.approx((a, b)), label


def test_srg_table_by_hand(tmp_path):
    s, tex = _table("srg_scores", _per_image(_srg_records()), tmp_path)
    assert list(s.index) == list(SRG) and s["higher_is_better"].all()
    for label, (a, b) in SRG.items():
        assert s.loc[label, "mean"] == pytest.approx((a + b) / 2), label
        assert (s.loc[label, "ci_low"], s.loc[label, "ci_high"]) == pytest.approx((min(a, b), max(a, b)))
    assert (
        "cnn & ig & 0.1625\\,{\\scriptsize$\\pm$0.0875} & 0.2625\\,{\\scriptsize$\\pm$0.0375} & "
        "0.4250\\,{\\scriptsize$\\pm$0.0500}" in tex
    )
    assert sanity.tex_matches_csv(tmp_path) == [] and sanity.srg_gains_add_up(tmp_path) == []


def test_srg_identity_check_catches_a_wrong_gain(tmp_path):
    _table("srg_scores", _per_image(_srg_records()), tmp_path)
    csv = pd.read_csv(tmp_path / "srg_scores.csv")
    csv.loc[csv.metric == "LRG (mean)", "mean"] += 0.01
    csv.to_csv(tmp_path / "srg_scores.csv", index=False)
    assert len(sanity.srg_gains_add_up(tmp_path)) == 1
