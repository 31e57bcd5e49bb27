"""Kendall's tau (Table 4), as defined in ../shared/spec/paper.md.

Per image: tau between the removal step (fraction removed, increasing) and
the decrease of confidence, so that a strictly decreasing confidence gives
tau = 1. Ties are handled as in tau-b. A constant confidence sequence has no
defined tau: it counts as 0 (and callers report how many there were).
"""

from __future__ import annotations

import numpy as np


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b; nan when either sequence is constant."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("kendall_tau_b needs two 1-D sequences of equal length")
    i, j = np.triu_indices(len(x), k=1)
    sx, sy = np.sign(x[j] - x[i]), np.sign(y[j] - y[i])
    concordant_minus_discordant = np.sum(sx * sy)
    n_x, n_y = np.sum(sx != 0), np.sum(sy != 0)  # pairs untied in x, in y
    if n_x == 0 or n_y == 0:
        return float("nan")
    return float(concordant_minus_discordant / np.sqrt(n_x * n_y))


def removal_tau(removed, confidence) -> float:
    """tau(removal fraction, -confidence); constant confidence -> 0."""
    tau = kendall_tau_b(removed, -np.asarray(confidence, dtype=float))
    return 0.0 if np.isnan(tau) else tau


def is_constant(confidence) -> bool:
    c = np.asarray(confidence, dtype=float)
    return bool(np.all(c == c[0]))
