"""Noise paired where the report card compares (docs/architecture.md, "Seeds"):

- training seeds of one model (identical classifier entries, e.g. the meta
  profile's cnn and cnn_seed1) are explained and evaluated under the same
  noise: the keys name the model's seed group, not the model, while their
  training seeds still name the model;
- FUD's variants (aliased entries, `method: fud`) draw paper FUD's noise for
  the same image, ratio and draw: the evaluate key names the method;
- the default config's keys are exactly those of before (each model its own
  group, each evaluator entry named after its method), so its numbers do
  not move.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.config.validate import load_config, load_yaml
from fudbench.data.synthetic import make_benchmark
from fudbench.core.io import write_npz
from fudbench.models.classifiers import build_classifier, save_classifier
from fudbench.models.score import build_unet, save_score_model
from fudbench.workflow.pipeline import evaluate_explainers, evaluator_noise, explain_shard, paired_seed_key
from fudbench.core.seeding import derive_seed, seed_groups
from fudbench.explainers.seeds import explain_seed_key

REPO = Path(__file__).resolve().parents[1]
SCORE_CFG = {
    "block_out_channels": [8, 16],
    "attention": [False, True],
    "layers_per_block": 1,
    "num_train_timesteps": 100,
    "beta_schedule": "linear",
}
FUD = {
    "steps": 4,
    "guidance_scale": 4.0,
    "guidance_start": 0.5,
    "known": "clean",
    "clip_x0": True,
    "batch_size": 7,
    "amp_dtype": None,
    "channels_last": False,
}
EVALUATION = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}


# --- the keys ---------------------------------------------------------------------------------


def test_default_config_keys_are_exactly_the_old_ones():
    """Old keys: explain (seed, "explain", model, explainer), evaluate (seed,
    "evaluate", model, evaluator entry); with groups and methods they are equal."""
    config = load_yaml(REPO / "config/config.yaml")
    seed, groups = config["seed"], seed_groups(config["models"]["classifiers"])
    assert groups == {m: m for m in config["models"]["classifiers"]}
    for model, group in groups.items():
        for explainer in config["explainers"]:
            assert explain_seed_key(seed, group, explainer) == (seed, "explain", model, explainer)
        for entry, settings in config["evaluators"].items():
            assert paired_seed_key(seed, group, evaluator_noise(entry, settings)) == (seed, "evaluate", model, entry)


def test_meta_profile_pairs_seeds_and_fud_variants():
    config = load_config(REPO / "config/meta.yaml")
    assert seed_groups(config["models"]["classifiers"]) == {
        "cnn": "cnn",
        "vit": "vit",
        "cnn_seed1": "cnn",
        "vit_seed1": "vit",
    }
    variants = [e for e, s in config["evaluators"].items() if (s or {}).get("method") == "fud"]
    assert set(variants) == {"fud_renoise", "fud_last_steps", "fud_patch"}
    assert {evaluator_noise(e, config["evaluators"][e]) for e in ["fud", *variants]} == {"fud"}
    # training seeds still name the model: the second seed is a second training run
    script = (REPO / "scripts/train_classifier.py").read_text()
    assert 'derive_seed(p.job["seed"], "init", w.model)' in script
    assert 'derive_seed(p.job["seed"], "train", w.model)' in script
    assert derive_seed(0, "init", "cnn") != derive_seed(0, "init", "cnn_seed1")


def test_plugin_evaluator_keeps_its_entry_name():
    """An import path may be spelled several ways (relative, absolute): a plug-in
    entry's noise stays keyed by its name."""
    assert evaluator_noise("mine", {"method": "my_metric.py:SPEC"}) == "mine"
    assert evaluator_noise("road_telea", {"method": "road", "imputer": "telea"}) == "road"
    assert evaluator_noise("insdel", None) == "insdel"


# --- the noise itself ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """Two classifiers with different weights (two training seeds), one score model."""
    d = tmp_path_factory.mktemp("assets")
    cfg = {
        "image_size": 16,
        "shapes": ["circle", "square"],
        "dark": 0.1,
        "light": 0.9,
        "object_scale": [0.5, 0.8],
        "n_train": 4,
        "n_val": 4,
        "n_test": 6,
    }
    write_npz(d / "eval.npz", **make_benchmark(cfg, n_eval=6, seed=0)["splits"]["eval"])
    clf_cfg = {"arch": "small_cnn", "width": 4}
    for seed, name in enumerate(("cnn", "cnn_seed1")):
        torch.manual_seed(seed)
        save_classifier(d / f"{name}.pt", build_classifier(clf_cfg, 4, 16, [0.5] * 3, [0.25] * 3), clf_cfg, 4, 16, {})
    save_score_model(d / "score.pt", build_unet(SCORE_CFG, 16), SCORE_CFG, 16, {})
    return d


