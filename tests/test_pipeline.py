"""Job-level functions: results do not depend on how the images are sharded.

Seeds derive from image ids, not from shard index or batch position, so
explaining/evaluating 8 images as one shard or as two shards of 4 gives the
same numbers. This covers the multi-shard path that the one-shard smoke
workflow does not exercise.
"""

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.data.synthetic import make_benchmark
from fudbench.core.io import load_npz, write_npz
from fudbench.models.classifiers import build_classifier, save_classifier
from fudbench.models.score import build_unet, save_score_model
from fudbench.workflow.pipeline import evaluate_shard, explain_shard
from fudbench.report.gallery import build_gallery

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

SCORE_CFG = {
    "block_out_channels": [8, 16],
    "attention": [False, True],
    "layers_per_block": 1,
    "num_train_timesteps": 100,
    "beta_schedule": "linear",
}
EVALUATORS = {
    "fud": {
        "steps": 4,
        "guidance_scale": 4.0,
        "guidance_start": 0.5,
        "known": "clean",
        "clip_x0": True,
        "batch_size": 7,
    },
    "insdel": {"n_steps": 4, "blur_kernel": 5, "blur_sigma": 1.0, "batch_size": 5},
    "sensn": {"n_subsets": 5, "batch_size": 11},
    "infid": {"perturbation": "authors", "n_perturb": 4, "sigma": 0.2, "batch_size": 8},
}
EVALUATION = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("assets")
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
    write_npz(d / "eval.npz", **make_benchmark(cfg, n_eval=8, seed=0)["splits"]["eval"])
    torch.manual_seed(0)
    clf_cfg = {"arch": "small_cnn", "width": 4}
    save_classifier(d / "clf.pt", build_classifier(clf_cfg, 4, 16, [0.5] * 3, [0.25] * 3), clf_cfg, 4, 16, {})
    save_score_model(d / "score.pt", build_unet(SCORE_CFG, 16), SCORE_CFG, 16, {})
    return d


