"""torch.compile of FUD's U-Net (compile: auto is on on a CUDA GPU): the compiled
sampler equals the eager one within fp32 / bf16 tolerance, one graph per batch
shape (smaller batches padded up to it), compilation outside the timed part,
and a failing compilation falls back to eager with a log line. The real
compiler runs on the CPU here (Inductor needs a C++ compiler; skipped without)."""

import copy
import logging
import os
import shutil

import pytest
import torch

from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion import fud_sampler
from fudbench.imputers.diffusion.loop import cpu_draws
from fudbench.imputers.diffusion.runtime import CompiledForward

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

needs_cxx = pytest.mark.skipif(
    not shutil.which(os.environ.get("CXX", "g++")) and not shutil.which("c++"),
    reason="torch.compile on a CPU needs a C++ compiler (g++ / c++); none on PATH",
)
# Without a vector instruction set (ATEN_CPU_CAPABILITY=default, tools/cpu_kinds.sh's `default` cap; a CPU
# without AVX2) Inductor's C++ code for this U-Net does not build (torch 2.14 emits at::vec's transpose_mxn
# without its header): fudbench runs it eager then, as test_a_failing_compilation_falls_back_... checks.
needs_vector_isa = pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() == "DEFAULT",
    reason="Inductor's CPU code for the U-Net needs a vector ISA (ATen capability DEFAULT here)",
)


def _inputs(n=4, size=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, size, size, generator=g), (torch.rand(n, 1, size, size, generator=g) < 0.5).float()


def _pair(tiny_unet, **settings):
    unet, schedule = tiny_unet
    base = {"steps": 3, "guidance_start": 0.7, **settings}
    return (
        fud_sampler(copy.deepcopy(unet), schedule, {**base, "compile": False}),
        fud_sampler(copy.deepcopy(unet), schedule, {**base, "compile": True}),
    )


@needs_cxx
@needs_vector_isa
@pytest.mark.parametrize(
    "settings,atol",
    [({"amp_dtype": None, "channels_last": False}, 1e-5), ({"amp_dtype": "bf16", "channels_last": True}, 3e-2)],
)
def test_compiled_sampler_equals_eager(tiny_unet, brightness_classifier, settings, atol):
    eager, compiled = _pair(tiny_unet, **settings)
    x, mask = _inputs()
    ctx = ImputeContext(brightness_classifier, torch.tensor([0, 1, 0, 1]), [5, 6, 7, 8])
    assert compiled.warm_up(x) and compiled.runtime.compile_failed is None  # it really compiled
    assert not compiled.warm_up(x)  # once per shape
    a, b = compiled.fill(x, mask, ctx), eager.fill(x, mask, ctx)
    torch.testing.assert_close(a, b, atol=atol, rtol=0)
    keep = mask.bool().expand_as(x)
    assert torch.equal(a[keep], x[keep])
    # a smaller batch (a shard's last) runs on the compiled graph, padded, and gives its rows' values
    part = compiled.fill(x[:3], mask[:3], ImputeContext(brightness_classifier, ctx.target[:3], ctx.seeds[:3]))
    assert compiled.runtime.compiled.shapes == {(4, 3, 8, 8)}
    torch.testing.assert_close(part, a[:3], atol=atol, rtol=0)


def test_a_smaller_batch_is_padded_only_while_cheaper_than_eager(tiny_unet):
    unet, _ = tiny_unet
    fwd = CompiledForward(unet)
    fwd.shapes = {(8, 3, 8, 8)}
    assert fwd.target_batch((8, 3, 8, 8)) == 8
    assert fwd.target_batch((4, 3, 8, 8)) == 8  # 2x the rows: padded
    assert fwd.target_batch((3, 3, 8, 8)) is None  # 2.7x: its own graph
    assert fwd.target_batch((4, 3, 16, 16)) is None  # another image size


def test_padding_passes_the_real_rows_and_cuts_the_output(tiny_unet, monkeypatch):
    unet, _ = tiny_unet
    seen = []

    def fake_compile(module, **kwargs):
        def forward(x, t):
            seen.append((tuple(x.shape), t.tolist()))
            return module(x, t)

        return forward

    monkeypatch.setattr(torch, "compile", fake_compile)
    fwd = CompiledForward(unet)
    x = torch.randn(4, 3, 8, 8)
    full = fwd(x, torch.full((4,), 7))
    out = fwd(x[:2], torch.tensor([7, 9]))
    assert seen[-1] == ((4, 3, 8, 8), [7, 9, 9, 9]) and out.shape == (2, 3, 8, 8)
    torch.testing.assert_close(out[0], full[0], atol=1e-5, rtol=0)


