"""Quantus metrics as evaluators (fudbench.evaluators.quantus, protocols.quantus):
the adapter's per-image scores equal calling Quantus directly on the same
model, image, map and seed; the torch-free table of metrics agrees with the
installed Quantus; bad settings are refused at parse time; every supported
metric, in the direction the table gives it, prefers the map on the evidence
to its reverse on the quadrant task of tests/test_evaluator_registry.py, but
the two the table lists as not ordering it (DOES_NOT_ORDER), which do not."""

import inspect

import numpy as np
import pytest
import torch
from test_evaluator_registry import N, task  # noqa: F401 (the fixture: a CNN that reads one quadrant)

import fudbench
from fudbench.analysis.curves import per_image_scores
from fudbench.evaluators import build_evaluator, spec
from fudbench.evaluators.quantus import COMMON, DOES_NOT_ORDER, METRICS, NOT_SUPPORTED, RESERVED, curve_name
from fudbench.core.masks import reduce_attribution
from fudbench.protocols.quantus import reduce_output
from fudbench.core.seeding import derive_seed
from fudbench.explainers import build_explainer
from fudbench.explainers.again import ExplainAgain

quantus = pytest.importorskip("quantus")

# small settings per metric (cost only)
SMALL = {
    "FaithfulnessCorrelation": {"nr_runs": 10, "subset_size": 16},
    "FaithfulnessEstimate": {"features_in_step": 16},
    "MonotonicityCorrelation": {"nr_samples": 3, "features_in_step": 16},
    "Monotonicity": {"features_in_step": 16},
    "PixelFlipping": {"features_in_step": 16},
    "RegionPerturbation": {"patch_size": 4, "regions_evaluation": 5},
    "Selectivity": {"patch_size": 4},
    "Infidelity": {"n_perturb_samples": 8, "perturb_patch_sizes": [4]},
    "MaxSensitivity": {"nr_samples": 2},
    "AvgSensitivity": {"nr_samples": 2},
    "LocalLipschitzEstimate": {"nr_samples": 2},
    "MPRT": {},
    "RandomLogit": {},
    "Sparseness": {},
    "Complexity": {},
}
# the metrics that read the map against its reverse (faithfulness: the evidence; complexity: the quadrant's
# map is the sparser): the direction test; robustness and randomisation are checked in test_metric_categories
ORDERED = sorted(m for m, q in METRICS.items() if q.category in ("faithfulness", "complexity"))


def _explain(model, inputs, targets, **kwargs):
    """Quantus' explain_func as the adapter builds it from the `sm` entry: clipped inputs, abs_sum map."""
    x = torch.as_tensor(np.asarray(inputs), dtype=torch.float32).clamp(0, 1)
    a = build_explainer("sm", {}).explain(model, x, torch.as_tensor(np.asarray(targets)).long().view(-1))
    return reduce_attribution(a.detach(), "abs_sum")[:, None].numpy()


def _sm(ids):
    return ExplainAgain("sm", build_explainer("sm", {}), {i: i for i in ids})


EVALUATION = {"ratios": [0.5], "reduction": "abs_sum"}


