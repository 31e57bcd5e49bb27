"""Seconds per image of the field's explainers (`captum`, `cam`, `lrp`) on the
workflow's classifiers (the default config's CNN and ViT, random weights).

    ./fud python bench/field_explainer_cost.py [--size 32] [--images 8] [--device cpu]

Prints the machine (fudbench.core.hardware.describe_machine) and one row per model x
method; a method a model cannot run (LRP on the ViT) is reported as refused.
Timed after a one-image warm-up call; the batch is explained in one call.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fudbench.explainers import build_explainer  # noqa: E402
from fudbench.core.hardware import describe_machine  # noqa: E402
from fudbench.models.classifiers import build_classifier  # noqa: E402

METHODS = {
    "Saliency": {"method": "captum", "attr": "Saliency"},
    "DeepLift": {"method": "captum", "attr": "DeepLift"},
    "GradientShap": {"method": "captum", "attr": "GradientShap", "settings": {"n_samples": 8}},
    "SmoothGrad": {"method": "captum", "attr": "Saliency", "noise_tunnel": {"nt_samples": 16, "stdevs": 0.15}},
    "Occlusion4": {
        "method": "captum",
        "attr": "Occlusion",
        "settings": {"sliding_window_shapes": [3, 4, 4], "strides": [3, 2, 2]},
    },
    "KernelShap": {"method": "captum", "attr": "KernelShap", "feature_patch": 4, "settings": {"n_samples": 64}},
    "GradCAM": {"method": "cam", "cam": "GradCAM"},
    "ScoreCAM": {"method": "cam", "cam": "ScoreCAM"},
    "LRP": {"method": "lrp", "composite": "EpsilonPlusFlat"},
    "LRP-box": {"method": "lrp", "composite": "EpsilonGammaBox"},
}


def seconds_per_image(model, settings, x, target) -> float | str:
    name = settings["method"]
    method = build_explainer(name, settings)
    method.prepare(x)
    try:
        method.explain(model, x[:1], target[:1], seeds=[0])  # warm-up (and refusals)
    except ValueError as exc:
        return f"refused: {str(exc)[:60]}"
    t0 = time.perf_counter()
    method.explain(model, x, target, seeds=list(range(len(x))))
    if x.device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / len(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from fudbench.config.cli import positive_int, script_config

    ap.add_argument(
        "--config",
        nargs="+",
        default=None,
        help="config files, merged in order as ./fud run merges them (default: config/config.yaml)",
    )
    ap.add_argument("--size", type=positive_int, default=32)
    ap.add_argument("--images", type=positive_int, default=8)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--methods", nargs="*", default=None, choices=sorted(METHODS))
    args = ap.parse_args()
    cfg = script_config(args.config)[0]
    device = torch.device(args.device)
    n_classes = 2 * len(cfg["data"]["synthetic"]["shapes"])
    torch.manual_seed(0)
    models = {
        n: build_classifier(c, n_classes, args.size, [0.5] * 3, [0.25] * 3).eval().requires_grad_(False).to(device)
        for n, c in cfg["models"]["classifiers"].items()
        if c["arch"] in ("small_cnn", "small_vit")
    }
    x = torch.rand(args.images, 3, args.size, args.size, generator=torch.Generator().manual_seed(0)).to(device)
    print(describe_machine(device))
    print(f"# images={args.images}, size={args.size}, threads={torch.get_num_threads()}")
    print(f"{'model':8s} {'method':14s} {'s/img':>10s}")
    for mname, model in models.items():
        with torch.no_grad():
            target = model(x).argmax(1)
        for label in args.methods or METHODS:
            cost = seconds_per_image(model, METHODS[label], x, target)
            shown = f"{cost:10.4f}" if isinstance(cost, float) else f"{cost}"
            print(f"{mname:8s} {label:14s} {shown}", flush=True)


if __name__ == "__main__":
    main()
