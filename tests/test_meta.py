"""Meta-evaluation: Spearman with the ground-truth ranking of degraded explainers
(macro / micro, orientation), agreement between metrics, table and heatmap."""

import numpy as np
import pandas as pd
import pytest

from fudbench.meta.families import (
    average_ranks,
    degraded_explainers,
    ground_truth_correlations,
    kendall_rows,
    metric_agreement,
    spearman,
)
from fudbench.report.meta import agreement_heatmap, meta_table

# curve -> (table name, higher is better, score fn); the fns are not used by the meta-evaluation
SCORES = {
    "up": ("Up", True, None),
    "down": ("Down", False, None),
    "flat": ("Flat", True, None),
    "single": ("Single", True, None),
}
STEPS = {"up": "value", "down": "value", "flat": "value"}
DEGRADED = {"ig_d00": ("ig", 0.0), "ig_d20": ("ig", 0.2), "ig_d10": ("ig", 0.1), "ig_d30": ("ig", 0.3)}


def _per_image(values: dict, model="cnn", n_images=6, noise=0.0, seed=0):
    """values: {curve: {explainer: mean score}} -> per-image rows (optionally noisy)."""
    rng = np.random.default_rng(seed)
    rows = [
        {"model": model, "explainer": ex, "curve": curve, "image": i, "score": v + noise * rng.standard_normal()}
        for curve, per_ex in values.items()
        for ex, v in per_ex.items()
        for i in range(n_images)
    ]
    return pd.DataFrame(rows)


def _row(frame, metric, kind):
    return frame[(frame.metric == metric) & (frame.kind == kind)].iloc[0]


def test_rank_statistics():
    np.testing.assert_allclose(average_ranks([3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0])
    assert spearman([4, 3, 2, 1], [10, 5, 1, 0]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [10, 5, 1, 0]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1, 1], [10, 5, 1, 0]))  # a metric that ties everything ranks nothing
    assert float(kendall_rows(np.array([1, 2, 3.0]), np.array([2, 4, 9.0]))) == pytest.approx(1.0)


def test_degraded_explainers_from_config():
    config = {
        "ig": {"n_steps": 8},
        "ig_d10": {"method": "degrade", "base": "ig", "fraction": 0.1},
        "oracle_d00": {"method": "degrade", "base": "oracle", "fraction": 0},
        "random": {},
    }
    assert degraded_explainers(config) == {"ig_d10": ("ig", 0.1), "oracle_d00": ("oracle", 0.0)}
    with pytest.raises(ValueError, match="explainers.bad.fraction"):
        degraded_explainers({"bad": {"method": "degrade", "base": "ig"}})


def test_perfect_reversed_and_orientation():
    p = {e: f for e, (_, f) in DEGRADED.items()}
    per_image = _per_image(
        {
            "up": {e: 1 - v for e, v in p.items()},  # higher better, falls with noise: perfect
            "down": {e: 1 - v for e, v in p.items()},  # lower better, yet falls with noise: reversed
            "flat": {e: 0.5 for e in p},  # no ranking at all
        }
    )
    out = ground_truth_correlations(
        per_image, DEGRADED, None, n_boot=50, seed=0, curve_scores=SCORES, step_values=STEPS
    )
    assert _row(out, "Up", "macro")["spearman"] == pytest.approx(1.0)
    assert _row(out, "Down", "macro")["spearman"] == pytest.approx(-1.0)
    assert np.isnan(_row(out, "Flat", "macro")["spearman"])
    up = _row(out, "Up", "macro")
    assert up["ci_low"] == pytest.approx(1.0) and up["ci_high"] == pytest.approx(1.0)
    assert up["n_images"] == 6 and up["n_explainers"] == 4 and up["family"] == "ig"
    # no records: micro is undefined
    assert np.isnan(_row(out, "Up", "micro")["spearman"])


def test_bootstrap_interval_brackets_a_noisy_estimate():
    p = {e: f for e, (_, f) in DEGRADED.items()}
    per_image = _per_image({"up": {e: 1 - v for e, v in p.items()}}, n_images=30, noise=0.3, seed=1)
    out = ground_truth_correlations(per_image, DEGRADED, None, n_boot=300, seed=0, curve_scores=SCORES)
    r = _row(out, "Up", "macro")
    assert -1 <= r["ci_low"] <= r["spearman"] <= r["ci_high"] <= 1
    assert r["ci_high"] - r["ci_low"] > 0.05  # the image noise shows in the interval


