"""Your own explainer, through config and through fudbench.explain / evaluate
(docs/your_own.md): plug-ins by import path, the Python API giving the
workflow's numbers, degenerate maps reported, EG never its own baseline."""
import textwrap

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

import fudbench
from fudbench.config import ConfigError, validate_config
from fudbench.explainers import build_explainer
from fudbench.explainers.expected_gradients import ExpectedGradients
from fudbench.io import load_npz, write_npz
from fudbench.models.classifiers import build_classifier, load_classifier, save_classifier
from fudbench.pipeline import evaluate_explainers, explain_shard

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
    write_npz(tmp_path / "eval.npz", images=images, labels=np.arange(4), masks=np.zeros((4, 8, 8), np.uint8),
              ids=np.arange(4))
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


@pytest.mark.parametrize("method, settings, match", [
    ("no_such_module:X", {}, r"'explainers.mine.method': 'no_such_module:X': module 'no_such_module' cannot be "
                             r"imported"),
    ("my_methods:Missing", {}, r"'explainers.mine.method': 'my_methods:Missing': my_methods has no attribute "
                               r"'Missing'"),
    ("my_methods:NotAnExplainer", {}, r"'explainers.mine': my_methods.NotAnExplainer is not an Explainer: subclass"),
    ("my_methods:GradTimesInput", {"scael": 2}, r"'explainers.mine': GradTimesInput\(scael\) does not match its "
                                                r"constructor"),
    ("my_methods:blurry", {"widht": 3}, r"'explainers.mine': blurry cannot be called as fn\(model, x, target, "
                                        r"seeds=None, \*\*settings\) with settings \['widht'\]"),
    ("missing/file.py:f", {}, r"'explainers.mine.method': 'missing/file.py:f': .*missing/file.py does not exist"),
])
def test_bad_plugin_explainers_fail_at_parse_time_naming_the_key(repo, plugin, method, settings, match):
    config = yaml.safe_load((repo / "config/smoke.yaml").read_text())
    config["explainers"]["mine"] = {"method": method, **settings}
    with pytest.raises(ConfigError, match=match):
        validate_config(config, repo / "config/schema.yaml")


def test_a_map_of_the_wrong_shape_is_an_error_naming_the_explainer(plugin, shard):
    model = load_classifier(shard / "cnn.pt")
    x = torch.rand(2, 3, 8, 8)
    with pytest.raises(ValueError, match=r"FunctionExplainer.explain: the returned map must have the images' batch "
                                         r"size and H x W.*got \(2, 3, 2, 2\)"):
        build_explainer("w", {"method": "my_methods:wrong_shape"}).explain(model, x, model(x).argmax(1))


def test_degenerate_maps_are_counted_where_made_and_flagged_in_the_records(plugin, shard, caplog):
    with caplog.at_level("WARNING", logger="fudbench.pipeline"):
        result = explain_shard(shard / "cnn.pt", shard / "eval.npz", 0, 4, "zeros",
                               {"method": "my_methods:all_zero"}, "predicted", (0, "explain"), "cpu")
    assert "zeros: 4 degenerate map(s) (zero) for image id(s) [0, 1, 2, 3]" in caplog.text
    write_npz(shard / "attr.npz", **result)
    done = evaluate_explainers("cnn", "insdel", {"zeros": (shard / "attr.npz", shard / "r.parquet",
                                                           shard / "s.npz")},
                               model_path=shard / "cnn.pt", images_path=shard / "eval.npz", shard=0, shard_size=4,
                               settings={"n_steps": 4}, evaluation={"ratios": [0.5], "reduction": "abs_sum"},
                               assets={}, seed=0, device="cpu")
    assert done["computed"] == ["zeros"]
    assert set(pd.read_parquet(shard / "r.parquet")["degenerate_map"]) == {"zero"}


