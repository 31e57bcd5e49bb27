"""What the curve specs drive (issue 28): the sanity checks' value ranges and
ranking-only set, the appendix table's caption, and the meta-evaluation's
default metrics come from CurveSpec fields, so a new metric needs no edit in
the analysis or report code."""

import math

import pandas as pd
import pytest

from fudbench.report import sanity
from fudbench.analysis.curves import CATALOGUE
from fudbench.evaluators import configured_curves
from fudbench.evaluators.base import CurveSpec
from fudbench.report.paper_tables import appendix_caption


@pytest.mark.parametrize("curve", sorted(c for c, s in CATALOGUE.items() if s.table))
def test_every_table_curve_declares_a_range_the_sanity_check_uses(curve):
    spec = CATALOGUE[curve]
    lo, hi = spec.value_range
    assert lo < hi
    assert sanity._range("score", spec.label) == spec.value_range
    assert sanity._range("score", f"{spec.label} [my_variant]") == spec.value_range  # aliased entries too


def test_a_value_outside_its_curves_range_is_reported(tmp_path):
    """INFID may not be negative, FUD symmetric may; unknown labels are not judged."""
    rows = [
        {
            "model": "cnn",
            "explainer": "ig",
            "metric": m,
            "mean": v,
            "ci_low": v - 0.01,
            "ci_high": v + 0.01,
            "higher_is_better": True,
        }
        for m, v in (("INFID", -0.2), ("FUD symmetric", -0.5), ("My score", -7.0))
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "table7_scores.csv", index=False)
    (tmp_path / "table7_scores.tex").write_text("")
    problems = sanity.values_in_range(tmp_path, ["table7_scores"])
    assert problems and all("'INFID'" in p for p in problems)  # its mean and both bounds


def test_ranking_only_metrics_come_from_the_specs():
    labels = sanity.ranking_only_metrics()
    assert {"Insertion", "Deletion", "Distill blur", "Gevaert del. constant"} <= set(labels)
    assert not {"Distill uniform", "Gevaert del. noise", "FUD", "ROAD MoRF"} & set(labels)  # noise or sampling
    assert all(CATALOGUE[c].ranking_only for c in CATALOGUE if CATALOGUE[c].label in labels)


def test_appendix_caption_lists_the_configured_curves_once_each(repo):
    from fudbench.config.validate import load_config

    curves = [
        c
        for c, s in configured_curves(load_config(repo / "config/config.yaml")["evaluators"]).items()
        if s.table == "appendix_scores"
    ]
    caption = appendix_caption(curves)
    assert caption.count("Distill baselines") == 1 and "IDSDS (Spearman" in caption
    assert "FUD symmetric" not in caption  # not configured in the default profile
    assert "FUD symmetric (keep-top" in appendix_caption(["fud_symmetric", "idsds"])
    assert math.isfinite(len(caption)) and caption.endswith("CI.")


def test_a_new_curve_gets_defaults_that_need_no_edit_elsewhere():
    spec = CurveSpec("irof", "IROF", True)
    assert spec.value_range == (-1.0, 1.0) and not spec.ranking_only and spec.caption is None
    assert appendix_caption(["nonexistent_curve"]).startswith("Appendix protocols' scores: nonexistent_curve;")


def test_single_fill_evaluators_share_their_checks_and_assets():
    """IDSDS and ROAD declare one fill under their own key (SingleFillSettings):
    an unknown fill is named under that key and a fill that reads reference
    images asks for them, for every registered evaluator of that kind."""
    from fudbench.evaluators import EVALUATORS, spec
    from fudbench.evaluators.imputing import SingleFillSettings

    single = {m: spec(m).settings for m in EVALUATORS if issubclass(spec(m).settings, SingleFillSettings)}
    assert {"idsds", "road"} <= set(single)
    for method, cls in single.items():
        key = cls.FILL_KEY
        problems = cls(**{key: "nope"}).problems(f"evaluators.{method}")
        assert len(problems) == 1 and f"'evaluators.{method}.{key}'" in problems[0]
        resolved = spec(method).resolve({key: "train_set"})
        assert spec(method).assets(resolved) == {"reference_images"}
