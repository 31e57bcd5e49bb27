"""How far the estimate before a run (fudbench.workflow.cost) is from what a finished run measured.

    ./fud python bench/cost_accuracy.py RESULTS [--configfile FILE ...] [--column auto|s|cpu_time] [--bf16 yes|no]

RESULTS is a finished run's folder (results/<run_name>); the config files are those it ran with (none:
config/config.yaml, the default run). For each evaluator entry and each explainer it prints the estimate of
the whole run (nothing counted as done) beside the sum of the run's Snakemake benchmark files:
benchmarks/evaluate/<model>/<entry>/shard*.tsv (+ benchmarks/srg_reference/<entry>/ for an srg entry, whose
R-OMS job the estimate counts) and benchmarks/explain/<model>/<explainer>/shard*.tsv, and their ratio.

Which column: `s` is the job's wall time, `cpu_time` its CPU seconds (user + system). Under the job server
(fudbench.workflow.prefork, `./fud run`'s default) cpu_time and max_rss count only the job's waiting process, so
`auto` takes cpu_time only where the jobs' max_rss says they ran in their own process (a run with FUD_PREFORK=off)
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
    return {k: float(v) for k, v in rows[-1].items() if k in ("s", "cpu_time", "max_rss")}


def measured(results: Path, kind: str, pattern_of) -> dict:
    """{name: {model: {column: seconds summed over its shards}}} of benchmarks/<kind>/<model>/<name>/."""
    out: dict = {}
    base = results / "benchmarks" / kind
    for tsv in sorted(base.glob("*/*/shard*.tsv")):
        model, name = tsv.parent.parent.name, tsv.parent.name
        cell = out.setdefault(name, {}).setdefault(model, {"s": 0.0, "cpu_time": 0.0, "max_rss": 0.0})
        for k, v in read_tsv(tsv).items():
            cell[k] = max(cell[k], v) if k == "max_rss" else cell[k] + v
    # srg's R-OMS reference jobs: benchmarks/srg_reference/<entry>/<model>/shard*.tsv
    if kind == "evaluate":
        for tsv in sorted((results / "benchmarks" / "srg_reference").glob("*/*/shard*.tsv")):
            name, model = tsv.parent.parent.name, tsv.parent.name
            cell = out.setdefault(name, {}).setdefault(model, {"s": 0.0, "cpu_time": 0.0, "max_rss": 0.0})
            for k, v in read_tsv(tsv).items():
                cell[k] = max(cell[k], v) if k == "max_rss" else cell[k] + v
    return out


def choose_column(*tables) -> str:
    """cpu_time where the jobs ran in their own process: a job that imported torch holds >= 150 MB (max_rss); the
    job server's waiting process ~26 MB, and its cpu_time is that process's only."""
    rss = [cell["max_rss"] for table in tables for models in table.values() for cell in models.values()]
    return "cpu_time" if rss and statistics.median(rss) >= 150 else "s"


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
    ratios, sums = [], {"evaluate": [0.0, 0.0], "explain": [0.0, 0.0]}
    for kind, rows, table in (("evaluate", est.rows, evaluate), ("explain", est.explain, explain)):
        for row in rows:
            cells = table.get(row.entry, {})  # the models measured (all of them in a finished run)
            got = sum(c[column] for c in cells.values())
            if row.seconds is None or not cells:
                print(f"{kind:<9} {row.entry:<16} {row.method:<12} {'?':>10} {got:>10.1f} {'':>8}")
                continue
            guess = sum(row.per_model.get(m, 0.0) for m in cells)
            partial = "" if set(cells) == set(row.per_model) else f"  (models measured: {sorted(cells)})"
            ratio = guess / got if got else float("inf")
            ratios.append((kind, row.entry, ratio))
            sums[kind][0] += guess
            sums[kind][1] += got
            flag = "" if 0.5 <= ratio <= 2 else "  <- outside 2x"
            print(
                f"{kind:<9} {row.entry:<16} {row.method:<12} {guess:>10.1f} {got:>10.1f} {ratio:>8.2f}{flag}{partial}"
            )
    for kind, (guess, got) in sums.items():
        if got:
            print(f"{kind:<9} {'(all measured)':<16} {'':<12} {guess:>10.1f} {got:>10.1f} {guess / got:>8.2f}")
    outside = [f"{k}:{e} {r:.2f}" for k, e, r in ratios if not 0.5 <= r <= 2]
    print(f"within 2x: {len(ratios) - len(outside)} of {len(ratios)}" + (f"; outside: {outside}" if outside else ""))
    top = max((r for r in est.rows if r.seconds is not None), key=lambda r: r.seconds)
    slowest = max(evaluate, key=lambda e: sum(c[column] for c in evaluate[e].values()))
    print(f"dominant evaluator: estimated {top.entry}, measured {slowest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