def _compile_raising(message: str):
    """A stand-in for torch.compile whose compiled module raises RuntimeError(message) when called."""

    def compile_(module, **kwargs):
        def forward(*args, **kw):
            raise RuntimeError(message)

        return forward

    return compile_


def test_a_failing_compilation_falls_back_to_eager_with_a_log_line(tiny_unet, monkeypatch, caplog):
    monkeypatch.setattr(torch, "compile", _compile_raising("backend compiler failed: no C compiler\nmore details"))
    eager, compiled = _pair(tiny_unet, amp_dtype=None, channels_last=False, guidance_scale=0.0)
    x, mask = _inputs(n=2)
    with caplog.at_level(logging.WARNING, logger="fudbench.imputers.diffusion.runtime"):
        assert compiled.warm_up(x) is False
        out = compiled.fill(x, mask, ImputeContext(seeds=[1, 2]))
    assert compiled.runtime.compile_failed == "RuntimeError: backend compiler failed: no C compiler"
    lines = [r.getMessage() for r in caplog.records if "torch.compile" in r.getMessage()]
    assert len(lines) == 1 and "running it eager" in lines[0] and "evaluators.fud.compile: false" in lines[0]
    assert torch.equal(out, eager.fill(x, mask, ImputeContext(seeds=[1, 2])))


def test_out_of_memory_while_compiling_is_raised_for_the_batch_back_off(tiny_unet, monkeypatch):
    monkeypatch.setattr(torch, "compile", _compile_raising("CUDA out of memory. Tried to allocate 2.00 GiB"))
    _, compiled = _pair(tiny_unet, amp_dtype=None, channels_last=False, guidance_scale=0.0)
    x, mask = _inputs(n=2)
    with pytest.raises(RuntimeError, match="out of memory"):
        compiled.fill(x, mask, ImputeContext(seeds=[1, 2]))
    assert compiled.runtime.compile_failed is None  # not mistaken for a compiler failure


def test_warm_up_runs_before_the_timed_fill(monkeypatch):
    """fill_and_score (every protocol's timed fill) warms the imputer up before its clock starts."""
    import fudbench.protocols.base as base

    events, clock = [], iter(range(100))
    monkeypatch.setattr(base.time, "perf_counter", lambda: events.append("clock") or next(clock))

    class Imputer:
        def warm_up(self, x):
            events.append("warm_up")

        def fill(self, x, masks, context):
            events.append("fill")
            return x

    x = torch.rand(2, 3, 4, 4)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(48, 3))
    base.fill_and_score(model, Imputer(), x, torch.ones(2, 1, 4, 4), ImputeContext(), torch.tensor([0, 1]))
    assert events[:3] == ["warm_up", "clock", "fill"]


def test_cpu_draws_equal_per_sample_generators():
    """The noise helper draws what torch.randn with each sample's generator draws, bit for bit."""
    like = torch.zeros(3, 2, 4, 4, dtype=torch.float64)
    out = cpu_draws(like.shape[1:], [torch.Generator().manual_seed(s) for s in (1, 2, 3)], like)
    ref = torch.stack([torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(s)) for s in (1, 2, 3)])
    assert out.dtype == torch.float64 and torch.equal(out, ref.double())


def test_timestep_rows_are_contiguous(tiny_unet, monkeypatch):
    """A compiled graph is specialised on its inputs' strides: the loop hands the U-Net contiguous timesteps."""
    eager, _ = _pair(tiny_unet, amp_dtype=None, channels_last=False, guidance_scale=0.0)
    seen = []
    real = eager.runtime.eps
    monkeypatch.setattr(eager.runtime, "eps", lambda x_t, t: seen.append(t) or real(x_t, t))
    x, mask = _inputs(n=3)
    eager.fill(x, mask, ImputeContext(seeds=[1, 2, 3]))
    assert [t.tolist() for t in seen] == [[t] * 3 for t in eager.timesteps]
    assert all(t.is_contiguous() and t.dtype == torch.long for t in seen)
