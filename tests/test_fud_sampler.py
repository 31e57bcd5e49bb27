"""The FUD sampler: hard constraint, range, determinism, batching, guidance."""
import pytest
import torch

from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion import DiffusionImputer


def _inputs(n=4, size=8, keep=0.5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, size, size, generator=g)
    mask = (torch.rand(n, 1, size, size, generator=g) < keep).float()
    return x, mask


def test_kept_pixels_exact_at_every_step_and_output_in_range(tiny_unet):
    unet, schedule = tiny_unet
    sampler = DiffusionImputer(unet, schedule, steps=10, guidance_scale=0.0)
    x, mask = _inputs()
    clean = x * 2 - 1
    keep = mask.bool().expand_as(x)
    seen = []

    def check(step, t, x_t):
        assert torch.equal(x_t[keep], clean[keep]), f"kept pixels changed at step {step} (t={t})"
        seen.append(t)

    out, _ = sampler.sample(x, mask, ImputeContext(seeds=[1, 2, 3, 4]), callback=check)
    assert len(seen) == 10
    assert torch.equal(out[keep], x[keep])  # bit for bit in [0, 1] space
    assert out.min() >= 0 and out.max() <= 1
    assert not torch.equal(out[~keep], x[~keep])  # removed pixels were really filled


def test_deterministic_for_a_seed(tiny_unet, brightness_classifier):
    unet, schedule = tiny_unet
    sampler = DiffusionImputer(unet, schedule, steps=5, guidance_scale=4.0, guidance_start=0.5)
    x, mask = _inputs()
    ctx = ImputeContext(classifier=brightness_classifier, target=torch.zeros(4, dtype=torch.long), seeds=[7, 8, 9, 10])
    a, b = sampler.fill(x, mask, ctx), sampler.fill(x, mask, ctx)
    assert torch.equal(a, b)
    other = sampler.fill(x, mask, ImputeContext(classifier=brightness_classifier, target=ctx.target, seeds=[1, 2, 3, 4]))
    assert not torch.equal(a, other)


def test_batched_equals_per_sample(tiny_unet, brightness_classifier):
    unet, schedule = tiny_unet
    sampler = DiffusionImputer(unet, schedule, steps=5, guidance_scale=4.0, guidance_start=0.5)
    x, mask = _inputs()
    target = torch.tensor([0, 1, 0, 1])
    seeds = [11, 12, 13, 14]
    batched = sampler.fill(x, mask, ImputeContext(brightness_classifier, target, seeds))
    single = torch.cat([sampler.fill(x[i:i + 1], mask[i:i + 1],
                                     ImputeContext(brightness_classifier, target[i:i + 1], seeds[i:i + 1]))
                        for i in range(4)])
    torch.testing.assert_close(batched, single, atol=1e-5, rtol=1e-5)


def test_guidance_lowers_target_probability(tiny_unet, brightness_classifier):
    """Anti-class guidance: p(y) of the filled images is lower than without it."""
    unet, schedule = tiny_unet
    x, mask = _inputs(n=16, keep=0.3)
    target = brightness_classifier(x).argmax(1)
    seeds = list(range(16))
    kwargs = dict(steps=10, guidance_start=0.5)
    plain = DiffusionImputer(unet, schedule, guidance_scale=0.0, **kwargs).fill(
        x, mask, ImputeContext(brightness_classifier, target, seeds))
    guided = DiffusionImputer(unet, schedule, guidance_scale=20.0, **kwargs).fill(
        x, mask, ImputeContext(brightness_classifier, target, seeds))

    def p_target(images):
        return torch.softmax(brightness_classifier(images), 1).gather(1, target.view(-1, 1)).mean()

    assert p_target(guided) < p_target(plain) - 0.01


def test_guidance_only_in_the_last_fraction_of_time(tiny_unet):
    unet, schedule = tiny_unet  # T = 100
    sampler = DiffusionImputer(unet, schedule, steps=10, guidance_start=0.05)
    assert sampler.guided_timesteps == [0]
    assert DiffusionImputer(unet, schedule, steps=10, guidance_start=0.25).guided_timesteps == [20, 10, 0]


def test_renoise_keeps_output_exact_and_seeds_required(tiny_unet):
    unet, schedule = tiny_unet
    sampler = DiffusionImputer(unet, schedule, steps=5, guidance_scale=0.0, known="renoise")
    x, mask = _inputs()
    out = sampler.fill(x, mask, ImputeContext(seeds=[1, 2, 3, 4]))
    keep = mask.bool().expand_as(x)
    assert torch.equal(out[keep], x[keep])
    with pytest.raises(ValueError, match="one seed per sample"):
        sampler.fill(x, mask, ImputeContext(seeds=[1]))


def test_trace_starts_far_and_ends_at_the_output(tiny_unet):
    unet, schedule = tiny_unet
    sampler = DiffusionImputer(unet, schedule, steps=5, guidance_scale=0.0)
    x, mask = _inputs()
    out, trace = sampler.sample(x, mask, ImputeContext(seeds=[1, 2, 3, 4]), trace=True)
    assert trace.shape == (4, 6)
    final = (out - x).flatten(1).norm(dim=1)
    torch.testing.assert_close(trace[:, -1], final, atol=1e-4, rtol=1e-4)
    assert (trace[:, 0] > trace[:, -1]).all()
