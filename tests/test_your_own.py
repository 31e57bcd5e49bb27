"""Your own explainer, through config and through fudbench.explain / evaluate
(docs/your_own.md): plug-ins by import path, the Python API giving the
workflow's numbers, degenerate maps reported, EG never its own baseline; the
plug-ins' source files (helpers included) as job inputs, maps that require
grad, errors inside plug-ins and job logs with the traceback (issue 26)."""

import re
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

import fudbench
from fudbench.config.validate import ConfigError, validate_config
from fudbench.explainers import build_explainer
from fudbench.explainers.expected_gradients import ExpectedGradients
from fudbench.core.io import load_npz, write_npz
from fudbench.models.classifiers import build_classifier, load_classifier, save_classifier
from fudbench.workflow.pipeline import evaluate_explainers, explain_shard
from fudbench.config.files import resolve_config

PLUGIN = textwrap.dedent('''
    import torch
    from fudbench.explainers.base import Explainer

    class GradTimesInput(Explainer):
        """gradient x input of the target logit"""
        def __init__(self, scale: float = 1.0):
            self.scale = scale

        def explain(self, model, x, target, seeds=None):
            x = x.detach().clone().requires_grad_(True)
            with torch.enable_grad():
                (g,) = torch.autograd.grad(model(x).gather(1, target.view(-1, 1)).sum(), x)
            return self.scale * g * x.detach()

    def blurry(model, x, target, seeds=None, width=3):
        return torch.nn.functional.avg_pool2d(x, width, 1, width // 2)

    def wrong_shape(model, x, target, seeds=None):
        return x[:, :, :2, :2]

    def all_zero(model, x, target, seeds=None):
        return torch.zeros_like(x)

    def attached(model, x, target, seeds=None):
        """gradient x input left attached to the autograd graph (issue 26, case 4)"""
        x = x.clone().requires_grad_(True)
        with torch.enable_grad():
            (g,) = torch.autograd.grad(model(x).gather(1, target.view(-1, 1)).sum(), x)
        return g * x

    def broken(model, x, target, seeds=None):
        return {}["no_such_layer"]

    class BrokenInit(Explainer):
        def __init__(self, depth: int = 1):
            raise ValueError(f"depth {depth} is not supported")

        def explain(self, model, x, target, seeds=None):
            return x

    def broken_factory(width=4):
        return 1 / 0

    class NotAnExplainer:
        pass
''')


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A module outside the package: as a file path and as an importable module."""
    (tmp_path / "my_methods.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "my_methods.py"


@pytest.fixture
def shard(tmp_path):
    """An eval npz of 4 images and a tiny CNN checkpoint, as the workflow writes them."""
    torch.manual_seed(0)
    cfg = {"arch": "small_cnn", "width": 4}
    save_classifier(tmp_path / "cnn.pt", build_classifier(cfg, 4, 8, [0.5] * 3, [0.25] * 3), cfg, 4, 8, {})
    images = (np.random.default_rng(0).random((4, 3, 8, 8)) * 255).astype(np.uint8)
    write_npz(
        tmp_path / "eval.npz", images=images, labels=np.arange(4), masks=np.zeros((4, 8, 8), np.uint8), ids=np.arange(4)
    )
    return tmp_path


def test_plugin_explainer_by_file_or_module_path_is_built_like_a_built_in(plugin, shard):
    by_file = build_explainer("mine", {"method": f"{plugin}:GradTimesInput", "scale": 2.0})
    by_module = build_explainer("mine", {"method": "my_methods:GradTimesInput", "scale": 2.0})
    function = build_explainer("blur", {"method": "my_methods:blurry", "width": 3})
    model = load_classifier(shard / "cnn.pt")
    x = torch.rand(2, 3, 8, 8)
    y = model(x).argmax(1)
    assert torch.equal(by_file.explain(model, x, y), by_module.explain(model, x, y))
    assert function.explain(model, x, y).shape == x.shape


@pytest.mark.parametrize(
    "method, settings, match",
    [
        (
            "no_such_module:X",
            {},
            r"'explainers.mine.method': 'no_such_module:X': module 'no_such_module' cannot be "
            r"imported",
        ),
        (
            "my_methods:Missing",
            {},
            r"'explainers.mine.method': 'my_methods:Missing': my_methods has no attribute "
            r"'Missing'",
        ),
        (
            "my_methods:NotAnExplainer",
            {},
            r"'explainers.mine': my_methods.NotAnExplainer is not an Explainer: subclass",
        ),
        (
            "my_methods:GradTimesInput",
            {"scael": 2},
            r"'explainers.mine': GradTimesInput\(scael\) does not match its "
            r"constructor",
        ),
        (
            "my_methods:blurry",
            {"widht": 3},
            r"'explainers.mine': blurry cannot be called as fn\(model, x, target, "
            r"seeds=None, \*\*settings\) with settings \['widht'\]",
        ),
        ("missing/file.py:f", {}, r"'explainers.mine.method': 'missing/file.py:f': .*missing/file.py does not exist"),
    ],
)
def test_bad_plugin_explainers_fail_at_parse_time_naming_the_key(repo, plugin, method, settings, match):
    config = resolve_config([repo / "config/smoke.yaml"])
    config["explainers"]["mine"] = {"method": method, **settings}
    with pytest.raises(ConfigError, match=match):
        validate_config(config, repo / "config/schema.yaml")


def test_a_map_of_the_wrong_shape_is_an_error_naming_the_explainer(plugin, shard):
    model = load_classifier(shard / "cnn.pt")
    x = torch.rand(2, 3, 8, 8)
    with pytest.raises(
        ValueError,
        match=r"explainer 'w' \(config key 'explainers.w'\), plug-in my_methods:wrong_shape "
        r"\(.*my_methods.py\): explain: the returned map must have the images' "
        r"batch size and H x W.*got \(2, 3, 2, 2\)",
    ):
        build_explainer("w", {"method": "my_methods:wrong_shape"}).explain(model, x, model(x).argmax(1))


def test_degenerate_maps_are_counted_where_made_and_flagged_in_the_records(plugin, shard, caplog):
    with caplog.at_level("WARNING", logger="fudbench.workflow.pipeline"):
        result = explain_shard(
            shard / "cnn.pt",
            shard / "eval.npz",
            0,
            4,
            "zeros",
            {"method": "my_methods:all_zero"},
            "predicted",
            (0, "explain"),
            "cpu",
        )
    assert "zeros: 4 degenerate map(s) (zero) for image id(s) [0, 1, 2, 3]" in caplog.text
    write_npz(shard / "attr.npz", **result)
    done = evaluate_explainers(
        "cnn",
        "insdel",
        {"zeros": (shard / "attr.npz", shard / "r.parquet", shard / "s.npz")},
        model_path=shard / "cnn.pt",
        images_path=shard / "eval.npz",
        shard=0,
        shard_size=4,
        settings={"n_steps": 4},
        evaluation={"ratios": [0.5], "reduction": "abs_sum"},
        assets={},
        seed=0,
        device="cpu",
    )
    assert done["computed"] == ["zeros"]
    assert set(pd.read_parquet(shard / "r.parquet")["degenerate_map"]) == {"zero"}


def test_evaluate_api_returns_the_workflow_job_numbers(plugin, shard):
    """fudbench.evaluate on the same model, images, maps, seed and ids gives the
    records the workflow's evaluate job writes (pipeline.evaluate_explainers)."""
    result = explain_shard(
        shard / "cnn.pt",
        shard / "eval.npz",
        0,
        4,
        "mine",
        {"method": "my_methods:GradTimesInput"},
        "predicted",
        (0, "explain"),
        "cpu",
    )
    write_npz(shard / "attr.npz", **result)
    settings, evaluation = {"n_subsets": 4, "batch_size": 16}, {"ratios": [0.3, 0.6], "reduction": "abs_sum"}
    evaluate_explainers(
        "cnn",
        "sensn",
        {"mine": (shard / "attr.npz", shard / "r.parquet", shard / "s.npz")},
        model_path=shard / "cnn.pt",
        images_path=shard / "eval.npz",
        shard=0,
        shard_size=4,
        settings=settings,
        evaluation=evaluation,
        assets={},
        seed=7,
        device="cpu",
    )
    job = pd.read_parquet(shard / "r.parquet")
    model = load_classifier(shard / "cnn.pt")
    x = torch.from_numpy(load_npz(shard / "eval.npz")["images"]).float() / 255
    api = fudbench.evaluate(
        model,
        x,
        torch.from_numpy(result["targets"]),
        torch.from_numpy(result["attributions"]),
        metrics={"sensn": settings},
        evaluation=evaluation,
        image_ids=result["ids"],
        seed=7,
        model_name="cnn",
        explainer="mine",
    )
    cols = [c for c in job.columns if c not in ("seconds", "label")]
    pd.testing.assert_frame_equal(api[cols].reset_index(drop=True), job[cols].reset_index(drop=True))
    assert api.groupby("image")["score"].nunique().eq(1).all() and api["score"].notna().all()


