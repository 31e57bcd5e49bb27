"""What ties do to a keep-top metric: the binary object mask vs the same mask made strict (issue 44).

The binary oracle mask ties every object pixel (1) and every background pixel (0); FUD's keep-top
protocol breaks those ties with its seeded permutation, so at a ratio below the object's area it keeps a
random scatter of the object. The tie-free version (explainers.controlled.break_ties: object pixels from
the deepest one outward, then background pixels by distance to the object) keeps compact sets. This tool
scores both, at displacement 0 and 4 px (the endpoint family's members oracle_t0 / oracle_t4, same
seeds as the workflow's), under paper FUD on the default benchmark's shipped CNN and score model, and
draws the fills. Nothing here is read by the workflow.

    ./fud python studies/oracle_ties/oracle_ties.py --out studies/oracle_ties/results --images 16
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))  # studies/oracle_ties/this file

import numpy as np  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

from fudbench.meta.inference import mean_interval  # noqa: E402
from fudbench.core.auc import normalised_auc  # noqa: E402
from fudbench.data.synthetic import make_benchmark  # noqa: E402
from fudbench.evaluators import build_evaluator  # noqa: E402
from fudbench.explainers import build_explainer  # noqa: E402
from fudbench.core.io import save_figure, write_csv  # noqa: E402
from fudbench.models.classifiers import load_classifier  # noqa: E402
from fudbench.workflow.pipeline import evaluate_maps, evaluator_noise, paired_seed_key  # noqa: E402
from fudbench.core.seeding import derive_seed  # noqa: E402
from fudbench.explainers.seeds import explain_seed_key  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# (label, explainer entry name as in studies/round3_endpoint/endpoint.yaml, settings)
MAPS = [
    ("binary d=0", "oracle_t0", {"method": "translate", "base": "oracle", "shift": 0, "ties": "protocol"}),
    ("binary d=4", "oracle_t4", {"method": "translate", "base": "oracle", "shift": 4, "ties": "protocol"}),
    ("compact d=0", "oracle_t0", {"method": "translate", "base": "oracle", "shift": 0, "ties": "compact"}),
    ("compact d=4", "oracle_t4", {"method": "translate", "base": "oracle", "shift": 4, "ties": "compact"}),
]
CONTRASTS = [("binary d=0", "binary d=4"), ("compact d=0", "compact d=4"), ("compact d=0", "binary d=0")]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output folder (relative: to where you run the command)")
    parser.add_argument("--images", type=int, default=16, help="first N test images of the default benchmark")
    parser.add_argument("--model", default="cnn", choices=["cnn", "vit"])
    parser.add_argument("--figure-images", type=int, default=4)
    args = parser.parse_args(argv)
    if args.images < 2:
        parser.error(f"--images must be >= 2, got {args.images}")
    out = Path(os.environ.get("FUD_CALLER_CWD", ".")) / args.out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    seed = config["seed"]
    data = make_benchmark(config["data"]["synthetic"], args.images, seed)["splits"]["eval"]
    x = torch.from_numpy(data["images"]).float().div(255)
    masks = torch.from_numpy(data["masks"])
    ids = np.arange(len(x))
    model = load_classifier(REPO / f"assets/classifier_synthetic_{args.model}.pt")
    with torch.no_grad():
        y = model(x).argmax(1)
    fud_settings = config["evaluators"]["fud"]
    evaluator = build_evaluator(
        "fud", fud_settings, config["evaluation"], {"score_model": str(REPO / "assets/score_model_synthetic.pt")}, "cpu"
    )
    eval_key = paired_seed_key(seed, args.model, evaluator_noise("fud", fud_settings))
    ratios = config["evaluation"]["ratios"]

    scores, fills, kept_masks = {}, {}, {}
    for label, entry, settings in MAPS:
        method = build_explainer(entry, settings)
        seeds = [derive_seed(*explain_seed_key(seed, args.model, entry, settings), int(i)) for i in ids]
        a = method.explain(model, x, y, seeds=seeds, masks=masks)
        records, samples = evaluate_maps(evaluator, model, x, y, a, ids, eval_key, labels=data["labels"])
        fud = records[records["curve"] == "fud"].sort_values(["image", "kept"])
        scores[label] = np.array(
            [normalised_auc(g["kept"].to_numpy(), g["confidence"].to_numpy()) for _, g in fud.groupby("image")]
        )
        fills[label] = samples["fud"]
        kept_masks[label] = a[:, 0]
        print(f"{label}: mean AUC {scores[label].mean():.3f}", flush=True)

    rows = []
    for label in scores:
        m, lo, hi, _ = mean_interval(scores[label], bounds=(0.0, 1.0))
        rows.append({"what": label, "mean": m, "low": lo, "high": hi, "n": len(x)})
    for a_, b_ in CONTRASTS:
        d = scores[a_] - scores[b_]
        m, lo, hi, p = mean_interval(d, bounds=(-1.0, 1.0))
        rows.append({"what": f"{a_} - {b_}", "mean": m, "low": lo, "high": hi, "n": len(x), "p": p})
    import pandas as pd

    table = pd.DataFrame(rows)
    write_csv(out / "oracle_ties.csv", table, index=False, float_format="%.4f")
    print(table.to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
    _figure(out / "oracle_fills.png", x, kept_masks, fills, ratios, args.figure_images, model, y)


def _figure(path, x, kept_masks, fills, ratios, n_images, model, y) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    show = [0.1, 0.3]
    cols = [(label, r) for label in ("binary d=0", "compact d=0") for r in show]
    fig, axes = plt.subplots(n_images, 1 + 2 * len(cols), figsize=(1.3 * (1 + 2 * len(cols)), 1.4 * n_images))
    for i in range(n_images):
        axes[i, 0].imshow(x[i].permute(1, 2, 0).numpy())
        axes[i, 0].set_title("image" if i == 0 else "", fontsize=7)
        for j, (label, r) in enumerate(cols):
            step = ratios.index(r)
            a = kept_masks[label][i].flatten()
            k = round(r * a.numel())
            # the binary map's ties are broken by the protocol's permutation: show the fill's kept pixels as the
            # pixels the fill left unchanged (exactly equal to the image), which is what the protocol kept
            fill = torch.from_numpy(np.asarray(fills[label][i, step], dtype=np.float32))
            kept = (fill - x[i]).abs().amax(0) < 1e-3
            shown = torch.where(kept, x[i], torch.tensor([1.0, 0.0, 1.0]).view(3, 1, 1))  # removed: magenta
            axes[i, 1 + 2 * j].imshow(shown.permute(1, 2, 0).numpy())
            with torch.no_grad():
                p = torch.softmax(model(fill[None]), 1)[0, y[i]].item()
            axes[i, 2 + 2 * j].imshow(fill.clamp(0, 1).permute(1, 2, 0).numpy())
            if i == 0:
                axes[i, 1 + 2 * j].set_title(f"{label}\nkept {r:.0%} ({k} px)", fontsize=6)
                axes[i, 2 + 2 * j].set_title("FUD fill", fontsize=6)
            axes[i, 2 + 2 * j].set_xlabel(f"p(y) {p:.2f}", fontsize=6)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(
        "Paper FUD's fills of the binary object mask (ties broken by the protocol's permutation) and of "
        "the same mask made strict (compact); kept pixels shown, removed ones magenta",
        fontsize=7,
    )
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


if __name__ == "__main__":
    main()
