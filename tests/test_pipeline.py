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
from fudbench.io import load_npz, write_npz
from fudbench.models.classifiers import build_classifier, save_classifier
from fudbench.models.score import build_unet, save_score_model
from fudbench.pipeline import build_gallery, evaluate_shard, explain_shard

SCORE_CFG = {"block_out_channels": [8, 16], "attention": [False, True], "layers_per_block": 1,
             "num_train_timesteps": 100, "beta_schedule": "linear"}
EVALUATORS = {
    "fud": {"steps": 4, "guidance_scale": 4.0, "guidance_start": 0.5, "known": "clean", "clip_x0": True,
            "batch_size": 7},
    "insdel": {"n_steps": 4, "blur_kernel": 5, "blur_sigma": 1.0, "batch_size": 5},
    "sensn": {"n_subsets": 5, "batch_size": 11},
    "infid": {"perturbation": "authors", "n_perturb": 4, "sigma": 0.2, "batch_size": 8},
}
EVALUATION = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("assets")
    cfg = {"image_size": 16, "shapes": ["circle", "square"], "dark": 0.1, "light": 0.9, "object_scale": [0.5, 0.8],
           "n_train": 4, "n_val": 4, "n_test": 8}
    write_npz(d / "eval.npz", **make_benchmark(cfg, n_eval=8, seed=0)["splits"]["eval"])
    torch.manual_seed(0)
    clf_cfg = {"arch": "small_cnn", "width": 4}
    save_classifier(d / "clf.pt", build_classifier(clf_cfg, 4, 16, [0.5] * 3, [0.25] * 3), clf_cfg, 4, 16, {})
    save_score_model(d / "score.pt", build_unet(SCORE_CFG, 16), SCORE_CFG, 16, {})
    return d


def _explain(assets, shard_size, explainer, settings):
    parts = [explain_shard(assets / "clf.pt", assets / "eval.npz", s, shard_size, explainer, settings, "predicted",
                           (0, "explain", "clf", explainer), "cpu") for s in range(8 // shard_size)]
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
            attr = explain_shard(assets / "clf.pt", assets / "eval.npz", s, shard_size, "ig", {"n_steps": 4},
                                 "predicted", (0, "explain", "clf", "ig"), "cpu")
            write_npz(tmp_path / f"attr{shard_size}_{s}.npz", **attr)
            rec, smp = evaluate_shard(assets / "clf.pt", assets / "eval.npz", tmp_path / f"attr{shard_size}_{s}.npz",
                                      s, shard_size, evaluator, EVALUATORS[evaluator], EVALUATION,
                                      {"score_model": assets / "score.pt"}, (0, "evaluate", "clf", "ig", evaluator),
                                      "cpu")
            frames.append(rec.drop(columns="seconds"))
            samples.append(smp)
        results[shard_size] = (pd.concat(frames, ignore_index=True), samples)
    (one, s_one), (two, s_two) = results[8], results[4]
    key = ["curve", "image", "step"]
    pd.testing.assert_frame_equal(one.sort_values(key).reset_index(drop=True),
                                  two.sort_values(key).reset_index(drop=True), rtol=1e-5, atol=1e-6)
    for curve, arr in s_one[0].items():
        if curve.startswith("removed_"):
            continue
        joined = np.concatenate([s[curve] for s in s_two])
        np.testing.assert_allclose(arr.astype(np.float32), joined.astype(np.float32), atol=2e-3)


def test_gallery_keeps_first_images_of_every_curve(assets, tmp_path):
    attr = explain_shard(assets / "clf.pt", assets / "eval.npz", 0, 8, "sm", {}, "predicted", (0,), "cpu")
    write_npz(tmp_path / "attr.npz", **attr)
    _, samples = evaluate_shard(assets / "clf.pt", assets / "eval.npz", tmp_path / "attr.npz", 0, 8, "insdel",
                                EVALUATORS["insdel"], EVALUATION, {}, (0,), "cpu")
    write_npz(tmp_path / "samples.npz", **samples)
    g = build_gallery(assets / "eval.npz", {("clf", "sm"): tmp_path / "attr.npz"},
                      {("clf", "sm", "insdel"): tmp_path / "samples.npz"}, n_images=2)
    assert g["clf__sm__deletion_ratios"].shape == (2, 3, 3, 16, 16)
    assert list(g["clf__sm__deletion_ratios__removed"]) == [0.25, 0.5, 0.75]
    assert np.array_equal(g["images"], load_npz(assets / "eval.npz")["images"][:2])