def test_explain_api_equals_the_explain_job(plugin, shard):
    model = load_classifier(shard / "cnn.pt")
    x = torch.from_numpy(load_npz(shard / "eval.npz")["images"]).float() / 255
    y = model(x).argmax(1)
    api = fudbench.explain(model, x, y, "ig", n_steps=4)
    job = explain_shard(shard / "cnn.pt", shard / "eval.npz", 0, 4, "ig", {"n_steps": 4}, "predicted", (0,), "cpu")
    assert np.array_equal(api.numpy(), job["attributions"])


def test_eg_never_draws_the_image_itself():
    model = build_classifier({"arch": "small_cnn", "width": 4}, 4, 8, [0.5] * 3, [0.25] * 3).eval()
    x = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    eg = ExpectedGradients(k=1)
    eg.prepare(x)  # the evaluated set is its own reference set, as in the workflow
    for seed in range(20):
        idx, _ = eg.draws([seed] * 3, 3, eg.copies_of(x))
        assert all(int(idx[i, 0]) != i for i in range(3))
    a = eg.explain(model, x, model(x).argmax(1), seeds=list(range(3)))
    assert (a.flatten(1).abs().sum(1) > 0).all()  # k = 1 drawing itself would give an all-zero map
    eg.prepare(x[:1])
    with pytest.raises(
        ValueError,
        match=r"EG: image\(s\) at positions \[0\] have no reference image other than "
        r"themselves",
    ):
        eg.explain(model, x[:1], model(x[:1]).argmax(1), seeds=[0])


