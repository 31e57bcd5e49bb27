"""Where a FUD sample's time goes on this CPU: torch.profiler over the default
profile's sampler (shipped score U-Net and classifier, 32 px, 25 DDIM steps),
and the U-Net forward's cost per sample against the batch size and layout.

    ./fud python bench/fud_profile.py [--threads 1] [--batch 64] [--steps 25] [--dtype fp32|auto]
                                     [--layouts channels_last contiguous] [--batches 8 9 36 64 72]
                                     [--compile] [--top 20]

Prints the machine (CPU model, flags, what `auto` resolves to), then
1. per batch size and layout: ms per U-Net forward and per sample (best of
   --repeats, after a warm-up forward), plus the process's CPU seconds for them;
2. one sampler fill (--batch samples x --steps steps, anti-class guidance on
   with the shipped classifier) under torch.profiler: its wall and CPU seconds
   and the top --top operators by self CPU time, with their share;
3. with --compile: the same fill with torch.compile's U-Net (the first call
   compiles: its seconds are printed apart from the compiled fill's).

Measure with one thread on a shared CPU (the default): per-kernel figures
and CPU seconds are then what one job of the workflow sees. An AVX2-only
CPU can be emulated on a newer one (oneDNN and ATen capped; an emulation,
not a measurement of such a CPU):

    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 ./fud python bench/fud_profile.py
"""

from __future__ import annotations

