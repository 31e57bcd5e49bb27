"""Cost of each explainer at ImageNet size: seconds per image, passes, TFLOP/s.

    ./fud python bench/explainer_cost_imagenet.py [--device cuda] [--images 8]
        [--models resnet50 vit_b_16] [--methods sm ig ...] [--batch-size 64] [--csv out.csv] [--tiny]

The paper profile's classifiers, torchvision ResNet-50 and ViT-B/16 at 224x224,
with random weights (speed does not depend on them) on random images. The
explainer settings are the config's (--config), with the sizes the default
config scales down to 32 px put back to the paper's 224 px values
(IMAGENET_SETTINGS) and every `batch_size` capped at --batch-size, since the
default config's batches of 32 px images do not fit a GPU at 224 px.
Methods that stop early (BIG, MFABA, AGI) run longer or shorter on trained
models with real images; treat their numbers as an order of magnitude.

FLOPs per image = forward passes x F_fwd + backward passes x F_bwd, with F_fwd
(forward) and F_bwd (backward to the input, frozen weights) counted by torch's
FlopCounterMode on the meta device. --tiny runs both models at 32x32 so the
script finishes in seconds on a CPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from explainer_cost import measure_explainer  # noqa: E402
from fud_throughput import achieved_tflops, build_classifier, count_flops, peak_tflops, write_rows  # noqa: E402


# The paper's values where the default config scales a size from 224 px to 32 px.
IMAGENET_SETTINGS = {"attexplore": {"ti_kernel": 7}, "isa": {"step_size": 5000}}


def classifier_flops(name: str, size: int) -> tuple[int, int]:
    """(forward FLOPs, backward-to-input FLOPs) for one image."""
    model = build_classifier(name, size, "meta")
    x = torch.zeros(1, 3, size, size, device="meta")
    with torch.no_grad():
        fwd = count_flops(lambda: model(x))

    def both():
        xg = torch.zeros(1, 3, size, size, device="meta", requires_grad=True)
        model(xg)[:, 0].sum().backward()

    return fwd, count_flops(both) - fwd


def imagenet_settings(name: str, settings: dict, batch_cap: int, tiny: bool) -> dict:
    out = dict(settings)
    if not tiny:
        out.update(IMAGENET_SETTINGS.get(settings.get("method", name), {}))
    if "batch_size" in out:
        out["batch_size"] = min(int(out["batch_size"]), batch_cap)
    return out


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from fudbench.config.cli import positive_int, script_config, user_file

    ap.add_argument(
        "--config",
        nargs="+",
        default=None,
        help="config files, merged in order as ./fud run merges them (default: config/config.yaml)",
    )
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--images", type=positive_int, default=8)
    ap.add_argument("--models", nargs="+", default=["resnet50", "vit_b_16"], choices=["resnet50", "vit_b_16"])
    ap.add_argument("--methods", nargs="+", default=None, help="config explainer names (default: all in config)")
    ap.add_argument("--batch-size", type=positive_int, default=64, help="cap on the explainers' batch_size settings")
    ap.add_argument("--threads", type=positive_int, default=None)
    ap.add_argument("--tiny", action="store_true", help="32x32 inputs: seconds on a CPU")
    ap.add_argument("--csv", type=user_file, default=None)
    args = ap.parse_args(argv)
    cfg = script_config(args.config)[0]
    unknown = sorted(set(args.methods or []) - set(cfg["explainers"]))
    if unknown:
        ap.error(f"--methods {unknown} are not explainers of {args.config}; known: {sorted(cfg['explainers'])}")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    size = 32 if args.tiny else 224
    name, peak = peak_tflops(device)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(args.images, 3, size, size, generator=g).to(device)
    masks = (torch.rand(args.images, size, size, generator=g) > 0.5).to(torch.uint8)
    from fudbench.core.hardware import describe_machine

    print(describe_machine(device))
    print(
        f"device={device} ({name}), peak bf16={peak or 'n/a'} TFLOP/s, threads={torch.get_num_threads()}, "
        f"images={args.images}, size={size}"
    )
    print(
        f"{'model':9s} {'method':11s} {'fwd/img':>8s} {'bwd/img':>8s} {'s/img':>9s} {'TFLOP/img':>10s} {'TFLOP/s':>8s}"
    )
    rows = []
    for mname in args.models:
        torch.manual_seed(0)
        model = build_classifier(mname, size, device)
        f_fwd, f_bwd = classifier_flops(mname, size)
        with torch.no_grad():
            target = model(x).argmax(1)
        for ename, settings in cfg["explainers"].items():
            if args.methods is not None and ename not in args.methods:
                continue
            cost = measure_explainer(
                model, ename, imagenet_settings(ename, settings, args.batch_size, args.tiny), x, target, masks, device
            )
            flop = cost["forward"] * f_fwd + cost["backward"] * f_bwd
            tflops, pct = achieved_tflops(flop, cost["seconds"], peak)
            rows.append(
                {
                    "device": name,
                    "model": mname,
                    "method": ename,
                    "size": size,
                    **cost,
                    "tflop_per_image": flop / 1e12,
                    "tflops": tflops,
                    "pct_peak": pct,
                }
            )
            print(
                f"{mname:9s} {ename:11s} {cost['forward']:8.1f} {cost['backward']:8.1f} {cost['seconds']:9.4f} "
                f"{flop / 1e12:10.4f} {tflops:8.3f}",
                flush=True,
            )
            write_rows(args.csv, rows)  # after every row: a run stopped by a time limit keeps what it finished
    write_rows(args.csv, rows)
    return rows


if __name__ == "__main__":
    main()