def test_the_table_agrees_with_the_installed_quantus():
    assert set(SMALL) == set(METRICS)
    for name, m in METRICS.items():
        cls = getattr(quantus, name)
        keywords = set(inspect.signature(cls.__init__).parameters)
        assert set(m.keywords) | set(COMMON) | {
            "return_aggregate",
            "disable_warnings",
            "display_progressbar",
        } <= keywords | {"return_auc_per_sample"}, name
        assert keywords - {"self", "args", "kwargs"} <= set(m.keywords) | set(COMMON) | set(RESERVED), (
            name,
            sorted(keywords - set(m.keywords) - set(COMMON) - set(RESERVED)),
        )
        theirs = cls.score_direction.name == "HIGHER"
        if name == "RegionPerturbation":  # documented: Quantus' metadata says lower, its drops say higher
            assert not theirs and m.higher_is_better and m.why
        else:
            assert theirs == m.higher_is_better, name
    for name in NOT_SUPPORTED:
        assert hasattr(quantus, name) and name not in METRICS
    from fudbench.evaluators.quantus import QUANTUS_METRICS

    installed = {
        n
        for n in dir(quantus.metrics)
        if isinstance(c := getattr(quantus.metrics, n), type) and issubclass(c, quantus.metrics.base.Metric)
    } - {"Metric", "BatchedMetric"}
    assert set(QUANTUS_METRICS) == installed
    from fudbench.evaluators.quantus import SIZE_DEFAULTS

    for name, values in SIZE_DEFAULTS.items():  # the defaults the parse-time size check assumes
        params = inspect.signature(getattr(quantus, name).__init__).parameters
        for keyword, value in values.items():
            theirs = params[keyword].default
            assert theirs == value or (theirs is None and keyword == "perturb_patch_sizes"), (name, keyword, theirs)


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_scores_equal_calling_quantus_directly_with_the_image_seed(metric, task):  # noqa: F811
    from fudbench.core.seeding import seeded

    model, _, x, y, quadrant, _, _ = task
    settings = {"metric": metric, "settings": SMALL[metric], "batch_size": 8}
    key = (0, "evaluate", "task", "quantus")
    ids = [11, 3, 7]
    explains = METRICS[metric].explains
    maps_of = _sm(ids)(model, x[:3], y[:3], ids) if explains else quadrant[:3]  # explaining: the explainer's map
    records, samples = build_evaluator("quantus", settings, EVALUATION, {}, "cpu").run(
        model, x[:3], y[:3], maps_of, ids, key, explainer=_sm(ids)
    )
    assert samples == {} and list(records["image"]) == ids
    maps = reduce_attribution(maps_of, "abs_sum")[:, None].numpy()
    kwargs = dict(SMALL[metric], **({"order": "morf"} if metric == "RegionPerturbation" else {}))
    kwargs.update({"MPRT": {"return_average_correlation": True}, "RandomLogit": {"num_classes": 2}}.get(metric, {}))
    direct = []
    for i, image in enumerate(ids):
        with seeded(derive_seed(*key, curve_name(metric), image), torch.device("cpu")):
            out = getattr(quantus, metric)(**kwargs, disable_warnings=True, display_progressbar=False)(
                model=model,
                x_batch=x[i : i + 1].numpy(),
                y_batch=y[i : i + 1].numpy(),
                a_batch=maps[i : i + 1],
                device="cpu",
                batch_size=8,
                **({"explain_func": _explain} if explains else {}),
            )
        direct.append(reduce_output(out[0], METRICS[metric].reduce))
    np.testing.assert_allclose(records["value"].to_numpy(), direct, rtol=1e-9, atol=1e-12)
    # one image alone scores as it does in the shard
    alone, _ = build_evaluator("quantus", settings, EVALUATION, {}, "cpu").run(
        model, x[1:2], y[1:2], maps_of[1:2], [3], key, explainer=_sm([3])
    )
    assert alone["value"].iloc[0] == pytest.approx(records["value"].iloc[1], rel=1e-12)


@pytest.mark.parametrize("level", [0.0, 0.5])
def test_a_constant_map_scores_nan_and_leaves_the_other_images_as_they_were(task, caplog, level):  # noqa: F811
    """Quantus asserts that a map is not uniform, all zero included (Grad-CAM can zero
    a ViT's map; a box covering a whole photo is uniform): that image scores NaN,
    logged, and the others score as they do without it."""
    model, _, x, y, quadrant, _, _ = task
    settings = {"metric": "PixelFlipping", "settings": SMALL["PixelFlipping"], "batch_size": 8}
    maps = quadrant[:3].clone()
    maps[1] = level
    ids, key = [11, 3, 7], (0, "evaluate", "task", "quantus")
    with caplog.at_level("WARNING"):
        records, _ = build_evaluator("quantus", settings, EVALUATION, {}, "cpu").run(
            model, x[:3], y[:3], maps, ids, key
        )
    assert "1 constant map(s), all-zero or uniform (images [3])" in caplog.text
    values = records["value"].to_numpy()
    assert np.isnan(values[1]) and np.isfinite(values[[0, 2]]).all()
    kept, _ = build_evaluator("quantus", settings, EVALUATION, {}, "cpu").run(
        model, x[[0, 2]], y[[0, 2]], quadrant[[0, 2]], [11, 7], key
    )
    np.testing.assert_array_equal(values[[0, 2]], kept["value"].to_numpy())
    scores = per_image_scores(records.assign(model="m", explainer="e")).set_index("image")["score"]
    assert np.isnan(scores[3]) and scores.drop(3).notna().all()  # the analysis drops it (dropna on score)


