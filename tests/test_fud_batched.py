"""The sampler's speed settings (bf16 autocast, channels_last, torch.compile):
batched output equals per-sample output, and the fast path stays close to fp32."""

import copy

import pytest
import torch

from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion import fud_sampler, group_norm_in_fp32

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

FP32 = {"amp_dtype": None, "channels_last": False}  # the reference precision (the default is auto)


def _inputs(n=4, size=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, size, size, generator=g), (torch.rand(n, 1, size, size, generator=g) < 0.5).float()


@pytest.fixture
def own_unet(tiny_unet):
    """A private copy: these settings patch the module (layout, GroupNorm) in place."""
    unet, schedule = tiny_unet
    return copy.deepcopy(unet), schedule


def _batched_and_single(sampler, classifier, x, mask, target, seeds):
    batched = sampler.fill(x, mask, ImputeContext(classifier, target, seeds))
    single = torch.cat(
        [
            sampler.fill(x[i : i + 1], mask[i : i + 1], ImputeContext(classifier, target[i : i + 1], seeds[i : i + 1]))
            for i in range(len(x))
        ]
    )
    return batched, single


@pytest.mark.parametrize(
    "settings", [{"amp_dtype": "bf16"}, {"channels_last": True}, {"amp_dtype": "bf16", "channels_last": True}]
)
def test_fast_settings_batched_equal_per_sample_and_close_to_fp32(own_unet, brightness_classifier, settings):
    unet, schedule = own_unet
    x, mask = _inputs()
    target, seeds = torch.tensor([0, 1, 0, 1]), [21, 22, 23, 24]
    base = {"steps": 5, "guidance_start": 0.5, **FP32}
    reference = fud_sampler(copy.deepcopy(unet), schedule, base).fill(
        x, mask, ImputeContext(brightness_classifier, target, seeds)
    )
    sampler = fud_sampler(unet, schedule, {**base, **settings})
    batched, single = _batched_and_single(sampler, brightness_classifier, x, mask, target, seeds)
    torch.testing.assert_close(batched, single, atol=1e-2 if "amp_dtype" in settings else 1e-5, rtol=0)
    keep = mask.bool().expand_as(x)
    assert torch.equal(batched[keep], x[keep])  # still exact in every precision
    diff = (batched - reference).abs()
    if "amp_dtype" in settings:
        assert diff.mean() < 3e-3 and diff.max() < 0.05  # bf16 is a faithful approximation
    else:
        assert diff.max() < 1e-5  # a layout change only


def test_group_norm_runs_in_fp32_under_autocast(monkeypatch):
    torch.manual_seed(0)
    gn = torch.nn.GroupNorm(2, 8)
    torch.nn.init.normal_(gn.weight)
    x = (torch.randn(2, 8, 4, 4) * 30 + 100).bfloat16()
    exact = torch.nn.functional.group_norm(x.float(), 2, gn.weight, gn.bias, gn.eps).bfloat16()
    seen = []
    real = torch.nn.functional.group_norm

    def spy(inp, *args, **kwargs):
        seen.append(inp.dtype)
        return real(inp, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "group_norm", spy)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        gn(x)
        group_norm_in_fp32(gn)
        y = gn(x)
    assert seen == [torch.bfloat16, torch.float32]  # plain GroupNorm: bf16; patched: fp32
    assert y.dtype == torch.bfloat16 and torch.equal(y, exact)  # handed back in the input's dtype
    plain = torch.randn(2, 8, 4, 4)  # outside autocast: nn.GroupNorm as before
    torch.testing.assert_close(gn(plain), real(plain, 2, gn.weight, gn.bias, gn.eps))


def test_compile_wraps_the_unet_once_with_static_shapes(own_unet, monkeypatch):
    unet, schedule = own_unet
    calls = []

    def fake_compile(module, **kwargs):
        calls.append(kwargs)

        def forward(*args, **kw):
            calls.append("forward")
            return module(*args, **kw)

        return forward

    monkeypatch.setattr(torch, "compile", fake_compile)
    x, mask = _inputs(n=2)
    sampler = fud_sampler(unet, schedule, {"steps": 3, "guidance_scale": 0.0, "compile": True})
    out = sampler.fill(x, mask, ImputeContext(seeds=[1, 2]))
    assert calls[0] == {"dynamic": False} and calls.count("forward") == 3
    plain = fud_sampler(unet, schedule, {"steps": 3, "guidance_scale": 0.0}).fill(x, mask, ImputeContext(seeds=[1, 2]))
    assert torch.equal(out, plain)


def test_memory_estimate_is_none_on_cpu(own_unet):
    unet, schedule = own_unet
    assert fud_sampler(unet, schedule, {"steps": 2}).bytes_per_sample((3, 8, 8), "cpu") is None