def test_micro_differs_from_macro_on_a_hand_made_frame():
    """Two explainer orders that cross: step 0 ranks perfectly, step 1 reversed,
    step 2 ties everything (undefined, left out). Macro (on the AUC) is perfect,
    micro averages +1 and -1 to 0."""
    members = ["ig_d00", "ig_d10", "ig_d20"]
    degraded = {e: DEGRADED[e] for e in members}
    step_values = {0: [3.0, 2.0, 1.0], 1: [0.5, 1.0, 1.5], 2: [1.0, 1.0, 1.0]}
    recs, scores = [], []
    for k, ex in enumerate(members):
        for image in range(4):
            for step, vals in step_values.items():
                recs.append(
                    {"model": "cnn", "explainer": ex, "curve": "up", "image": image, "step": step, "value": vals[k]}
                )
            scores.append(
                {
                    "model": "cnn",
                    "explainer": ex,
                    "curve": "up",
                    "image": image,
                    "score": np.mean([v[k] for v in step_values.values()]),
                }
            )
            # a single-value metric: micro is not defined
            recs.append(
                {"model": "cnn", "explainer": ex, "curve": "single", "image": image, "step": 0, "value": np.nan}
            )
            scores.append({"model": "cnn", "explainer": ex, "curve": "single", "image": image, "score": -k})
    out = ground_truth_correlations(
        pd.DataFrame(scores), degraded, pd.DataFrame(recs), n_boot=20, seed=0, curve_scores=SCORES, step_values=STEPS
    )
    assert _row(out, "Up", "macro")["spearman"] == pytest.approx(1.0)
    micro = _row(out, "Up", "micro")
    assert micro["spearman"] == pytest.approx(0.0) and micro["n_steps"] == 2
    assert _row(out, "Single", "macro")["spearman"] == pytest.approx(1.0)
    assert np.isnan(_row(out, "Single", "micro")["spearman"])


def test_no_degraded_explainers_is_a_clear_error():
    with pytest.raises(ValueError, match="method: degrade"):
        ground_truth_correlations(_per_image({"up": {"a": 1}}), {}, None, curve_scores=SCORES)


def test_agreement_matrix_symmetric_with_unit_diagonal():
    explainers = ["sm", "ig", "gig", "random"]
    base = dict(zip(explainers, [0.9, 0.7, 0.4, 0.1]))
    per_image = pd.concat(
        [
            _per_image(
                {
                    "up": base,
                    "down": {e: -v for e, v in base.items()},  # same ranking, other direction
                    "flat": dict(zip(explainers, [0.1, 0.4, 0.7, 0.9])),
                },
                model=m,
                n_images=5,
                noise=0.01,
                seed=s,
            )
            for s, m in enumerate(["cnn", "vit"])
        ]
    )
    matrices, long = metric_agreement(per_image, explainers, n_boot=50, seed=0, curve_scores=SCORES)
    assert set(matrices) == {"cnn", "vit"}
    m = matrices["cnn"]
    assert list(m.index) == ["Up", "Down", "Flat"] == list(m.columns)
    np.testing.assert_allclose(m.to_numpy(), m.to_numpy().T)
    np.testing.assert_allclose(np.diag(m.to_numpy()), 1.0)
    assert m.loc["Up", "Down"] == pytest.approx(1.0)  # oriented by higher_is_better
    assert m.loc["Up", "Flat"] == pytest.approx(-1.0)  # opposite ranking
    assert len(long) == 2 * 9 and long[["tau", "ci_low", "ci_high"]].notna().all().all()


def test_table_and_heatmap_are_written(tmp_path):
    p = {e: f for e, (_, f) in DEGRADED.items()}
    per_image = pd.concat(
        [
            _per_image(
                {"up": {e: 1 - v for e, v in p.items()}, "down": {e: v for e, v in p.items()}},
                model=m,
                noise=0.05,
                seed=k,
            )
            for k, m in enumerate(["cnn", "vit"])
        ]
    )
    corr = ground_truth_correlations(per_image, DEGRADED, None, n_boot=30, seed=0, curve_scores=SCORES)
    csv, tex = meta_table(corr, models=["cnn", "vit"], families=["ig"])
    assert list(csv["model"].unique()) == ["cnn", "vit"]
    assert np.isfinite(csv.loc[csv.kind == "macro", ["spearman", "ci_low", "ci_high"]].to_numpy()).all()
    assert "\\toprule" in tex and "cnn ig macro" in tex and "Down $\\downarrow$" in tex
    assert tex.count("\\\\") == 1 + 2  # header + one row per metric
    matrices, _ = metric_agreement(per_image, list(p), n_boot=0, curve_scores=SCORES)
    paths = [tmp_path / "agreement.png", tmp_path / "agreement.pdf"]
    fig = agreement_heatmap(matrices, paths, {"dpi": 50})
    assert len(fig.axes) == 3  # two panels and the colour bar
    assert all(p.stat().st_size > 1000 for p in paths)
    with pytest.raises(ValueError, match="no agreement matrix"):
        agreement_heatmap({}, None)


