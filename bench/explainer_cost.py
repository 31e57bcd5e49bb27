"""Cost of each explainer: forward / backward passes and seconds per image.

    ./fud python bench/explainer_cost.py [--device cpu|cuda] [--images 8] [--size 32]
        [--models results/synthetic/models/cnn.pt ...] [--data results/synthetic/data/eval.npz]
        [--methods sm ig ...]

Without --models it builds the default config's two classifiers with random
weights, and without --data random images; methods that stop early (BIG,
MFABA, AGI) cost less on inputs that flip easily, so give both for real
numbers. Passes are counted per image:
a forward of a batch of B images counts B, and so does a backward through it.
Prints one table row per model x method.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fudbench.explainers import build_explainer  # noqa: E402
from fudbench.models.classifiers import build_classifier, load_classifier  # noqa: E402


class PassCounter(torch.nn.Module):
    """Counts images through forward and (via a tensor hook) backward."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.forward_images = 0
        self.backward_images = 0

    def forward(self, x):
        out = self.model(x)
        self.forward_images += len(x)
        if out.requires_grad:
            out.register_hook(lambda g, n=len(x): self._count_backward(n))
        return out

    def _count_backward(self, n):
        self.backward_images += n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from fudbench.config.cli import positive_int, script_config, user_file

    ap.add_argument(
        "--config",
        nargs="+",
        default=None,
        help="config files, merged in order as ./fud run merges them (default: config/config.yaml)",
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--images", type=positive_int, default=8)
    ap.add_argument("--size", type=positive_int, default=None, help="image side (default: the config's)")
    ap.add_argument(
        "--models", nargs="*", type=user_file, default=None, help="classifier checkpoints (default: random weights)"
    )
    ap.add_argument(
        "--data", type=user_file, default=None, help="eval.npz of a run: use its images instead of random ones"
    )
    ap.add_argument("--methods", nargs="*", default=None, help="config explainer names (default: all in config)")
    args = ap.parse_args()
    cfg = script_config(args.config)[0]
    size = args.size or cfg["data"]["synthetic"]["image_size"]
    n_classes = 2 * len(cfg["data"]["synthetic"]["shapes"])
    device = torch.device(args.device)
    if args.models:
        models = {Path(p).stem: load_classifier(p, device) for p in args.models}
    else:
        torch.manual_seed(0)
        models = {
            name: build_classifier(c, n_classes, size, [0.5] * 3, [0.25] * 3).eval().requires_grad_(False).to(device)
            for name, c in cfg["models"]["classifiers"].items()
        }
    explainers = {k: v for k, v in cfg["explainers"].items() if args.methods is None or k in args.methods}
    if args.data:
        from fudbench.core.io import load_npz

        data = load_npz(args.data)
        x = torch.from_numpy(data["images"][: args.images]).float().div(255).to(device)
        masks = torch.from_numpy(data["masks"][: args.images])
    else:
        x = torch.rand(args.images, 3, size, size, generator=torch.Generator().manual_seed(0)).to(device)
        masks = (torch.rand(args.images, size, size) > 0.5).to(torch.uint8)
    from fudbench.core.hardware import describe_machine

    print(describe_machine(device))
    print(
        f"device={device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}), "
        f"threads={torch.get_num_threads()}, images={args.images}, size={size}"
    )
    print(f"{'model':8s} {'method':12s} {'fwd/img':>9s} {'bwd/img':>9s} {'s/img':>10s}")
    for mname, model in models.items():
        target = model(x).argmax(1)
        for ename, settings in explainers.items():
            cost = measure_explainer(model, ename, settings, x, target, masks, device)
            print(
                f"{mname:8s} {ename:12s} {cost['forward']:9.1f} {cost['backward']:9.1f} {cost['seconds']:10.4f}",
                flush=True,
            )


def measure_explainer(model, name: str, settings: dict, x, target, masks, device) -> dict:
    """Forward and backward passes per image and seconds per image of one
    explainer on a batch (after a one-image warm-up call)."""
    method = build_explainer(name, settings)
    # One image more than the batch as references: EG draws references other than the image itself,
    # so with --images 1 the batch alone would leave it none (the cost does not depend on which).
    method.prepare(torch.cat([x, 1 - x[:1]]))
    kwargs = {"masks": masks} if method.uses_masks else {}
    method.explain(model, x[:1], target[:1], seeds=[0], **{k: v[:1] for k, v in kwargs.items()})  # warm-up
    counter = PassCounter(model)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    method.explain(counter, x, target, seeds=list(range(len(x))), **kwargs)
    if device.type == "cuda":
        torch.cuda.synchronize()
    n = len(x)
    return {
        "forward": counter.forward_images / n,
        "backward": counter.backward_images / n,
        "seconds": (time.perf_counter() - t0) / n,
    }


if __name__ == "__main__":
    main()