def _explain(assets, shard_size, explainer, settings):
    parts = [
        explain_shard(
            assets / "clf.pt",
            assets / "eval.npz",
            s,
            shard_size,
            explainer,
            settings,
            "predicted",
            (0, "explain", "clf", explainer),
            "cpu",
        )
        for s in range(8 // shard_size)
    ]
    return {k: np.concatenate([p[k] for p in parts]) for k in ("attributions", "targets", "ids")}


@pytest.mark.parametrize("explainer,settings", [("ig", {"n_steps": 4}), ("random", {}), ("eg", {"k": 2})])
def test_explain_is_shard_invariant(assets, explainer, settings):
    one, two = _explain(assets, 8, explainer, settings), _explain(assets, 4, explainer, settings)
    assert np.array_equal(one["ids"], np.arange(8)) and np.array_equal(one["ids"], two["ids"])
    np.testing.assert_allclose(one["attributions"], two["attributions"], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("evaluator", sorted(EVALUATORS))
def test_evaluate_is_shard_invariant(assets, tmp_path, evaluator):
    results = {}
    for shard_size in (8, 4):
        frames, samples = [], []
        for s in range(8 // shard_size):
            attr = explain_shard(
                assets / "clf.pt",
                assets / "eval.npz",
                s,
                shard_size,
                "ig",
                {"n_steps": 4},
                "predicted",
                (0, "explain", "clf", "ig"),
                "cpu",
            )
            write_npz(tmp_path / f"attr{shard_size}_{s}.npz", **attr)
            rec, smp = evaluate_shard(
                assets / "clf.pt",
                assets / "eval.npz",
                tmp_path / f"attr{shard_size}_{s}.npz",
                s,
                shard_size,
                evaluator,
                EVALUATORS[evaluator],
                EVALUATION,
                {"score_model": assets / "score.pt"},
                (0, "evaluate", "clf", "ig", evaluator),
                "cpu",
            )
            frames.append(rec.drop(columns="seconds"))
            samples.append(smp)
        results[shard_size] = (pd.concat(frames, ignore_index=True), samples)
    (one, s_one), (two, s_two) = results[8], results[4]
    key = ["curve", "image", "step"]
    pd.testing.assert_frame_equal(
        one.sort_values(key).reset_index(drop=True), two.sort_values(key).reset_index(drop=True), rtol=1e-5, atol=1e-6
    )
    for curve, arr in s_one[0].items():
        if curve.startswith("removed_"):
            continue
        joined = np.concatenate([s[curve] for s in s_two])
        np.testing.assert_allclose(arr.astype(np.float32), joined.astype(np.float32), atol=2e-3)


def test_gallery_keeps_first_images_of_every_curve(assets, tmp_path):
    attr = explain_shard(assets / "clf.pt", assets / "eval.npz", 0, 8, "sm", {}, "predicted", (0,), "cpu")
    write_npz(tmp_path / "attr.npz", **attr)
    _, samples = evaluate_shard(
        assets / "clf.pt",
        assets / "eval.npz",
        tmp_path / "attr.npz",
        0,
        8,
        "insdel",
        EVALUATORS["insdel"],
        EVALUATION,
        {},
        (0,),
        "cpu",
    )
    write_npz(tmp_path / "samples.npz", **samples)
    g = build_gallery(
        assets / "eval.npz",
        {("clf", "sm"): tmp_path / "attr.npz"},
        {("clf", "sm", "insdel"): tmp_path / "samples.npz"},
        n_images=2,
    )
    assert g["clf.sm.samples.deletion_ratios"].shape == (2, 3, 3, 16, 16)
    assert list(g["clf.sm.removed.deletion_ratios"]) == [0.25, 0.5, 0.75]
    assert np.array_equal(g["images"], load_npz(assets / "eval.npz")["images"][:2])


# --- The evaluate job: every explainer of a (model, evaluator, shard), paired noise, work cache ---


def _attributions(assets, tmp_path, names):
    """Attribution files: `ig` and `ig_copy` hold the same map under two names."""
    paths = {}
    for name in names:
        method = {"ig": "ig", "ig_copy": "ig", "random": "random"}[name]
        attr = explain_shard(
            assets / "clf.pt",
            assets / "eval.npz",
            0,
            8,
            method,
            {"n_steps": 4} if method == "ig" else {},
            "predicted",
            (0, "explain", "clf", method),
            "cpu",
        )
        write_npz(tmp_path / f"attr_{name}.npz", **attr)
        paths[name] = tmp_path / f"attr_{name}.npz"
    return paths


def _job(assets, tmp_path, evaluator, attributions, cache):
    from fudbench.workflow.pipeline import evaluate_explainers

    outputs = {
        e: (a, tmp_path / "out" / f"{e}.parquet", tmp_path / "out" / f"{e}.npz") for e, a in attributions.items()
    }
    done = evaluate_explainers(
        "clf",
        evaluator,
        outputs,
        model_path=assets / "clf.pt",
        images_path=assets / "eval.npz",
        shard=0,
        shard_size=8,
        settings=EVALUATORS[evaluator],
        evaluation=EVALUATION,
        assets={"score_model": assets / "score.pt"},
        seed=0,
        device="cpu",
        kept_images=2,
        cache=cache,
    )
    return done, {e: pd.read_parquet(o[1]) for e, o in outputs.items()}


@pytest.mark.parametrize("evaluator", sorted(EVALUATORS))
def test_one_job_for_all_explainers_equals_a_job_per_explainer(assets, tmp_path, evaluator):
    """Grouping explainers into one job (shared model, score model and
    Sensitivity-N responses) does not change any explainer's records."""
    attributions = _attributions(assets, tmp_path, ["ig", "random"])
    _, together = _job(assets, tmp_path / "together", evaluator, attributions, cache=None)
    for name, path in attributions.items():
        _, alone = _job(assets, tmp_path / f"alone_{name}", evaluator, {name: path}, cache=None)
        pd.testing.assert_frame_equal(together[name].drop(columns="seconds"), alone[name].drop(columns="seconds"))


@pytest.mark.parametrize("evaluator", sorted(EVALUATORS))
def test_paired_noise_same_map_under_two_names_gives_identical_records(assets, tmp_path, evaluator):
    """Noise, fills and subsets are keyed by (seed, model, evaluator, image,
    ratio, draw), never by the explainer: the same map scores the same."""
    attributions = _attributions(assets, tmp_path, ["ig", "ig_copy"])
    # separate jobs, so both are computed (one job computes a map once: the next test)
    rec = {
        name: _job(assets, tmp_path / name, evaluator, {name: path}, cache=None)[1][name]
        for name, path in attributions.items()
    }
    a, b = (rec[n].drop(columns=["explainer", "seconds"]) for n in ("ig", "ig_copy"))
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_one_job_evaluates_a_map_once_whatever_its_names(assets, tmp_path, caplog):
    """Bit-identical maps (e.g. degrade at p = 0 and its base) are evaluated once
    per job; the copy's records differ only in the explainer's name."""
    import logging

    attributions = _attributions(assets, tmp_path, ["ig", "ig_copy", "random"])
    with caplog.at_level(logging.INFO, logger="fudbench.workflow.pipeline"):
        done, rec = _job(assets, tmp_path, "insdel", attributions, cache=None)
    assert done["computed"] == ["ig", "ig_copy", "random"]
    assert "ig_copy: the same map as ig; its records copied" in caplog.text
    assert "random: the same map" not in caplog.text
    pd.testing.assert_frame_equal(rec["ig"].drop(columns="explainer"), rec["ig_copy"].drop(columns="explainer"))
    samples = [load_npz(tmp_path / "out" / f"{n}.npz") for n in ("ig", "ig_copy")]
    assert all(np.array_equal(samples[0][k], samples[1][k]) for k in samples[0])


def test_work_cache_recomputes_only_new_or_changed_explainers(assets, tmp_path):
    from fudbench.workflow.work_cache import WorkCache

    cache = WorkCache(tmp_path / "cache")
    attributions = _attributions(assets, tmp_path, ["ig", "random"])
    done, first = _job(assets, tmp_path, "insdel", attributions, cache)
    assert done == {"computed": ["ig", "random"], "cached": []}
    # A new explainer: only it is computed; the others are copied, unchanged.
    attributions.update(_attributions(assets, tmp_path, ["ig_copy"]))
    done, second = _job(assets, tmp_path, "insdel", attributions, cache)
    assert done == {"computed": ["ig_copy"], "cached": ["ig", "random"]}
    pd.testing.assert_frame_equal(first["random"], second["random"])
    # A changed map of one explainer recomputes that one only.
    attr = load_npz(attributions["random"])
    write_npz(attributions["random"], **{**attr, "attributions": attr["attributions"][::-1].copy()})
    done, _ = _job(assets, tmp_path, "insdel", attributions, cache)
    assert done == {"computed": ["random"], "cached": ["ig", "ig_copy"]}
    # Other settings are another key; a disabled cache computes everything.
    done, _ = _job(assets, tmp_path, "insdel", attributions, WorkCache(tmp_path / "cache", enabled=False))
    assert done["cached"] == []


def test_work_cache_recomputes_an_explainer_whose_entry_is_corrupt(assets, tmp_path, caplog):
    """Issue 26, case 1: a damaged output does not damage the cache (copies, not
    links), and a damaged cache entry is dropped and recomputed, never restored."""
    import logging
    import os

    from fudbench.workflow.work_cache import WorkCache

    cache = WorkCache(tmp_path / "cache")
    attributions = _attributions(assets, tmp_path, ["ig", "random"])
    done, first = _job(assets, tmp_path, "insdel", attributions, cache)
    assert done == {"computed": ["ig", "random"], "cached": []}
    # A records file truncated in place (as `truncate -s 100` does): the cache keeps the good bytes.
    os.truncate(tmp_path / "out" / "ig.parquet", 100)
    done, second = _job(assets, tmp_path, "insdel", attributions, cache)
    assert done == {"computed": [], "cached": ["ig", "random"]}
    pd.testing.assert_frame_equal(first["ig"], second["ig"])
    # The cache entry itself damaged: dropped (named in the log) and recomputed.
    entry = next((tmp_path / "cache" / "ig").glob("*.parquet"))
    os.truncate(entry, 100)
    with caplog.at_level(logging.WARNING, logger="fudbench.workflow.work_cache"):
        done, third = _job(assets, tmp_path, "insdel", attributions, cache)
    assert done == {"computed": ["ig"], "cached": ["random"]}
    assert f"work cache entry {str(entry)[: -len('.parquet')]} " in caplog.text
    pd.testing.assert_frame_equal(first["ig"].drop(columns="seconds"), third["ig"].drop(columns="seconds"))
    done, _ = _job(assets, tmp_path, "insdel", attributions, cache)  # the recomputed entry is good again
    assert done == {"computed": [], "cached": ["ig", "random"]}


def test_work_key_follows_settings_and_file_content(tmp_path):
    from fudbench.workflow.work_cache import work_key

    f = tmp_path / "a.bin"
    f.write_bytes(b"one")
    k = work_key({"steps": 25}, {"model": str(f), "unused": None})
    assert k == work_key({"steps": 25}, {"model": str(f), "unused": None})
    assert k != work_key({"steps": 26}, {"model": str(f), "unused": None})
    f.write_bytes(b"two")
    assert k != work_key({"steps": 25}, {"model": str(f), "unused": None})
