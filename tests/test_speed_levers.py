"""The default run's speed levers change no number beyond float rounding (studies/performance/README.md, "Issue 47").

- the score U-Net's upsamplers keep channels_last at batch >= 64 on a CPU (diffusers made them NCHW there,
  and the next convolution converted back): eps the same within float rounding, in fp32 and bf16;
- VSI's SDSP saliency is computed once per distinct image, one image per call: every quality metric bit for
  bit piq's with its saliency computed the same way;
- Table 10's timing is one job for every step count.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from fudbench.imputers.diffusion.runtime import ScoreModelRuntime, keep_upsampling_layout
from fudbench.imputers.diffusion.settings import RuntimeSettings

pytestmark = pytest.mark.numerics


@pytest.fixture(scope="module")
def default_like_unet():
    """The default profile's score U-Net architecture (two upsamplers, attention at the lowest level), small
    channels, 16 px, random weights."""
    from fudbench.models.score import build_unet

    torch.manual_seed(0)
    cfg = {"block_out_channels": [8, 16, 16], "layers_per_block": 1, "attention": [False, False, True]}
    return build_unet(cfg, 16).eval().requires_grad_(False)


def _upsampler_inputs(unet):
    """Record the memory format of every upsampler convolution's input."""
    from diffusers.models.upsampling import Upsample2D

    seen = []
    hooks = [
        m.conv.register_forward_pre_hook(
            lambda mod, args: seen.append(args[0].is_contiguous(memory_format=torch.channels_last))
        )
        for m in unet.modules()
        if isinstance(m, Upsample2D)
    ]
    return seen, hooks


def _unpatched(unet):
    for m in unet.modules():
        if getattr(m, "_fud_layout", False):
            del m.forward  # the instance's patch: back to diffusers' own forward
            m._fud_layout = False
    return unet


@pytest.mark.parametrize("amp", [None, "bf16"])
def test_upsampling_keeps_channels_last_at_batch_64_and_eps_is_unchanged(default_like_unet, amp):
    fast = ScoreModelRuntime(copy.deepcopy(default_like_unet), RuntimeSettings(amp_dtype=amp, channels_last=True))
    plain = ScoreModelRuntime(
        _unpatched(copy.deepcopy(default_like_unet)), RuntimeSettings(amp_dtype=amp, channels_last=True)
    )
    for batch in (64, 8):  # diffusers' contiguous() acts from 64 on; below it both paths are the same
        x = torch.randn(batch, 3, 16, 16, generator=torch.Generator().manual_seed(batch))
        t = torch.full((batch,), 400, dtype=torch.long)
        seen, hooks = _upsampler_inputs(fast.unet)
        with torch.no_grad():
            a = fast.eps(x, t)
        for h in hooks:
            h.remove()
        assert len(seen) == 2 and all(seen), f"batch {batch}: an upsampler's conv got NCHW input"
        with torch.no_grad():
            b = plain.eps(x, t)
        # the two sides' convolutions run in other memory layouts (oneDNN's NHWC vs NCHW kernels): equal bits on
        # AMD's kernels, float rounding elsewhere (docs/numerics.md); a wrong size, interpolation or channel
        # order moves eps by O(1)
        tol = 1e-4 if amp is None else 3e-2  # float32 rounding; bf16's 8-bit mantissa through the layers after it
        torch.testing.assert_close(a, b, rtol=0, atol=tol, msg=f"batch {batch}, {amp}: {(a - b).abs().max().item()}")


def test_patched_upsampler_equals_diffusers_with_and_without_output_size():
    from diffusers.models.upsampling import Upsample2D

    torch.manual_seed(0)
    plain = Upsample2D(8, use_conv=True, out_channels=8).eval().to(memory_format=torch.channels_last)
    fast = copy.deepcopy(plain)
    assert keep_upsampling_layout(fast) == 1
    x = torch.randn(64, 8, 5, 5).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        for size in (None, (11, 11), (10, 9)):
            a, b = fast(x, size), plain(x, size)
            assert a.shape == b.shape, size  # another layout's kernels: float rounding apart (docs/numerics.md)
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=str(size))
        assert fast(x).is_contiguous(memory_format=torch.channels_last)


