"""How many DDIM steps does FUD need? The same FUD run at several step counts,
compared with the largest (the paper's 100).

    ./fud python bench/fud_steps.py [--results results/synthetic] [--config config/config.yaml]
        [--models cnn vit] [--explainers ig sm random] [--steps 10 25 50 100]
        [--limit 4] [--ratios 0.1 0.5 0.9] [--device cpu] [--threads 1] [--csv PATH]

Inputs are a finished default run's files: classifiers results/<run>/models/<model>.pt,
the score model results/<run>/models/score_model.pt (or, if that is missing,
the config's shipped checkpoint), images results/<run>/data/eval.npz and
attributions results/<run>/attributions/<model>/<explainer>/shard0.npz; the
images are shard 0's, the first --limit of them. FUD runs with the config's
settings (evaluators.fud) except the step count, with the workflow's seeds, so
every step count starts from the same noise.

Per model x explainer x step count it reports
- auroc:    Energy-detector AUROC, clean images (ID) vs FUD samples (OOD);
            0.5 = indistinguishable (Table 2's metric);
- PSNR, SSIM of the samples vs their originals (fudbench.analysis.quality);
- tau:      Kendall tau of removal vs confidence decrease, mean over images (Table 4);
- fud:      FUD score, normalised AUC of confidence over rho (Table 7);
- s/sample: FUD seconds per sample;
- d_*:      each of these minus its value at the reference (largest) step count,
            and mad_ref, the mean |pixel difference| between a sample and the
            same sample at the reference step count.
Writes a CSV (default results/<run>/bench/fud_steps.csv) and prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from fudbench.analysis.curves import normalised_auc  # noqa: E402
from fudbench.models.energy import energies, ood_metrics  # noqa: E402
from fudbench.analysis.kendall import removal_tau  # noqa: E402
from fudbench.analysis.quality import quality_metrics  # noqa: E402
from fudbench.core.io import load_npz, write_csv  # noqa: E402

COMPARED = ("auroc", "PSNR", "SSIM", "tau", "fud", "seconds")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from fudbench.config.cli import positive_int, user_file

    ap.add_argument(
        "--config",
        nargs="+",
        default=None,
        help="the run's config files, merged in order as ./fud run merges them (default: config/config.yaml)",
    )
    ap.add_argument(
        "--results",
        type=user_file,
        default=None,
        help="the run's results directory (default: results/<run_name> of --config's run)",
    )
    ap.add_argument("--models", nargs="+", default=None, help="default: the config's classifiers")
    ap.add_argument("--explainers", nargs="+", default=["ig", "sm", "random"])
    ap.add_argument("--steps", type=int, nargs="+", default=[10, 25, 50, 100])
    ap.add_argument("--limit", type=positive_int, default=None, help="first N images of shard 0 (default: all)")
    ap.add_argument("--ratios", type=float, nargs="+", default=None, help="kept fractions (default: the config's)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=positive_int, default=None)
    ap.add_argument("--csv", type=user_file, default=None)
    args = ap.parse_args(argv)
    if any(s < 1 for s in args.steps):
        ap.error("--steps must be positive")
    return args


def _inputs(args, cfg) -> dict:
    """Every input path, checked before any sampling starts."""
    results = Path(args.results or REPO / "results" / cfg["run_name"])
    models = args.models or list(cfg["models"]["classifiers"])
    paths = {"images": results / "data" / "eval.npz", "score_model": results / "models" / "score_model.pt"}
    if not paths["score_model"].exists():
        shipped = cfg.get("models", {}).get("score_model", {}).get("shipped")
        if shipped and (REPO / shipped).exists():
            print(f"note: {paths['score_model']} not found; using the shipped {shipped}")
            paths["score_model"] = REPO / shipped
    for m in models:
        paths[m] = results / "models" / f"{m}.pt"
        for e in args.explainers:
            paths[(m, e)] = results / "attributions" / m / e / "shard0.npz"
    missing = [str(p) for p in paths.values() if not Path(p).exists()]
    if missing:
        raise SystemExit(
            "missing inputs (run the default workflow up to the explain jobs, or pass --results "
            "/ --models / --explainers):\n  " + "\n  ".join(missing)
        )
    return {"results": results, "models": models, "paths": paths}


def shard0_inputs(inp: dict, data: dict, args, device):
    """Per model x explainer of the run: (model name, classifier, explainer, image
    ids, images, targets, attributions, clean energies) of the first --limit images."""
    from fudbench.models.classifiers import load_classifier

    paths = inp["paths"]
    for model_name in inp["models"]:
        model = load_classifier(paths[model_name], device)
        for explainer in args.explainers:
            attr = load_npz(paths[(model_name, explainer)])
            n = len(attr["ids"]) if args.limit is None else min(args.limit, len(attr["ids"]))
            ids = attr["ids"][:n]
            x = torch.from_numpy(data["images"][ids]).float().div(255).to(device)
            yield (
                model_name,
                model,
                explainer,
                ids,
                x,
                torch.from_numpy(attr["targets"][:n]).to(device),
                torch.from_numpy(attr["attributions"][:n]).to(device),
                energies(model, x),
            )


def summarise(records: pd.DataFrame, samples: np.ndarray, originals: torch.Tensor, clean_energy: np.ndarray) -> dict:
    """One row of the table from one FUD run's records and samples (N, R, C, H, W)."""
    n, r = samples.shape[:2]
    flat = torch.from_numpy(samples.astype(np.float32)).reshape(n * r, *samples.shape[2:])
    q = quality_metrics(flat, originals.repeat_interleave(r, dim=0), metrics=("PSNR", "SSIM"))
    per_image = records.groupby("image")
    tau = (
        per_image.apply(lambda g: removal_tau(g["removed"].to_numpy(), g["confidence"].to_numpy()))
        if r > 1
        else pd.Series([np.nan])
    )
    fud = per_image.apply(lambda g: normalised_auc(g["kept"], g["confidence"])) if r > 1 else pd.Series([np.nan])
    return {
        "auroc": ood_metrics(clean_energy, records["energy"].to_numpy())["auroc"],
        "PSNR": float(np.mean(q["PSNR"])),
        "SSIM": float(np.mean(q["SSIM"])),
        "tau": float(tau.mean()),
        "fud": float(fud.mean()),
        "confidence": float(records["confidence"].mean()),
        "seconds": float(records["seconds"].mean()),
        "n_samples": int(n * r),
    }


