"""fudbench.report.sanity on a toy tables directory built by the real table
builders: each relation passes where it holds and reports the case where it
is broken on purpose (a check that cannot fail would make the smoke and
default-run tests vacuous)."""

import numpy as np
import pandas as pd
import pytest

from fudbench.report import sanity
from fudbench.meta.families import ground_truth_correlations
from fudbench.core.io import write_csv, write_text
from fudbench.report.meta import meta_table
from fudbench.report.ood_quality import table2_ood
from fudbench.report.paper_tables import OOD_TABLES, SCORE_TABLES, score_labels
from fudbench.report.tables import score_table, table7_scores

CONFIG = {
    "models": {"classifiers": {"cnn": {}}},
    "explainers": {
        "ig": {},
        "random": {},
        "ig_d00": {"method": "degrade", "base": "ig", "fraction": 0.0},
        "ig_d50": {"method": "degrade", "base": "ig", "fraction": 0.5},
        "oracle_d00": {"method": "degrade", "base": "oracle", "fraction": 0.0},
        "oracle_d50": {"method": "degrade", "base": "oracle", "fraction": 0.5},
    },
}
EXPLAINERS = list(CONFIG["explainers"])
# mean per-image score of each explainer (images add +-0.01): a trained model's picture
SCORES = {  # curve: {explainer: score}
    "insertion": {"ig": 0.6, "ig_d00": 0.6, "ig_d50": 0.5, "oracle_d00": 0.8, "oracle_d50": 0.55, "random": 0.3},
    "deletion": {"ig": 0.2, "ig_d00": 0.2, "ig_d50": 0.25, "oracle_d00": 0.1, "oracle_d50": 0.2, "random": 0.4},
    "fud": {"ig": 0.4, "ig_d00": 0.41, "ig_d50": 0.45, "oracle_d00": 0.3, "oracle_d50": 0.35, "random": 0.5},
    "road_morf": {"ig": 0.3, "ig_d00": 0.31, "ig_d50": 0.35, "oracle_d00": 0.1, "oracle_d50": 0.2, "random": 0.5},
    "road_lerf": {"ig": 0.7, "ig_d00": 0.7, "ig_d50": 0.6, "oracle_d00": 0.9, "oracle_d50": 0.8, "random": 0.5},
}


def _per_image(scores=SCORES):
    rows = [
        {"model": "cnn", "explainer": e, "curve": c, "image": i, "score": v + (0.01 if i else -0.01)}
        for c, by in scores.items()
        for e, v in by.items()
        for i in (0, 1)
    ]
    return pd.DataFrame(rows)


def _write(d, name, summary, tex):
    write_csv(d / f"{name}.csv", summary, index=False, float_format="%.6g")
    write_text(d / f"{name}.tex", tex)


def _tables(d, scores=SCORES):
    """table7_scores, road_scores, meta_ground_truth, table2/8/11_ood of the toy."""
    per_image = _per_image(scores)
    explainers = list(scores["insertion"])
    _write(d, "table7_scores", *table7_scores(per_image, ["cnn"], explainers, 200, 0.95, 0))
    spec, labels = SCORE_TABLES["road_scores"], score_labels()
    road = [c for c in labels if spec["select"](c) and c in set(per_image["curve"])]
    _write(
        d,
        "road_scores",
        *score_table(
            per_image,
            ["cnn"],
            explainers,
            road,
            labels,
            200,
            0.95,
            0,
            caption=spec["caption"],
            tex_label=spec["tex_label"],
        ),
    )
    degraded = {e: (s["base"], s["fraction"]) for e, s in CONFIG["explainers"].items() if "base" in s}
    corr = ground_truth_correlations(
        per_image, degraded, n_boot=50, seed=0, curves=["fud", "insertion", "deletion", "road_morf"]
    )
    _write(d, "meta_ground_truth", *meta_table(corr, models=["cnn"], families=["ig", "oracle"]))
    rng = np.random.default_rng(0)
    records = pd.DataFrame(
        {
            "model": "cnn",
            "explainer": "ig",
            "curve": np.repeat(["fud", "road_morf"], 8),
            "image": np.tile(np.arange(8), 2),
            "step": 0,
            "energy": rng.normal(0, 1, 16),
        }
    )
    clean = {"cnn": rng.normal(-0.5, 1, 8)}
    for table, curves in [
        ("table2_ood", {"fud": "FUD"}),
        ("table8_ood", {"fud": "FUD"}),
        ("table11_ood", {"road_morf": "ROAD", "fud": "FUD"}),
    ]:
        _write(d, table, *table2_ood(records, clean, curves, ["cnn"], 50, 0.95, 0, **OOD_TABLES[table]))
    return d


def test_toy_run_passes_every_check(tmp_path):
    d = _tables(tmp_path)
    assert sanity.run_consistency(d, CONFIG) == []
    assert sanity.trained_model_relations(d, CONFIG) == []
    assert sanity.metrics_in_order(d, ["ig_d00", "ig_d50"], "cnn") == [
        "Deletion",
        "Insertion",
        "ROAD LeRF",
        "ROAD MoRF",
    ]


