"""Zhu et al.'s search / exploration explainers: LA, ISA, AttExplore.

Run on the `tiny_cnn` fixture (8 x 8 images, 4 classes) with few iterations
and samples, so the file stays fast.
"""

import pytest
import torch
import torch.nn.functional as F

from fudbench.explainers.attexplore import (
    AttExplore,
    dct_2d,
    diversity_params,
    gaussian_kernel,
    idct_2d,
    input_diversity,
)
from fudbench.explainers.isa import ISA
from fudbench.explainers.local_attribution import LocalAttribution, sample_classes

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

SMALL = {
    "la": lambda **kw: LocalAttribution(
        **{"spatial_range": 20, "max_iter": 3, "sampling_times": 2, "batch_size": 4, **kw}
    ),
    "isa": lambda **kw: ISA(**{"step_size": 50, "add_steps": 2, "remove_steps": 2, **kw}),
    "attexplore": lambda **kw: AttExplore(**{"n_samples": 3, "num_steps": 3, "ti_kernel": 3, "batch_size": 5, **kw}),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_shape_finite_batched_deterministic_and_seeded(name, cnn_batch):
    model, x, target = cnn_batch
    method = SMALL[name]()
    assert method.name == name
    seeds = [1, 2, 3]
    a = method.explain(model, x, target, seeds=seeds)
    assert a.shape == x.shape and a.device == x.device and a.dtype == x.dtype and not a.requires_grad
    assert torch.isfinite(a).all() and a.abs().sum() > 0
    single = torch.cat([method.explain(model, x[i : i + 1], target[i : i + 1], seeds=[seeds[i]]) for i in range(3)])
    torch.testing.assert_close(a, single, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(a, method.explain(model, x, target, seeds=seeds), atol=0, rtol=0)
    other = method.explain(model, x, target, seeds=[7, 8, 9])
    assert not torch.allclose(a, other)
    with pytest.raises(ValueError):
        method.explain(model, x, target)


# --- LA -------------------------------------------------------------------


def test_la_class_sampling():
    target = torch.tensor([0, 2, 3, 1])
    classes, weights = sample_classes(target, 4, 2, [5, 6, 7, 8])
    assert classes.shape == (4, 2) and (weights == 1).all()
    assert (classes != target[:, None]).all() and (classes[:, 0] != classes[:, 1]).all()
    assert ((classes >= 0) & (classes < 4)).all()
    # more classes asked for than exist: every other class, weighted by how often it would be drawn
    classes, weights = sample_classes(target, 4, 7, [5, 6, 7, 8])
    assert classes.shape == (4, 3) and (weights.sum(1) == 7).all()
    assert sorted(weights[0].tolist()) == [2, 2, 3]
    for i, y in enumerate(target.tolist()):
        assert sorted(classes[i].tolist()) == [c for c in range(4) if c != y]
    # seeded per image: the same seed gives the same classes in any batch
    torch.testing.assert_close(
        sample_classes(target[2:3], 10, 4, [7])[0], sample_classes(target, 10, 4, [5, 6, 7, 8])[0][2:3]
    )


def test_la_untargeted_step_is_prob_gradient_times_local_radius(cnn_batch):
    """One untargeted step: -g * (clamp(x - x/r * sign g) - x) = |g| * x / r (no clamping for x <= r/(r+1))."""
    model, x, target = cnn_batch
    x = x * 0.9
    xg = x.clone().requires_grad_(True)
    F.softmax(model(xg), 1).gather(1, target.view(-1, 1)).sum().backward()
    a = LocalAttribution(spatial_range=20, max_iter=1, sampling_times=1).explain(model, x, target, seeds=[0, 1, 2])
    torch.testing.assert_close(a, xg.grad.abs() * x / 20, atol=1e-7, rtol=1e-5)


def test_la_using_every_other_class_is_seed_independent(cnn_batch):
    model, x, target = cnn_batch
    method = LocalAttribution(max_iter=2, sampling_times=4)  # 3 targeted classes = all other classes
    torch.testing.assert_close(
        method.explain(model, x, target, seeds=[1, 2, 3]), method.explain(model, x, target, seeds=[4, 5, 6])
    )
    assert not torch.equal(sample_classes(target, 4, 3, [1, 2, 3])[0], sample_classes(target, 4, 3, [4, 5, 6])[0])


# --- ISA ------------------------------------------------------------------


def test_isa_clips_step_size_features_per_round(cnn_batch):
    model, x, target = cnn_batch
    x = x.clone()
    x.view(3, -1)[:, :10] = 0  # black features score 0: clipped first, importance exactly 0
    method = SMALL["isa"]()
    importance, rounds = method.search(model, x, target, seeds=[1, 2, 3])
    rounds, importance = rounds.view(3, -1), importance.view(3, -1)
    assert (rounds >= 0).all()  # every feature ranked, survivors included
    for i in range(3):
        assert torch.bincount(rounds[i]).tolist() == [50, 50, 50, 42]  # 192 features
        for r in range(4):
            v = importance[i][rounds[i] == r]
            assert v.min() == pytest.approx(r, abs=1e-6)
            assert v.max() == pytest.approx(r + method.factor, abs=1e-4)
        assert (rounds[i, :10] == 0).all() and (importance[i, :10] == 0).all()
    torch.testing.assert_close(method.explain(model, x, target, seeds=[1, 2, 3]), importance.view_as(x))


def test_isa_step_size_larger_than_image_is_one_round(cnn_batch):
    model, x, target = cnn_batch
    importance, rounds = ISA(add_steps=1, remove_steps=1).search(model, x, target, seeds=[1, 2, 3])
    assert (rounds == 0).all() and importance.min() >= 0 and importance.max() <= 1.3 + 1e-6


# --- AttExplore -----------------------------------------------------------


def test_dct_round_trips_and_is_orthonormal():
    torch.manual_seed(0)
    x = torch.rand(2, 3, 8, 12)
    c = dct_2d(x)
    torch.testing.assert_close(idct_2d(c), x, atol=1e-6, rtol=0)
    torch.testing.assert_close(c.pow(2).sum(), x.pow(2).sum(), rtol=1e-5, atol=0)  # Parseval
    const = dct_2d(torch.full((1, 1, 8, 12), 0.5))
    assert const[0, 0, 0, 0] == pytest.approx(0.5 * (8 * 12) ** 0.5, rel=1e-5)
    assert const.flatten()[1:].abs().max() < 1e-5


def test_input_diversity_keeps_size():
    torch.manual_seed(0)
    x = torch.rand(6, 3, 8, 12)
    params = diversity_params(6, 1.15, 0.5, torch.Generator().manual_seed(0))
    params[:3, 0], params[3:, 0] = 1, 0
    out = input_diversity(x, params, 1.15)
    assert out.shape == x.shape
    torch.testing.assert_close(out[3:], x[3:], atol=0, rtol=0)  # not applied: unchanged
    assert not torch.allclose(out[:3], x[:3])
    # rate 2, size 1, offset 1: the image fills the bottom-right quadrant, zeros elsewhere
    ones = torch.ones(1, 1, 8, 12)
    out = input_diversity(ones, torch.tensor([[1.0, 1.0, 1.0, 1.0]]), 2.0)[0, 0]
    assert (out[:4, :] == 0).all() and (out[:, :6] == 0).all()
    torch.testing.assert_close(out[5:, 7:], torch.ones(3, 5))


def test_attexplore_runs_on_a_fixed_size_model(cnn_batch):
    model, x, target = cnn_batch

    def fixed(z):
        assert z.shape[-2:] == (8, 8), z.shape
        return model(z)

    a = SMALL["attexplore"](diversity_prob=1.0).explain(fixed, x, target, seeds=[1, 2, 3])
    assert a.shape == x.shape and torch.isfinite(a).all()


@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_attexplore_single_step_is_normalised_gradient(cnn_batch, direction):
    """No noise, mask, DI, TI or momentum: one sign step of eps gives eps * |g| / mean|g| (high = supports y)."""
    model, x, target = cnn_batch
    x = 0.1 + 0.8 * x
    xg = x.clone().requires_grad_(True)
    F.cross_entropy(model(xg), target, reduction="sum").backward()
    g = xg.grad
    expected = 0.05 * g.abs() / g.abs().mean(dim=(1, 2, 3), keepdim=True)
    method = AttExplore(
        epsilon=0.05, n_samples=2, num_steps=1, rho=0.0, sigma=0.0, diversity_prob=0.0, ti_kernel=1, direction=direction
    )
    torch.testing.assert_close(method.explain(model, x, target, seeds=[1, 2, 3]), expected, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_attexplore_map_is_nonnegative(cnn_batch, direction):
    model, x, target = cnn_batch
    a = SMALL["attexplore"](direction=direction).explain(model, x, target, seeds=[1, 2, 3])
    assert (a >= 0).all() and a.sum() > 0


def test_gaussian_kernel():
    k = gaussian_kernel(7, 3.0)
    assert k.shape == (7, 7) and k.sum().item() == pytest.approx(1.0)
    assert k[3, 3] == k.max() and torch.equal(k, k.T) and torch.equal(k, k.flip(0))
