"""Round four's tables (docs/meta_evaluation.md, "Round four"; fudbench.analysis.round4) from its finished runs.

    ./fud python tools/round4_table.py --out docs/results/round4

reads results/round4 (primary), results/round4_rep (replication), results/round4_equiv (equivalence)
and results/round4_explainers (the real explainers' cue verdicts), whichever have finished, and writes:
gate.csv (each run's protocol gate), endpoint.csv (every comparison's cells of the primary run with the
replication's cell and label beside), equivalence.csv, per_image_<run>.parquet (the scores the cells
come from), cue_verdict_explainers.csv (copied), invocations_<run>.jsonl (copied) and summary.md.
A run that has not finished is named in summary.md and left out; no cell is computed from a partial run.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fudbench.analysis import round4  # noqa: E402
from fudbench.configfiles import resolve_config  # noqa: E402
from fudbench.io import load_npz, write_csv, write_text  # noqa: E402

RUNS = {  # name: (results folder, config files)
    "primary": ("round4", ["config/cue.yaml", "config/round4.yaml"]),
    "replication": ("round4_rep", ["config/cue.yaml", "config/round4.yaml", "config/round4_replication.yaml"]),
    "equivalence": ("round4_equiv", ["config/cue.yaml", "config/round4.yaml", "config/round4_equivalence.yaml"]),
    "explainers": ("round4_explainers", ["config/cue.yaml", "config/round4_explainers.yaml"]),
}


def finished(results: Path) -> bool:
    return (results / "analysis" / "per_image.parquet").is_file() and (results / "tables").is_dir()


def gate_truth(results: Path, config: dict) -> pd.DataFrame:
    """model, explainer, image, value = kept cue share of every family member and `random`, from the maps."""
    from fudbench.analysis.cue import reduce_map
    from fudbench.analysis.meta import degraded_explainers

    data = load_npz(results / "data" / "eval.npz")
    cue = data["masks"].astype(bool)
    ratios = config["evaluation"]["ratios"]
    names = [*degraded_explainers(config["explainers"]), "random"]
    rows = []
    for model in config["models"]["classifiers"]:
        for name in names:
            for shard in sorted((results / "attributions" / model / name).glob("shard*.npz")):
                a = load_npz(shard, made_by="explain")
                scores = reduce_map(a["attributions"], config["evaluation"]["reduction"])
                share = round4.kept_cue_share(scores, cue[a["ids"]], ratios)
                rows += [{"model": model, "explainer": name, "image": int(i), "value": float(v)}
                         for i, v in zip(a["ids"], share)]
    return pd.DataFrame(rows)


def run_cells(results: Path, config: dict):
    per_image = pd.read_parquet(results / "analysis" / "per_image.parquet")
    gate = round4.protocol_gate(gate_truth(results, config), config["explainers"],
                                pd.read_csv(results / "tables" / "cue_intervention.csv"))
    return per_image, gate


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (relative: to where you run the command)")
    ap.add_argument("--results", default="results", help="the results folder holding the runs")
    args = ap.parse_args(argv)
    caller = Path(os.environ.get("FUD_CALLER_CWD", "."))
    out, base = caller / args.out, caller / args.results
    out.mkdir(parents=True, exist_ok=True)
    lines, tables = ["# Round four: tables (tools/round4_table.py)", ""], {}
    gates = []
    for name, (folder, files) in RUNS.items():
        results = base / folder
        for inv in [results / "invocations.jsonl"]:
            if inv.is_file():
                shutil.copyfile(inv, out / f"invocations_{name}.jsonl")
        if not finished(results):
            lines.append(f"- {name} ({results}): not finished; no cell computed from it")
            continue
        config = resolve_config([str(REPO / f) for f in files])
        if name == "explainers":
            for t in ("cue_verdict.csv", "cue_truth.csv", "cue_endpoint.csv"):
                if (results / "tables" / t).is_file():
                    shutil.copyfile(results / "tables" / t, out / f"explainers_{t}")
            shutil.copyfile(results / "analysis" / "per_image.parquet", out / f"per_image_{name}.parquet")
            lines.append(f"- {name}: cue verdicts copied (explainers_cue_verdict.csv)")
            continue
        per_image, gate = run_cells(results, config)
        gates.append(gate.assign(run=name))
        shutil.copyfile(results / "analysis" / "per_image.parquet", out / f"per_image_{name}.parquet")
        if name == "equivalence":
            tables[name] = round4.equivalence_cells(per_image, config["explainers"], gate)
        else:
            tables[name] = round4.round4_cells(per_image, config["explainers"], gate)
        lines.append(f"- {name}: {per_image['image'].nunique()} images, models "
                     f"{', '.join(sorted(per_image['model'].unique()))}")
    if gates:
        write_csv(out / "gate.csv", pd.concat(gates, ignore_index=True), index=False, float_format="%.4f")
    if "primary" in tables:
        rep = tables.get("replication")
        table = round4.replication_table(tables["primary"], rep) if rep is not None else tables["primary"]
        write_csv(out / "endpoint.csv", table, index=False, float_format="%.4f")
        lines += ["", "## Cells (primary run; replication beside)", "", _markdown(table)]
    if "equivalence" in tables:
        eq = tables["equivalence"]
        write_csv(out / "equivalence.csv", eq, index=False, float_format="%.4f")
        lines += ["", f"## Equivalence (margin {round4.EQUIVALENCE_MARGIN}): {round4.equivalence_verdict(eq)}", "",
                  _markdown(eq, equivalence=True)]
    write_text(out / "summary.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def _fmt(e, lo, hi) -> str:
    return "n/a" if not np.isfinite(e) else f"{e:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def _markdown(t: pd.DataFrame, equivalence: bool = False) -> str:
    if equivalence:
        head = "| model | family | FUD-25L - FUD-100 [95%] | 90% | equivalent | n |\n|---|---|---|---|---|---|"
        rows = [f"| {r.model} | {r.family} | {_fmt(r.estimate, r.ci_low, r.ci_high)} | "
                f"[{r.ci_low_90:+.2f}, {r.ci_high_90:+.2f}] | {r.equivalent} | {r.n_images} |" for r in t.itertuples()]
        return "\n".join([head, *rows])
    rep = "replication" in t.columns
    head = ("| comparison | model | family | estimate [95%] | p_holm | verdict | macro challenger / comparator |"
            + (" replication [95%] | p_holm | label |" if rep else "") + "\n|" + "---|" * (7 + 3 * rep))
    rows = []
    for r in t.itertuples():
        row = (f"| {r.endpoint}: {r.challenger} vs {r.paper} | {r.model} | {r.family} | "
               f"{_fmt(r.estimate, r.ci_low, r.ci_high)} | {r.p_holm:.3g} | {r.verdict} | "
               f"{r.macro_challenger:+.2f} / {r.macro_paper:+.2f} |")
        if rep:
            row += (f" {_fmt(r.estimate_rep, r.ci_low_rep, r.ci_high_rep)} | {r.p_holm_rep:.3g} | {r.replication} |"
                    if np.isfinite(getattr(r, "estimate_rep", np.nan)) else " n/a | | no replication cell |")
        rows.append(row)
    return "\n".join([head, *rows])


if __name__ == "__main__":
    main()
