"""Corrections to round four's record (issue 59), recomputed from the committed per-image files only.

    ./fud python studies/round4/round4_corrections.py --out studies/round4/results/corrections

Independent of round4_analysis.py's cell code: the per-image recovery is computed here (scipy's Spearman
of each member's oriented score with the known order, 0 where a curve ties every member); only the
registered interval (fudbench.meta.inference.mean_interval) and Holm's step-down are shared, because
they are what was registered. Writes (each a new table; round four's own tables keep their bytes):

- registered_gate_cells.csv: every comparison (primary, S1-S3) under the gate as registered in 4db201a
  (the model's cue intervention passed and the family's order on the kept-cue share has its interval
  above 0: gate.csv's order_low), Holm over every gated cell of a comparison. The post-data pairwise gate
  removed the displacement family; the registered gate keeps it.
- pooled_registered.csv: pooled.csv with the heterogeneity interval from the registered statistic
  (each run's standard error from mean_interval's variance, bounds (-2, 2)) beside the plain-SD one.
- ceiling.csv: per model and curve the recovery of the displacement family without d = 0 (d4-d16: the
  part where scatter is held fixed) and the share of images ordered perfectly.
- equivalence_licence.csv: what the +-0.25 margin licenses: the margin over each effect it must cover,
  symmetric minus keep-top at 25 and at 100 steps on the equivalence images, the per-image correlation of
  the two step counts' recoveries, and the narrowest 90% interval the registered statistic can give.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import norm, spearmanr, t as student_t  # noqa: E402

from fudbench.core.io import write_csv  # noqa: E402
from fudbench.meta.inference import PSEUDO_WEIGHT, holm, mean_interval  # noqa: E402

RESULTS = HERE / "results"
FAMILIES = {  # members from best to worst (the known order)
    "oracle_displaced": ["cue_d0", "cue_d4", "cue_d8", "cue_d12", "cue_d16"],
    "oracle_blocks": ["cue_b00", "cue_b25", "cue_b50", "cue_b75", "cue_b100"],
}
HIGHER_BETTER = {
    "fud": True,
    "fud@fud_draw1": True,
    "fud_avg2": True,
    "fud@fud_100": True,
    "fud_symmetric": True,
    "fud_bottom": False,
    "insertion": True,
    "deletion": False,
    "road_morf": False,
    "road_lerf": True,
}
COMPARISONS = (
    ("primary", "fud_symmetric", "fud_avg2"),
    ("S1 bottom vs avg2", "fud_bottom", "fud_avg2"),
    ("S2 symmetric vs single", "fud_symmetric", "fud"),
    ("S3 avg2 vs single", "fud_avg2", "fud"),
)
REPLICATES = {"cnn": "cnn_seed1", "vit": "vit_seed1"}
MARGIN = 0.25


def wide(per_image: pd.DataFrame, model: str, curve: str, members: list[str]) -> pd.DataFrame:
    """image x member scores of one curve; fud_avg2 is the mean of the two keep-top draws."""
    d = per_image[per_image["model"] == model]
    if curve == "fud_avg2":
        a, b = (wide(per_image, model, c, members) for c in ("fud", "fud@fud_draw1"))
        return ((a + b) / 2).dropna()
    w = d[d["curve"] == curve].pivot_table(index="image", columns="explainer", values="score")
    return w.reindex(columns=members).dropna()


def recovery(per_image: pd.DataFrame, model: str, curve: str, members: list[str]) -> pd.Series:
    """Per image: Spearman of the oriented scores with the known order (best member first); 0 if tied."""
    w = wide(per_image, model, curve, members)
    sign = 1.0 if HIGHER_BETTER[curve] else -1.0
    truth = -np.arange(len(members), dtype=float)  # the best member has the highest truth
    out = {}
    for image, row in w.iterrows():
        v = sign * row.to_numpy(dtype=float)
        out[image] = 0.0 if np.ptp(v) == 0 else float(spearmanr(v, truth)[0])
    return pd.Series(out, dtype=float)


def difference(per_image, model, family, challenger, comparator, members=None) -> pd.Series:
    members = members or FAMILIES[family]
    a, b = recovery(per_image, model, challenger, members), recovery(per_image, model, comparator, members)
    return (a - b).dropna()


def registered_gate(gate: pd.DataFrame) -> dict:
    """{(model, family): passes} by 4db201a's rule: intervention ok and the order interval above 0."""
    return {(r.model, r.family): bool(r.intervention_ok and r.order_low > 0) for r in gate.itertuples()}