def test_layout_patch_applies_to_channels_last_cpu_runtimes_only(default_like_unet):
    unet = copy.deepcopy(default_like_unet)
    assert keep_upsampling_layout(unet) == 2 and keep_upsampling_layout(unet) == 0  # idempotent
    contiguous = ScoreModelRuntime(copy.deepcopy(default_like_unet), RuntimeSettings(channels_last=False))
    assert not any(getattr(m, "_fud_layout", False) for m in contiguous.unet.modules())
    last = ScoreModelRuntime(copy.deepcopy(default_like_unet), RuntimeSettings(channels_last=True))
    assert sum(getattr(m, "_fud_layout", False) for m in last.unet.modules()) == 2


def _plain_piq(samples, originals, per_image_saliency):
    """quality_metrics before issue 47: piq's own VSI, the same batches of 32; with per_image_saliency, piq's
    SDSP is called one image at a time (as the memo calls it), the rest of VSI batched as before."""
    import importlib

    import piq

    from fudbench.analysis.quality import QUALITY_METRICS, _compute

    module = importlib.import_module("piq.vsi")
    sdsp = module.sdsp
    if per_image_saliency:
        module.sdsp = lambda x, **kw: torch.cat([sdsp(x[i : i + 1], **kw) for i in range(len(x))])
    out = {m: [] for m in QUALITY_METRICS}
    try:
        with torch.no_grad():
            for s in range(0, len(samples), 32):
                xb, yb = samples[s : s + 32].clamp(0, 1), originals[s : s + 32].clamp(0, 1)
                for m in QUALITY_METRICS:
                    v = piq.vsi(xb, yb, data_range=1.0, reduction="none") if m == "VSI" else _compute(m, xb, yb)
                    out[m].append(v.double().numpy())
    finally:
        module.sdsp = sdsp
    return {m: np.concatenate(v) for m, v in out.items()}


# piq's batched SDSP against one image per call: equal on AMD's kernels, the last float32 bits apart on an
# Intel Xeon's (MKL's FFT by batch size). VSI lies in [0, 1]; tests/test_default_run.py allows 1e-3 on the
# tables, so 1e-5 is far inside what a committed expectation could notice.
VSI_ACROSS_BATCHING = 1e-5


@pytest.mark.parametrize("size", [16, 32])
def test_quality_metrics_equal_piq_bit_for_bit_and_compute_each_saliency_once(size, monkeypatch):
    from fudbench.analysis import quality

    memo = quality.SaliencyMemo()
    monkeypatch.setattr(quality, "SALIENCY", memo)
    g = torch.Generator().manual_seed(size)
    originals = torch.rand(2, 3, size, size, generator=g)
    samples = torch.rand(70, 3, size, size, generator=g)
    samples[::7] = originals[0]  # a curve's end points: the original itself ...
    samples[3::10] = samples[3]  # ... or one fill whatever the map
    which = torch.arange(70) % 2
    got = quality.quality_metrics(samples, originals[which])
    # the same computation in the same batches: bit for bit on any CPU
    want = _plain_piq(samples, originals[which], per_image_saliency=True)
    for m in quality.QUALITY_METRICS:
        assert np.array_equal(got[m], want[m], equal_nan=True), m
    # piq's own batched VSI: within float rounding (kernels may batch an FFT differently)
    batched = _plain_piq(samples, originals[which], per_image_saliency=False)["VSI"]
    np.testing.assert_allclose(got["VSI"], batched, rtol=0, atol=VSI_ACROSS_BATCHING)
    distinct = len({s.numpy().tobytes() for s in samples} | {o.numpy().tobytes() for o in originals})
    assert memo.requested == 2 * 70 and memo.computed == distinct
    # a second call (the next explainer's samples, the same originals) computes only its new samples' maps
    quality.quality_metrics(samples[:5] * 0.5, originals[which[:5]])
    assert memo.computed == distinct + 5


