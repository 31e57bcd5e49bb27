"""Evaluate your own attribution method on your own model, from Python (docs/your_own.md).

    ./fud python examples/evaluate_your_own.py      # about 10 s on a CPU

A small CNN is trained for a few seconds on the synthetic benchmark (your
model goes here: any torch.nn.Module wrapped in Classifier(net, mean, std));
a method of your own (gradient x input, a plain function) is compared with
Integrated Gradients and a random map under insertion / deletion,
Sensitivity-N and ROAD. Prints each metric's mean score per method.
"""

import pandas as pd
import torch

import fudbench
from fudbench.data.synthetic import make_benchmark
from fudbench.models.classifiers import build_classifier
from fudbench.models.training import train_classifier


def gradient_times_input(model, x, target, seeds=None):
    """Your method: any function (model, x, target, seeds) -> map of x's shape."""
    x = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(model(x).gather(1, target.view(-1, 1)).sum(), x)
    return grad * x.detach()


def main() -> pd.DataFrame:
    data = make_benchmark(
        {
            "image_size": 16,
            "shapes": ["circle", "square"],
            "dark": 0.1,
            "light": 0.9,
            "object_scale": [0.5, 0.8],
            "n_train": 256,
            "n_val": 32,
            "n_test": 16,
        },
        n_eval=16,
        seed=0,
    )
    as_float = lambda split: torch.from_numpy(data["splits"][split]["images"]).float() / 255  # noqa: E731
    labels = lambda split: torch.from_numpy(data["splits"][split]["labels"])  # noqa: E731
    model = build_classifier({"arch": "small_cnn", "width": 8}, 4, 16, [0.5] * 3, [0.25] * 3)
    train_classifier(
        model,
        as_float("train"),
        labels("train"),
        as_float("val"),
        labels("val"),
        {"epochs": 3, "batch_size": 32, "lr": 0.003, "weight_decay": 0.0},
        seed=0,
        device="cpu",
    )
    model.eval()
    images = as_float("eval")
    targets = model(images).argmax(1)

    methods = {"mine": f"{__file__}:gradient_times_input", "ig": "ig", "random": "random"}
    metrics = ["insdel", {"sensn": {"n_subsets": 20}}, "road"]
    scores = []
    for name, method in methods.items():
        maps = fudbench.explain(model, images, targets, method)
        frame = fudbench.evaluate(model, images, targets, maps, metrics=metrics, explainer=name)
        scored = frame.dropna(subset=["score"]).drop_duplicates(["curve", "image"])
        scores.append(scored.groupby(["explainer", "curve"])["score"].mean())
    table = pd.concat(scores).unstack("curve")
    print(table.round(3).to_string())
    return table


if __name__ == "__main__":
    main()