def test_metric_selection_by_curve_or_table_name():
    explainers = ["sm", "ig", "gig"]
    per_image = _per_image({c: dict(zip(explainers, [3.0, 2.0, 1.0])) for c in ("up", "down", "flat")})
    matrices, _ = metric_agreement(per_image, explainers, n_boot=0, curve_scores=SCORES, curves=["up", "Flat"])
    assert list(matrices["cnn"].index) == ["Up", "Flat"]
    with pytest.raises(ValueError, match="unknown metric"):
        metric_agreement(per_image, explainers, n_boot=0, curve_scores=SCORES, curves=["nope"])


def test_ties_survive_rounding():
    """Means that differ only by summation order rank as tied (bootstrap replicates
    sum the same values in another order than the point estimate)."""
    a = 0.1 + 0.2 + 0.3
    b = 0.3 + 0.2 + 0.1  # != a in floating point
    assert a != b
    np.testing.assert_allclose(average_ranks([a, b, 1.0]), [1.5, 1.5, 3.0])
    assert float(kendall_rows(np.array([a, b, 1.0]), np.array([0.0, 0.0, 1.0]))) == pytest.approx(1.0)


def test_agreement_is_refused_with_fewer_than_three_explainers():
    """Two explainers: any two metrics' rankings agree or disagree totally (tau
    = +-1), which says nothing about the metrics: NaN, with a note."""
    per_image = _per_image({"up": {"random": 0.2, "background": 0.1}, "flat": {"random": 0.1, "background": 0.2}})
    matrices, long = metric_agreement(per_image, ["random", "background"], n_boot=20, curve_scores=SCORES)
    m = matrices["cnn"].to_numpy()
    assert np.isnan(m[0, 1]) and np.isnan(m[1, 0])
    off = long[long.metric_a != long.metric_b]
    assert off["tau"].isna().all() and off["note"].str.contains("fewer than 3 explainers").all()
    three = _per_image({"up": {"a": 3.0, "b": 2.0, "c": 1.0}, "flat": {"a": 1.0, "b": 2.0, "c": 3.0}})
    matrices, long = metric_agreement(three, ["a", "b", "c"], n_boot=0, curve_scores=SCORES)
    assert matrices["cnn"].loc["Up", "Flat"] == pytest.approx(-1.0) and (long["note"] == "").all()


def test_partial_order_family_rows():
    """A randomise_model family (name *_randomised) is scored on its known pairs:
    `recovery` is the known-pairs concordance, `spearman` the full Spearman."""
    degraded = {"ig_r000": ("ig_randomised", 0.0), "ig_r050": ("ig_randomised", 0.5), "ig_r100": ("ig_randomised", 1.0)}
    per_image = _per_image({"up": {"ig_r000": 1.0, "ig_r050": 0.2, "ig_r100": 0.5}}, n_images=8, noise=0.01)
    out = ground_truth_correlations(per_image, degraded, None, n_boot=0, curve_scores=SCORES)
    r = _row(out, "Up", "macro")
    assert r["order"] == "best_first" and r["recovery"] == pytest.approx(1.0)
    assert r["spearman"] == pytest.approx(0.5)
    assert r["ci_low"] == pytest.approx(1.0) and r["ci_high"] == pytest.approx(1.0)
    csv, tex = meta_table(out, models=["cnn"], families=["ig_randomised"])
    assert "1.00" in tex and "known pairs" in tex


def test_agreement_metrics_leave_out_a_run_with_one_scored_curve():
    """A run whose only metric is FUD and a variant of it (round four's equivalence profile at the time)
    has no agreement to draw: rules/common.smk then leaves the figure out instead of failing the job."""
    from fudbench.meta.families import agreement_metrics

    one = {"fud": {"symmetric": False}, "fud_100": {"method": "fud", "steps": 100}}
    assert agreement_metrics(one) == ["fud"]
    assert (
        agreement_metrics({**one, "insdel": {}})[:1] == ["fud"] and len(agreement_metrics({**one, "insdel": {}})) >= 2
    )
    assert agreement_metrics({**one, "insdel": {}}, ["fud"]) == ["fud"]
