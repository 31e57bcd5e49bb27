import pytest
import torch

from fudbench.explainers import EXPLAINERS, build_explainer

SETTINGS = {"sm": {}, "ig": {"n_steps": 32, "baseline": "zero", "batch_size": 64}}


@pytest.fixture
def batch(tiny_cnn):
    torch.manual_seed(1)
    x = torch.rand(3, 3, 8, 8)
    return tiny_cnn, x, tiny_cnn(x).argmax(1)


@pytest.mark.parametrize("name", sorted(EXPLAINERS))
def test_shape_finite_and_batched_equals_single(name, batch):
    model, x, target = batch
    method = build_explainer(name, SETTINGS[name])
    a = method.explain(model, x, target, seeds=[1, 2, 3])
    assert a.shape == x.shape and torch.isfinite(a).all()
    single = torch.cat([method.explain(model, x[i:i + 1], target[i:i + 1], seeds=[i + 1]) for i in range(3)])
    torch.testing.assert_close(a, single, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(a, method.explain(model, x, target, seeds=[1, 2, 3]))


def test_ig_completeness(batch):
    model, x, target = batch
    a = build_explainer("ig", {"n_steps": 200, "baseline": "zero", "batch_size": 600}).explain(model, x, target)
    with torch.no_grad():
        gap = model(x).gather(1, target.view(-1, 1)).squeeze(1) - model(torch.zeros_like(x)).gather(
            1, target.view(-1, 1)).squeeze(1)
    torch.testing.assert_close(a.flatten(1).sum(1), gap, atol=2e-2 * gap.abs().max().item() + 1e-3, rtol=0.02)


def test_saliency_is_abs_gradient(batch):
    model, x, target = batch
    xg = x.clone().requires_grad_(True)
    model(xg).gather(1, target.view(-1, 1)).sum().backward()
    torch.testing.assert_close(build_explainer("sm", {}).explain(model, x, target), xg.grad.abs())
