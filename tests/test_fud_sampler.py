"""The FUD sampler: hard constraint, range, determinism, batching, guidance."""

import pytest
import torch

from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion import fud_sampler

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


def _inputs(n=4, size=8, keep=0.5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, size, size, generator=g)
    mask = (torch.rand(n, 1, size, size, generator=g) < keep).float()
    return x, mask


def test_kept_pixels_exact_at_every_step_and_output_in_range(tiny_unet):
    unet, schedule = tiny_unet
    sampler = fud_sampler(unet, schedule, {"steps": 10, "guidance_scale": 0.0})
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
    sampler = fud_sampler(unet, schedule, {"steps": 5, "guidance_scale": 4.0, "guidance_start": 0.5})
    x, mask = _inputs()
    ctx = ImputeContext(classifier=brightness_classifier, target=torch.zeros(4, dtype=torch.long), seeds=[7, 8, 9, 10])
    a, b = sampler.fill(x, mask, ctx), sampler.fill(x, mask, ctx)
    assert torch.equal(a, b)
    other = sampler.fill(
        x, mask, ImputeContext(classifier=brightness_classifier, target=ctx.target, seeds=[1, 2, 3, 4])
    )
    assert not torch.equal(a, other)


def test_batched_equals_per_sample(tiny_unet, brightness_classifier):
    unet, schedule = tiny_unet
    sampler = fud_sampler(unet, schedule, {"steps": 5, "guidance_scale": 4.0, "guidance_start": 0.5})
    x, mask = _inputs()
    target = torch.tensor([0, 1, 0, 1])
    seeds = [11, 12, 13, 14]
    batched = sampler.fill(x, mask, ImputeContext(brightness_classifier, target, seeds))
    single = torch.cat(
        [
            sampler.fill(
                x[i : i + 1], mask[i : i + 1], ImputeContext(brightness_classifier, target[i : i + 1], seeds[i : i + 1])
            )
            for i in range(4)
        ]
    )
    torch.testing.assert_close(batched, single, atol=1e-5, rtol=1e-5)


def test_guidance_lowers_target_probability(tiny_unet, brightness_classifier):
    """Anti-class guidance: p(y) of the filled images is lower than without it."""
    unet, schedule = tiny_unet
    x, mask = _inputs(n=16, keep=0.3)
    target = brightness_classifier(x).argmax(1)
    seeds = list(range(16))
    kwargs = dict(steps=10, guidance_start=0.5)
    plain = fud_sampler(unet, schedule, {"guidance_scale": 0.0, **kwargs}).fill(
        x, mask, ImputeContext(brightness_classifier, target, seeds)
    )
    guided = fud_sampler(unet, schedule, {"guidance_scale": 20.0, **kwargs}).fill(
        x, mask, ImputeContext(brightness_classifier, target, seeds)
    )

    def p_target(images):
        return torch.softmax(brightness_classifier(images), 1).gather(1, target.view(-1, 1)).mean()

    assert p_target(guided) < p_target(plain) - 0.01


def test_guidance_only_in_the_last_fraction_of_time(tiny_unet):
    unet, schedule = tiny_unet  # T = 100
    sampler = fud_sampler(unet, schedule, {"steps": 10, "guidance_start": 0.05})
    assert sampler.guided_timesteps == [0]
    assert fud_sampler(unet, schedule, {"steps": 10, "guidance_start": 0.25}).guided_timesteps == [20, 10, 0]


def test_renoise_keeps_output_exact_and_seeds_required(tiny_unet):
    unet, schedule = tiny_unet
    sampler = fud_sampler(unet, schedule, {"steps": 5, "guidance_scale": 0.0, "known": "renoise"})
    x, mask = _inputs()
    out = sampler.fill(x, mask, ImputeContext(seeds=[1, 2, 3, 4]))
    keep = mask.bool().expand_as(x)
    assert torch.equal(out[keep], x[keep])
    with pytest.raises(ValueError, match="one seed per sample"):
        sampler.fill(x, mask, ImputeContext(seeds=[1]))


