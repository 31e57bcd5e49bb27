"""How far each evaluator's intermediate samples stray from the original, per
explainer: a diagnostic for the meta-evaluation.

A removal protocol that fills the removed pixels from a generative model (FUD)
rewards masks that make the image easy to reconstruct, not only masks that
keep the evidence for the class. Kept pixels scattered over the whole image (a
noisy or random attribution map) let the sampler rebuild the image closely;
kept pixels clustered on the object leave whole regions to invent. Comparing
the mean L2(sample, original) and the confidence per explainer at a few kept
fractions shows whether an evaluator's ranking follows that reconstruction
distance. Reads the run's aggregated records (`analysis/records.parquet`).

    ./fud python -m fudbench.meta.reconstruction results/synthetic \
        --curves fud insertion --explainers ig ig_d20 ig_d60 random --kept 0.1 0.3 0.5
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd


def reconstruction_by_explainer(
    records: pd.DataFrame,
    curves: Sequence[str],
    kept: Sequence[float],
    explainers: Sequence[str] | None = None,
    tolerance: float = 0.02,
) -> pd.DataFrame:
    """Mean l2 and confidence per (curve, model, explainer, kept fraction), over
    images. Each record counts for the requested kept fraction nearest to its
    own, if within `tolerance` (curves step on different grids, e.g. insertion
    on 1/32 of the pixels). Columns: curve, model, explainer, kept, l2,
    confidence, n_images."""
    r = records[records["curve"].isin(curves)]
    if explainers is not None:
        r = r[r["explainer"].isin(explainers)]
    targets = np.asarray(sorted(kept), dtype=float)
    nearest = targets[np.abs(r["kept"].to_numpy(float)[:, None] - targets[None, :]).argmin(1)]
    r = r.assign(kept=nearest)[np.abs(r["kept"].to_numpy(float) - nearest) <= tolerance]
    if r.empty:
        raise ValueError(
            f"no records of curves {list(curves)} at kept fractions {list(kept)}"
            + ("" if explainers is None else f" for explainers {list(explainers)}")
        )
    out = (
        r.groupby(["curve", "model", "explainer", "kept"], sort=False)
        .agg(l2=("l2", "mean"), confidence=("confidence", "mean"), n_images=("image", "nunique"))
        .reset_index()
    )
    return out


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="results/<run_name> of a finished run")
    ap.add_argument("--curves", nargs="+", default=["fud", "insertion"])
    ap.add_argument("--explainers", nargs="+", default=None, help="default: all")
    ap.add_argument("--kept", nargs="+", type=float, default=[0.1, 0.3, 0.5])
    ap.add_argument("--tolerance", type=float, default=0.02, help="largest |kept - requested| matched")
    args = ap.parse_args(argv)
    path = args.run / "analysis" / "records.parquet"
    if not path.exists():
        raise SystemExit(f"{path} not found: run the workflow first (rule aggregate_records)")
    table = reconstruction_by_explainer(
        pd.read_parquet(path, columns=["model", "explainer", "curve", "image", "kept", "l2", "confidence"]),
        args.curves,
        args.kept,
        args.explainers,
        args.tolerance,
    )
    wide = table.pivot_table(
        index=["curve", "model", "explainer"], columns="kept", values=["l2", "confidence"], sort=False
    )
    print(wide.round(3).to_string(), flush=True)
    return table


if __name__ == "__main__":
    main()