@pytest.mark.parametrize("metric", ORDERED)
def test_each_metric_prefers_the_map_on_the_evidence_in_its_direction(metric, task):  # noqa: F811
    model, _, x, y, quadrant, reversed_, _ = task
    settings = {"metric": metric, "settings": SMALL[metric], "batch_size": 8}
    (curve,) = spec("quantus").curves(spec("quantus").resolve(settings))
    means = {}
    for name, a in (("quadrant", quadrant), ("reversed", reversed_)):
        records, _ = build_evaluator("quantus", settings, EVALUATION, {}, "cpu").run(
            model, x, y, a, list(range(N)), (0, "t")
        )
        means[name] = per_image_scores(records.assign(model="m", explainer=name))["score"].mean()
    better = means["quadrant"] - means["reversed"]
    if not curve.higher_is_better:
        better = -better
    if metric in DOES_NOT_ORDER:  # what the docs say of it, measured: no preference for the evidence
        assert better <= 0, (metric, means)
    else:
        assert better > 0, (metric, means)


@pytest.mark.parametrize(
    "settings, match",
    [
        (
            {"metric": "FaithfulnessCorrelation", "settings": {"nr_runz": 3}},
            r"evaluators.q.settings': unknown keyword\(s\) \['nr_runz'\] of quantus.FaithfulnessCorrelation; allowed: .*nr_runs",
        ),
        (
            {"metric": "PixelFlipping", "settings": {"return_auc_per_sample": True}},
            r"evaluators.q.settings': \['return_auc_per_sample'\] are set by the adapter",
        ),
        ({"metric": "RegionPerturbation", "settings": {"order": "lerf"}}, r"give it as 'evaluators.q.order'"),
    ],
)
def test_bad_settings_are_refused_at_parse_time_naming_the_key(settings, match):
    problems = spec("quantus").check(settings, "evaluators.q")
    assert any(__import__("re").search(match, p) for p in problems), problems


@pytest.mark.parametrize(
    "metric, settings, match",
    [
        ("FaithfulnessCorrelation", {"nr_runs": -5}, r"settings\.nr_runs': -5 is not an integer >= 2"),
        ("FaithfulnessCorrelation", {"nr_runs": True}, r"settings\.nr_runs': True is not an integer >= 2"),
        ("FaithfulnessEstimate", {"features_in_step": "abc"}, r"settings\.features_in_step': 'abc' is not an integer"),
        (
            "FaithfulnessEstimate",
            {"features_in_step": 7},
            r"settings\.features_in_step': 7 does not divide the 16x16 = "
            r"256 pixels of the images \(data\.synthetic\.image_size\)",
        ),
        (
            "FaithfulnessCorrelation",
            {"subset_size": 100000},
            r"settings\.subset_size': 100000 must be smaller than the "
            r"16x16 = 256 pixels",
        ),
        (
            "FaithfulnessCorrelation",
            {"similarity_func": "pearson"},
            r"settings\.similarity_func': 'pearson' is not a "
            r"function",
        ),
        ("RegionPerturbation", {"patch_size": 0}, r"settings\.patch_size': 0 is not an integer >= 1"),
        ("Selectivity", {"patch_size": 17}, r"settings\.patch_size': 17 is larger than the images' side 16"),
        ("Infidelity", {"perturb_patch_sizes": []}, r"settings\.perturb_patch_sizes': \[\] is not a non-empty list"),
        ("MonotonicityCorrelation", {"eps": -1}, r"settings\.eps': -1 is not a number > 0"),
        ("Monotonicity", {"abs": "yes"}, r"settings\.abs': 'yes' is not true or false"),
        ("FaithfulnessCorrelation", {"nr_runs": 3, "subset_size": 256}, r"settings\.subset_size': 256 must be smaller"),
    ],
)
def test_quantus_setting_values_are_checked_at_parse_time_naming_the_key(repo, metric, settings, match):
    """Issue 39, case 6: these passed the parse-time check and failed inside the evaluate
    job with numpy / Quantus errors naming no config key."""
    from fudbench.config.validate import ConfigError, validate_config
    from fudbench.config.files import resolve_config

    config = resolve_config([repo / "config/smoke.yaml"])
    assert config["data"]["synthetic"]["image_size"] == 16
    config["evaluators"]["q"] = {"method": "quantus", "metric": metric, "settings": settings}
    with pytest.raises(ConfigError, match=rf"config key 'evaluators\.q\.{match}"):
        validate_config(config, repo / "config/schema.yaml")