def test_trace_starts_far_and_ends_at_the_output(tiny_unet):
    unet, schedule = tiny_unet
    sampler = fud_sampler(unet, schedule, {"steps": 5, "guidance_scale": 0.0})
    x, mask = _inputs()
    out, trace = sampler.sample(x, mask, ImputeContext(seeds=[1, 2, 3, 4]), trace=True)
    assert trace.shape == (4, 6)
    final = (out - x).flatten(1).norm(dim=1)
    torch.testing.assert_close(trace[:, -1], final, atol=1e-4, rtol=1e-4)
    assert (trace[:, 0] > trace[:, -1]).all()


# --- the DDIM update written out equals diffusers' DDIMScheduler.step ---------


@pytest.mark.parametrize("clip_x0", [True, False])
def test_ddim_step_equals_diffusers_scheduler(tiny_unet, clip_x0):
    from fudbench.imputers.diffusion import ddim_step
    from fudbench.models.score import ddim_scheduler

    _, schedule = tiny_unet
    sched = ddim_scheduler(schedule, clip_x0=clip_x0)
    sched.set_timesteps(10)
    g = torch.Generator().manual_seed(0)
    ts = [int(t) for t in sched.timesteps]
    for i, t in enumerate(ts):
        x_t, e = torch.randn(2, 3, 8, 8, generator=g) * 1.5, torch.randn(2, 3, 8, 8, generator=g)
        expected = sched.step(e, t, x_t, eta=0.0, use_clipped_model_output=True).prev_sample
        abar_prev = float(sched.alphas_cumprod[ts[i + 1]]) if i + 1 < len(ts) else float(sched.final_alpha_cumprod)
        got, _ = ddim_step(x_t, e, float(sched.alphas_cumprod[t]), abar_prev, clip_x0)
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6)


def _reference_fud(unet, schedule, steps, scale, start, x, mask, classifier, target, seeds):
    """The sampler as first written: diffusers' scheduler.step per step, int timesteps."""
    from fudbench.imputers.diffusion.loop import _noise_like
    from fudbench.models.score import ddim_scheduler

    sched = ddim_scheduler(schedule, clip_x0=True)
    sched.set_timesteps(steps)
    m = mask.expand_as(x)
    clean = x * 2 - 1
    x_t = m * clean + (1 - m) * _noise_like(x, seeds)
    for t in sched.timesteps:
        t = int(t)
        e = unet(x_t, t).sample[:, :3]
        if t < start * sched.config.num_train_timesteps:
            with torch.enable_grad():
                xg = x_t.detach().requires_grad_(True)
                logp = torch.log_softmax(classifier((xg + 1) / 2), 1).gather(1, target.view(-1, 1)).sum()
                (grad,) = torch.autograd.grad(logp, xg)
            e = e + scale * (1 - float(sched.alphas_cumprod[t])) ** 0.5 * grad
        x_t = m * clean + (1 - m) * sched.step(e, t, x_t, eta=0.0, use_clipped_model_output=True).prev_sample
    return torch.where(mask.bool().expand_as(x), x, ((x_t + 1) / 2).clamp(0, 1))


def test_sampler_equals_a_loop_over_diffusers_scheduler_step(tiny_unet, brightness_classifier):
    unet, schedule = tiny_unet
    x, mask = _inputs()
    target, seeds = torch.tensor([0, 1, 1, 0]), [5, 6, 7, 8]
    with torch.no_grad():
        expected = _reference_fud(unet, schedule, 10, 4.0, 0.3, x, mask, brightness_classifier, target, seeds)
    got = fud_sampler(
        unet, schedule, {"steps": 10, "guidance_scale": 4.0, "guidance_start": 0.3, "amp_dtype": None}
    ).fill(x, mask, ImputeContext(brightness_classifier, target, seeds))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_callback_with_x0_hat_gets_the_clipped_estimate(tiny_unet):
    unet, schedule = tiny_unet
    x, mask = _inputs()
    got = []
    fud_sampler(unet, schedule, {"steps": 4, "guidance_scale": 0.0}).sample(
        x, mask, ImputeContext(seeds=[1, 2, 3, 4]), callback=lambda i, t, x_t, x0_hat: got.append(x0_hat)
    )
    assert len(got) == 4 and all(e.shape == x.shape and e.abs().max() <= 1 for e in got)
    assert not torch.equal(got[0], got[-1])


# --- the soft constraint (paper Sec. 4.3.4, Table 5) --------------------------