# The workflow test's plug-ins import helper modules next to them (issue 26, case 3).
WORKFLOW_PLUGIN = PLUGIN + textwrap.dedent('''
    from my_scale import SCALE  # a helper next to this file: an input of the explain jobs too

    class ScaledGradTimesInput(GradTimesInput):
        def explain(self, model, x, target, seeds=None):
            return SCALE * super().explain(model, x, target, seeds)
''')
WORKFLOW_FILL = textwrap.dedent('''
    import torch
    from fudbench.imputers.base import Imputer, compose
    from fill_levels import GREY  # a helper next to this file: an input of the evaluate jobs too

    class GreyFill(Imputer):
        def fill(self, x, keep_mask, context=None):
            return compose(x, keep_mask, torch.full_like(x, GREY))
''')


EXAMPLE_METRIC = "examples/your_own/my_metric.py:SPEC"  # tests/test_example_plugin.py checks its values


@pytest.mark.workflow
def test_plugin_explainer_through_the_workflow_gives_the_api_scores(repo, tmp_path):
    """The smoke workflow with an explainer from a module outside the package (beside a
    built-in one), insdel and ROAD with a plug-in fill, two plug-in metrics (one the shipped example
    by its repository path): the per-image scores equal fudbench.evaluate's on the same inputs.
    Then (issue 26, case 3) the plug-ins' helper modules are edited: a dry-run reruns exactly the plug-in explainer's explain jobs and the
    plug-in fill's evaluate jobs, for those files, and the rest only downstream of them."""
    from test_reruns import UPSTREAM, planned_jobs
    from workflow_support import snakemake

    from fudbench.data.shards import load_eval_shard, n_shards

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "my_methods.py").write_text(WORKFLOW_PLUGIN)
    (plugins / "my_scale.py").write_text("SCALE = 2.0\n")
    (plugins / "my_fills.py").write_text(WORKFLOW_FILL)
    (plugins / "fill_levels.py").write_text("GREY = 0.5\n")
    (plugins / "my_metric.py").write_text(METRIC_PLUGIN)
    config = resolve_config([repo / "config/smoke.yaml"])
    config["run_name"] = "plugin"
    config["models"]["classifiers"] = {"cnn": config["models"]["classifiers"]["cnn"]}
    # the field's tools beside them (issue 29): a CAM family, LRP, two Quantus metrics
    config["explainers"] = {
        "mine": {"method": f"{plugins}/my_methods.py:ScaledGradTimesInput", "scale": 2.0},
        "sm": {},
        "lrp": {"method": "lrp"},
        "cam_d00": {"method": "degrade", "base": "cam", "fraction": 0.0},
        "cam_d50": {"method": "degrade", "base": "cam", "fraction": 0.5},
    }
    config["evaluators"] = {
        "insdel": config["evaluators"]["insdel"],
        "road": {
            "imputer": "grey",
            "orders": ["morf"],
            "imputer_options": {"grey": {"method": f"{plugins}/my_fills.py:GreyFill"}},
        },
        "mine_drop": {"method": f"{plugins}/my_metric.py:SPEC"},
        "top_mass": {"method": EXAMPLE_METRIC},  # the example docs/your_own.md uses, by its repository path
        "qt_fc": {
            "method": "quantus",
            "metric": "FaithfulnessCorrelation",
            "settings": {"nr_runs": 10, "subset_size": 16},
        },
        "qt_pf": {"method": "quantus", "metric": "PixelFlipping", "settings": {"features_in_step": 16}},
    }
    for key in ("diagnostics", "timing", "meta_metrics"):
        config["analysis"].pop(key, None)
    config["analysis"]["pooled_explainers"] = ["mine"]
    config["plots"]["qualitative_explainers"] = ["mine"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    work = tmp_path / "work"
    res = snakemake(repo, "--configfile", str(tmp_path / "config.yaml"), "--directory", str(work), "--cores", "2")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]

    results = work / "results/plugin"
    per_image = pd.read_parquet(results / "analysis/per_image.parquet")
    workflow_scores = per_image[per_image["explainer"] == "mine"].set_index(["curve", "image"])["score"]
    model = load_classifier(results / "models/cnn.pt")
    data = load_eval_shard(results / "data/eval.npz", 0, config["data"]["shard_size"])
    attr = load_npz(results / "attributions/cnn/mine/shard0.npz")
    assert np.array_equal(attr["ids"], data["ids"])
    x = torch.from_numpy(data["images"])
    evaluation = {k: config["evaluation"][k] for k in ("ratios", "reduction")}
    api = fudbench.evaluate(
        model,
        x,
        torch.from_numpy(attr["targets"]),
        torch.from_numpy(attr["attributions"]),
        metrics={"insdel": config["evaluators"]["insdel"], "top_mass": {"method": f"{repo}/{EXAMPLE_METRIC}"}},
        evaluation=evaluation,
        image_ids=attr["ids"],
        seed=config["seed"],
        model_name="cnn",
        explainer="mine",
    )
    api_scores = api.dropna(subset=["score"]).drop_duplicates(["curve", "image"]).set_index(["curve", "image"])["score"]
    shared = workflow_scores.dropna().index.intersection(api_scores.index)
    assert len(shared) == 3 * len(attr["ids"])  # insertion, deletion and the example metric, every image
    insdel = [c for c in shared if c[0] != "top_mass@top_mass"]
    np.testing.assert_array_equal(api_scores[insdel].to_numpy(), workflow_scores[insdel].to_numpy())
    np.testing.assert_allclose(api_scores[shared].to_numpy(), workflow_scores[shared].to_numpy(), rtol=1e-12)
    assert "Top-10% mass [top_mass]" in set(pd.read_csv(results / "tables/appendix_scores.csv")["metric"])
    # the plug-in evaluator's curve is scored by the analysis and reaches the appendix score table
    plugin_scores = per_image[per_image["curve"] == "top_drop@mine_drop"]
    assert len(plugin_scores) == len(config["explainers"]) * len(attr["ids"]) and plugin_scores["score"].notna().all()
    assert "Top drop [mine_drop]" in set(pd.read_csv(results / "tables/appendix_scores.csv")["metric"])
    # the field's tools: their rows in the score table and the report card (issue 29)
    appendix = pd.read_csv(results / "tables/appendix_scores.csv")
    assert {"Quantus FaithfulnessCorrelation [qt_fc]", "Quantus PixelFlipping [qt_pf]"} <= set(appendix["metric"])
    assert {"lrp", "cam_d00", "cam_d50"} <= set(appendix["explainer"])
    card = pd.read_csv(results / "tables/report_card.csv")
    assert {"quantus_faithfulness_correlation@qt_fc", "quantus_pixel_flipping@qt_pf"} <= set(card["curve"])
    assert "cam_recovery" in card.columns

    # case 3: edit the helpers (not the files named in the config) and ask a dry-run what reruns and why. One
    # helper at a time: Snakemake names a job's own updated inputs only when no job upstream of it reruns.
    shards = [str(s) for s in range(n_shards(config["data"]["n_eval"], config["data"]["shard_size"]))]
    for helper, text, rule, name in [
        ("fill_levels.py", "GREY = 0.25\n", "evaluate", "road"),
        ("my_scale.py", "SCALE = 3.0\n", "explain", "mine"),
    ]:
        (plugins / helper).write_text(text)
        res = snakemake(repo, "-n", "--configfile", str(tmp_path / "config.yaml"), "--directory", str(work))
        assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
        jobs = planned_jobs(res.stdout + res.stderr)
        seeds = [j for j in jobs if "Updated input files" in j.reasons]
        assert sorted(
            (j.rule, j.wildcards.get("explainer") or j.wildcards.get("evaluator"), j.wildcards["shard"]) for j in seeds
        ) == [(rule, name, s) for s in shards], "\n".join(map(str, jobs))
        assert all(j.reasons["Updated input files"] == str(plugins / helper) for j in seeds), "\n".join(map(str, seeds))
        others = [j for j in jobs if j not in seeds and not (set(j.reasons) and set(j.reasons) <= set(UPSTREAM))]
        assert not others, f"jobs rerun that do not depend on {helper}:\n" + "\n".join(map(str, others))
        assert not [j for j in jobs if j.wildcards.get("explainer") == "sm"]  # the built-in explainer's jobs stay
    assert not [j for j in jobs if j.rule in ("make_dataset", "train_classifier")]


