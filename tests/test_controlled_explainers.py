import pytest
import torch

from fudbench.explainers import build_explainer
from fudbench.explainers.controlled import _minmax


@pytest.fixture
def batch(tiny_cnn):
    torch.manual_seed(2)
    x = torch.rand(3, 3, 8, 8)
    masks = (torch.rand(3, 8, 8) > 0.5).to(torch.uint8)
    return tiny_cnn, x, tiny_cnn(x).argmax(1), masks


def test_random_is_seeded_and_batch_independent(batch):
    model, x, target, _ = batch
    r = build_explainer("random", {})
    a = r.explain(model, x, target, seeds=[1, 2, 3])
    assert a.shape == x.shape
    assert torch.equal(a[1:2], r.explain(model, x[1:2], target[1:2], seeds=[2]))
    assert not torch.equal(a, r.explain(model, x, target, seeds=[4, 5, 6]))
    with pytest.raises(ValueError, match="seed"):
        r.explain(model, x, target)


def test_oracle_returns_the_mask(batch):
    model, x, target, masks = batch
    a = build_explainer("oracle", {}).explain(model, x, target, masks=masks)
    assert torch.equal(a[:, 0], masks.float()) and torch.equal(a[:, 2], masks.float())
    with pytest.raises(ValueError, match="ground-truth masks"):
        build_explainer("oracle", {}).explain(model, x, target)


def test_degrade_interpolates_between_base_and_noise(batch):
    model, x, target, masks = batch
    seeds = [1, 2, 3]
    clean = build_explainer("degrade", {"base": "oracle", "fraction": 0.0}).explain(model, x, target, seeds, masks=masks)
    assert torch.equal(clean[:, 0], _minmax(masks.float()))
    noise = build_explainer("random", {}).explain(model, x, target, seeds)
    full = build_explainer("degrade", {"base": "oracle", "fraction": 1.0}).explain(model, x, target, seeds, masks=masks)
    torch.testing.assert_close(full, noise)
    half = build_explainer("deg_half", {"method": "degrade", "base": "ig", "fraction": 0.5,
                                        "base_settings": {"n_steps": 4}}).explain(model, x, target, seeds)
    assert half.shape == x.shape and torch.isfinite(half).all()


def test_degrade_fraction_checked():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        build_explainer("degrade", {"base": "sm", "fraction": 1.5})


def test_degrade_replace_degrades_a_binary_map_progressively(tiny_cnn):
    """The oracle mask is binary: replacing a fraction p of its pixels with noise
    must move background pixels above object pixels more often as p grows (a
    convex mix with p <= 0.5 would not change the ranking at all)."""
    torch.manual_seed(0)
    x = torch.rand(4, 3, 16, 16)
    masks = torch.zeros(4, 16, 16, dtype=torch.uint8)
    masks[:, 4:12, 4:12] = 1
    target = tiny_cnn(x).argmax(1)
    seeds = [11, 12, 13, 14]

    def top_k_precision(fraction, mode="replace"):
        a = build_explainer("degrade", {"base": "oracle", "fraction": fraction, "mode": mode}).explain(
            tiny_cnn, x, target, seeds, masks=masks)[:, 0].flatten(1)
        top = a.argsort(dim=1, descending=True)[:, :64]  # as many pixels as the object has
        return masks.flatten(1).gather(1, top).float().mean().item(), a

    p0, a0 = top_k_precision(0.0)
    p3, a3 = top_k_precision(0.3)
    p6, _ = top_k_precision(0.6)
    assert p0 == 1.0 and p0 > p3 > p6
    replaced = (a3 != a0).float().mean().item()
    assert 0.2 < replaced < 0.4  # about a fraction 0.3 of the pixels
    assert top_k_precision(0.3, mode="mix")[0] == 1.0  # why "mix" is not the default
    with pytest.raises(ValueError, match="mode"):
        build_explainer("degrade", {"base": "oracle", "fraction": 0.3, "mode": "blend"})
