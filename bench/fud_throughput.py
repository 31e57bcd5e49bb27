"""Throughput of FUD's sampler: seconds per sample, TFLOP/s, % of the GPU's bf16 peak.

    ./fud python bench/fud_throughput.py [--device cuda] [--steps 10 25 50 100]
        [--batch-sizes 1 8 32 64 auto] [--dtype auto|bf16|fp16|fp32] [--compile [auto|true|false]]
        [--channels-last [auto|true|false]] [--classifier resnet50|vit_b_16] [--repeats 2] [--csv out.csv] [--tiny]

Builds the paper's score model, guided-diffusion's ADM-256 as a diffusers
UNet2DModel (552.8 M parameters; ../shared/spec/diffusion.md), and a
torchvision ResNet-50 or ViT-B/16 for the anti-class guidance, all with random
weights: the speed of a forward pass does not depend on the weights. Samples
are 256x256 images with a random 50% keep-mask; the classifier sees them
resized to 224 (a differentiable bilinear resize, so guidance flows through).
--tiny swaps in a reduced U-Net at 32x32 (and the classifier at 32 px) so the
whole thing runs in seconds on a CPU; it exercises the same code path.

FLOPs are counted, not assumed: torch's FlopCounterMode runs the models on the
meta device (no memory, no time) at batch 1; a multiply-add counts 2. At
256x256 the U-Net costs 2.24 TFLOP per forward. One sample of an S-step run
with G guided steps costs S * F_unet + G * F_guidance, where F_guidance is a
classifier forward plus the backward to the input. Achieved TFLOP/s = that
times samples per second; the peak is the device's dense bf16 tensor-core
peak from PEAK_BF16_TFLOPS (matched on torch.cuda.get_device_name; n/a on a CPU).
`auto` batch size = the largest batch that fits the free GPU memory
(fudbench.core.batching.fit_batch_size with a measured per-sample peak).
The first call of each batch size (2 steps: compilation where compile is on,
cuDNN autotuning, allocations) is not timed; its seconds are the `warmup_s`
column. The CSV is rewritten after every row, so a run stopped by a time
limit keeps the rows it finished.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fudbench.core.batching import fit_batch_size, free_cached_memory, is_out_of_memory  # noqa: E402
from fudbench.imputers.base import ImputeContext  # noqa: E402
from fudbench.imputers.diffusion import DiffusionImputer, fud_sampler  # noqa: E402
from fudbench.models.guided_diffusion import ADM256, ADMConfig, build_adm_unet, diffusers_config, schedule  # noqa: E402

# Dense (no sparsity) bf16 tensor-core peaks, TFLOP/s, from NVIDIA's data sheets;
# fp16 is the same on these parts. The first substring found in the device name wins.
PEAK_BF16_TFLOPS = (
    ("H200", 989.0),  # H200 SXM
    ("H100 NVL", 835.0),
    ("H100 PCIe", 756.0),
    ("H100", 989.0),  # H100 SXM5 ("NVIDIA H100 80GB HBM3")
    ("A100", 312.0),  # SXM4 and PCIe
    ("L40S", 362.0),
)

# A reduced ADM (same block types, scale-shift norm, resnet up/down-sampling,
# attention at 16 px) for --tiny.
TINY_ADM = ADMConfig(
    image_size=32,
    model_channels=32,
    num_res_blocks=1,
    attention_resolutions=(16,),
    channel_mult=(1, 2),
    num_head_channels=32,
    norm_groups=8,
)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def peak_tflops(device: torch.device):
    """(device name, dense bf16 peak TFLOP/s or None)."""
    if device.type != "cuda":
        return "CPU", None
    name = torch.cuda.get_device_name(device)
    return name, next((peak for key, peak in PEAK_BF16_TFLOPS if key in name), None)


def achieved_tflops(flop: float, seconds: float, peak) -> tuple[float, float]:
    """(TFLOP/s, % of the peak) of `flop` done in `seconds`; NaN where undefined."""
    tflops = flop / seconds / 1e12 if seconds > 0 else math.nan
    return tflops, 100 * tflops / peak if peak else math.nan


def write_rows(csv, rows: list[dict]) -> None:
    """The benchmark's rows as a CSV (atomic write), if a path was given."""
    if csv:
        import pandas as pd

        from fudbench.core.io import write_csv

        write_csv(csv, pd.DataFrame(rows), index=False)


class GuidanceClassifier(torch.nn.Module):
    """A torchvision classifier on [0, 1] images of any size: resized (differentiably)
    to its input size, then ImageNet-normalised."""

    def __init__(self, net: torch.nn.Module, size: int):
        super().__init__()
        self.net, self.size = net, size
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def forward(self, x):
        if x.shape[-2:] != (self.size, self.size):
            x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return self.net((x - self.mean) / self.std)