def _explain(assets, model, explainer, settings, group):
    return explain_shard(
        assets / f"{model}.pt",
        assets / "eval.npz",
        0,
        6,
        explainer,
        settings,
        "predicted",
        explain_seed_key(0, group, explainer, settings),
        "cpu",
    )["attributions"]


@pytest.mark.parametrize(
    "explainer,settings",
    [
        ("random", {}),
        ("noise_only", {"method": "degrade", "base": "sm", "fraction": 1.0, "mode": "replace"}),  # the noise alone
    ],
)
def test_seed_group_members_draw_the_same_explainer_noise(assets, explainer, settings):
    method = settings.get("method", explainer)
    one = _explain(assets, "cnn", method, settings, group="cnn")
    two = _explain(assets, "cnn_seed1", method, settings, group="cnn")
    assert np.array_equal(one, two)  # same group: same random map, same degrade noise
    apart = _explain(assets, "cnn_seed1", method, settings, group="cnn_seed1")
    assert not np.array_equal(one, apart)  # the old key (the model's name): other noise


def _evaluate(assets, tmp, model, entries, seed_group=None, attributions=None):
    """{entry: records} of evaluate_explainers on the `ig` map of `attributions`."""
    if attributions is None:
        attributions = tmp / "attr.npz"
        write_npz(
            attributions,
            **explain_shard(assets / "cnn.pt", assets / "eval.npz", 0, 6, "sm", {}, "predicted", (0,), "cpu"),
        )
    out = {}
    for entry, settings in entries.items():
        paths = {"ig": (attributions, tmp / f"{model}_{entry}.parquet", tmp / f"{model}_{entry}.npz")}
        evaluate_explainers(
            model,
            entry,
            paths,
            model_path=assets / "cnn.pt",
            images_path=assets / "eval.npz",
            shard=0,
            shard_size=6,
            settings=settings,
            evaluation=EVALUATION,
            assets={"score_model": assets / "score.pt"},
            seed=0,
            device="cpu",
            kept_images=0,
            seed_group=seed_group,
        )
        out[entry] = pd.read_parquet(paths["ig"][1]).drop(columns=["seconds", "model", "evaluator"])
    return out


def test_seed_group_members_draw_the_same_fud_noise(assets, tmp_path):
    """The same classifier file under two model names: with one seed group the FUD
    records are identical; keyed by the names (no group) they are not."""
    same = [_evaluate(assets, tmp_path, m, {"fud": FUD}, seed_group="cnn")["fud"] for m in ("cnn", "cnn_seed1")]
    pd.testing.assert_frame_equal(*same, check_exact=True)
    apart = _evaluate(assets, tmp_path, "cnn_seed1", {"fud": FUD})["fud"]
    assert not np.array_equal(same[0]["confidence"].to_numpy(), apart["confidence"].to_numpy())


def test_fud_variants_draw_paper_fuds_noise(assets, tmp_path, monkeypatch):
    """An aliased entry with paper FUD's settings gives paper FUD's records bit for
    bit; fud_renoise's sampler gets the same per-sample seeds as fud's."""
    from fudbench.imputers.diffusion.loop import DiffusionImputer

    seen = {}
    sample = DiffusionImputer.sample

    def recording(self, x, keep_mask, context, *args, **kwargs):
        seen.setdefault(self.constraint.__class__.__name__, []).extend(int(s) for s in context.seeds)
        return sample(self, x, keep_mask, context, *args, **kwargs)

    monkeypatch.setattr(DiffusionImputer, "sample", recording)
    rec = _evaluate(
        assets,
        tmp_path,
        "cnn",
        {
            "fud": FUD,
            "fud_alias": {**FUD, "method": "fud"},
            "fud_renoise": {**FUD, "method": "fud", "known": "renoise"},
        },
    )
    alias = rec["fud_alias"].assign(curve=rec["fud_alias"]["curve"].str.replace("@fud_alias", ""))
    pd.testing.assert_frame_equal(rec["fud"], alias, check_exact=True)
    hard, renoise = seen["HardConstraint"], seen["DDIMRenoiseConstraint"]
    assert len(hard) == 2 * len(renoise) and hard[: len(renoise)] == hard[len(renoise) :] == renoise