def test_evaluate_api_returns_the_workflow_job_numbers(plugin, shard):
    """fudbench.evaluate on the same model, images, maps, seed and ids gives the
    records the workflow's evaluate job writes (pipeline.evaluate_explainers)."""
    result = explain_shard(shard / "cnn.pt", shard / "eval.npz", 0, 4, "mine", {"method": "my_methods:GradTimesInput"},
                           "predicted", (0, "explain"), "cpu")
    write_npz(shard / "attr.npz", **result)
    settings, evaluation = {"n_subsets": 4, "batch_size": 16}, {"ratios": [0.3, 0.6], "reduction": "abs_sum"}
    evaluate_explainers("cnn", "sensn", {"mine": (shard / "attr.npz", shard / "r.parquet", shard / "s.npz")},
                        model_path=shard / "cnn.pt", images_path=shard / "eval.npz", shard=0, shard_size=4,
                        settings=settings, evaluation=evaluation, assets={}, seed=7, device="cpu")
    job = pd.read_parquet(shard / "r.parquet")
    model = load_classifier(shard / "cnn.pt")
    x = torch.from_numpy(load_npz(shard / "eval.npz")["images"]).float() / 255
    api = fudbench.evaluate(model, x, torch.from_numpy(result["targets"]), torch.from_numpy(result["attributions"]),
                            metrics={"sensn": settings}, evaluation=evaluation, image_ids=result["ids"], seed=7,
                            model_name="cnn", explainer="mine")
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
    with pytest.raises(ValueError, match=r"EG: image\(s\) at positions \[0\] have no reference image other than "
                                         r"themselves"):
        eg.explain(model, x[:1], model(x[:1]).argmax(1), seeds=[0])


@pytest.mark.workflow
def test_plugin_explainer_through_the_workflow_gives_the_api_scores(repo, tmp_path):
    """The smoke workflow with one explainer from a module outside the package and
    one evaluator: its per-image scores equal fudbench.evaluate's on the same inputs."""
    from workflow_support import snakemake

    from fudbench.data.shards import load_eval_shard

    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins/my_methods.py").write_text(PLUGIN)
    config = yaml.safe_load((repo / "config/smoke.yaml").read_text())
    config["run_name"] = "plugin"
    config["models"]["classifiers"] = {"cnn": config["models"]["classifiers"]["cnn"]}
    config["explainers"] = {"mine": {"method": f"{tmp_path}/plugins/my_methods.py:GradTimesInput", "scale": 2.0}}
    config["evaluators"] = {"insdel": config["evaluators"]["insdel"]}
    for key in ("diagnostics", "timing", "meta_metrics"):
        config["analysis"].pop(key, None)
    config["analysis"]["pooled_explainers"] = ["mine"]
    config["plots"]["qualitative_explainers"] = ["mine"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    work = tmp_path / "work"
    res = snakemake(repo, "--configfile", str(tmp_path / "config.yaml"), "--directory", str(work), "--cores", "2")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]

    results = work / "results/plugin"
    workflow_scores = pd.read_parquet(results / "analysis/per_image.parquet").set_index(["curve", "image"])["score"]
    model = load_classifier(results / "models/cnn.pt")
    data = load_eval_shard(results / "data/eval.npz", 0, config["data"]["shard_size"])
    attr = load_npz(results / "attributions/cnn/mine/shard0.npz")
    assert np.array_equal(attr["ids"], data["ids"])
    x = torch.from_numpy(data["images"])
    evaluation = {k: config["evaluation"][k] for k in ("ratios", "reduction")}
    api = fudbench.evaluate(model, x, torch.from_numpy(attr["targets"]), torch.from_numpy(attr["attributions"]),
                            metrics={"insdel": config["evaluators"]["insdel"]}, evaluation=evaluation,
                            image_ids=attr["ids"], seed=config["seed"], model_name="cnn", explainer="mine")
    api_scores = api.dropna(subset=["score"]).drop_duplicates(["curve", "image"]).set_index(["curve", "image"])["score"]
    shared = workflow_scores.dropna().index.intersection(api_scores.index)
    assert len(shared) == 2 * len(attr["ids"])  # insertion and deletion, every image
    np.testing.assert_array_equal(api_scores[shared].to_numpy(), workflow_scores[shared].to_numpy())


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
''')


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
    config = yaml.safe_load((repo / "config/smoke.yaml").read_text())
    config["evaluators"]["road"] = settings
    validate_config(config, repo / "config/schema.yaml")  # the alias of a plug-in passes the schema
    assert spec("fudbench.evaluators.idsds:SPEC") is spec("idsds")
    with pytest.raises(ValueError, match=r"'my_fills:GreyFill' names <class 'my_fills.GreyFill'>, not an "
                                         r"EvaluatorSpec"):
        spec("my_fills:GreyFill")
