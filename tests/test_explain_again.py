"""Evaluators that explain again (EvaluatorSpec.needs_explainer): the evaluate job and fudbench.evaluate
rebuild each explainer from its entry with its explain job's seeds, check that it reproduces the stored
maps (an error naming the explainer otherwise, never a NaN), explain two names for one map apart, and
key their cached work by the explainer's entry."""

import logging

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.core.io import write_npz
from fudbench.data.synthetic import make_benchmark
from fudbench.explainers.again import ReproductionError
from fudbench.explainers.seeds import explain_seed_key
from fudbench.models.classifiers import build_classifier, load_classifier, save_classifier
from fudbench.workflow.pipeline import evaluate_explainers, explain_shard

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

EVALUATION = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}
SENSITIVITY = {"n_samples": 2}
ENTRIES = {"ig": {"n_steps": 4}, "ig_copy": {"method": "ig", "n_steps": 4}, "random": {}}


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("again")
    cfg = {
        "image_size": 16,
        "shapes": ["circle", "square"],
        "dark": 0.1,
        "light": 0.9,
        "object_scale": [0.5, 0.8],
        "n_train": 4,
        "n_val": 4,
        "n_test": 8,
    }
    write_npz(d / "eval.npz", **make_benchmark(cfg, n_eval=4, seed=0)["splits"]["eval"])
    torch.manual_seed(0)
    clf_cfg = {"arch": "small_cnn", "width": 4}
    save_classifier(d / "clf.pt", build_classifier(clf_cfg, 4, 16, [0.5] * 3, [0.25] * 3), clf_cfg, 4, 16, {})
    for name, settings in ENTRIES.items():  # as the explain jobs make them: their own seed keys
        attr = explain_shard(
            d / "clf.pt",
            d / "eval.npz",
            0,
            4,
            name,
            settings,
            "predicted",
            explain_seed_key(0, "clf", name, settings),
            "cpu",
        )
        write_npz(d / f"attr_{name}.npz", **attr)
    return d


def _job(assets, out, names, entries=ENTRIES, evaluator="max_sensitivity", cache=None):
    outputs = {e: (assets / f"attr_{e}.npz", out / f"{e}.parquet", out / f"{e}.npz") for e in names}
    done = evaluate_explainers(
        "clf",
        evaluator,
        outputs,
        model_path=assets / "clf.pt",
        images_path=assets / "eval.npz",
        shard=0,
        shard_size=4,
        settings=SENSITIVITY if evaluator == "max_sensitivity" else {},
        evaluation=EVALUATION,
        assets={},
        seed=0,
        device="cpu",
        cache=cache,
        explainer_entries={e: entries[e] for e in names},
    )
    return done, {e: pd.read_parquet(o[1]) for e, o in outputs.items()}


def test_the_job_rebuilds_each_explainer_and_scores_the_random_control(assets, tmp_path):
    done, records = _job(assets, tmp_path, ["ig", "random"])
    assert done["computed"] == ["ig", "random"]
    ig, random = records["ig"]["value"], records["random"]["value"]
    assert np.isfinite(ig).all() and (ig > 0).all()  # a gradient map moves with its input
    # the random control, re-seeded per image, gives the same map whatever the input: perfectly robust
    assert (random == 0).all()


def test_an_explainer_that_does_not_reproduce_its_maps_fails_naming_it(assets, tmp_path):
    changed = {**ENTRIES, "ig": {"n_steps": 16}}
    with pytest.raises(ReproductionError, match=r"explainer 'ig' \(config key 'explainers.ig'\).*does not reproduce"):
        _job(assets, tmp_path, ["ig"], entries=changed)


def test_two_names_for_one_map_are_explained_apart(assets, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="fudbench.workflow.pipeline"):
        done, _ = _job(assets, tmp_path, ["ig", "ig_copy"])
    assert done["computed"] == ["ig", "ig_copy"]
    assert "the same map as" not in caplog.text


def test_the_cache_key_follows_the_explainer_entry(assets, tmp_path):
    from fudbench.workflow.work_cache import WorkCache

    cache = WorkCache(tmp_path / "cache")
    assert _job(assets, tmp_path, ["random"], cache=cache)[0]["computed"] == ["random"]
    assert _job(assets, tmp_path, ["random"], cache=cache)[0]["cached"] == ["random"]
    # the same maps from an entry spelled otherwise: what the explainer depends on changed, so recomputed
    respelled = {**ENTRIES, "random": {"method": "random"}}
    assert _job(assets, tmp_path, ["random"], entries=respelled, cache=cache)[0]["computed"] == ["random"]


def test_an_evaluator_that_does_not_explain_keeps_the_same_map_shortcut(assets, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="fudbench.workflow.pipeline"):
        _job(assets, tmp_path, ["ig", "ig_copy"], evaluator="sparseness")
    assert "ig_copy: the same map as ig" in caplog.text


def _api_inputs(assets):
    from fudbench.core.io import load_npz

    model = load_classifier(assets / "clf.pt")
    data, attr = load_npz(assets / "eval.npz"), load_npz(assets / "attr_ig.npz")
    x = torch.from_numpy(data["images"][:4]).float().div(255)
    return model, x, torch.from_numpy(attr["targets"]), torch.from_numpy(attr["attributions"]), attr["ids"]


def test_fudbench_evaluate_explains_again_with_the_named_explainer(assets):
    import fudbench

    model, x, y, a, ids = _api_inputs(assets)
    kwargs = dict(metrics={"max_sensitivity": SENSITIVITY}, image_ids=ids, model_name="clf")
    scores = fudbench.evaluate(model, x, y, a, explainer={"ig": {"n_steps": 4}}, **kwargs)
    assert np.isfinite(scores["score"]).all() and set(scores["explainer"]) == {"ig"}
    with pytest.raises(ReproductionError, match="explainer 'ig'"):
        fudbench.evaluate(model, x, y, a, explainer={"ig": {"n_steps": 16}}, **kwargs)
    with pytest.raises(ValueError, match="names no registered explainer"):
        fudbench.evaluate(model, x, y, a, **kwargs)  # the default name, "explainer", is no method


def test_a_stochastic_map_from_fudbench_explain_is_rebuilt_by_fudbench_evaluate():
    """fudbench.explain's default seeds are the explain job's, the ones evaluate rebuilds with: the
    `random` control's maps pass the reproduction check with the same defaults (and score 0: re-seeded per
    image, a map blind to its input is perfectly robust), and fail it under another seed."""
    import fudbench

    ex = fudbench.load_example(n=2)
    maps = fudbench.explain(ex.model, ex.images, ex.targets, "random")
    scores = fudbench.evaluate(ex.model, ex.images, ex.targets, maps, metrics=["max_sensitivity"], explainer="random")
    assert (scores["value"] == 0).all()
    with pytest.raises(ReproductionError, match="random"):
        fudbench.evaluate(
            ex.model, ex.images, ex.targets, maps, metrics=["max_sensitivity"], explainer="random", seed=1
        )
