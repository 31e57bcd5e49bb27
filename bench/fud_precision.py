"""Does FUD's precision change its scores? The same FUD run (same seeds, same
masks) with the U-Net in fp32 (eager) and in the config's precision (e.g. bf16
autocast + channels_last on a CPU; bf16, contiguous and compiled on a GPU), on
a finished run's attributions.

    ./fud python bench/fud_precision.py [--results results/synthetic] [--config config/config.yaml]
        [--models cnn vit] [--explainers ig sm random oracle_d00] [--limit 16] [--csv PATH]

Inputs as bench/fud_steps.py. Per model x explainer it prints the FUD score
(mean over images of the per-image normalised AUC of confidence over rho),
Energy AUROC and Kendall tau in both precisions, and
- d_fud_mean, d_fud_maxabs: the mean and the largest per-image difference of
  the FUD score (configured - fp32);
- fud_sd: the between-image standard deviation of the fp32 score, and
  ci_half: the half-width of its 95% interval (1.96 sd / sqrt(n)), the scale
  on which the tables compare explainers;
- mad: mean |pixel difference| between the two precisions' samples.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

REPO = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO.parent / "src"))

from fud_steps import _inputs, shard0_inputs, summarise  # noqa: E402

from fudbench.analysis.curves import normalised_auc  # noqa: E402
from fudbench.core.io import write_csv  # noqa: E402


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from fudbench.config.cli import positive_int, script_config, user_file

    ap.add_argument(
        "--config",
        nargs="+",
        default=None,
        help="the run's config files, merged in order as ./fud run merges them (default: "
        "config/config.yaml); --results defaults to that run's results/<run_name>",
    )
    ap.add_argument("--results", type=user_file, default=None)
    ap.add_argument("--models", nargs="+", default=None)
    ap.add_argument("--explainers", nargs="+", default=["ig", "sm", "random", "oracle_d00"])
    ap.add_argument("--limit", type=positive_int, default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--csv", type=user_file, default=None)
    args = ap.parse_args(argv)
    from fudbench.evaluators import build_evaluator
    from fudbench.core.io import load_npz
    from fudbench.workflow.pipeline import paired_seed_key

    cfg, run_results = script_config(args.config)
    args.results = args.results or run_results
    inp = _inputs(args, cfg)
    paths, device = inp["paths"], torch.device(args.device)
    configured = cfg["evaluators"]["fud"]
    variants = {
        "fp32": {**configured, "amp_dtype": None, "channels_last": False, "compile": False},
        "configured": configured,
    }
    assets = {"score_model": str(paths["score_model"])}
    evaluators = {k: build_evaluator("fud", v, cfg["evaluation"], assets, device) for k, v in variants.items()}
    data = load_npz(paths["images"])
    rows = []
    for model_name, model, explainer, ids, x, y, a, clean_energy in shard0_inputs(inp, data, args, device):
        n = len(ids)
        out = {}
        for name, ev in evaluators.items():
            curve, imputer = ev.curves[0]
            curve.keep_samples = True
            res = curve.run(model, x, y, a, imputer, ids, (*paired_seed_key(cfg["seed"], model_name, "fud"), "fud"))
            per_image = res.records.groupby("image").apply(lambda g: normalised_auc(g["kept"], g["confidence"]))
            out[name] = (res, per_image, summarise(res.records, res.samples, x.cpu(), clean_energy))
        d = out["configured"][1] - out["fp32"][1]
        sd = float(out["fp32"][1].std(ddof=1))
        rows.append(
            {
                "model": model_name,
                "explainer": explainer,
                "n": n,
                "fud_fp32": out["fp32"][2]["fud"],
                "fud_conf": out["configured"][2]["fud"],
                "d_fud_mean": float(d.mean()),
                "d_fud_maxabs": float(d.abs().max()),
                "fud_sd": sd,
                "ci_half": 1.96 * sd / np.sqrt(n),
                "auroc_fp32": out["fp32"][2]["auroc"],
                "auroc_conf": out["configured"][2]["auroc"],
                "tau_fp32": out["fp32"][2]["tau"],
                "tau_conf": out["configured"][2]["tau"],
                "mad": float(
                    np.abs(
                        out["configured"][0].samples.astype(np.float32) - out["fp32"][0].samples.astype(np.float32)
                    ).mean()
                ),
                "s_per_sample_fp32": out["fp32"][2]["seconds"],
                "s_per_sample_conf": out["configured"][2]["seconds"],
            }
        )
        print(f"  {model_name} {explainer}: done", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    dest = Path(args.csv) if args.csv else inp["results"] / "bench" / "fud_precision.csv"
    write_csv(dest, table, index=False)
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.precision", 4):
        print(table.to_string(index=False))
    from fudbench.core.hardware import describe_machine

    print(describe_machine(device, configured))
    print(
        f"configured: amp_dtype={configured.get('amp_dtype')}, channels_last={configured.get('channels_last')}, "
        f"compile={configured.get('compile', 'auto')} -> {evaluators['configured'].curves[0][1].runtime.precision.label}"
        f"; fp32 reference: eager; written to {dest}"
    )
    return table


if __name__ == "__main__":
    main()
