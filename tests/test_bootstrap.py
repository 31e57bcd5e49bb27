"""Bootstrap intervals behave like intervals of a MEAN (analysis.bootstrap and
the tables' own bootstraps).

lo < mean < hi and determinism would also hold for quantiles of the raw values;
what tells the two apart is coverage (an interval of the raw values covers the
true mean nearly always) and width (it does not shrink with n). Every
repetition is seeded, so these tests are deterministic.
"""

from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from fudbench.analysis.bootstrap import bootstrap_ci, percentile_interval
from fudbench.report.ood_quality import table2_ood, table3_quality

N_REPS = 200


def _coverage(interval, true_value, n, n_reps=N_REPS):
    """Fraction of seeded repetitions whose interval contains true_value;
    interval(rep, n) -> (lo, hi)."""
    hits = [lo <= true_value <= hi for lo, hi in (interval(rep, n) for rep in range(n_reps))]
    return float(np.mean(hits))


def _normal_sample(rep, n, mu=2.0, sigma=1.5):
    return np.random.default_rng(1000 + rep).normal(mu, sigma, n)


# ------------------------------------------------------------------ bootstrap_ci


def test_bootstrap_ci_of_a_mean_covers_95_percent():
    """N(2, 1.5^2), n = 40: the percentile interval of the mean covers 2 in
    0.90..0.99 of 200 repetitions (binomial sd at 0.95: 0.015)."""
    cov = _coverage(lambda rep, n: bootstrap_ci(_normal_sample(rep, n), 1000, 0.95, rep)[1:], 2.0, 40)
    assert 0.90 <= cov <= 0.99, cov


def test_bootstrap_ci_width_shrinks_as_one_over_sqrt_n():
    """Width of a 95% interval of a mean = 2 * 1.96 sigma / sqrt(n): 1.47 at
    n = 25, 0.74 at 100, 0.37 at 400 (sigma = 1.5). Averaged over 20
    repetitions, each within 10% of that, so quadrupling n halves it."""
    z = NormalDist().inv_cdf(0.975)
    widths = {}
    for n in (25, 100, 400):
        intervals = [bootstrap_ci(_normal_sample(rep, n), 1000, 0.95, rep)[1:] for rep in range(20)]
        widths[n] = float(np.mean([hi - lo for lo, hi in intervals]))
        assert widths[n] == pytest.approx(2 * z * 1.5 / np.sqrt(n), rel=0.10), (n, widths[n])
    assert widths[25] / widths[100] == pytest.approx(2.0, rel=0.12)
    assert widths[100] / widths[400] == pytest.approx(2.0, rel=0.12)


def test_bootstrap_ci_two_values_spans_them():
    """Two values a < b: resampled means are a, (a+b)/2, b with probabilities
    1/4, 1/2, 1/4, so the 2.5% and 97.5% quantiles are a and b."""
    mean, lo, hi = bootstrap_ci([1.0, 3.0], 2000, 0.95, 0)
    assert (mean, lo, hi) == (2.0, 1.0, 3.0)


def test_bootstrap_ci_edge_cases():
    assert bootstrap_ci([5.0, np.nan, 5.0, np.inf], 100, 0.95, 0) == (5.0, 5.0, 5.0)  # non-finite dropped
    m, lo, hi = bootstrap_ci([4.0], 100, 0.95, 0)
    assert m == 4.0 and np.isnan(lo) and np.isnan(hi)
    m, lo, hi = bootstrap_ci([1.0, 2.0], 0, 0.95, 0)
    assert m == 1.5 and np.isnan(lo) and np.isnan(hi)
    assert all(np.isnan(bootstrap_ci([], 100, 0.95, 0)))


# ------------------------------------------------------------ percentile_interval


def test_percentile_interval_hand_computed():
    """1..101: the 5% and 95% quantiles sit at positions 5 and 95 (0-based), i.e.
    the values 6 and 96; at 50% the quartiles 26 and 76. Non-finite replicates
    are dropped first (the meta-evaluation's undefined correlations)."""
    r = np.arange(1.0, 102.0)
    assert percentile_interval(r, 0.90) == pytest.approx((6.0, 96.0))
    assert percentile_interval(r, 0.50) == pytest.approx((26.0, 76.0))
    with_nan = np.r_[np.nan, r, np.inf, -np.inf]
    assert percentile_interval(with_nan, 0.90) == pytest.approx((6.0, 96.0))
    assert percentile_interval(np.array([0.0, 1.0]), 0.5) == pytest.approx((0.25, 0.75))  # linear interpolation
    assert all(np.isnan(percentile_interval(np.array([np.nan, 3.0]), 0.95)))


# ------------------------------------------------------- the tables' own bootstraps


def test_table3_interval_is_that_of_the_mean():
    """Table 3 resamples images and recomputes the row mean: with one sample
    per image from N(2, 1.5^2) its interval is an interval of a mean, so
    coverage of 2 is near 95% and not ~100%."""

    def interval(rep, n):
        q = pd.DataFrame(
            {
                "evaluator": "FUD",
                "model": "cnn",
                "explainer": "ig",
                "image": np.arange(n),
                "step": 0,
                "PSNR": _normal_sample(rep, n),
            }
        )
        s, _ = table3_quality(q, n_boot=1000, ci=0.95, seed=rep, metrics=("PSNR",))
        return float(s["ci_low"].iloc[0]), float(s["ci_high"].iloc[0])

    cov = _coverage(interval, 2.0, 40)
    assert 0.90 <= cov <= 0.99, cov


def test_table2_auroc_interval_covers_the_true_auroc():
    """ID energies N(0, 1), OOD N(1, 1), one of each per image: the true AUROC
    is Phi(1 / sqrt 2) = 0.760. The images-resampled interval of Table 2 covers
    it in 0.88..0.99 of 100 repetitions (n = 60; the percentile interval of an
    AUROC undercovers slightly at small n)."""
    true_auroc = NormalDist().cdf(1 / np.sqrt(2))

    def interval(rep, n):
        rng = np.random.default_rng(5000 + rep)
        clean = {"cnn": rng.normal(0, 1, n)}
        rec = pd.DataFrame(
            {
                "model": "cnn",
                "explainer": "ig",
                "curve": "fud",
                "image": np.arange(n),
                "step": 0,
                "energy": rng.normal(1, 1, n),
            }
        )
        s, _ = table2_ood(rec, clean, {"fud": "FUD"}, ["cnn"], n_boot=300, ci=0.95, seed=rep)
        r = s[s.metric == "AUROC"].iloc[0]
        return r["ci_low"], r["ci_high"]

    cov = _coverage(interval, true_auroc, 60, n_reps=100)
    assert 0.88 <= cov <= 0.99, cov
