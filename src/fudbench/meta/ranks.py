"""Rank statistics along the last axis, with ties within rounding (the
meta-evaluation and the order statistics share them)."""

from __future__ import annotations

import numpy as np


def tie_tolerance(v: np.ndarray) -> np.ndarray:
    """Values closer than this count as tied: means of the same per-image
    values summed in another order (a bootstrap replicate) must tie exactly
    as they do in the point estimate, rounding aside."""
    return 1e-9 * (1.0 + np.abs(v).max(-1, keepdims=True))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks along the last axis (1 = smallest), ties get their average rank."""
    v = np.asarray(values, dtype=float)
    diff = v[..., None, :] - v[..., :, None]  # [..., i, j] = v_j - v_i
    tol = tie_tolerance(v)[..., None]
    less = (diff < -tol).sum(-1)
    equal = (np.abs(diff) <= tol).sum(-1)
    return less + (equal + 1) / 2


def spearman_rows(values: np.ndarray, truth) -> np.ndarray:
    """Spearman correlation of each row of `values` (..., E) with `truth` (E,),
    or with the matching row of `truth` (..., E); NaN where a row (or the
    truth) is constant or has non-finite entries."""
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v).all(-1)
    rv = average_ranks(np.where(np.isfinite(v), v, 0.0))
    rt = average_ranks(np.asarray(truth, dtype=float))
    rv = rv - rv.mean(-1, keepdims=True)
    rt = rt - rt.mean(-1, keepdims=True)
    denom = np.sqrt((rv**2).sum(-1) * (rt**2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rv * rt).sum(-1) / denom
    return np.where(finite & (denom > 1e-12), np.clip(rho, -1.0, 1.0), np.nan)


def spearman(a, b) -> float:
    return float(spearman_rows(np.asarray(a, dtype=float)[None], b)[0])


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between matching rows of x and y (..., E); NaN where either is constant."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[-1], k=1)
    dx, dy = x[..., j] - x[..., i], y[..., j] - y[..., i]
    sx = np.where(np.abs(dx) <= tie_tolerance(x), 0.0, np.sign(dx))
    sy = np.where(np.abs(dy) <= tie_tolerance(y), 0.0, np.sign(dy))
    n_x, n_y = (sx != 0).sum(-1), (sy != 0).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx * sy).sum(-1) / np.sqrt(n_x * n_y)
    return np.where((n_x > 0) & (n_y > 0), tau, np.nan)
