"""How far the estimate before a run (fudbench.workflow.cost) is from what a finished run measured.

    ./fud python bench/cost_accuracy.py RESULTS [--configfile FILE ...] [--column auto|s|cpu_time] [--bf16 yes|no]

RESULTS is a finished run's folder (results/<run_name>); the config files are those it ran with (none:
config/config.yaml, the default run). For each evaluator entry and each explainer it prints the estimate of
the whole run (nothing counted as done) beside the sum of the run's Snakemake benchmark files:
benchmarks/evaluate/<model>/<entry>/shard*.tsv (+ benchmarks/srg_reference/<entry>/ for an srg entry, whose
R-OMS job the estimate counts) and benchmarks/explain/<model>/<explainer>/shard*.tsv, and their ratio.

Which column: `s` is the job's wall time, `cpu_time` its CPU seconds (user + system). Under the job server
(fudbench.workflow.prefork, `./fud run`'s default) cpu_time counts only the job's waiting process, so `auto`
takes cpu_time only where it is at least a fifth of the wall time in most jobs (a run with FUD_PREFORK=off)
and says which. CPU time holds better on a shared machine (a waiting job does not count); wall time includes
the waits for a core. The estimate's start-up per job follows: START_UP_S for jobs in their own process,
PREFORK_START_UP_S under the job server. FUD's U-Net precision: the run's run_info.json (cpu_native_bf16),
else --bf16.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

from fudbench.config.files import resolve_config
from fudbench.workflow import cost


def read_tsv(path: Path) -> dict:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return {k: float(v) for k, v in rows[-1].items() if k in ("s", "cpu_time")}


def measured(results: Path, kind: str, pattern_of) -> dict:
    """{name: {model: {column: seconds summed over its shards}}} of benchmarks/<kind>/<model>/<name>/."""
    out: dict = {}
    base = results / "benchmarks" / kind
    for tsv in sorted(base.glob("*/*/shard*.tsv")):
        model, name = tsv.parent.parent.name, tsv.parent.name
        cell = out.setdefault(name, {}).setdefault(model, {"s": 0.0, "cpu_time": 0.0})
        for k, v in read_tsv(tsv).items():
            cell[k] += v
    # srg's R-OMS reference jobs: benchmarks/srg_reference/<entry>/<model>/shard*.tsv
    if kind == "evaluate":
        for tsv in sorted((results / "benchmarks" / "srg_reference").glob("*/*/shard*.tsv")):
            name, model = tsv.parent.parent.name, tsv.parent.name
            cell = out.setdefault(name, {}).setdefault(model, {"s": 0.0, "cpu_time": 0.0})
            for k, v in read_tsv(tsv).items():
                cell[k] += v
    return out


def choose_column(*tables) -> str:
    fractions = [
        cell["cpu_time"] / cell["s"]
        for table in tables
        for models in table.values()
        for cell in models.values()
        if cell["s"] > 0
    ]
    return "cpu_time" if fractions and statistics.median(fractions) >= 0.2 else "s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--configfile", nargs="*", default=[])
    parser.add_argument("--column", choices=("auto", "s", "cpu_time"), default="auto")
    parser.add_argument("--bf16", choices=("yes", "no"), default=None)
    args = parser.parse_args(argv)

    config = resolve_config(args.configfile)
    info_path = args.results / "run_info.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {}
    bf16 = args.bf16 == "yes" if args.bf16 else bool(info.get("cpu_native_bf16", False))
    evaluate, explain = measured(args.results, "evaluate", None), measured(args.results, "explain", None)
    if not evaluate:
        sys.exit(f"no benchmark files under {args.results}/benchmarks/evaluate: is this a finished run's folder?")
    column = choose_column(evaluate, explain) if args.column == "auto" else args.column
    own = column == "cpu_time"  # CPU time is readable only where each job ran in its own process
    est = cost.estimate(config, bf16=bf16, own_process=own)

    print(
        f"{args.results} ({info.get('cpu_model', '?')}, flags {info.get('cpu_flags', '?')}, commit "
        f"{info.get('commit', '?')}); column: {column} ({'CPU seconds' if column == 'cpu_time' else 'wall seconds'});"
        f" FUD's U-Net {'bf16' if bf16 else 'fp32'}; start-up per job {est.start_up} s"
    )
    print(f"{'kind':<9} {'entry':<16} {'method':<12} {'estimate s':>10} {'measured s':>10} {'est/meas':>8}")
    ratios = []
    for kind, rows, table in (("evaluate", est.rows, evaluate), ("explain", est.explain, explain)):
        for row in rows:
            cells = table.get(row.entry, {})
            got = sum(c[column] for c in cells.values())
            if row.seconds is None or not cells:
                print(f"{kind:<9} {row.entry:<16} {row.method:<12} {'?':>10} {got:>10.1f} {'':>8}")
                continue
            ratio = row.seconds / got if got else float("inf")
            ratios.append((kind, row.entry, ratio))
            flag = "" if 0.5 <= ratio <= 2 else "  <- outside 2x"
            print(f"{kind:<9} {row.entry:<16} {row.method:<12} {row.seconds:>10.1f} {got:>10.1f} {ratio:>8.2f}{flag}")
    est_total = est.evaluators_total
    got_total = sum(c[column] for name, cells in evaluate.items() for c in cells.values())
    print(f"{'evaluate':<9} {'(all)':<16} {'':<12} {est_total:>10.1f} {got_total:>10.1f} {est_total / got_total:>8.2f}")
    outside = [f"{k}:{e} {r:.2f}" for k, e, r in ratios if not 0.5 <= r <= 2]
    print(f"within 2x: {len(ratios) - len(outside)} of {len(ratios)}" + (f"; outside: {outside}" if outside else ""))
    top = max((r for r in est.rows if r.seconds is not None), key=lambda r: r.seconds)
    slowest = max(evaluate, key=lambda e: sum(c[column] for c in evaluate[e].values()))
    print(f"dominant evaluator: estimated {top.entry}, measured {slowest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
