"""fudbench.explain / fudbench.evaluate check their inputs and settings before any
work, through the declarations the config is validated from, with messages in
the API's own terms (issue 26, case 5; docs/reliability.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fudbench
from fudbench.core.checks import InputError

INSDEL = [{"insdel": {"n_steps": 2}}]


@pytest.fixture
def batch(tiny_cnn):
    """(4-class CNN, 3 images 8x8, targets, maps)."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(3, 3, 8, 8, generator=g)
    return tiny_cnn, x, torch.tensor([0, 1, 2]), torch.rand(3, 3, 8, 8, generator=g)


@pytest.fixture
def no_work(monkeypatch):
    """Building an evaluator or explainer (the first step of the work) fails the test:
    the checks must have refused the call before."""
    import fudbench.evaluators
    import fudbench.explainers

    def refuse(*args, **kwargs):
        raise AssertionError("work started before the inputs were checked")

    monkeypatch.setattr(fudbench.evaluators, "build_evaluator", refuse)
    monkeypatch.setattr(fudbench.explainers, "build_explainer", refuse)


def test_numpy_and_float64_inputs_are_converted(batch):
    model, x, y, a = batch
    want = fudbench.evaluate(model, x, y, a, INSDEL)
    got = fudbench.evaluate(model, x.double().numpy(), y.numpy().astype(np.int32), a.double().numpy(), INSDEL)
    cols = ["curve", "image", "step", "confidence", "score"]
    assert got[cols].equals(want[cols])
    maps = fudbench.explain(model, x.double().numpy(), y.tolist(), "sm")
    assert maps.dtype == torch.float32 and torch.equal(maps, fudbench.explain(model, x, y, "sm"))


@pytest.mark.parametrize("call", ["evaluate", "explain"])
def test_targets_beyond_the_models_outputs(batch, no_work, call):
    model, x, _, a = batch
    y = torch.tensor([0, 1, 9])
    with pytest.raises(
        InputError,
        match=rf"fudbench\.{call}: targets must be class indices in \[0, 4\) \(the "
        r"model returns 4 logits\); got \[9\] at position\(s\) \[2\]",
    ):
        fudbench.evaluate(model, x, y, a, INSDEL) if call == "evaluate" else fudbench.explain(model, x, y, "sm")


@pytest.mark.parametrize(
    "metrics,match",
    [
        ([{"sensn": {"n_subsets": -1}}], r"metrics\['sensn'\]\['n_subsets'\]: -1 is less than the minimum of 2"),
        ([{"sensn": {"n_subset": 3}}], r"metrics\['sensn'\]: unknown key\(s\) 'n_subset'; allowed keys"),
        ([{"fud": {"known": "dirty"}}], r"metrics\['fud'\]\['known'\]: 'dirty' is not allowed; allowed values"),
        ([{"road": {"imputer": "nosuch"}}], r"metrics\['road'\]\['imputer'\]: unknown imputer\(s\) \['nosuch'\]"),
        (["nope"], r"metrics\['nope'\]: unknown evaluator 'nope'; registered: fud, insdel"),
        ([{"insdel": {"blur_sigma": float("nan")}}], r"metrics\['insdel'\]\['blur_sigma'\]: nan is not a finite"),
    ],
)
def test_metric_settings_are_checked_as_the_config_checks_them(batch, no_work, metrics, match):
    model, x, y, a = batch
    with pytest.raises(InputError, match=r"fudbench\.evaluate: " + match):
        fudbench.evaluate(model, x, y, a, metrics)


@pytest.mark.parametrize(
    "settings,match",
    [
        ({"n_steps": 0}, r"settings\['n_steps'\]: 0 is less than the minimum of 1"),
        ({"n_stepz": 3}, r"settings: unknown key\(s\) 'n_stepz'; allowed keys: baseline, batch_size, n_steps"),
    ],
)
def test_explainer_settings_are_checked_as_the_config_checks_them(batch, no_work, settings, match):
    model, x, y, _ = batch
    with pytest.raises(InputError, match=r"fudbench\.explain: " + match):
        fudbench.explain(model, x, y, "ig", **settings)
    with pytest.raises(InputError, match=r"settings\['base_settings'\]\['n_steps'\]: 0 is less than the minimum"):
        fudbench.explain(model, x, y, "degrade", base="ig", fraction=0.2, base_settings={"n_steps": 0})


@pytest.mark.parametrize(
    "ratios,match",
    [
        ([0.5, float("nan")], r"evaluation\['ratios'\]: \[0\.5, nan\] holds non-finite value\(s\) \[nan\]"),
        ([0.5, 1.0], r"evaluation\['ratios'\]: \[0\.5, 1\.0\] holds \[1\.0\], outside \(0, 1\)"),
        ([0.5, 0.5], r"evaluation\['ratios'\]: \[0\.5, 0\.5\] repeats a value"),
    ],
)
def test_bad_ratios_are_refused_before_any_work(batch, no_work, ratios, match):
    model, x, y, a = batch
    with pytest.raises(InputError, match=match):
        fudbench.evaluate(model, x, y, a, INSDEL, evaluation={"ratios": ratios})


