"""Inference for a mean of a bounded per-image statistic, and Holm's step-down.

The meta-evaluation's claims are means over images of statistics bounded by
construction: a per-image Spearman or concordance in [-1, 1], a difference
of two in [-2, 2], a share of mass in [0, 1]. At the run's sizes (8 to 64
images) their samples are small, skewed and often degenerate: when a family
is recovered on almost every image, most values are exactly 1 and the sample
variance is 0 or tiny, so a plain Student-t interval collapses onto the
point and a percentile bootstrap does the same (simulated: coverage 0.43 at
n = 8 for a true mean of 0.993; 0.87-0.91 in the "close, in order" cases).

`mean_interval` keeps the t-interval's centre (the sample mean) and widens
its variance with two pseudo-observations at the ends of the statistic's
range, weight PSEUDO_WEIGHT each (a variance floor that is large near the
bounds, where the sample variance is least trustworthy, and negligible in
the middle of the range as n grows). The same statistic gives the p-value,
so the interval excludes 0 exactly when p < 1 - ci. Coverage and width are
simulated at n = 8, 16, 32 in scenarios with interior true means from 0 to
0.85 (recovery) and -0.5 to 0.85 (differences) (tests/test_inference.py;
docs/meta_evaluation.md, "The interval"): coverage 0.945-1.00 (asserted >=
0.94; 600 draws each), widths about 1.0-1.3 x the plain t-interval's in the
middle of the range for a recovery (up to 1.5 x for a difference at n = 8),
nearer the bounds wider on purpose (the variance floor).

`holm` adjusts a family of p-values (Holm 1979): strong control of the
family-wise error rate at any dependence between the tests. The claims table
states each claim's family (its cells over models and families) and decides
on the adjusted p-values; `simultaneous_level` gives the Bonferroni level of
intervals shown beside them (Holm can reject where such an interval still
touches 0; the verdict follows Holm).
"""

from __future__ import annotations

import math

import numpy as np

PSEUDO_WEIGHT = 0.25


def mean_interval(
    values, bounds: tuple[float, float] = (-1.0, 1.0), ci: float = 0.95, pseudo_weight: float = PSEUDO_WEIGHT
) -> tuple[float, float, float, float]:
    """(mean, low, high, p) of the finite values: the t-interval at `ci` whose
    variance includes two pseudo-observations at `bounds` (weight
    `pseudo_weight` each), clipped to `bounds`; p is the two-sided p-value of
    mean = 0 under the same statistic. NaNs with fewer than two values."""
    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    lo_b, hi_b = (float(b) for b in bounds)
    if not lo_b < hi_b:
        raise ValueError(f"bounds must be (low, high) with low < high, got {bounds}")
    if len(v) and (v.min() < lo_b - 1e-9 or v.max() > hi_b + 1e-9):
        raise ValueError(f"values outside the statistic's bounds {bounds}: [{v.min():g}, {v.max():g}]")
    n = len(v)
    if n < 2:
        return (float(v.mean()) if n else math.nan), math.nan, math.nan, math.nan
    mean = float(v.mean())
    x = np.concatenate([v, [lo_b, hi_b]])
    w = np.concatenate([np.ones(n), [pseudo_weight, pseudo_weight]])
    centre = float((w * x).sum() / w.sum())
    var = float((w * (x - centre) ** 2).sum() / (w.sum() - 1))
    se = math.sqrt(var / n)
    half = float(student_t.ppf(1 - (1 - ci) / 2, n - 1)) * se
    p = float(2 * student_t.sf(abs(mean) / se, n - 1)) if se > 0 else (0.0 if mean != 0 else 1.0)
    return mean, max(lo_b, mean - half), min(hi_b, mean + half), p


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order; NaN stays NaN and is
    not counted in the family)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if not m:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def simultaneous_level(ci: float, m: int) -> float:
    """Bonferroni's per-interval level for m simultaneous intervals at `ci`."""
    return 1 - (1 - ci) / max(1, int(m))


def decide(
    estimate: float,
    p_adjusted: float,
    alpha: float = 0.05,
    words: tuple[str, str] = ("holds", "fails"),
    n: int | None = None,
) -> str:
    """words[0] / words[1] where the adjusted p is below alpha and the estimate
    above / below 0; otherwise 'undecided' (at n, where given)."""
    if np.isfinite(p_adjusted) and p_adjusted < alpha and np.isfinite(estimate) and estimate != 0:
        return words[0] if estimate > 0 else words[1]
    return "undecided" if n is None else f"undecided at n = {n}"