import argparse
import copy
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children so far
    (torch.compile's C++ compiler runs in child processes)."""
    return sum(
        r.ru_utime + r.ru_stime
        for r in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def build(dtype: str, layout: str, steps: int, compile_: bool, model: str):
    """The default profile's FUD sampler on the shipped assets, and its classifier."""
    from fudbench.config.validate import load_yaml
    from fudbench.imputers.diffusion import fud_sampler
    from fudbench.models.classifiers import load_classifier
    from fudbench.models.score import load_score_model

    fud = dict(load_yaml(REPO / "config/config.yaml")["evaluators"]["fud"])
    fud.update(
        steps=steps,
        amp_dtype=None if dtype == "fp32" else dtype,
        channels_last={"channels_last": True, "contiguous": False, "auto": "auto"}[layout],
        compile=compile_,
    )
    for k in ("batch_size", "symmetric", "granularity", "patch_size", "n_segments", "compactness"):
        fud.pop(k, None)
    unet, schedule = load_score_model(REPO / "assets/score_model_synthetic.pt", "cpu")
    classifier = load_classifier(REPO / f"assets/classifier_synthetic_{model}.pt", "cpu")
    return fud_sampler(unet, schedule, fud), classifier


def inputs(n: int, size: int):
    """n random images in [0, 1] with keep masks at the default ratios (the
    sampler's cost does not depend on the pixels)."""
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 3, size, size, generator=g)
    ratios = torch.linspace(0.1, 0.9, 9)
    keep = (torch.rand(n, 1, size, size, generator=g) < ratios[torch.arange(n) % 9].view(-1, 1, 1, 1)).float()
    return x, keep


def forward_table(unet, dtypes, layouts, batches, repeats: int) -> list[dict]:
    import torch

    from fudbench.imputers.diffusion.runtime import ScoreModelRuntime
    from fudbench.imputers.diffusion.settings import RuntimeSettings

    rows = []
    size = unet.config.sample_size
    for dtype in dtypes:
        for layout in layouts:
            rt = ScoreModelRuntime(
                copy.deepcopy(unet).eval(),
                RuntimeSettings(
                    amp_dtype=None if dtype == "fp32" else dtype, channels_last=layout == "channels_last", compile=False
                ),
            )
            for b in batches:
                x = torch.randn(b, 3, size, size, generator=torch.Generator().manual_seed(0))
                t = torch.full((b,), 500, dtype=torch.long)
                with torch.no_grad():
                    rt.eps(x, t)
                    times, c0 = [], cpu_seconds()
                    for _ in range(repeats):
                        t0 = time.perf_counter()
                        rt.eps(x, t)
                        times.append(time.perf_counter() - t0)
                    cpu = (cpu_seconds() - c0) / repeats
                ms = 1000 * min(times)
                rows.append(
                    {
                        "dtype": dtype,
                        "layout": layout,
                        "batch": b,
                        "ms_forward": ms,
                        "ms_per_sample": ms / b,
                        "cpu_s_forward": cpu,
                    }
                )
                print(
                    f"  {dtype:5s} {layout:14s} batch {b:4d}: {ms:8.1f} ms per forward, {ms / b:6.2f} ms per "
                    f"sample, {cpu:6.3f} CPU s per forward",
                    flush=True,
                )
    return rows


def profiled_fill(sampler, classifier, n: int, top: int) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from fudbench.imputers.base import ImputeContext

    size = sampler.runtime.unet.config.sample_size
    x, keep = inputs(n, size)
    ctx = ImputeContext(classifier=classifier, target=torch.zeros(n, dtype=torch.long), seeds=list(range(n)))
    sampler.with_steps(1).fill(x, keep, ctx)  # warm-up: oneDNN primitives for these shapes
    c0, t0 = cpu_seconds(), time.perf_counter()
    sampler.fill(x, keep, ctx)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    print(
        f"fill of {n} samples x {sampler.steps} steps (unprofiled): {wall:.2f} s wall, {cpu:.2f} CPU s, "
        f"{cpu / n:.4f} CPU s per sample",
        flush=True,
    )
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        sampler.fill(x, keep, ctx)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    print(f"torch.profiler, top {top} operators by self CPU time (of {total / 1e6:.2f} s):")
    print(f"  {'operator':40s} {'calls':>7s} {'self s':>8s} {'share':>6s}")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]:
        print(
            f"  {e.key[:40]:40s} {e.count:7d} {e.self_cpu_time_total / 1e6:8.3f} {e.self_cpu_time_total / total:6.1%}"
        )
    return {"wall_s": wall, "cpu_s": cpu, "cpu_s_per_sample": cpu / n}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64, help="samples in the profiled fill (default config: 64)")
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--dtype", default="fp32", help="fp32 | bf16 | auto (the profiled fill)")
    ap.add_argument("--layout", default="auto", choices=["auto", "channels_last", "contiguous"])
    ap.add_argument("--layouts", nargs="*", default=["channels_last", "contiguous"])
    ap.add_argument("--dtypes", nargs="*", default=["fp32"])
    ap.add_argument("--batches", nargs="*", type=int, default=[8, 9, 36, 64, 72])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default="vit", choices=["cnn", "vit"], help="the guiding classifier")
    ap.add_argument("--compile", action="store_true", help="also time the fill with torch.compile's U-Net")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--skip-table", action="store_true")
    args = ap.parse_args(argv)
    import torch

    from fudbench.core.hardware import describe_machine

    torch.set_num_threads(args.threads)
    print(describe_machine("cpu", {"amp_dtype": "auto", "channels_last": "auto"}))
    print(f"{torch.get_num_threads()} torch thread(s)", flush=True)
    out = {}
    sampler, classifier = build(args.dtype, args.layout, args.steps, False, args.model)
    if not args.skip_table:
        print("U-Net forward (eps, t = 500):")
        out["forward"] = forward_table(sampler.runtime.unet, args.dtypes, args.layouts, args.batches, args.repeats)
    print(f"sampler: {sampler.runtime.precision.label}")
    out["fill"] = profiled_fill(sampler, classifier, args.batch, args.top)
    if args.compile:
        compiled, _ = build(args.dtype, args.layout, args.steps, True, args.model)
        x, keep = inputs(args.batch, compiled.runtime.unet.config.sample_size)
        from fudbench.imputers.base import ImputeContext

        ctx = ImputeContext(
            classifier=classifier, target=torch.zeros(args.batch, dtype=torch.long), seeds=list(range(args.batch))
        )
        c0, t0 = cpu_seconds(), time.perf_counter()
        compiled.warm_up(x)
        print(
            f"torch.compile of the U-Net at batch {args.batch}: {time.perf_counter() - t0:.1f} s wall, "
            f"{cpu_seconds() - c0:.1f} CPU s (failed: {compiled.runtime.compile_failed})",
            flush=True,
        )
        compiled.with_steps(1).fill(x, keep, ctx)
        c0, t0 = cpu_seconds(), time.perf_counter()
        compiled.fill(x, keep, ctx)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        print(
            f"compiled fill: {wall:.2f} s wall, {cpu:.2f} CPU s ({cpu / args.batch:.4f} per sample; eager "
            f"{out['fill']['cpu_s_per_sample']:.4f})",
            flush=True,
        )
        out["compiled_fill"] = {"wall_s": wall, "cpu_s": cpu}
    return out


if __name__ == "__main__":
    main()
