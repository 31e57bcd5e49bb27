"""channels_last vs contiguous for the default score U-Net in fp32 (or bf16), measured as
thread CPU time (time.thread_time) with one torch thread, the layouts interleaved round by
round: on a shared CPU, wall time measures the other processes too, the thread's CPU time
much less so.

    ./fud python bench/unet_layout.py [--batches 8 64] [--rounds 8] [--dtype fp32]
    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 ./fud python bench/unet_layout.py   # AVX2, emulated

Prints per batch and layout the median and min thread-CPU seconds per forward and per
sample. `diffusers upsampling` is the layout before issue 47 (diffusers' Upsample2D makes a
channels_last batch of 64 or more contiguous; the runtime now keeps it channels_last).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=str(REPO / "assets/score_model_synthetic.pt"))
    ap.add_argument("--batches", nargs="*", type=int, default=[8, 64])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    args = ap.parse_args(argv)
    import torch

    from fudbench.core.hardware import describe_machine
    from fudbench.imputers.diffusion.runtime import ScoreModelRuntime
    from fudbench.imputers.diffusion.settings import RuntimeSettings
    from fudbench.models.score import load_score_model

    torch.set_num_threads(1)
    print(describe_machine("cpu", {"amp_dtype": "auto", "channels_last": "auto"}))
    unet, _ = load_score_model(args.checkpoint)
    amp = None if args.dtype == "fp32" else "bf16"
    variants = {
        "contiguous": ScoreModelRuntime(
            copy.deepcopy(unet).eval(), RuntimeSettings(amp_dtype=amp, channels_last=False)
        ),
        "channels_last": ScoreModelRuntime(
            copy.deepcopy(unet).eval(), RuntimeSettings(amp_dtype=amp, channels_last=True)
        ),
    }
    old = ScoreModelRuntime(copy.deepcopy(unet).eval(), RuntimeSettings(amp_dtype=amp, channels_last=True))
    for m in old.unet.modules():  # back to diffusers' own Upsample2D forward
        if getattr(m, "_fud_layout", False):
            del m.forward
    variants["channels_last, diffusers upsampling"] = old
    size = unet.config.sample_size
    rows = []
    for b in args.batches:
        x = torch.randn(b, 3, size, size, generator=torch.Generator().manual_seed(0))
        t = torch.full((b,), 500, dtype=torch.long)
        times = {name: [] for name in variants}
        with torch.no_grad():
            for rt in variants.values():
                rt.eps(x, t)  # warm-up: oneDNN primitives
            for _ in range(args.rounds):
                for name, rt in variants.items():
                    t0 = time.thread_time()
                    rt.eps(x, t)
                    times[name].append(time.thread_time() - t0)
        for name, ts in times.items():
            med = statistics.median(ts)
            rows.append({"batch": b, "layout": name, "dtype": args.dtype, "cpu_s_median": med, "cpu_s_min": min(ts)})
            print(
                f"batch {b:3d} {args.dtype} {name:36s}: {med:.3f} CPU s per forward (min {min(ts):.3f}), "
                f"{1000 * med / b:.2f} ms per sample",
                flush=True,
            )
    return rows


if __name__ == "__main__":
    main()
