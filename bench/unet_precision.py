"""What `amp_dtype: auto` picks here, and whether it should: one forward of
the default profile's score U-Net (the shipped checkpoint) in fp32 and bf16
autocast, contiguous and channels_last, timed on this machine.

    ./fud python bench/unet_precision.py [--batch 64] [--repeats 3] [--threads 2]

Prints the machine (CPU model, flags, native bf16 or not), ms per forward for
each setting, and the setting `auto` resolves to. To see an AVX2-only CPU on a
newer one, cap the kernels' instruction sets (oneDNN, ATen and MKL):

    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 \\
        ./fud python bench/unet_precision.py
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=str(REPO / "assets/score_model_synthetic.pt"))
    ap.add_argument("--batch", type=int, default=64, help="the default config's FUD batch size")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    import torch

    from fudbench.core.hardware import describe_machine, resolve_precision
    from fudbench.imputers.diffusion.runtime import ScoreModelRuntime
    from fudbench.imputers.diffusion.settings import RuntimeSettings
    from fudbench.models.score import load_score_model

    torch.set_num_threads(args.threads)
    print(describe_machine("cpu", {"amp_dtype": "auto", "channels_last": "auto"}))
    unet, _ = load_score_model(args.checkpoint)
    size = unet.config.sample_size
    x = torch.randn(args.batch, 3, size, size, generator=torch.Generator().manual_seed(0))
    t = torch.full((args.batch,), 500, dtype=torch.long)
    rows = []
    print(
        f"score U-Net {size}x{size}, batch {args.batch}, {torch.get_num_threads()} threads: ms per forward "
        f"(best of {args.repeats})"
    )
    for amp in (None, "bf16"):
        for layout in (False, True):
            runtime = ScoreModelRuntime(
                copy.deepcopy(unet).eval(), RuntimeSettings(amp_dtype=amp, channels_last=layout)
            )
            with torch.no_grad():
                runtime.eps(x, t)  # warm-up (oneDNN primitives)
                times = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    runtime.eps(x, t)
                    times.append(time.perf_counter() - t0)
            row = {"precision": amp or "fp32", "channels_last": layout, "ms": 1000 * min(times)}
            rows.append(row)
            print(
                f"  {row['precision']:5s} {'channels_last' if layout else 'contiguous':14s} {row['ms']:9.0f}",
                flush=True,
            )
    auto = resolve_precision("auto", "auto", "cpu", warn=lambda m: None)
    fastest = min(rows, key=lambda r: r["ms"])
    print(
        f"auto picks: {auto.label} ({auto.reason}); fastest here: {fastest['precision']}"
        f"{', channels_last' if fastest['channels_last'] else ''}"
    )
    return rows


if __name__ == "__main__":
    main()