def test_one_ratio_is_refused_only_where_an_auc_needs_two(batch, repo):
    model, x, y, a = batch
    with pytest.raises(
        InputError,
        match=r"evaluation\['ratios'\]: \[0\.5\] is one kept fraction, but "
        r"metrics\['fud'\] \(curve fud\) scores the area under a curve over "
        r"the ratios, which needs at least two distinct ratios",
    ):
        fudbench.evaluate(
            model,
            x,
            y,
            a,
            ["insdel", "fud"],
            evaluation={"ratios": [0.5]},
            assets={"score_model": str(repo / "assets/score_model_synthetic.pt")},
        )
    frame = fudbench.evaluate(model, x, y, a, INSDEL, evaluation={"ratios": [0.5]})  # no AUC over the ratios
    assert set(frame["curve"]) == {"insertion", "deletion", "deletion_ratios"}


def test_a_missing_asset_is_named_up_front(batch, no_work):
    model, x, y, a = batch
    with pytest.raises(
        InputError,
        match=r"metrics\['fud'\] needs assets\['score_model'\], which is not given: "
        r"the score-model checkpoint",
    ):
        fudbench.evaluate(model, x, y, a, ["insdel", "fud"])
    with pytest.raises(InputError, match=r"assets\['score_model'\]: /nonexistent/sm\.pt does not exist"):
        fudbench.evaluate(model, x, y, a, ["fud"], assets={"score_model": "/nonexistent/sm.pt"})
    with pytest.raises(InputError, match=r"assets: unknown key\(s\) \['score_modle'\]; known: "):
        fudbench.evaluate(model, x, y, a, INSDEL, assets={"score_modle": "x.pt"})


def test_the_synthetic_score_model_on_photo_sized_images_names_both_sizes(repo, brightness_classifier, no_work):
    x = torch.rand(2, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with pytest.raises(
        InputError,
        match=r"assets\['score_model'\] \(.*score_model_synthetic\.pt\) is a score model "
        r"trained by this workflow on the synthetic benchmark's 32x32 images, but "
        r"images are 224x224",
    ):
        fudbench.evaluate(
            brightness_classifier,
            x,
            torch.tensor([0, 1]),
            torch.rand_like(x),
            ["fud"],
            assets={"score_model": str(repo / "assets/score_model_synthetic.pt")},
        )


def test_a_pretrained_score_model_is_bridged_up_to_its_size_never_down(tmp_path):
    from fudbench.api import _score_model_problems

    pointer = tmp_path / "gd.pt"  # a guided-diffusion pointer (models.score.save_score_model_pointer)
    torch.save(
        {
            "kind": "score_model",
            "weights": "gd.safetensors",
            "image_size": 64,
            "unet_config": {},
            "schedule": {},
            "source": {},
            "weights_bytes": 0,
        },
        pointer,
    )
    assert _score_model_problems(pointer, (2, 3, 48, 48)) == []  # 48 -> 64 -> 48, as the paper's 224 -> 256
    assert _score_model_problems(pointer, (2, 3, 64, 64)) == []
    (problem,) = _score_model_problems(pointer, (2, 3, 128, 128))
    assert "generates 64x64 images, smaller than images (128x128)" in problem
    (problem,) = _score_model_problems(pointer, (2, 3, 48, 40))
    assert "needs square images" in problem


def test_other_arguments_are_named(batch, no_work):
    model, x, y, a = batch
    with pytest.raises(InputError, match=r"image_ids must be distinct .*repeated: \[1\]"):
        fudbench.evaluate(model, x, y, a, INSDEL, image_ids=[1, 1, 2])
    with pytest.raises(
        InputError,
        match=r"fudbench\.evaluate: images must be a float tensor .* got torch\.uint8; "
        r"for 8-bit images pass images\.float\(\) / 255",
    ):
        fudbench.evaluate(model, (x * 255).to(torch.uint8), y, a, INSDEL)
    with pytest.raises(
        InputError,
        match=r"fudbench\.evaluate: attributions must have the images' batch size and "
        r"H x W.*got \(3, 3, 4, 8\)",
    ):
        fudbench.evaluate(model, x, y, a[:, :, :4], INSDEL)
    with pytest.raises(
        InputError,
        match=r"fudbench\.explain: method 'oracle' reads the synthetic benchmark's "
        r"ground-truth object masks",
    ):
        fudbench.explain(model, x, y, "oracle")


def test_negative_seeds_and_ids_are_refused(batch, no_work):
    """Issue 39: the API accepted seed=-1 (the config's seed is >= 0)."""
    model, x, y, a = batch
    with pytest.raises(InputError, match=r"fudbench\.evaluate: .*seed must be >= 0 \(as the config's `seed`\), got -1"):
        fudbench.evaluate(model, x, y, a, INSDEL, seed=-1)
    with pytest.raises(InputError, match=r"image_ids must be >= 0, got \[-2\]"):
        fudbench.evaluate(model, x, y, a, INSDEL, image_ids=[0, 1, -2])
    with pytest.raises(InputError, match=r"fudbench\.explain: seeds must be >= 0, got \[-1\]"):
        fudbench.explain(model, x, y, "sm", seeds=[0, -1, 2])


def test_every_settings_problem_is_reported_at_once(batch, no_work):
    model, x, y, a = batch
    with pytest.raises(InputError, match=r"4 problems") as info:
        fudbench.evaluate(
            model, x, y, a, [{"sensn": {"n_subsets": -1}}, "fud", "nope"], evaluation={"ratios": [0.5, 2.0]}
        )
    message = str(info.value)
    for part in (
        "metrics['sensn']['n_subsets']",
        "metrics['nope']",
        "evaluation['ratios']",
        "metrics['fud'] needs assets['score_model']",
    ):
        assert part in message