def test_the_documented_example_runs_and_ranks_methods_above_random(repo):
    import importlib.util

    spec = importlib.util.spec_from_file_location("example", repo / "examples/evaluate_your_own.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    table = example.main()
    assert set(table.index) == {"mine", "ig", "random"}
    assert {"insertion", "deletion", "sensitivity_n", "road_morf"} <= set(table.columns)
    # a trained model's gradient maps correlate with its output drops; a random map does not
    assert table.loc["ig", "sensitivity_n"] > table.loc["random", "sensitivity_n"] + 0.1


FILL_PLUGIN = textwrap.dedent('''
    import torch
    from fudbench.imputers.base import Imputer, compose

    class GreyFill(Imputer):
        """removed pixels take one grey level"""
        def __init__(self, level: float = 0.5):
            self.level = level

        def fill(self, x, keep_mask, context=None):
            return compose(x, keep_mask, torch.full_like(x, self.level))

    class BrokenFill(Imputer):
        def fill(self, x, keep_mask, context=None):
            return x[99]
''')


METRIC_PLUGIN = textwrap.dedent('''
    """A metric of my own: how much p(target) drops when the top of the map is zeroed."""
    from dataclasses import dataclass

    from fudbench.evaluators.base import CurveSpec, EvaluatorSpec
    from fudbench.core.settings import Settings, setting


    @dataclass(frozen=True)
    class TopDropSettings(Settings):
        fraction: float = setting(0.25, exclusiveMinimum=0, exclusiveMaximum=1)
        batch_size: int = setting(64, minimum=1)


    def drop(g):
        g = g.sort_values("step")
        return float(g["confidence"].iloc[0] - g["confidence"].iloc[-1])


    def curves(settings):
        return [CurveSpec("top_drop", "Top drop", True, drop, table="appendix_scores",
                          caption="Top drop (p(y) lost when the top of the map is zeroed, higher better)")]


    def build(settings, evaluation, assets, device):
        from fudbench.evaluators.base import Evaluator
        from fudbench.imputers import ZeroImputer
        from fudbench.protocols import TopKCurve

        curve = TopKCurve("top_drop", [0.0, settings["fraction"]], mode="remove", batch_size=settings["batch_size"],
                          reduction=evaluation["reduction"])
        return Evaluator("top_drop", [(curve, ZeroImputer())])


    SPEC = EvaluatorSpec("top_drop", "p(y) lost when the top of the map is zeroed", TopDropSettings, curves,
                         f"{__file__}:build")
''')


def test_a_plugin_evaluator_is_validated_and_scored_like_a_built_in(repo, tmp_path, cnn_batch):
    """An EvaluatorSpec given by import path: the config accepts it (its settings
    checked from its dataclass, named by key), and once registered
    (fudbench.evaluators.use_plugins, as every job and fudbench.evaluate do) the
    analysis scores its curve: per-image scores, the configured curves of the
    tables and the report card."""
    from fudbench.analysis.curves import CURVE_SCORES, configured_curve_scores, per_image_scores
    from fudbench.config.validate import ConfigError
    from fudbench.evaluators import PLUGINS, build_evaluator, use_plugins

    path = tmp_path / "my_metric.py"
    path.write_text(METRIC_PLUGIN)
    method = f"{path}:SPEC"
    config = resolve_config([repo / "config/smoke.yaml"])
    config["evaluators"]["mine"] = {"method": method, "fraction": 0.5}
    validate_config(config, repo / "config/schema.yaml")
    config["evaluators"]["mine"]["fraction"] = 1.5
    with pytest.raises(ConfigError, match=r"evaluators.mine.fraction': 1.5 is greater than or equal to"):
        validate_config(config, repo / "config/schema.yaml")
    config["evaluators"]["mine"] = {"method": f"{tmp_path}/nope.py:SPEC"}
    with pytest.raises(ConfigError, match=r"evaluators.mine.method'.*nope.py"):
        validate_config(config, repo / "config/schema.yaml")

    model, x, _ = cnn_batch
    y = model(x).argmax(1)
    entry = {"mine": {"method": method}}
    records, _ = build_evaluator("mine", entry["mine"], {"ratios": [0.5], "reduction": "abs_sum"}, {}, "cpu").run(
        model, x, y, torch.rand_like(x), [0, 1, 2], (0,)
    )
    records = records.assign(model="cnn", explainer="e")
    try:
        assert "top_drop" not in CURVE_SCORES and "score" not in per_image_scores(records)
        assert use_plugins(entry) == [method]
        assert "top_drop" in CURVE_SCORES  # the analysis' tables were refreshed in place
        scores = per_image_scores(records)
        assert scores["curve"].unique().tolist() == ["top_drop@mine"] and scores["score"].notna().all()
        assert list(configured_curve_scores(entry)) == ["top_drop@mine"]
    finally:
        PLUGINS.pop(method, None)
        from fudbench.analysis import curves

        curves.refresh()


def test_imputer_and_evaluator_plugins_are_looked_up_like_built_ins(repo, tmp_path, monkeypatch, cnn_batch):
    """One lookup for every kind: an imputer class and an evaluator spec by import path."""
    from fudbench.evaluators import build_evaluator, spec

    (tmp_path / "my_fills.py").write_text(FILL_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    model, x, _ = cnn_batch
    y = model(x).argmax(1)
    a = torch.rand_like(x)
    evaluation = {"ratios": [0.5], "reduction": "abs_sum"}
    settings = {"imputer": "grey", "imputer_options": {"grey": {"method": "my_fills:GreyFill", "level": 0.25}}}
    records, _ = build_evaluator("road", settings, evaluation, {}, "cpu").run(model, x, y, a, [0, 1, 2], (0,))
    assert len(records) == 2 * 3 and records["confidence"].between(0, 1).all()
    config = resolve_config([repo / "config/smoke.yaml"])
    config["evaluators"]["road"] = settings
    validate_config(config, repo / "config/schema.yaml")  # the alias of a plug-in passes the schema
    assert spec("fudbench.evaluators.faithfulness.idsds:SPEC") is spec("idsds")
    with pytest.raises(
        ValueError,
        match=r"'my_fills:GreyFill' names <class 'my_fills.GreyFill'>, not an "
        r"EvaluatorSpec",
    ):
        spec("my_fills:GreyFill")


# --- issue 26: plug-in provenance (case 3), maps that require grad and errors inside plug-ins (case 4) ---------


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_plugin_sources_follow_local_imports_not_the_environment(tmp_path, monkeypatch):
    """plugins.plugin_sources: the plug-in's file or module, its package's __init__ files
    and every local module it imports (absolute, relative, `from pkg import module`, inside
    functions, transitively), never the standard library, site-packages or fudbench, found
    without importing any of them; an edit that adds an import is seen (mtime-checked cache)."""
    import sys

    from fudbench.core.plugins import plugin_sources

    monkeypatch.setattr(sys, "path", list(sys.path))  # undo the plug-in folder's sys.path entry
    plugins, lib = tmp_path / "plugins", tmp_path / "lib"
    main = _write(
        plugins / "h26_methods.py",
        """
        import json, os.path
        import numpy as np
        import torch
        from fudbench.explainers.base import Explainer
        from h26_helpers import SCALE
        import h26_not_installed_anywhere

        def method(model, x, target, seeds=None):
            import h26_lazy  # imported when called: a source too
            return SCALE * x
    """,
    )
    helper = _write(plugins / "h26_helpers.py", "SCALE = 2.0\n")
    lazy = _write(plugins / "h26_lazy.py", "from h26_helpers import SCALE\n")
    assert set(plugin_sources(f"{main}:method")) == {main, helper, lazy}
    assert plugin_sources(f"{main}:method")[0] == main

    pkg = {
        name: _write(lib / "h26pkg" / name, text)
        for name, text in {
            "__init__.py": "",
            "methods.py": "from . import util\nfrom .sub import deep\nimport h26pkg.sub.other as other\n"
            "from fudbench.core.plugins import blame\n",
            "util.py": "X = 1\n",
            "unused.py": "",
            "sub/__init__.py": "",
            "sub/deep.py": "from ..util import X\n",
            "sub/other.py": "",
        }.items()
    }
    monkeypatch.syspath_prepend(str(lib))
    found = plugin_sources("h26pkg.methods:method")
    assert set(found) == set(pkg.values()) - {pkg["unused.py"]}
    assert not [m for m in sys.modules if m.startswith(("h26pkg", "h26_"))]  # nothing was imported

    # an import added to a helper is followed (the cache is keyed by the files' mtimes and sizes)
    extra = _write(plugins / "h26_extra.py", "")
    _write(plugins / "h26_helpers.py", "SCALE = 3.0\nimport h26_extra\n")
    assert set(plugin_sources(f"{main}:method")) == {main, helper, lazy, extra}
    # fudbench's own modules by import path: the module itself, nothing it imports
    assert plugin_sources("fudbench.explainers.saliency:Saliency") == [
        str(Path(fudbench.__file__).parent / "explainers" / "saliency.py")
    ]


def test_a_plugin_file_imports_a_helper_next_to_it(tmp_path, monkeypatch):
    import sys

    from fudbench.core.plugins import load_object

    monkeypatch.setattr(sys, "path", list(sys.path))
    main = _write(tmp_path / "h26b_methods.py", "from h26b_helpers import SCALE\n\ndef f():\n    return SCALE\n")
    _write(tmp_path / "h26b_helpers.py", "SCALE = 5\n")
    assert load_object(f"{main}:f")() == 5
    assert "h26b_helpers" not in sys.modules  # loaded under its folder's name (issue 39, case 3)


def test_two_plugin_folders_with_same_named_helpers_each_get_their_own(tmp_path):
    """Issue 39, case 3: plug-ins in two folders that each import `helper` (module level,
    inside a function, and through a helper package) get their own folder's helper,
    not the one loaded first; each plug-in's sources name its own helper."""
    import sys

    from fudbench.core.plugins import load_object, plugin_sources

    mains = {}
    for side in ("a", "b"):
        folder = tmp_path / side
        mains[side] = _write(
            folder / "plug.py",
            """
            from h39_helper import SCALE
            from h39_pkg import sub

            def f():
                import h39_helper
                return SCALE, h39_helper.SCALE, sub.V
        """,
        )
        _write(folder / "h39_helper.py", f"SCALE = {side!r}\n")
        _write(folder / "h39_pkg" / "__init__.py", "")
        _write(folder / "h39_pkg" / "sub.py", "from h39_helper import SCALE as V\n")
    assert load_object(f"{mains['a']}:f")() == ("a", "a", "a")
    assert load_object(f"{mains['b']}:f")() == ("b", "b", "b")
    assert load_object(f"{mains['a']}:f")() == ("a", "a", "a")  # calls after both loads keep their own
    for side in ("a", "b"):
        assert str(tmp_path / side / "h39_helper.py") in plugin_sources(f"{mains[side]}:f")
        assert not [s for s in plugin_sources(f"{mains[side]}:f") if str(tmp_path / ("b" if side == "a" else "a")) in s]
    assert "h39_helper" not in sys.modules and str(tmp_path / "a") not in sys.path


def test_editing_a_plugin_imputers_helper_recomputes_the_evaluate_work(shard, tmp_path, monkeypatch):
    """The evaluate job's work cache is keyed by the plug-in imputer's sources, its helper
    included: after an edit the job recomputes instead of copying the old records."""
    import sys

    from fudbench.workflow.work_cache import WorkCache

    monkeypatch.setattr(sys, "path", list(sys.path))
    fill = _write(
        tmp_path / "fills" / "h26c_fills.py",
        """
        import torch
        from fudbench.imputers.base import Imputer, compose
        from h26c_levels import GREY

        class GreyFill(Imputer):
            def fill(self, x, keep_mask, context=None):
                return compose(x, keep_mask, torch.full_like(x, GREY))
    """,
    )
    levels = _write(tmp_path / "fills" / "h26c_levels.py", "GREY = 0.5\n")
    result = explain_shard(shard / "cnn.pt", shard / "eval.npz", 0, 4, "ig", {"n_steps": 2}, "predicted", (0,), "cpu")
    write_npz(shard / "attr.npz", **result)
    settings = {"imputer": "grey", "imputer_options": {"grey": {"method": f"{fill}:GreyFill"}}, "orders": ["morf"]}

    def job():
        return evaluate_explainers(
            "cnn",
            "road",
            {"ig": (shard / "attr.npz", shard / "r.parquet", shard / "s.npz")},
            model_path=shard / "cnn.pt",
            images_path=shard / "eval.npz",
            shard=0,
            shard_size=4,
            settings=settings,
            evaluation={"ratios": [0.5], "reduction": "abs_sum"},
            assets={},
            seed=0,
            device="cpu",
            cache=WorkCache(tmp_path / "cache", enabled=True),
        )

    assert job()["computed"] == ["ig"]
    assert job()["cached"] == ["ig"]
    Path(levels).write_text("GREY = 0.25\n")
    assert job()["computed"] == ["ig"]


def test_a_map_that_requires_grad_is_detached_in_the_job_and_the_api(plugin, shard, caplog):
    """`return g * x` with x requiring grad: the explain job (which turns the map into a
    numpy array) and fudbench.explain both detach it when the plug-in returns it, and warn
    once naming the entry, the plug-in and the fix."""
    with caplog.at_level("WARNING", logger="fudbench.explainers.plugin"):
        job = explain_shard(
            shard / "cnn.pt",
            shard / "eval.npz",
            0,
            4,
            "mine",
            {"method": "my_methods:attached"},
            "predicted",
            (0, "explain"),
            "cpu",
        )
    assert re.search(
        r"explainer 'mine' \(config key 'explainers.mine'\), plug-in my_methods:attached \(.*"
        r"my_methods.py\): the returned map requires grad .*detached it. Return a detached map",
        caplog.text,
    )
    model = load_classifier(shard / "cnn.pt")
    x = torch.from_numpy(load_npz(shard / "eval.npz")["images"]).float() / 255
    api = fudbench.explain(model, x, torch.from_numpy(job["targets"]), "my_methods:attached")
    assert not api.requires_grad
    np.testing.assert_array_equal(api.numpy(), job["attributions"])


def test_errors_inside_plugins_name_the_entry_and_the_plugin(plugin, shard, tmp_path, monkeypatch, cnn_batch):
    """An exception inside a plug-in (explainer, imputer, evaluator, classifier factory) is
    re-raised as PluginCallError naming the config entry and the plug-in's import path and
    file, with the original exception chained."""
    from fudbench.evaluators import build_evaluator
    from fudbench.models.classifiers import pretrained_classifier
    from fudbench.core.plugins import PluginCallError

    with pytest.raises(
        PluginCallError,
        match=r"^explainer 'mine' \(config key 'explainers.mine'\): plug-in "
        r"my_methods:broken \(/.*my_methods.py\) raised KeyError in explain: "
        r"'no_such_layer'",
    ) as info:
        explain_shard(
            shard / "cnn.pt",
            shard / "eval.npz",
            0,
            4,
            "mine",
            {"method": "my_methods:broken"},
            "predicted",
            (0, "explain"),
            "cpu",
        )
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(
        PluginCallError,
        match=r"explainer 'deep' \(config key 'explainers.deep'\): plug-in "
        r"my_methods:BrokenInit .* raised ValueError in building BrokenInit"
        r"\(\*\*\{'depth': 3\}\): depth 3 is not supported",
    ):
        build_explainer("deep", {"method": "my_methods:BrokenInit", "depth": 3})

    (tmp_path / "my_fills.py").write_text(FILL_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    model, x, _ = cnn_batch
    settings = {"imputer": "bad", "imputer_options": {"bad": {"method": "my_fills:BrokenFill"}}}
    road = build_evaluator("road", settings, {"ratios": [0.5], "reduction": "abs_sum"}, {}, "cpu")
    with pytest.raises(
        PluginCallError,
        match=r"imputer 'bad' \(config key 'evaluators.road.imputer_options.bad'\): "
        r"plug-in my_fills:BrokenFill \(/.*my_fills.py\) raised "
        r"IndexError in fill",
    ) as info:
        road.run(model, x, model(x).argmax(1), torch.rand_like(x), [0, 1, 2], (0,))
    assert isinstance(info.value.__cause__, IndexError)

    (tmp_path / "my_metric.py").write_text(
        textwrap.dedent('''
        from fudbench.evaluators.base import EvaluatorSpec
        from fudbench.evaluators.faithfulness.idsds import IDSDSSettings

        def build(settings, evaluation, assets, device):
            raise RuntimeError("no score model for this metric")

        SPEC = EvaluatorSpec("mine", "a metric of my own", IDSDSSettings, lambda s: [], "my_metric:build")
    ''')
    )
    with pytest.raises(
        PluginCallError,
        match=r"evaluator 'mymetric' \(config key 'evaluators.mymetric'\): plug-in "
        r"my_metric:SPEC \(/.*my_metric.py\) raised RuntimeError in building "
        r"it \(my_metric:build\): no score model",
    ):
        build_evaluator("mymetric", {"method": "my_metric:SPEC"}, {"ratios": [0.5]}, {}, "cpu")

    cfg = {
        "arch": "import",
        "factory": f"{plugin}:broken_factory",
        "kwargs": {"width": 2},
        "mean": [0.5] * 3,
        "std": [0.5] * 3,
    }
    with pytest.raises(
        PluginCallError,
        match=r"classifier 'mine' \(config key 'models.classifiers.mine.factory'\): "
        r"plug-in /.*my_methods.py:broken_factory raised ZeroDivisionError in "
        r"building the network with kwargs \{'width': 2\}",
    ) as info:
        pretrained_classifier(cfg, "mine")
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_an_uncaught_exception_writes_its_traceback_to_the_job_log(repo, tmp_path):
    """A script job (setup_job) that dies of an exception leaves the full traceback,
    chained causes included, in its log file, and exits non-zero as before."""
    import subprocess
    import sys

    log_file = tmp_path / "logs" / "explain.log"
    log_file.parent.mkdir()
    script = _write(
        tmp_path / "job.py",
        f"""
        import sys
        sys.path.insert(0, {str(repo / "src")!r})
        from types import SimpleNamespace
        from fudbench.workflow.jobs import setup_job

        log = setup_job(SimpleNamespace(threads=1, log=[{str(log_file)!r}], rule="explain"))
        log.info("working")

        def plugin_code():
            raise KeyError("no_such_layer")

        try:
            plugin_code()
        except KeyError as exc:
            raise RuntimeError("explainer 'mine' failed") from exc
    """,
    )
    res = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    text = log_file.read_text()
    assert "working" in text and "explain ERROR: the job failed with an uncaught exception:" in text
    assert "Traceback (most recent call last)" in text and "in plugin_code" in text
    assert "KeyError: 'no_such_layer'" in text and "The above exception was the direct cause" in text
    assert text.index("RuntimeError: explainer 'mine' failed") > text.index("KeyError: 'no_such_layer'")
    assert "RuntimeError: explainer 'mine' failed" in res.stderr  # the console still shows it

    # before setup_job (an import failing): scripts' first import, _fudbench_path, installs the hook
    early = tmp_path / "logs" / "early.log"
    script = _write(
        tmp_path / "early.py",
        f"""
        import sys
        from types import SimpleNamespace
        snakemake = SimpleNamespace(threads=1, log=[{str(early)!r}], rule="evaluate")
        sys.path.insert(0, {str(repo / "scripts")!r})
        import _fudbench_path
        import h26_no_such_module
    """,
    )
    res = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert "ModuleNotFoundError: No module named 'h26_no_such_module'" in early.read_text()
