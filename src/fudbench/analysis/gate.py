"""The family gate: a degraded family's order assumes its base map beats random.

A family of known order (analysis.meta: degrade, translate, block_shuffle,
randomise_model) says "less degraded is more faithful" only if the base map
(its best member) carries evidence in the first place: translating or
shuffling a map that is no better than chance changes nothing a metric could
recover, and a metric that "reverses" such a family is not wrong. The gate
asks an independent truth, not any evaluation under test: the share of the
map's mass inside the object mask (analysis.localisation.mass_inside; on the
synthetic benchmark the object decides the class). Per model and family, the
paired per-image difference best member minus `random` (inference.mean_interval,
bounds (-1, 1)) must lie above 0 (unadjusted 95%: the gate is a licence, and
a stricter gate would only drop more families); the table keeps the interval
either way.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.analysis.inference import mean_interval

COLUMNS = ["model", "family", "best_member", "truth", "best_mean", "random_mean", "estimate", "ci_low", "ci_high",
           "p", "passes", "n_images"]


def family_gate(truth: pd.DataFrame, degraded: dict, random_entry: str, truth_name: str = "mass_inside",
                ci: float = 0.95) -> pd.DataFrame:
    """truth: columns model, explainer, image, value (the independent truth per
    map and image); degraded: {explainer: (family, level)}
    (meta.degraded_explainers). One row per (model, family) with COLUMNS."""
    from fudbench.analysis.meta import family_members

    rows = []
    for model, d in truth.groupby("model", sort=True):
        m = d.pivot_table(index="image", columns="explainer", values="value", aggfunc="mean")
        for family, members in family_members(degraded).items():
            best = members[0]
            if best not in m.columns or random_entry not in m.columns:
                continue
            pair = m[[best, random_entry]].dropna()
            diff = (pair[best] - pair[random_entry]).to_numpy()
            est, lo, hi, p = mean_interval(diff, (-1.0, 1.0), ci)
            rows.append({"model": model, "family": family, "best_member": best, "truth": truth_name,
                         "best_mean": float(pair[best].mean()), "random_mean": float(pair[random_entry].mean()),
                         "estimate": est, "ci_low": lo, "ci_high": hi, "p": p,
                         "passes": bool(np.isfinite(lo) and lo > 0), "n_images": len(diff)})
    return pd.DataFrame(rows, columns=COLUMNS)


def passing(gate: pd.DataFrame | None) -> dict[tuple[str, str], bool]:
    """{(model, family): passes} of a gate table (empty without one)."""
    if gate is None or gate.empty:
        return {}
    return {(r.model, r.family): bool(r.passes) for r in gate.itertuples()}
