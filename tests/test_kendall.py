import numpy as np
import pytest
from scipy.stats import kendalltau

from fudbench.analysis.kendall import is_constant, kendall_tau_b, removal_tau

STEPS = np.arange(1, 10) / 10


def test_strictly_decreasing_confidence_gives_one():
    assert removal_tau(STEPS, np.linspace(0.9, 0.1, 9)) == pytest.approx(1.0)
    assert removal_tau(STEPS, np.linspace(0.1, 0.9, 9)) == pytest.approx(-1.0)


def test_hand_example():
    # confidence 0.9, 0.7, 0.8, 0.1 over 4 steps: of 6 pairs, (2,3) is discordant -> (5 - 1) / 6
    assert removal_tau([1, 2, 3, 4], [0.9, 0.7, 0.8, 0.1]) == pytest.approx(4 / 6)


def test_constant_sequence_counts_as_zero():
    assert np.isnan(kendall_tau_b(STEPS, np.full(9, 0.3)))
    assert removal_tau(STEPS, np.full(9, 0.3)) == 0.0
    assert is_constant(np.full(9, 0.3)) and not is_constant(np.arange(9))


def test_matches_scipy_tau_b_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.integers(0, 4, size=9).astype(float)
        if is_constant(y):
            continue
        assert kendall_tau_b(STEPS, y) == pytest.approx(kendalltau(STEPS, y).statistic)