def registered_gate_cells(primary: pd.DataFrame, replication: pd.DataFrame, gate: pd.DataFrame) -> pd.DataFrame:
    ok = registered_gate(gate)
    rows = []
    for run, per_image in (("primary", primary), ("replication", replication)):
        for endpoint, challenger, comparator in COMPARISONS:
            first = len(rows)
            for model in sorted(per_image["model"].unique()):
                for family in FAMILIES:
                    if not ok.get((model, family), False):
                        continue
                    d = difference(per_image, model, family, challenger, comparator).to_numpy()
                    est, lo, hi, p = mean_interval(d, (-2.0, 2.0), 0.95)
                    rows.append(
                        {
                            "run": run,
                            "endpoint": endpoint,
                            "challenger": challenger,
                            "comparator": comparator,
                            "model": model,
                            "family": family,
                            "estimate": est,
                            "ci_low": lo,
                            "ci_high": hi,
                            "p": p,
                            "n_images": len(d),
                        }
                    )
            cell = rows[first:]
            for row, q in zip(cell, holm([r["p"] for r in cell])):
                row["p_holm"] = float(q)
                row["n_cells"] = len(cell)
                better = "challenger better" if row["estimate"] > 0 else "comparator better"
                row["verdict"] = better if q < 0.05 else "undecided"
                row["in_committed_endpoint"] = row["family"] == "oracle_blocks"
    return pd.DataFrame(rows)


