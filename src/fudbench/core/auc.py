"""Areas under curves, torch- and import-free (the evaluator specs' scores use them)."""

from __future__ import annotations

import numpy as np


def normalised_auc(x, y) -> float:
    """Trapezoid area divided by the x range. On a uniform grid over [0, 1]
    with n points this equals RISE's (sum - first/2 - last/2) / (n - 1)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    order = np.argsort(x)
    x, y = x[order], y[order]
    span = x[-1] - x[0]
    if span <= 0:
        raise ValueError("AUC needs at least two distinct x values")
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2) / span)


def auc_kept(g) -> float:
    """Per image: area under confidence over the kept fraction."""
    return normalised_auc(g["kept"], g["confidence"])


def auc_removed(g) -> float:
    """Per image: area under confidence over the removed fraction."""
    return normalised_auc(g["removed"], g["confidence"])


def mean_of(column: str):
    """Per image: the mean of one records column (e.g. correlation)."""

    def score(g) -> float:
        return float(g[column].mean())

    score.__name__ = f"mean_{column}"
    return score