def main(argv=None) -> pd.DataFrame:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from fudbench.evaluators import build_evaluator
    from fudbench.workflow.pipeline import paired_seed_key
    from fudbench.protocols import TopKCurve

    from fudbench.config.cli import script_config

    cfg, run_results = script_config(args.config)
    args.results = args.results or run_results
    inp = _inputs(args, cfg)
    paths, device = inp["paths"], torch.device(args.device)
    fud_settings = cfg["evaluators"]["fud"]
    from fudbench.core.hardware import describe_machine

    print(describe_machine(device, fud_settings), flush=True)
    ratios = sorted(args.ratios or cfg["evaluation"]["ratios"])
    steps = sorted(set(args.steps))
    reference = steps[-1]
    data = load_npz(paths["images"])
    evaluator = build_evaluator(
        "fud",
        {**fud_settings, "steps": reference},
        {**cfg["evaluation"], "ratios": ratios},
        {"score_model": str(paths["score_model"])},
        device,
    )
    curve, base = evaluator.curves[0]
    rows, finals = [], {}
    for model_name, model, explainer, ids, x, y, a, clean_energy in shard0_inputs(inp, data, args, device):
        for s in steps:
            imputer = (
                base.with_steps(s)
                if hasattr(base, "with_steps")
                else build_evaluator(
                    "fud",
                    {**fud_settings, "steps": s},
                    {**cfg["evaluation"], "ratios": ratios},
                    {"score_model": str(paths["score_model"])},
                    device,
                ).curves[0][1]
            )
            protocol = TopKCurve(
                "fud", ratios, mode="keep", batch_size=curve.batch_size, reduction=curve.reduction, keep_samples=True
            )
            # The workflow's seed key, so each step count starts from the workflow's noise.
            res = protocol.run(model, x, y, a, imputer, ids, (*paired_seed_key(cfg["seed"], model_name, "fud"), "fud"))
            finals[(model_name, explainer, s)] = res.samples
            rows.append(
                {
                    "model": model_name,
                    "explainer": explainer,
                    "steps": s,
                    **summarise(res.records, res.samples, x.cpu(), clean_energy),
                }
            )
            print(f"  {model_name} {explainer} {s} steps: done", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    ref = table[table["steps"] == reference].set_index(["model", "explainer"])
    for col in COMPARED:
        at_ref = ref.loc[list(zip(table["model"], table["explainer"])), col].to_numpy()
        table[f"d_{col}"] = table[col].to_numpy() - at_ref
    table["mad_ref"] = [
        float(np.abs(finals[(m, e, s)].astype(np.float32) - finals[(m, e, reference)].astype(np.float32)).mean())
        for m, e, s in zip(table["model"], table["explainer"], table["steps"])
    ]
    out = Path(args.csv) if args.csv else inp["results"] / "bench" / "fud_steps.csv"
    write_csv(out, table, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.precision", 4):
        print(table.drop(columns=["confidence"]).to_string(index=False))
    print(f"reference: {reference} steps; written to {out}")
    return table


if __name__ == "__main__":
    main()