class ZeroEps(torch.nn.Module):
    """A 'U-Net' predicting eps = 0: what is left of a step is the update rule."""

    def forward(self, x, t):
        return type("Out", (), {"sample": torch.zeros_like(x)})()


def test_soft_constraint_follows_the_documented_update(tiny_unet):
    """e = -sqrt(1 - abar_t) M (x~ - x_t) / sigma^2 (eps_theta = 0), clipped-x0 DDIM step, no overwrite."""
    _, schedule = tiny_unet
    sigma = 0.7
    sampler = fud_sampler(
        ZeroEps(), schedule, {"steps": 2, "guidance_scale": 0.0, "constraint": "soft", "soft_sigma": sigma}
    )
    assert sampler.timesteps == [50, 0]
    x, mask = _inputs(n=2)
    seeds = [3, 4]
    out, _ = sampler.sample(x, mask, ImputeContext(seeds=seeds))
    from fudbench.imputers.diffusion.loop import _noise_like

    m, clean = mask.expand_as(x), x * 2 - 1
    x_t = m * clean + (1 - m) * _noise_like(x, seeds)
    abar = sampler.ddim.scheduler.alphas_cumprod.double()
    for t, abar_prev in ((50, float(abar[0])), (0, 1.0)):
        a = float(abar[t])
        e = -((1 - a) ** 0.5) * m * (clean - x_t) / sigma**2
        x0 = ((x_t - (1 - a) ** 0.5 * e) / a**0.5).clamp(-1, 1)
        e = (x_t - a**0.5 * x0) / (1 - a) ** 0.5
        x_t = abar_prev**0.5 * x0 + (1 - abar_prev) ** 0.5 * e
    torch.testing.assert_close(out, ((x_t + 1) / 2).clamp(0, 1), atol=1e-5, rtol=1e-5)


def test_soft_constraint_pulls_kept_pixels_more_the_smaller_sigma(tiny_unet):
    unet, schedule = tiny_unet
    x, mask = _inputs(n=4, size=8, keep=0.5)
    keep = mask.bool().expand_as(x)
    ctx = ImputeContext(seeds=[1, 2, 3, 4])
    err = {}
    for sigma in (0.3, 3.0):
        out = fud_sampler(
            unet, schedule, {"steps": 10, "guidance_scale": 0.0, "constraint": "soft", "soft_sigma": sigma}
        ).fill(x, mask, ctx)
        assert out.min() >= 0 and out.max() <= 1
        err[sigma] = (out - x)[keep].abs().mean().item()
    hard = fud_sampler(unet, schedule, {"steps": 10, "guidance_scale": 0.0}).fill(x, mask, ctx)
    assert (hard - x)[keep].abs().max() == 0  # hard: exact
    assert 0 < err[0.3] < err[3.0]  # soft: close, not exact; looser with larger sigma


def test_bad_sampler_settings_are_rejected(tiny_unet):
    unet, schedule = tiny_unet
    with pytest.raises(ValueError, match="constraint"):
        fud_sampler(unet, schedule, {"constraint": "medium"})
    with pytest.raises(ValueError, match="known: clean"):
        fud_sampler(unet, schedule, {"constraint": "soft", "known": "renoise"})
    with pytest.raises(ValueError, match="soft_sigma"):
        fud_sampler(unet, schedule, {"constraint": "soft", "soft_sigma": 0})
    with pytest.raises(ValueError, match="amp_dtype"):
        fud_sampler(unet, schedule, {"amp_dtype": "int8"})


def test_with_steps_equals_a_sampler_built_with_that_step_count(tiny_unet):
    unet, schedule = tiny_unet
    x, mask = _inputs()
    ctx = ImputeContext(seeds=[1, 2, 3, 4])
    base = fud_sampler(unet, schedule, {"steps": 10, "guidance_scale": 0.0, "constraint": "soft", "soft_sigma": 0.5})
    five = base.with_steps(5)
    assert five.timesteps == [80, 60, 40, 20, 0] and base.steps == 10 and len(base.timesteps) == 10
    built = fud_sampler(unet, schedule, {"steps": 5, "guidance_scale": 0.0, "constraint": "soft", "soft_sigma": 0.5})
    assert torch.equal(five.fill(x, mask, ctx), built.fill(x, mask, ctx))
