"""The family gate: a degraded family's order assumes its base map beats random.

A family of known order (analysis.meta: degrade, translate, block_shuffle,
randomise_model) says "less degraded is more faithful" only if the base map
(its best member) carries evidence in the first place: translating or
shuffling a map that is no better than chance changes nothing a metric could
recover, and a metric that "reverses" such a family is not wrong. The gate
asks an independent truth, not any evaluation under test: the share of the
map's mass inside the object mask (analysis.localisation.mass_inside; on the
synthetic benchmark the object decides the class). Per model and family, two
conditions, both on that truth (unadjusted 95%: the gate is a licence, and a
stricter gate would only drop more families; the table keeps the intervals
either way):
- the base carries evidence: the paired per-image difference best member
  minus `random` (inference.mean_interval, bounds (-1, 1)) lies above 0;
- the family's order holds on the truth itself (added after the design
  review of issue 38, before any endpoint cell was read): the mean over
  images of the per-image Spearman of the members' truth values with the
  known order (order_stats.recovery_rows) lies above 0. A base only weakly
  better than random can pass the first condition while its translated
  copies are not ordered image by image (Saliency's d = 0 vs 2 pair was
  reversed on 30% of the images in the review's check).
For the oracle mask both hold by construction (mass inside is 1 at d = 0 and
falls with every shift): its gate is a check of the construction, not of a
model.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.analysis.inference import mean_interval

COLUMNS = ["model", "family", "best_member", "truth", "best_mean", "random_mean", "estimate", "ci_low", "ci_high",
           "p", "order_estimate", "order_low", "order_high", "order_p", "passes", "n_images"]


def family_gate(truth: pd.DataFrame, degraded: dict, random_entry: str, truth_name: str = "mass_inside",
                ci: float = 0.95) -> pd.DataFrame:
    """truth: columns model, explainer, image, value (the independent truth per
    map and image); degraded: {explainer: (family, level)}
    (meta.degraded_explainers). One row per (model, family) with COLUMNS."""
    from fudbench.analysis.meta import family_members, family_order
    from fudbench.analysis.order_stats import recovery_rows

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
            present = [e for e in members if e in m.columns]
            order = {"order_estimate": np.nan, "order_low": np.nan, "order_high": np.nan, "order_p": np.nan}
            if len(present) > 1:
                values = m[present].dropna().to_numpy()
                r = recovery_rows(values, [degraded[e][1] for e in present], family_order(family))
                r = np.where(np.isfinite(r), r, 0.0)   # an image whose truth ties every member: no order
                order = dict(zip(order, mean_interval(r, (-1.0, 1.0), ci)))
            ordered = bool(np.isfinite(order["order_low"]) and order["order_low"] > 0)
            rows.append({"model": model, "family": family, "best_member": best, "truth": truth_name,
                         "best_mean": float(pair[best].mean()), "random_mean": float(pair[random_entry].mean()),
                         "estimate": est, "ci_low": lo, "ci_high": hi, "p": p, **order,
                         "passes": bool(np.isfinite(lo) and lo > 0 and ordered), "n_images": len(diff)})
    return pd.DataFrame(rows, columns=COLUMNS)


def passing(gate: pd.DataFrame | None) -> dict[tuple[str, str], bool]:
    """{(model, family): passes} of a gate table (empty without one)."""
    if gate is None or gate.empty:
        return {}
    return {(r.model, r.family): bool(r.passes) for r in gate.itertuples()}
