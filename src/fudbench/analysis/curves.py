"""Scores of confidence curves.

- normalised_auc: trapezoid area divided by the x range. On a uniform grid
  over [0, 1] with n points this equals RISE's (sum - first/2 - last/2)/(n-1).
- FUD score (Table 7): per image the normalised AUC of confidence over the
  kept fractions rho; higher is better.
- Insertion (higher better) / Deletion (lower better): normalised AUC over
  the inserted / removed fraction.
- Sen-N (higher better): the image's Pearson correlation averaged over n.
- INFID (lower better): the image's infidelity.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# curve name in the records -> (name in the tables, higher is better, per-image score of its rows)
CURVE_SCORES = {
    "fud": ("FUD", True, lambda g: normalised_auc(g["kept"], g["confidence"])),
    "insertion": ("Insertion", True, lambda g: normalised_auc(g["kept"], g["confidence"])),
    "deletion": ("Deletion", False, lambda g: normalised_auc(g["removed"], g["confidence"])),
    "sensitivity_n": ("Sen-N", True, lambda g: float(g["correlation"].mean())),
    "infidelity": ("INFID", False, lambda g: float(g["infidelity"].mean())),
}
# curves whose 9 removal steps are the "intermediate samples" of an evaluator
# (Kendall tau, Table 4): curve -> evaluator label
TAU_CURVES = {"deletion_ratios": "INS/DEL", "fud": "FUD"}
# every evaluator's intermediate samples (OOD and quality, Tables 2 and 3)
INTERMEDIATE_CURVES = {"deletion_ratios": "INS/DEL", "sensitivity_n": "Sen-N", "infidelity": "INFID", "fud": "FUD"}


def normalised_auc(x, y) -> float:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    order = np.argsort(x)
    x, y = x[order], y[order]
    span = x[-1] - x[0]
    if span <= 0:
        raise ValueError("AUC needs at least two distinct x values")
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2) / span)


def per_image_scores(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, explainer, curve, image): the curve's score and,
    for the TAU_CURVES, Kendall's tau of its removal sequence."""
    from fudbench.analysis.kendall import is_constant, removal_tau

    rows = []
    keys = ["model", "explainer", "curve", "image"]
    for (model, explainer, curve, image), g in records.groupby(keys, sort=True):
        row = {"model": model, "explainer": explainer, "curve": curve, "image": image}
        if curve in CURVE_SCORES:
            row["score"] = CURVE_SCORES[curve][2](g)
        if curve in TAU_CURVES:
            row["tau"] = removal_tau(g["removed"].to_numpy(), g["confidence"].to_numpy())
            row["constant"] = is_constant(g["confidence"].to_numpy())
        rows.append(row)
    return pd.DataFrame(rows)