def registered_se(values: np.ndarray, bounds=(-2.0, 2.0)) -> float:
    """The standard error of mean_interval's statistic (its variance with the two pseudo-observations)."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    x = np.concatenate([v, bounds])
    w = np.concatenate([np.ones(n), [PSEUDO_WEIGHT, PSEUDO_WEIGHT]])
    centre = (w * x).sum() / w.sum()
    var = (w * (x - centre) ** 2).sum() / (w.sum() - 1)
    return float(np.sqrt(var / n))


def pooled_registered(primary, replication) -> pd.DataFrame:
    rows = []
    z = float(norm.ppf(0.975))
    for endpoint, challenger, comparator in COMPARISONS:
        for model, twin in REPLICATES.items():
            a = difference(primary, model, "oracle_blocks", challenger, comparator).to_numpy()
            b = difference(replication, twin, "oracle_blocks", challenger, comparator).to_numpy()
            est, lo, hi, p = mean_interval(np.concatenate([a, b]), (-2.0, 2.0), 0.95)
            het = a.mean() - b.mean()
            plain = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
            reg = np.hypot(registered_se(a), registered_se(b))
            rows.append(
                {
                    "endpoint": endpoint,
                    "model": model,
                    "family": "oracle_blocks",
                    "pooled": est,
                    "pooled_low": lo,
                    "pooled_high": hi,
                    "n_images": len(a) + len(b),
                    "heterogeneity": het,
                    "plain_low": het - z * plain,
                    "plain_high": het + z * plain,
                    "registered_low": het - z * reg,
                    "registered_high": het + z * reg,
                }
            )
    return pd.DataFrame(rows)


def ceiling(primary, replication) -> pd.DataFrame:
    members = FAMILIES["oracle_displaced"][1:]
    curves = ("fud", "fud_avg2", "fud_bottom", "fud_symmetric", "insertion", "deletion", "road_morf", "road_lerf")
    rows = []
    for run, per_image in (("primary", primary), ("replication", replication)):
        for model in sorted(per_image["model"].unique()):
            for curve in curves:
                r = recovery(per_image, model, curve, members).to_numpy()
                est, lo, hi, _ = mean_interval(r, (-1.0, 1.0), 0.95)
                rows.append(
                    {
                        "run": run,
                        "model": model,
                        "curve": curve,
                        "recovery": est,
                        "ci_low": lo,
                        "ci_high": hi,
                        "perfect_share": float((r > 1 - 1e-9).mean()),
                        "n_images": len(r),
                    }
                )
    return pd.DataFrame(rows)


def equivalence_licence(primary, equivalence, cells: pd.DataFrame) -> pd.DataFrame:
    rows = []
    effects = cells[(cells["run"] == "primary") & (cells["endpoint"] == "primary") & (cells["verdict"] != "undecided")]
    for r in effects.itertuples():
        rows.append(
            {
                "quantity": f"margin / primary effect, {r.model} {r.family}",
                "value": MARGIN / abs(r.estimate),
                "low": np.nan,
                "high": np.nan,
            }
        )
    # symmetric minus keep-top on the equivalence images, keep-top at 25 and at 100 steps
    merged = pd.concat([primary, equivalence[equivalence["curve"] == "fud@fud_100"]], ignore_index=True)
    for model in ("cnn", "vit"):
        images = set(equivalence.loc[equivalence["model"] == model, "image"])
        sub = merged[merged["image"].isin(images)]
        for family in FAMILIES:
            for top in ("fud", "fud@fud_100"):
                d = difference(sub, model, family, "fud_symmetric", top).to_numpy()
                est, lo, hi, _ = mean_interval(d, (-2.0, 2.0), 0.95)
                steps = 25 if top == "fud" else 100
                rows.append(
                    {
                        "quantity": f"symmetric(25) - keep-top({steps}), {model} {family}",
                        "value": est,
                        "low": lo,
                        "high": hi,
                    }
                )
            r25 = recovery(sub, model, "fud", FAMILIES[family])
            r100 = recovery(sub, model, "fud@fud_100", FAMILIES[family])
            both = pd.concat([r25, r100], axis=1, join="inner").to_numpy()
            rows.append(
                {
                    "quantity": f"corr of per-image recovery 25 vs 100 steps, {model} {family}",
                    "value": float(np.corrcoef(both[:, 0], both[:, 1])[0, 1]),
                    "low": np.nan,
                    "high": np.nan,
                }
            )
    n = int(equivalence.groupby("model")["image"].nunique().min())
    half = float(student_t.ppf(0.95, n - 1)) * registered_se(np.zeros(n))
    rows.append(
        {"quantity": f"narrowest 90% half-width at n = {n} (all d_i = 0)", "value": half, "low": np.nan, "high": np.nan}
    )
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (relative: to where you run the command)")
    args = ap.parse_args(argv)
    out = Path(os.environ.get("FUD_CALLER_CWD", ".")) / args.out
    out.mkdir(parents=True, exist_ok=True)
    primary = pd.read_parquet(RESULTS / "per_image_primary.parquet")
    replication = pd.read_parquet(RESULTS / "per_image_replication.parquet")
    equivalence = pd.read_parquet(RESULTS / "per_image_equivalence.parquet")
    gate = pd.read_csv(RESULTS / "gate.csv")
    cells = registered_gate_cells(primary, replication, gate)
    tables = {
        "registered_gate_cells": cells,
        "pooled_registered": pooled_registered(primary, replication),
        "ceiling": ceiling(primary, replication),
        "equivalence_licence": equivalence_licence(primary, equivalence, cells),
    }
    for name, table in tables.items():
        write_csv(out / f"{name}.csv", table, index=False, float_format="%.4f")
        print(f"{name}.csv\n{table.to_string(index=False, float_format=lambda x: f'{x:.4f}')}\n")


if __name__ == "__main__":
    main()
