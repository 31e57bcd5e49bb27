"""Markdown tables of a finished cue run, for the docs (read from the files, so the docs
quote what the run wrote): the dose-response, the verdicts of the paper explainers under
the three truths with and without ISA (per-image mean beside macro), the undecided
cells, and the endpoint cells.

    ./fud python studies/planted_cue/cue_markdown.py results/cue/tables [--explainers no_controls]

Not a Snakemake script: run by hand on a run's tables (or studies/planted_cue/results).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

TRUTHS = ("precision", "auroc", "mass")


def _ci(lo, hi, signed=True) -> str:
    f = "{:+.2f}" if signed else "{:.2f}"
    return "--" if pd.isna(lo) or pd.isna(hi) else f"[{f.format(lo)}, {f.format(hi)}]"


def dose_markdown(dose: pd.DataFrame) -> str:
    out = []
    for (model, order), g in dose.groupby(["model", "order"], sort=False):
        cells = [
            f"{r.accuracy:.2f} / {r.target_prob:.2f} {_ci(r.target_prob_ci_low, r.target_prob_ci_high, False)}"
            for r in g.itertuples()
        ]
        out.append(f"| {model} | {order} | " + " | ".join(cells) + f" | {g['monotone'].iloc[0]} |")
    doses = " | ".join(f"{d:g}" for d in dose["dose"].unique())
    head = f"| model | order | {doses} | steps |\n|" + "---|" * (dose["dose"].nunique() + 3)
    return head + "\n" + "\n".join(out)


def verdict_markdown(v: pd.DataFrame, model: str, explainers: str) -> str:
    d = v[(v["model"] == model) & (v["explainers"] == explainers)]
    cols = [(t, isa) for t in TRUTHS for isa in (True, False)]
    head = (
        "| metric | "
        + " | ".join(f"{t} {'with' if isa else 'w/o'} ISA: per-image / macro" for t, isa in cols)
        + " |\n|"
        + "---|" * (len(cols) + 1)
    )
    rows = []
    for metric, g in d.groupby("metric", sort=False):
        g = g.set_index(["truth", "with_isa"])
        cells = []
        for key in cols:
            if key not in g.index:
                cells.append("--")
                continue
            r = g.loc[key]
            word = {"recovers": "R", "reverses": "**X**"}.get(r["verdict"], "u")
            mword = {"recovers": "R", "reverses": "**X**"}.get(r["macro_verdict"], "u")
            cells.append(
                f"{r['spearman']:+.2f} {_ci(r['ci_low'], r['ci_high'])} {word} / "
                f"{r['macro_spearman']:+.2f} {_ci(r['macro_ci_low'], r['macro_ci_high'])} {mword}"
            )
        rows.append(f"| {metric} | " + " | ".join(cells) + " |")
    return head + "\n" + "\n".join(rows)


def undecided(v: pd.DataFrame, explainers: str) -> str:
    d = v[(v["explainers"] == explainers) & ~v["verdict"].isin(["recovers", "reverses"])]
    lines = []
    for (model, truth, isa), g in d.groupby(["model", "truth", "with_isa"], sort=False):
        lines.append(f"- {model}, {truth}, {'with' if isa else 'without'} ISA: " + ", ".join(g["metric"]))
    return "\n".join(lines) or "- none"


def endpoint_markdown(e: pd.DataFrame) -> str:
    head = "| model | comparison | truth | ISA | estimate | interval | raw p | n |\n|---|---|---|---|---|---|---|---|"
    rows = [
        f"| {r.model} | {r.comparison}{' (primary)' if r.primary else ''} | {r.truth} | "
        f"{'with' if r.with_isa else 'without'} | {r.estimate:+.3f} | {_ci(r.ci_low, r.ci_high)} | {r.p:.3g} | "
        f"{r.n_images} |"
        for r in e.itertuples()
    ]
    return head + "\n" + "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", type=Path)
    ap.add_argument("--explainers", default="no_controls")
    a = ap.parse_args()
    v = pd.read_csv(a.tables / "cue_verdict.csv")
    print("## Dose-response (accuracy / P(label) [interval])\n")
    print(dose_markdown(pd.read_csv(a.tables / "cue_dose.csv")))
    for model in v["model"].unique():
        print(f"\n## Verdicts, {model}, {a.explainers} (R recovers, X reverses, u undecided)\n")
        print(verdict_markdown(v, model, a.explainers))
    print(f"\n## Undecided per-image verdicts ({a.explainers})\n")
    print(undecided(v, a.explainers))
    print("\n## Endpoint cells\n")
    print(endpoint_markdown(pd.read_csv(a.tables / "cue_endpoint.csv")))


if __name__ == "__main__":
    main()
