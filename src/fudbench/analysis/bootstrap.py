"""Bootstrap confidence intervals of a mean over images (percentile method)."""

from __future__ import annotations

import numpy as np


def bootstrap_ci(values, n_resamples: int = 1000, ci: float = 0.95, seed: int = 0):
    """(mean, low, high). With n_resamples = 0 or < 2 values, low = high = nan."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(v.mean())
    if n_resamples == 0 or len(v) < 2:
        return mean, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_resamples, len(v)))].mean(axis=1)
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return mean, float(lo), float(hi)


def percentile_interval(replicates: np.ndarray, ci: float) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (non-finite ones dropped);
    nan, nan with fewer than two finite replicates."""
    r = replicates[np.isfinite(replicates)]
    if len(r) < 2:
        return float("nan"), float("nan")
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(r, [alpha, 1 - alpha])
    return float(lo), float(hi)
