import pytest
import torch

from fudbench.explainers import EXPLAINERS, build_explainer

# Small settings (cost only) for the methods of the paper; controlled ones separately.
SETTINGS = {
    "sm": {},
    "ig": {"n_steps": 32, "baseline": "zero", "batch_size": 64},
    "fig": {},
    "eg": {"k": 2},
    "gig": {"n_steps": 5},
    "big": {"num_steps": 5, "ig_steps": 8, "epsilons": [0.1, 0.3]},
    "agi": {"k": 2, "max_iter": 3},
    "mfaba": {"num_steps": 5},
    "la": {"max_iter": 3, "sampling_times": 2},
    "isa": {"step_size": 48, "add_steps": 2, "remove_steps": 2},
    "attexplore": {"n_samples": 2, "num_steps": 2},
}
PAPER_METHODS = sorted(SETTINGS)


def test_registry_holds_the_papers_eleven_methods_and_controls():
    # and the field's libraries by name (tests/test_field_explainers.py)
    # the meta-evaluation's controls (scatter pairs and scatter-matched families: test_scatter_controls.py)
    assert set(EXPLAINERS) == set(PAPER_METHODS) | {
        "random",
        "oracle",
        "degrade",
        "background",
        "randomise_model",
        "random_smooth",
        "reorder",
        "translate",
        "block_shuffle",
        "displace",
        "graded_cue",  # round five's graded cue family (tests/test_graded_cue.py)
        "graded_cue_opposing",
        "captum",
        "cam",
        "lrp",
    }
    assert len(PAPER_METHODS) == 11


@pytest.fixture
def batch(tiny_cnn):
    torch.manual_seed(1)
    x = torch.rand(3, 3, 8, 8)
    return tiny_cnn, x, tiny_cnn(x).argmax(1)


@pytest.mark.parametrize("name", PAPER_METHODS)
def test_shape_finite_and_batched_equals_single(name, batch):
    model, x, target = batch
    method = build_explainer(name, SETTINGS[name])
    method.prepare(x)
    a = method.explain(model, x, target, seeds=[1, 2, 3])
    assert a.shape == x.shape and torch.isfinite(a).all()
    single = torch.cat([method.explain(model, x[i : i + 1], target[i : i + 1], seeds=[i + 1]) for i in range(3)])
    torch.testing.assert_close(a, single, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(a, method.explain(model, x, target, seeds=[1, 2, 3]))


def test_ig_completeness(batch):
    model, x, target = batch
    a = build_explainer("ig", {"n_steps": 200, "baseline": "zero", "batch_size": 600}).explain(model, x, target)
    with torch.no_grad():
        gap = model(x).gather(1, target.view(-1, 1)).squeeze(1) - model(torch.zeros_like(x)).gather(
            1, target.view(-1, 1)
        ).squeeze(1)
    torch.testing.assert_close(a.flatten(1).sum(1), gap, atol=2e-2 * gap.abs().max().item() + 1e-3, rtol=0.02)


def test_saliency_is_abs_gradient(batch):
    model, x, target = batch
    xg = x.clone().requires_grad_(True)
    model(xg).gather(1, target.view(-1, 1)).sum().backward()
    torch.testing.assert_close(build_explainer("sm", {}).explain(model, x, target), xg.grad.abs())