def test_saliency_memo_gives_an_image_the_same_map_whatever_its_batch():
    """A map computed in one batch and served from the memo in another is the map of that image alone."""
    from piq.vsi import sdsp

    from fudbench.analysis.quality import SaliencyMemo

    x = torch.rand(9, 3, 16, 16, generator=torch.Generator().manual_seed(3)) * 255
    alone = torch.cat([sdsp(x[i : i + 1], data_range=255) for i in range(9)])
    memo = SaliencyMemo()
    assert torch.equal(memo(sdsp, x[:5], data_range=255), alone[:5])
    order = torch.tensor([8, 2, 6, 0, 7, 4])  # hits and misses mixed, another batch size
    assert torch.equal(memo(sdsp, x[order], data_range=255), alone[order])
    assert torch.equal(SaliencyMemo()(sdsp, x.flip(0), data_range=255), alone.flip(0))


def test_saliency_memo_stays_within_its_bound_and_passes_gradients_through():
    from piq.vsi import sdsp

    from fudbench.analysis.quality import SaliencyMemo

    x = torch.rand(6, 3, 16, 16) * 255
    one_map = sdsp(x[:1], data_range=255).numel() * 4
    alone = torch.cat([sdsp(x[i : i + 1], data_range=255) for i in range(6)])
    memo = SaliencyMemo(max_bytes=3 * one_map)
    assert torch.equal(memo(sdsp, x, data_range=255), alone)
    assert len(memo.maps) == 3 and memo.bytes <= 3 * one_map
    assert torch.equal(memo(sdsp, x[:2], data_range=255), alone[:2])  # evicted ones recomputed
    assert memo.computed == 8
    y = x.clone().requires_grad_(True)
    memo(sdsp, y, data_range=255)
    assert memo.computed == 14  # never memoised: the caller may want the graph


def test_table10_timing_is_one_job_for_every_step_count(repo):
    """Issue 47: one fud_timing job times every step count (ten jobs paid ten start-ups)."""
    text = (repo / "rules/diagnostics.smk").read_text()
    rule = text[text.index("rule fud_timing:") : text.index("rule table10_timing:")]
    assert "{steps}" not in rule and "timing/fud_timing.parquet" in rule
    script = (repo / "scripts/fud_timing.py").read_text()
    assert 'timing["steps"]' in script and "snakemake.wildcards" not in script


def test_quality_loads_only_piqs_metric_modules_and_piq_stays_whole(repo):
    """The quality jobs load piq's seven metric modules, not piq's __init__ (FID's Inception pulls
    torchvision and torch._dynamo: 1.25 CPU s here); anything else of piq asked for later gets all of it."""
    import subprocess
    import sys

    code = """
import sys
import torch
from fudbench.analysis import quality
x, y = torch.rand(3, 3, 16, 16), torch.rand(3, 3, 16, 16)
q = quality.quality_metrics(x, y)
assert "torchvision" not in sys.modules and "torch._dynamo" not in sys.modules, "piq's __init__ ran"
import piq
assert callable(piq.vsi) and callable(piq.ssim) and piq.__version__, piq.vsi   # the functions, as piq binds them
assert piq.LPIPS and piq.functional.gradient_map and "torchvision" in sys.modules
from piq import multi_scale_ssim
import piq.functional
for m in quality.QUALITY_METRICS:
    assert (q[m] == quality.quality_metrics(x, y, metrics=[m])[m]).all(), m
# piq's VSI (its saliency in one batch) vs the memo's (one image per call): float rounding apart on some CPUs
assert torch.allclose(piq.vsi(x, y, reduction="none"), quality._vsi(x, y), rtol=0, atol=1e-5)
print("ok")
"""
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(repo / "src")},
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout + res.stderr[-3000:]