def test_quantus_setting_values_are_checked_by_the_protocol_too(task):  # noqa: F811
    """The API (or images of another size) gets the same check before Quantus runs."""
    model, _, x, y, quadrant, _, _ = task
    with pytest.raises(
        ValueError,
        match=rf"'quantus\.FaithfulnessEstimate\.features_in_step': 7 does not divide "
        rf"the {x.shape[-1]}x{x.shape[-1]}",
    ):
        build_evaluator(
            "quantus",
            {"metric": "FaithfulnessEstimate", "settings": {"features_in_step": 7}, "batch_size": 8},
            EVALUATION,
            {},
            "cpu",
        ).run(model, x[:1], y[:1], quadrant[:1], [0], (0, "evaluate", "t", "q"))


def test_the_config_names_an_unsupported_metric_and_lerf_turns_the_direction(repo):
    from fudbench.config.validate import ConfigError, validate_config
    from fudbench.config.files import resolve_config

    config = resolve_config([repo / "config/smoke.yaml"])
    config["evaluators"]["q"] = {"method": "quantus", "metric": "SensitivityN"}
    with pytest.raises(
        ConfigError,
        match=r"evaluators.q.metric': quantus.SensitivityN is not offered: scores a "
        r"correlation over the whole batch",
    ):
        validate_config(config, repo / "config/schema.yaml")
    for name, why in NOT_SUPPORTED.items():  # issue 39: ROAD and IROF got a bare "not allowed"
        config["evaluators"]["q"] = {"method": "quantus", "metric": name}
        with pytest.raises(
            ConfigError,
            match=rf"evaluators.q.metric': quantus.{name} is not offered: "
            rf"{__import__('re').escape(why)}; allowed values: 'Faithfulness",
        ):
            validate_config(config, repo / "config/schema.yaml")
    lerf = spec("quantus").curves(spec("quantus").resolve({"metric": "RegionPerturbation", "order": "lerf"}))[0]
    assert not lerf.higher_is_better and lerf.name == "quantus_region_perturbation"


def test_the_python_api_scores_a_quantus_metric(task):  # noqa: F811
    model, _, x, y, quadrant, _, _ = task
    frame = fudbench.evaluate(
        model,
        x,
        y,
        quadrant,
        metrics={"qt_fc": {"method": "quantus", "settings": SMALL["FaithfulnessCorrelation"]}},
        evaluation=EVALUATION,
    )
    scores = frame.dropna(subset=["score"])
    assert set(scores["curve"]) == {"quantus_faithfulness_correlation@qt_fc"} and len(scores) == N


def test_a_metric_of_another_category_is_offered_with_its_category_and_the_rest_refused_saying_why():
    from fudbench.evaluators.quantus import UNCHECKED

    s = spec("quantus")
    for metric, category, explains in (
        ("MaxSensitivity", "robustness", True),
        ("MPRT", "randomisation", True),
        ("Sparseness", "complexity", False),
        ("FaithfulnessCorrelation", "faithfulness", False),
    ):
        resolved = s.resolve({"metric": metric})
        assert not s.check({"metric": metric}, "evaluators.q"), metric
        assert s.category_of(resolved) == category and s.explainer_needed(resolved) == explains
    (continuity,) = s.check({"metric": "Continuity"}, "evaluators.q")
    assert f"quantus.Continuity is {UNCHECKED}" in continuity
    (typo,) = s.check({"metric": "MaxSensitvity"}, "evaluators.q")
    assert "'MaxSensitvity' is not a metric of quantus 0.6.0" in typo
