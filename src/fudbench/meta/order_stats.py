"""Statistics of a family whose order is known (analysis.meta): which pairs of
members are known to be ordered, how well a metric recovers them, an interval
for that coarse statistic, and the images a pair would need.

A family's members are scored per image (rows: images, columns: members,
oriented so that higher = better in the metric's view).

- Known pairs: `total` families (degrade: less noise is better) order every
  pair of members with different fractions; `best_first` families
  (randomise_model) order only the f = 0 member before each other member:
  how a model with half of its layers re-initialised compares with one with
  all of them is not known by construction.
- Recovery: Spearman's rho of the per-member means with the known order
  (total), or the mean over known pairs of sign(mean better - mean worse)
  (best_first: +1 = every known pair in the known order, -1 = all reversed).
- Interval (`compatible_interval`): both statistics take a handful of values
  (5 members: Spearman moves in steps of 0.1), so a percentile bootstrap of
  them under-covers (tests/test_order_stats.py: 69-77% for a nominal 95% at
  16 images, members close) and shows [1.00, 1.00] for orders that 16 images
  cannot settle.
  Instead every pair of members gets a paired t-interval of its mean
  difference, Bonferroni-corrected over the pairs (simultaneous at `ci`); a
  pair whose interval excludes 0 is resolved. The interval is the range of
  the statistic over every strict order of the members compatible with the
  resolved pairs. When the simultaneous intervals hold, the population order
  is one of them, so coverage is at least `ci` (t approximation aside;
  conservative: it is [lo, hi] over orders, not a sampling distribution).
- Images needed (`images_needed`): per known pair (adjacent levels of a
  total order), the paired two-sided z-test's sample size at power 80% and
  alpha 0.05, n = ((z_0.975 + z_0.8) sd / mean)^2, with the SIGNED mean
  difference: a pair whose mean opposes the known order is "reversed" (no
  number of images makes the metric recover it), one with no mean
  difference "tied".
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from fudbench.meta.ranks import spearman_rows, tie_tolerance

ORDERS = ("total", "best_first")
POWER, ALPHA = 0.8, 0.05
MAX_ENUMERATED = 8  # members: 8! = 40320 orders; beyond that the interval is not computed
_TOL = 1e-12


def known_pairs(fractions, order: str) -> list[tuple[int, int]]:
    """(better, worse) member indices whose order is known; less fraction is better."""
    f = np.asarray(fractions, dtype=float)
    if order == "total":
        return [(i, j) for i in range(len(f)) for j in range(len(f)) if f[i] < f[j]]
    if order == "best_first":
        best = int(np.argmin(f))
        return [(best, j) for j in range(len(f)) if f[j] > f[best]]
    raise ValueError(f"family order must be one of {ORDERS}, got {order!r}")


def adjacent_pairs(fractions, order: str) -> list[tuple[int, int]]:
    """The known pairs whose resolution implies all others: adjacent levels of a
    total order, every known pair of a best_first family."""
    if order != "total":
        return known_pairs(fractions, order)
    f = np.asarray(fractions, dtype=float)
    levels = sorted(set(f.tolist()))
    return [
        (i, j)
        for lo, hi in zip(levels[:-1], levels[1:])
        for i in np.flatnonzero(f == lo)
        for j in np.flatnonzero(f == hi)
    ]


def pairs_concordance_rows(values: np.ndarray, pairs) -> np.ndarray:
    """Mean over `pairs` (better, worse) of sign(better - worse) per row of
    values (..., K); ties (within rounding) count 0. NaN without pairs."""
    v = np.asarray(values, dtype=float)
    if not pairs:
        return np.full(v.shape[:-1], np.nan)
    better, worse = (np.array(p) for p in zip(*pairs))
    d = v[..., better] - v[..., worse]
    return np.where(np.abs(d) <= tie_tolerance(v), 0.0, np.sign(d)).mean(-1)


def recovery_rows(values: np.ndarray, fractions, order: str) -> np.ndarray:
    """The family's recovery statistic of each row of member values (higher = better)."""
    if order == "total":
        return spearman_rows(values, -np.asarray(fractions, dtype=float))
    return pairs_concordance_rows(values, known_pairs(fractions, order))