def test_the_speed_benches_run(repo):
    """bench/fud_profile.py and bench/unet_layout.py at toy settings (the figures in docs/performance.md
    come from them at full settings)."""
    import importlib.util

    def load(name):
        spec = importlib.util.spec_from_file_location(name, repo / "bench" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    threads = torch.get_num_threads()
    try:
        out = load("fud_profile").main(
            [
                "--batch",
                "2",
                "--steps",
                "2",
                "--batches",
                "2",
                "--repeats",
                "1",
                "--layouts",
                "channels_last",
                "--top",
                "3",
            ]
        )
        rows = load("unet_layout").main(["--batches", "2", "--rounds", "1"])
    finally:
        torch.set_num_threads(threads)
    assert out["fill"]["cpu_s"] > 0 and out["forward"][0]["batch"] == 2
    assert {r["layout"] for r in rows} == {"contiguous", "channels_last", "channels_last, diffusers upsampling"}


def test_the_results_page_embeds_the_png_it_saved_and_renders_only_without_one(tmp_path):
    """Issue 47: the results page reads back the PNG that save_figure wrote (no third draw of its
    40-panel figures); a figure saved without a PNG is rendered for the page, as before."""
    from fudbench.core.io import save_figure
    from fudbench.report import results_page as rp
    from fudbench.report.figures import plt

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [1, 0])
    paths = [tmp_path / "fig.pdf", tmp_path / "fig.png"]
    save_figure(fig, paths)
    assert rp.page_png(fig, paths) == paths[1].read_bytes()
    assert rp.page_png(fig, str(paths[1])) == paths[1].read_bytes()
    rendered = rp.page_png(fig, [tmp_path / "fig.pdf"])
    assert rendered.startswith(b"\x89PNG") and rendered != paths[1].read_bytes()
    plt.close(fig)


def test_fud_profile_dir_leaves_each_jobs_profile_and_the_bench_reads_it(repo, tmp_path):
    """FUD_PROFILE_DIR: a job (setup_job) writes <rule>_<wildcards>.prof at its exit; without the
    variable nothing is profiled; bench/job_profiles.py lists the jobs, longest first."""
    import importlib.util
    import os
    import subprocess
    import sys

    folder = tmp_path / "prof"
    job = (
        "import sys, types; sys.path.insert(0, {src!r}); from fudbench.workflow.jobs import setup_job\n"
        "smk = types.SimpleNamespace(threads=1, log=[], rule={rule!r}, wildcards={wildcards!r},\n"
        "                            config={{'run_name': 'synthetic'}})\n"
        "setup_job(smk)\n"
        "def busy(n):\n    return sum(i * i for i in range(n))\n"
        "busy({n})\n"
    )
    env = {**os.environ, "FUD_PROFILE_DIR": str(folder)}
    for rule, wildcards, n in [
        ("evaluate", {"model": "cnn", "evaluator": "fud", "shard": "0"}, 300_000),
        ("table", {}, 1000),
    ]:
        subprocess.run(
            [sys.executable, "-c", job.format(src=str(repo / "src"), rule=rule, wildcards=wildcards, n=n)],
            env=env,
            check=True,
        )
    env.pop("FUD_PROFILE_DIR")
    subprocess.run(
        [sys.executable, "-c", job.format(src=str(repo / "src"), rule="quiet", wildcards={}, n=10)], env=env, check=True
    )
    assert sorted(p.name for p in folder.iterdir()) == ["synthetic.evaluate_cnn_fud_0.prof", "synthetic.table.prof"]

    spec = importlib.util.spec_from_file_location("job_profiles", repo / "bench" / "job_profiles.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main([str(folder), "--top", "2", "--csv", str(tmp_path / "jobs.csv")])
    assert [r["job"] for r in rows] == ["synthetic.evaluate_cnn_fud_0", "synthetic.table"]
    assert any("busy" in label or "genexpr" in label for label, _ in rows[0]["leaders"])
    assert (tmp_path / "jobs.csv").read_text().startswith("job,seconds,share,leaders")