def test_oracle_below_random_is_reported(tmp_path):
    scores = {c: dict(v) for c, v in SCORES.items()}
    scores["insertion"]["oracle_d00"], scores["insertion"]["random"] = 0.3, 0.8
    problems = sanity.trained_model_relations(_tables(tmp_path, scores), CONFIG)
    assert len(problems) == 1 and "Insertion" in problems[0] and "oracle_d00" in problems[0]


def test_a_plain_oracle_entry_is_the_mask_and_a_config_without_one_is_reported(tmp_path):
    """The default profile has `oracle` (no family): the mask-above-random check
    uses it; a config with neither an oracle entry nor the family is reported."""
    scores = {c: {**v, "oracle": v["oracle_d00"]} for c, v in SCORES.items()}
    d = _tables(tmp_path, scores)
    plain = {"models": CONFIG["models"], "explainers": {"ig": {}, "random": {}, "oracle": {}}}
    assert sanity.trained_model_relations(d, plain) == []
    scores["insertion"]["oracle"] = 0.1
    (tmp_path / "low").mkdir()
    problems = sanity.trained_model_relations(_tables(tmp_path / "low", scores), plain)
    assert len(problems) == 1 and "oracle" in problems[0] and "Insertion" in problems[0]
    problems = sanity.trained_model_relations(d, {"models": CONFIG["models"], "explainers": {"random": {}}})
    assert problems and "no oracle explainer" in problems[0]


def test_a_family_in_no_metric_order_is_reported(tmp_path):
    scores = {c: dict(v) for c, v in SCORES.items()}
    higher = {"insertion": True, "deletion": False, "fud": True, "road_morf": False, "road_lerf": True}
    for c, up in higher.items():  # the IG family reversed under every metric
        lo, hi = sorted([scores[c]["ig_d00"], scores[c]["ig_d50"]])
        scores[c]["ig_d00"], scores[c]["ig_d50"] = (lo, hi) if up else (hi, lo)
    problems = sanity.trained_model_relations(_tables(tmp_path, scores), CONFIG)
    assert len(problems) == 1 and "ig_d00" in problems[0] and "0 metric(s)" in problems[0]


def test_p0_copy_differing_from_its_base_is_reported(tmp_path):
    scores = {c: dict(v) for c, v in SCORES.items()}
    scores["deletion"]["ig_d00"] = 0.21
    problems = sanity.run_consistency(_tables(tmp_path, scores), CONFIG)
    assert len(problems) == 1 and "Deletion" in problems[0] and "ig_d00" in problems[0]


def test_meta_disagreeing_with_the_score_tables_is_reported(tmp_path):
    d = _tables(tmp_path)
    meta = pd.read_csv(d / "meta_ground_truth.csv")
    row = (meta.metric == "Insertion") & (meta.family == "oracle") & (meta.kind == "macro")
    assert meta.loc[row, "spearman"].item() == 1.0
    meta.loc[row, "spearman"] = -1.0
    meta.to_csv(d / "meta_ground_truth.csv", index=False)
    problems = sanity.meta_agrees_with_scores(
        d, {e: (s["base"], s["fraction"]) for e, s in CONFIG["explainers"].items() if "base" in s}
    )
    assert len(problems) == 1 and "oracle Insertion" in problems[0]


def test_tables_that_share_rows_must_agree(tmp_path):
    d = _tables(tmp_path)
    assert sanity.shared_rows_agree(d) == []
    t11 = pd.read_csv(d / "table11_ood.csv")
    t11.loc[(t11.evaluator == "FUD") & (t11.metric == "AUROC"), "value"] += 0.01
    t11.to_csv(d / "table11_ood.csv", index=False)
    problems = sanity.shared_rows_agree(d)
    assert problems == ["table11_ood: rows of FUD differ from table2_ood's"]


def test_out_of_range_values_are_reported(tmp_path):
    d = _tables(tmp_path)
    t7 = pd.read_csv(d / "table7_scores.csv")
    t7.loc[(t7.explainer == "ig") & (t7.metric == "Insertion"), "ci_high"] = 1.2
    t7.to_csv(d / "table7_scores.csv", index=False)
    problems = sanity.values_in_range(d)
    assert len(problems) == 1 and "ci_high = 1.2" in problems[0]


@pytest.mark.parametrize(
    "label,inside,outside",
    [
        ("FUD", 0.5, -0.1),
        ("FUD symmetric", -0.4, 1.1),
        ("FUD [fud_patch]", 1.0, 1.2),
        ("INFID", 3.0, -0.1),
        ("Sen-N", -0.9, -1.1),
    ],
)
def test_score_ranges(label, inside, outside):
    lo, hi = sanity._range("score", label)
    assert lo <= inside <= hi and not lo <= outside <= hi


@pytest.mark.parametrize(
    "text,mean,half,decimals,bold",
    [
        ("0.1234\\,{\\scriptsize$\\pm$0.0100}", 0.1234, 0.01, 4, False),
        ("\\textbf{24.00\\,{\\scriptsize$\\pm$4.50}}", 24.0, 4.5, 2, True),
        ("-0.5000", -0.5, None, 4, False),
        ("--", float("nan"), None, 0, False),
    ],
)
def test_parse_cell(text, mean, half, decimals, bold):
    c = sanity.parse_cell(text)
    assert (c.half, c.decimals, c.bold) == (half, decimals, bold)
    assert c.mean == mean or (np.isnan(mean) and np.isnan(c.mean))