def build_classifier(name: str, size: int, device="cpu") -> GuidanceClassifier:
    import torchvision

    kwargs = {"image_size": size} if name.startswith("vit") else {}
    with torch.device(device):
        net = getattr(torchvision.models, name)(weights=None, **kwargs)
        return GuidanceClassifier(net, size).eval().requires_grad_(False)


def count_flops(fn) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def model_flops(adm: ADMConfig, classifier: str, clf_size: int) -> tuple[int, int]:
    """(U-Net forward FLOPs, guidance FLOPs = classifier forward + backward to the
    input), each for one sample, counted on the meta device."""
    unet = build_adm_unet(diffusers_config(adm), "meta")
    x = torch.zeros(1, 3, adm.image_size, adm.image_size, device="meta")
    with torch.no_grad():
        f_unet = count_flops(lambda: unet(x, torch.zeros(1, dtype=torch.long, device="meta")))
    clf = build_classifier(classifier, clf_size, "meta")

    def guidance():
        xg = torch.zeros(1, 3, adm.image_size, adm.image_size, device="meta", requires_grad=True)
        torch.log_softmax(clf(xg), 1)[:, 0].sum().backward()  # FlopCounterMode cannot see autograd.grad

    return f_unet, count_flops(guidance)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_sampler(sampler: DiffusionImputer, classifier, batch: int, size: int, device, repeats: int) -> dict:
    """Median seconds of sampler.fill on `batch` random samples (after a warm-up
    call of the same shape), and the peak GPU memory of the timed calls."""
    g = torch.Generator().manual_seed(batch)
    x = torch.rand(batch, 3, size, size, generator=g).to(device)
    mask = (torch.rand(batch, 1, size, size, generator=g) < 0.5).float().to(device)
    ctx = ImputeContext(
        classifier=classifier, target=torch.randint(0, 10, (batch,), generator=g).to(device), seeds=list(range(batch))
    )
    _sync(device)
    t0 = time.perf_counter()
    sampler.with_steps(2).fill(x, mask, ctx)  # warm-up: allocator, cuDNN autotuning, compilation
    _sync(device)
    warmup = time.perf_counter() - t0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        sampler.fill(x, mask, ctx)
        _sync(device)
        times.append(time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else float("nan")
    return {"seconds": statistics.median(times), "peak_gib": peak, "warmup_s": warmup}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, nargs="+", default=[10, 25, 50, 100])
    ap.add_argument(
        "--batch-sizes",
        nargs="+",
        default=None,
        help="integers and/or 'auto' (default: 1 8 32 64 auto on cuda, 1 4 on cpu)",
    )
    ap.add_argument(
        "--dtype",
        choices=["auto", "bf16", "fp16", "fp32"],
        default=None,
        help="U-Net autocast dtype (default: bf16 on cuda, fp32 on cpu; auto: FUD's default)",
    )
    ap.add_argument(
        "--compile",
        nargs="?",
        const="true",
        default="false",
        choices=["auto", "true", "false"],
        help="torch.compile the U-Net (bare --compile: true; auto: FUD's default, on on a GPU)",
    )
    ap.add_argument(
        "--channels-last",
        nargs="?",
        const="true",
        default="false",
        choices=["auto", "true", "false"],
        help="U-Net in channels_last (bare flag: true; auto: FUD's default, on a CPU only)",
    )
    ap.add_argument("--classifier", default="resnet50", choices=["resnet50", "vit_b_16"])
    ap.add_argument("--guidance-start", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-auto-batch", type=int, default=512)
    ap.add_argument(
        "--plan",
        nargs="+",
        default=None,
        metavar="STEPS:BATCH",
        help="these (steps, batch) pairs in this order instead of --steps x --batch-sizes "
        "(e.g. 10:32 100:32 10:1 10:auto)",
    )
    ap.add_argument("--tiny", action="store_true", help="reduced U-Net at 32x32: seconds on a CPU")
    ap.add_argument(
        "--threads", type=int, default=None, help="CPU threads for torch (default: torch's; use 1 on a busy machine)"
    )
    ap.add_argument("--csv", default=None, help="also write the rows here")
    args = ap.parse_args(argv)
    if args.batch_sizes is None:
        args.batch_sizes = ["1", "8", "32", "64", "auto"] if args.device.startswith("cuda") else ["1", "4"]
    if args.plan is not None:
        pairs = [p.partition(":") for p in args.plan]
        if any(not (st.isdigit() and int(st) > 0 and sep) for st, sep, _ in pairs):
            ap.error(f"--plan: {args.plan}: each entry is STEPS:BATCH, e.g. 100:32")
        args.pairs = [(int(st), b) for st, _, b in pairs]
        args.steps = sorted({st for st, _ in args.pairs})
        args.batch_sizes = [b for _, b in args.pairs]
    else:
        args.pairs = [(st, b) for st in args.steps for b in args.batch_sizes]
    bad = [b for b in args.batch_sizes if b != "auto" and not (b.isdigit() and int(b) > 0)]
    if bad:
        ap.error(f"--batch-sizes: {bad} are neither positive integers nor 'auto'")
    if args.dtype is None:
        args.dtype = "bf16" if args.device.startswith("cuda") else "fp32"
    args.compile = {"true": True, "false": False}.get(args.compile, args.compile)
    args.channels_last = {"true": True, "false": False}.get(args.channels_last, args.channels_last)
    return args


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA GPU is visible to torch; use --device cpu (with --tiny)")
    adm = TINY_ADM if args.tiny else ADM256
    size = adm.image_size
    clf_size = size if args.tiny else 224
    torch.manual_seed(0)
    unet = build_adm_unet(diffusers_config(adm), device).eval().requires_grad_(False)
    classifier = build_classifier(args.classifier, clf_size, device)
    f_unet, f_guidance = model_flops(adm, args.classifier, clf_size)
    base = fud_sampler(
        unet,
        schedule(1000),
        {
            "steps": max(args.steps),
            "guidance_scale": 4.0,
            "guidance_start": args.guidance_start,
            "amp_dtype": None if args.dtype == "fp32" else args.dtype,
            "channels_last": args.channels_last,
            "compile": args.compile,
        },
    )
    precision = base.runtime.precision
    name, peak = peak_tflops(device)
    from fudbench.core.hardware import describe_machine

    print(describe_machine(device))
    print(
        f"device={device} ({name}), peak bf16={peak or 'n/a'} TFLOP/s, dtype={args.dtype}, "
        f"compile={args.compile}, channels_last={args.channels_last}, threads={torch.get_num_threads()}; "
        f"U-Net runs as: {precision.label}"
    )
    n_params = sum(p.numel() for p in unet.parameters()) / 1e6
    print(
        f"U-Net {'tiny ' if args.tiny else 'ADM-256 '}{size}px: {n_params:.1f} M "
        f"parameters, {f_unet / 1e12:.4f} TFLOP per forward; guidance ({args.classifier} at {clf_size}px, "
        f"forward + input gradient): {f_guidance / 1e9:.2f} GFLOP"
    )
    print(
        f"{'steps':>5s} {'batch':>5s} {'s/sample':>10s} {'samples/s':>10s} {'TFLOP/s':>9s} {'% peak':>7s} "
        f"{'peak GiB':>9s} {'warm-up s':>9s}"
    )
    rows = []
    for steps, b in args.pairs:
        sampler = base.with_steps(steps)
        flop_per_sample = steps * f_unet + len(sampler.guided_timesteps) * f_guidance
        if b == "auto":
            per_sample = sampler.bytes_per_sample((3, size, size), device)
            batch = fit_batch_size(args.max_auto_batch, per_sample, device)
        else:
            batch = int(b)
        row = {
            "device": name,
            "dtype": precision.amp_dtype or "fp32",
            "compile": precision.compile,
            "channels_last": precision.channels_last,
            "classifier": args.classifier,
            "size": size,
            "steps": steps,
            "batch": batch,
            "batch_request": b,
            "tflop_per_sample": flop_per_sample / 1e12,
        }
        try:
            timing = time_sampler(sampler, classifier, batch, size, device, args.repeats)
        except Exception as exc:  # noqa: BLE001
            if not is_out_of_memory(exc):
                raise
            timing = None
        if timing is None:
            free_cached_memory()
            print(f"{steps:5d} {batch:5d} {'out of memory':>10s}", flush=True)
            rows.append(
                {
                    **row,
                    "seconds_per_sample": math.nan,
                    "samples_per_second": math.nan,
                    "tflops": math.nan,
                    "pct_peak": math.nan,
                    "peak_gib": math.nan,
                    "warmup_s": math.nan,
                    "compile_failed": base.runtime.compile_failed or "",
                    "oom": True,
                }
            )
            write_rows(args.csv, rows)
            continue
        sps = timing["seconds"] / batch
        tflops, pct = achieved_tflops(flop_per_sample, sps, peak)
        rows.append(
            {
                **row,
                "seconds_per_sample": sps,
                "samples_per_second": 1 / sps,
                "tflops": tflops,
                "pct_peak": pct,
                "peak_gib": timing["peak_gib"],
                "warmup_s": timing["warmup_s"],
                "compile_failed": base.runtime.compile_failed or "",
                "oom": False,
            }
        )
        write_rows(args.csv, rows)
        print(
            f"{steps:5d} {batch:5d} {sps:10.4f} {1 / sps:10.2f} {tflops:9.3f} "
            f"{'n/a' if not peak else f'{pct:.1f}':>7s} {timing['peak_gib']:9.2f} {timing['warmup_s']:9.1f}",
            flush=True,
        )
    write_rows(args.csv, rows)
    return rows


if __name__ == "__main__":
    main()
