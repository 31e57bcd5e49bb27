"""Statistics of a family of known order (fudbench.meta.order_stats): the
known pairs, the recovery statistics and the compatible-orders interval,
whose coverage AND width are checked by simulation: at 16 images and four or
five members, the percentile bootstrap of the Spearman under-covers, the
compatible-orders interval does not, and its width is bounded and narrows
with more images (test_compatible_interval_width; the claims' interval of a
per-image mean is simulated in tests/test_inference.py).

The estimand is the statistic of the population means (the members' true
mean scores). Scores per image: member mean + an image effect shared by the
members (images differ in difficulty) + member noise. Every repetition is
seeded, so the tests are deterministic.
"""

import math

import numpy as np
import pytest

from fudbench.analysis.bootstrap import percentile_interval
from fudbench.meta.families import _boot_means, _resample_weights
from fudbench.meta.order_stats import (
    adjacent_pairs,
    compatible_interval,
    known_pairs,
    pairs_concordance_rows,
    recovery_rows,
    resolved_pairs,
)

N_IMAGES = 16


def test_known_pairs_of_a_total_and_a_partial_order():
    f = [0.0, 0.5, 1.0]
    assert known_pairs(f, "total") == [(0, 1), (0, 2), (1, 2)]
    assert known_pairs(f, "best_first") == [(0, 1), (0, 2)]  # 0.5 vs 1.0: not known
    assert adjacent_pairs([0.0, 0.2, 0.2, 0.4], "total") == [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert adjacent_pairs(f, "best_first") == [(0, 1), (0, 2)]
    with pytest.raises(ValueError, match="total"):
        known_pairs(f, "lattice")


def test_recovery_statistics():
    f = [0.0, 0.5, 1.0]
    assert recovery_rows(np.array([[3.0, 2.0, 1.0]]), f, "total")[0] == pytest.approx(1.0)
    assert recovery_rows(np.array([[3.0, 1.0, 2.0]]), f, "total")[0] == pytest.approx(0.5)
    assert recovery_rows(np.array([[3.0, 1.0, 2.0]]), f, "best_first")[0] == 1.0  # both known pairs right
    assert recovery_rows(np.array([[2.0, 1.0, 3.0]]), f, "best_first")[0] == 0.0  # one right, one reversed
    assert pairs_concordance_rows(np.array([[1.0, 1.0, 0.0]]), [(0, 1), (0, 2)])[0] == 0.5  # a tie counts 0


def test_resolved_pairs_and_interval_on_clear_cases():
    rng = np.random.default_rng(0)
    clear = np.array([3.0, 2.0, 1.0, 0.0]) + 0.1 * rng.standard_normal((N_IMAGES, 4))
    assert sorted(resolved_pairs(clear)) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert compatible_interval(clear, [0, 0.2, 0.4, 0.6], "total") == (1.0, 1.0)
    blind = rng.standard_normal((N_IMAGES, 4))  # no member differs: every order is compatible
    assert resolved_pairs(blind) == []
    assert compatible_interval(blind, [0, 0.2, 0.4, 0.6], "total") == (-1.0, 1.0)
    constant = np.tile([2.0, 1.0, 1.0], (N_IMAGES, 1))  # the same differences on every image
    assert sorted(resolved_pairs(constant)) == [(0, 1), (0, 2)]
    lo, hi = compatible_interval(constant, [0, 0.5, 1.0], "total")
    assert (lo, hi) == (0.5, 1.0)  # the tie between members 1 and 2 may go either way
    assert compatible_interval(constant, [0, 0.5, 1.0], "best_first") == (1.0, 1.0)
    assert all(math.isnan(v) for v in compatible_interval(clear[:1], [0, 0.2, 0.4, 0.6], "total"))


def _sample(rep, means, n=N_IMAGES, skewed=False):
    rng = np.random.default_rng(7000 + rep)
    noise = (rng.exponential(1.0, (n, len(means))) - 1.0) if skewed else rng.standard_normal((n, len(means)))
    return np.asarray(means)[None] + rng.standard_normal((n, 1)) + noise


def _coverage(interval, means, fractions, order, n_reps, skewed=False):
    truth = recovery_rows(np.asarray(means, dtype=float)[None], fractions, order)[0]
    hits = []
    for rep in range(n_reps):
        lo, hi = interval(_sample(rep, means, skewed=skewed), rep)
        hits.append(lo - 1e-9 <= truth <= hi + 1e-9)
    return float(np.mean(hits))


def _percentile(fractions, order):
    def interval(s, rep):
        boot = recovery_rows(_boot_means(_resample_weights(len(s), 400, rep), s), fractions, order)
        return percentile_interval(boot, 0.95)

    return interval


# scenarios: member means (per-image noise sd 1 on each member), fractions, order
SCENARIOS = {
    "close, in order": ([0.3, 0.2, 0.1, 0.0], [0, 0.2, 0.4, 0.6], "total"),
    "near tie": ([0.3, 0.3, 0.29, 0.0], [0, 0.2, 0.4, 0.6], "total"),
    "one pair reversed": ([0.5, 0.55, 0.1, 0.0], [0, 0.2, 0.4, 0.6], "total"),
    "five members": ([1.0, 0.9, 0.8, 0.7, 0.0], [0, 0.2, 0.4, 0.6, 0.8], "total"),
    "well apart": ([1.5, 1.0, 0.5, 0.0], [0, 0.2, 0.4, 0.6], "total"),
    "randomisation, f=0 barely best": ([0.1, 0.0, 0.05], [0, 0.5, 1.0], "best_first"),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_compatible_interval_covers_at_least_95_percent(name):
    """200 repetitions at 16 images: coverage >= 0.93 (binomial sd at 0.95:
    0.015) in every scenario, skewed (centred exponential) noise included."""
    means, fractions, order = SCENARIOS[name]
    for skewed in (False, True):
        cov = _coverage(lambda s, rep: compatible_interval(s, fractions, order), means, fractions, order, 200, skewed)
        assert cov >= 0.93, (name, skewed, cov)


def test_percentile_bootstrap_of_the_spearman_under_covers():
    """The reason for the interval above: the percentile bootstrap of a
    four-member Spearman covers the population value in well under 95% of
    the repetitions when members are close (measured: 0.69-0.77 at 200)."""
    means, fractions, order = SCENARIOS["close, in order"]
    assert _coverage(_percentile(fractions, order), means, fractions, order, 100) < 0.8
    means, fractions, order = SCENARIOS["near tie"]
    assert _coverage(_percentile(fractions, order), means, fractions, order, 100) < 0.8


def test_interval_contains_the_point_estimate():
    for rep in range(30):
        s = _sample(rep, [0.4, 0.3, 0.1, 0.0])
        point = recovery_rows(s.mean(0)[None], [0, 0.2, 0.4, 0.6], "total")[0]
        lo, hi = compatible_interval(s, [0, 0.2, 0.4, 0.6], "total")
        assert lo <= point <= hi


# mean width of the compatible-orders interval (of a range of 2) at 16 / 64 images, measured over 200 seeded
# repetitions: 1.95 / 1.79 (close, in order), 1.94 / 1.74 (near tie), 1.77 / 1.03 (one pair reversed),
# 1.53 / 0.91 (five members), 0.80 / 0.23 (well apart), 1.97 / 1.94 (randomisation): the asserted bounds are
# these plus about 0.05. Members 0.1 apart with per-image noise sd 1 are not resolved at 64 images: the card
# says "uninformative" there (width >= 1.8) instead of printing [-1, 1] as a result.
MAX_WIDTH = {
    "close, in order": (2.0, 1.85),
    "near tie": (2.0, 1.8),
    "one pair reversed": (1.85, 1.1),
    "five members": (1.6, 0.97),
    "well apart": (0.86, 0.28),
    "randomisation, f=0 barely best": (2.0, 2.0),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_compatible_interval_width(name):
    """Coverage alone would pass a [-1, 1] interval: its width is bounded too,
    and narrows from 16 to 64 images wherever the members differ enough to be
    resolved."""
    means, fractions, order = SCENARIOS[name]
    widths = []
    for n, limit in zip((N_IMAGES, 64), MAX_WIDTH[name]):
        w = [np.subtract(*compatible_interval(_sample(rep, means, n=n), fractions, order)[::-1]) for rep in range(100)]
        widths.append(float(np.mean(w)))
        assert widths[-1] <= limit, (name, n, widths[-1])
    if name not in ("randomisation, f=0 barely best",):
        assert widths[1] < widths[0] - 0.05, (name, widths)
