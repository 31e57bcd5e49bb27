"""What a meta-evaluation run cost, and what a larger one would: CPU time per
rule from a finished run's Snakemake benchmark files, extrapolated to more
images, plus a FLOP-based estimate of FUD's share on a GPU.

    ./fud python bench/meta_budget.py results/meta --configfile config/meta.yaml --images 64 128 256

Measured: every job's `s` (wall) and `cpu_time` columns (benchmarks/**/*.tsv),
summed per rule. A run made with the job server (fudbench.workflow.prefork, what
`./fud run` does since issue 47) has the `cpu_time` of each job's waiting
process only: measure a run made with FUD_PREFORK=off (a warning says so). Extrapolated: the rules whose work grows with the evaluated
images (explain, evaluate, srg_reference) scale by images / n_eval; the
others (training, references, diagnostics, tables) stay as measured. The
2-core wall time assumes both cores busy throughout (the measured run's ratio
of CPU time to wall time says how close that is).

GPU estimate (not a measurement): FUD's U-Net forwards (entries x curves x
ratios x steps per image, explainer and model) times the U-Net's FLOPs per
forward, counted with torch's FlopCounterMode at batch 1 on the meta device,
at a stated fraction of an H100's dense bf16 peak (989 TFLOP/s). Small
32 px U-Nets use a GPU poorly, so the fraction is a guess: the output gives
5% and 20%.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SCALED_RULES = ("explain", "evaluate", "srg_reference")  # work per evaluated image
H100_BF16_TFLOPS = 989.0


def benchmark_times(results: Path) -> pd.DataFrame:
    """One row per rule: jobs, wall seconds and CPU seconds summed over its benchmark files."""
    rows = []
    for tsv in sorted((results / "benchmarks").rglob("*.tsv")):
        rel = tsv.relative_to(results / "benchmarks")
        rule = rel.parts[0] if len(rel.parts) > 1 else tsv.stem
        b = pd.read_csv(tsv, sep="\t")
        rows.append({"rule": rule, "wall_s": float(b["s"].iloc[-1]), "cpu_s": float(b["cpu_time"].iloc[-1])})
    if not rows:
        raise SystemExit(f"{results}/benchmarks: no benchmark files (is this a finished run?)")
    d = pd.DataFrame(rows)
    if d["cpu_s"].sum() < 0.2 * d["wall_s"].sum():
        print(
            f"warning: {results}'s jobs used {d['cpu_s'].sum():.0f} CPU s in {d['wall_s'].sum():.0f} s of wall: "
            "a run made with the job server counts its waiting processes only (rerun with FUD_PREFORK=off)",
            file=sys.stderr,
        )
    return d.groupby("rule").agg(jobs=("wall_s", "size"), wall_s=("wall_s", "sum"), cpu_s=("cpu_s", "sum"))


def unet_flops(config: dict) -> float:
    """FLOPs of one forward of the run's score model at batch 1 (multiply-add = 2)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from fudbench.models.score import build_unet

    size = int(config["data"]["synthetic"]["image_size"])
    with torch.device("meta"):
        unet = build_unet(config["models"]["score_model"], size)
        x, t = torch.zeros(1, 3, size, size), torch.zeros(1, dtype=torch.long)
        with FlopCounterMode(display=False) as counter:
            unet(x, t)
    return float(counter.get_total_flops())


def fud_forwards_per_image(config: dict) -> int:
    """U-Net forwards of every FUD entry for one image, explainer and model."""
    ratios = len(config["evaluation"]["ratios"])
    total = 0
    for name, settings in config["evaluators"].items():
        settings = settings or {}
        if settings.get("method", name) != "fud":
            continue
        curves = 2 if settings.get("symmetric") else 1
        total += curves * ratios * int(settings.get("steps", 100))
    return total


def main(argv=None) -> int:

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    from fudbench.config.cli import script_config, user_file

    ap.add_argument("results", type=user_file, help="a finished run's results/<run_name>")
    ap.add_argument(
        "--configfile",
        nargs="+",
        required=True,
        help="the run's config files, merged in order as ./fud run merges them (overlays over config/config.yaml)",
    )
    ap.add_argument("--images", type=int, nargs="+", default=[64, 128, 256], help="evaluated images to extrapolate to")
    args = ap.parse_args(argv)
    config = script_config(args.configfile)[0]
    n_eval = int(config["data"]["n_eval"])
    times = benchmark_times(args.results)
    from fudbench.core.hardware import describe_results

    print(describe_results(args.results))
    print(times.round(1).to_string())
    wall, cpu = times["wall_s"].sum(), times["cpu_s"].sum()
    scaled = times.loc[[r for r in SCALED_RULES if r in times.index], "cpu_s"].sum()
    print(
        f"\nmeasured at {n_eval} images: {cpu / 3600:.2f} CPU hours over all jobs "
        f"({scaled / 3600:.2f} in {', '.join(SCALED_RULES)}); job wall times sum to {wall / 3600:.2f} h"
    )
    models = len(config["models"]["classifiers"])
    explainers = len(config["explainers"])
    forwards = fud_forwards_per_image(config)
    flops = unet_flops(config) if config["data"]["source"] == "synthetic" else float("nan")
    print(f"FUD: {forwards} U-Net forwards per image, explainer and model; {flops / 1e9:.3f} GFLOP per forward")
    print("\nimages | CPU hours | 2-core wall hours | FUD TFLOP | FUD GPU hours at 5% / 20% of H100 bf16 peak")
    for n in args.images:
        cpu_n = cpu - scaled + scaled * n / n_eval
        tflop = n * explainers * models * forwards * flops / 1e12
        gpu = [tflop / (H100_BF16_TFLOPS * u) / 3600 for u in (0.05, 0.20)]
        print(f"{n:6d} | {cpu_n / 3600:9.2f} | {cpu_n / 2 / 3600:17.2f} | {tflop:9.1f} | {gpu[0]:.3f} / {gpu[1]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