@lru_cache(maxsize=None)
def _orders(k: int) -> np.ndarray:
    """Every strict order of k members as values (P, k): higher value = better."""
    return np.array(list(itertools.permutations(range(k))), dtype=float)


def resolved_pairs(scores: np.ndarray, ci: float = 0.95) -> list[tuple[int, int]]:
    """(better, worse) pairs whose paired t-interval of the mean difference,
    Bonferroni-corrected over all pairs, excludes 0. A pair with the same
    nonzero difference on every image is resolved; images where the
    difference is not finite are left out of that pair."""
    from scipy.stats import t as student_t

    s = np.asarray(scores, dtype=float)
    k = s.shape[1]
    n_pairs = k * (k - 1) // 2
    out = []
    for i, j in itertools.combinations(range(k), 2):
        d = s[:, i] - s[:, j]
        d = d[np.isfinite(d)]
        if len(d) < 2:
            continue
        mean, sd = float(d.mean()), float(d.std(ddof=1))
        half = student_t.ppf(1 - (1 - ci) / (2 * n_pairs), len(d) - 1) * sd / math.sqrt(len(d))
        if abs(mean) > max(half, _TOL * (1 + abs(mean))):
            out.append((i, j) if mean > 0 else (j, i))
    return out


def compatible_interval(scores: np.ndarray, fractions, order: str, ci: float = 0.95) -> tuple[float, float]:
    """(lo, hi) of the recovery statistic over every strict order of the members
    compatible with the resolved pairs (module docstring); the point estimate
    (on the means, ties included) is always inside. NaN, NaN where the point
    estimate is undefined (the metric ties the members: a Spearman of a
    constant), with more than MAX_ENUMERATED members or fewer than two images."""
    s = np.asarray(scores, dtype=float)
    n, k = s.shape
    point = recovery_rows(s.mean(0)[None], fractions, order)
    if k > MAX_ENUMERATED or n < 2 or not np.isfinite(point).all():
        return math.nan, math.nan
    orders = _orders(k)
    ok = np.ones(len(orders), dtype=bool)
    for better, worse in resolved_pairs(s, ci):
        ok &= orders[:, better] > orders[:, worse]
    stats = np.concatenate([recovery_rows(orders[ok], fractions, order), point])
    stats = stats[np.isfinite(stats)]
    return float(stats.min()), float(stats.max())


def power_factor(power: float = POWER, alpha: float = ALPHA) -> float:
    """(z_{1 - alpha/2} + z_power)^2 of a two-sided paired z-test (7.85 at 80%, 0.05)."""
    z = NormalDist().inv_cdf
    return (z(1 - alpha / 2) + z(power)) ** 2


def pair_images_needed(diff, power: float = POWER, alpha: float = ALPHA) -> tuple[float, str]:
    """(images, status) for one pair's per-image differences better - worse:
    status "ok" with n = ceil(factor (sd / mean)^2), at least 2; "reversed"
    (inf) when the mean opposes the known order; "tied" (inf) when there is no
    mean difference; "undefined" (NaN) with fewer than two finite differences."""
    d = np.asarray(diff, dtype=float)
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return math.nan, "undefined"
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if abs(mean) <= _TOL * (1 + float(np.abs(d).max())):
        return math.inf, "tied"
    if mean < 0:
        return math.inf, "reversed"
    return float(max(2, math.ceil(power_factor(power, alpha) * (sd / mean) ** 2))), "ok"


STATUS_ORDER = ("undefined", "reversed", "tied", "ok")  # the family's status: its worst pair's


def images_needed(
    scores: np.ndarray, fractions=None, order: str = "total", power: float = POWER, alpha: float = ALPHA
) -> tuple[float, str]:
    """(images, status) for a family (rows images, columns members, oriented):
    the largest pair_images_needed over its adjacent_pairs and the worst
    status (undefined, reversed, tied, ok, in that order). Without fractions
    the columns are taken in their known order, best first."""
    s = np.asarray(scores, dtype=float)
    fractions = np.arange(s.shape[1]) if fractions is None else fractions
    results = [pair_images_needed(s[:, i] - s[:, j], power, alpha) for i, j in adjacent_pairs(fractions, order)]
    if not results:
        return math.nan, "undefined"
    status = min((r[1] for r in results), key=STATUS_ORDER.index)
    if status == "undefined":
        return math.nan, status
    return max(r[0] for r in results), status
