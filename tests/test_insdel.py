"""INS/DEL against a small example computed by hand."""

import numpy as np
import pytest
import torch

from fudbench.analysis.curves import normalised_auc
from fudbench.evaluators.base import removal_fractions
from fudbench.evaluators.faithfulness.insdel import build as build_insdel
from fudbench.imputers import ZeroImputer
from fudbench.protocols import TopKCurve

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


class SumModel(torch.nn.Module):
    """logits = [sum of channel 0, 0]: p(class 0) = sigmoid(sum)."""

    def forward(self, x):
        s = x[:, 0].flatten(1).sum(1)
        return torch.stack([s, torch.zeros_like(s)], 1)


def _example():
    # One 2x2 image; channel 0 = [[1.0, 0.5], [0.25, 0.0]], attribution ranks pixels 0, 1, 2, 3.
    x = torch.zeros(1, 3, 2, 2)
    x[0, 0] = torch.tensor([[1.0, 0.5], [0.25, 0.0]])
    attribution = torch.zeros(1, 3, 2, 2)
    attribution[0, 0] = torch.tensor([[4.0, 3.0], [2.0, 1.0]])
    return x, attribution


def test_deletion_curve_matches_hand_computation():
    x, attribution = _example()
    curve = TopKCurve("deletion", [0, 0.25, 0.5, 0.75, 1.0], mode="remove")
    res = curve.run(SumModel(), x, torch.tensor([0]), attribution, ZeroImputer(), [0], ("t",))
    # Removing the most relevant first leaves sums 1.75, 0.75, 0.25, 0, 0.
    sig = lambda s: 1 / (1 + np.exp(-s))  # noqa: E731
    expected = sig(np.array([1.75, 0.75, 0.25, 0.0, 0.0]))
    np.testing.assert_allclose(res.records["confidence"], expected, rtol=1e-6)
    np.testing.assert_allclose(res.records["removed"], [0, 0.25, 0.5, 0.75, 1.0])
    # RISE's AUC: (sum - first/2 - last/2) / (n - 1)
    rise = (expected.sum() - expected[0] / 2 - expected[-1] / 2) / 4
    assert normalised_auc(res.records["removed"], res.records["confidence"]) == pytest.approx(rise)


def test_insertion_curve_starts_from_blur_and_ends_at_image():
    x, attribution = _example()
    ev = build_insdel(
        {"n_steps": 4, "blur_kernel": 3, "blur_sigma": 1.0, "batch_size": 3},
        {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"},
        {},
        "cpu",
    )
    records, samples = ev.run(SumModel(), x, torch.tensor([0]), attribution, [0], ("t",))
    ins = records[records.curve == "insertion"].sort_values("kept")
    assert list(ins["kept"]) == [0, 0.25, 0.5, 0.75, 1.0]
    assert ins["confidence"].iloc[-1] == pytest.approx(1 / (1 + np.exp(-1.75)))
    # The intermediate deletion samples: zero fill at removal fractions 1 - rho.
    s = samples["deletion_ratios"][0]
    assert s.shape == (3, 3, 2, 2)
    assert float(s[0, 0, 0, 0]) == 0.0 and float(s[0, 0, 0, 1]) == 0.5  # 25% removed: pixel 0 gone
    assert list(samples["removed_deletion_ratios"]) == [0.25, 0.5, 0.75]


def test_removal_fractions_are_complements_sorted():
    assert removal_fractions([0.1, 0.5, 0.9]) == [0.1, 0.5, 0.9]
    assert removal_fractions([0.2, 0.3]) == [0.7, 0.8]
