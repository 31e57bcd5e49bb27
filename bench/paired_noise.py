"""How much paired noise (common random numbers) narrows the meta-evaluation's intervals.

    ./fud python bench/paired_noise.py results/synthetic [--evaluators fud sensn road] [--boot 1000]

The default run evaluates every explainer of an image under the same noise
(seed key without the explainer, fudbench.workflow.pipeline.paired_seed_key). This
re-evaluates the degraded explainers of a finished run with the seed key the
workflow used before, which added the explainer's name (unpaired: each
explainer its own noise), and compares, per model x family x metric, the
macro Spearman correlation with the known order and the width of its 95%
bootstrap interval over images, paired (from the run's per-image scores) vs
unpaired (recomputed here). Everything else is the run's: models, images,
attributions, settings. Prints one row per (model, family, metric) and a
summary line per metric.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def unpaired_scores(results: Path, config: dict, evaluators, models, explainers) -> pd.DataFrame:
    """Per-image scores of the explainers under explainer-keyed noise."""
    import torch

    from fudbench.analysis.curves import derived_scores, per_image_scores
    from fudbench.data.shards import n_shards
    from fudbench.workflow.pipeline import ShardEvaluation, paired_seed_key

    assets = {"score_model": str(results / "models/score_model.pt")}
    data = config["data"]
    frames = []
    for model in models:
        for evaluator in evaluators:
            for shard in range(n_shards(data["n_eval"], data["shard_size"])):
                job = ShardEvaluation(
                    results / f"models/{model}.pt",
                    results / "data/eval.npz",
                    shard,
                    data["shard_size"],
                    evaluator,
                    config["evaluators"][evaluator],
                    {k: config["evaluation"][k] for k in ("ratios", "reduction")},
                    assets,
                    torch.device("cpu"),
                )
                for explainer in explainers:
                    key = (*paired_seed_key(config["seed"], model, evaluator), explainer)  # the old, unpaired key
                    records, _ = job.run(results / f"attributions/{model}/{explainer}/shard{shard}.npz", key)
                    records.insert(0, "model", model)
                    records.insert(1, "explainer", explainer)
                    frames.append(records)
    records = pd.concat(frames, ignore_index=True)
    per_image = per_image_scores(records)
    return pd.concat([per_image, derived_scores(records, per_image)], ignore_index=True)


def main(argv=None) -> int:

    from fudbench.meta.families import degraded_explainers, ground_truth_correlations
    from fudbench.evaluators import configured_curves

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from fudbench.config.cli import positive_int, script_config, user_file

    ap.add_argument("results", type=user_file, help="a finished run's results directory, e.g. results/synthetic")
    ap.add_argument(
        "--config",
        nargs="+",
        default=None,
        help="the run's config files, merged in order as ./fud run merges them (default: config/config.yaml)",
    )
    ap.add_argument(
        "--evaluators",
        nargs="+",
        default=["fud", "sensn", "road"],
        help="stochastic evaluators to re-evaluate (default: fud sensn road)",
    )
    ap.add_argument("--boot", type=positive_int, default=1000)
    args = ap.parse_args(argv)
    config = script_config(args.config)[0]
    args.config = " ".join(args.config or ["config/config.yaml"])
    from fudbench.core.hardware import describe_machine

    print(describe_machine("cpu", config["evaluators"].get("fud")))
    degraded = degraded_explainers(config["explainers"])
    if not degraded:
        ap.error(f"{args.config} has no degraded explainers (method: degrade)")
    missing = [e for e in args.evaluators if e not in config["evaluators"]]
    if missing:
        ap.error(f"evaluators {missing} are not in {args.config}")
    curves = [
        c
        for e in args.evaluators
        for c, spec in configured_curves({e: config["evaluators"][e]}).items()
        if spec.score is not None
    ]
    paired = pd.read_parquet(args.results / "analysis/per_image.parquet")
    unpaired = unpaired_scores(
        args.results, config, args.evaluators, list(config["models"]["classifiers"]), sorted(degraded)
    )
    rows = []
    for label, per_image in (("paired", paired), ("unpaired", unpaired)):
        t = ground_truth_correlations(per_image, degraded, n_boot=args.boot, seed=config["seed"], curves=curves)
        t = t[t["kind"] == "macro"].assign(noise=label, width=lambda d: d["ci_high"] - d["ci_low"])
        rows.append(t[["model", "family", "metric", "noise", "spearman", "ci_low", "ci_high", "width"]])
    table = pd.concat(rows).pivot_table(
        index=["model", "family", "metric"], columns="noise", values=["spearman", "width"]
    )
    table.columns = [f"{v}_{n}" for v, n in table.columns]
    table["width_ratio"] = table["width_paired"] / table["width_unpaired"]
    print(table.round(3).to_string())
    print("\nmedian CI width, paired / unpaired, per metric:")
    print(table.groupby("metric")[["width_paired", "width_unpaired", "width_ratio"]].median().round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
