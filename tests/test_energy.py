"""The energy score E(x) = -T logsumexp(f(x) / T) and the direction of the OOD
tables built on it (Tables 2, 8, 11).

A flipped sign or a misplaced temperature would invert every OOD table while
keeping every number finite, so the checks here are against hand computations
and against a toy whose OOD set is known by construction.
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.report import sanity
from fudbench.models.energy import energies, energy, ood_metrics
from fudbench.imputers.base import Imputer, compose
from fudbench.protocols.faithfulness.topk import TopKCurve
from fudbench.report.ood_quality import table2_ood
from fudbench.report.paper_tables import OOD_TABLES, intermediate_curves

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


def _hand_energy(row, t):
    """-T log sum_k exp(l_k / T), written out term by term (shifted by the max for large logits)."""
    top = max(row) / t
    return -t * (top + math.log(sum(math.exp(v / t - top) for v in row)))


LOGITS = [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, 4.0, 0.5], [1000.0, 1000.0, 999.0]]


@pytest.mark.parametrize("t", [0.5, 1.0, 2.0, 7.5])
def test_energy_equals_hand_computation(t):
    got = energy(torch.tensor(LOGITS, dtype=torch.float64), temperature=t).numpy()
    want = [_hand_energy(r, t) for r in LOGITS]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_energy_two_worked_values():
    """Numbers worked out on paper, at T = 2: E([0, 0, 0]) = -2 log 3, and
    E([1, 2, 3]) = -2 log(e^0.5 + e^1 + e^1.5) = -2 log(1.6487 + 2.7183 + 4.4817) = -4.3605."""
    e = energy(torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], dtype=torch.float64), temperature=2.0)
    assert e[0].item() == pytest.approx(-2 * math.log(3))
    assert e[1].item() == pytest.approx(-2 * math.log(math.exp(0.5) + math.exp(1.0) + math.exp(1.5)))
    assert e[1].item() == pytest.approx(-4.3605, abs=1e-4)


def test_confident_logits_have_lower_energy():
    """The in-distribution side is the low-energy side: a confident logit vector
    has lower energy than a flat one of the same size, at every temperature."""
    confident, flat = torch.tensor([[12.0, 0.0, 0.0]]), torch.tensor([[4.0, 4.0, 4.0]])
    for t in (0.5, 1.0, 3.0):
        assert energy(confident, t).item() < energy(flat, t).item()


def test_low_temperature_tends_to_minus_max_logit():
    e = energy(torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64), temperature=1e-3).item()
    assert e == pytest.approx(-3.0, abs=1e-6)


class FixedLogits(torch.nn.Module):
    """Logits = the first three pixel values of the image, times `scale`."""

    def __init__(self, scale=1.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return self.scale * x.flatten(1)[:, :3]


def test_energies_of_a_model_batched_with_temperature():
    x = torch.rand(7, 3, 2, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    got = energies(FixedLogits(5.0), x, batch_size=3, temperature=2.0)
    want = [_hand_energy((5.0 * x[i].flatten()[:3]).tolist(), 2.0) for i in range(len(x))]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_ood_metrics_hand_computed():
    """ID energies -3, -2; OOD energies -1, -2.5 (score = -energy: ID 3, 2; OOD 1, 2.5).
    AUROC: 3 of the 4 (ID, OOD) pairs have the ID score higher -> 0.75.
    FPR95: accepting both ID images needs threshold 2, which accepts the OOD 2.5 -> 0.5.
    AUPR-In: ranking 3 (in), 2.5 (out), 2 (in), 1 (out): AP = 1/2 * 1 + 1/2 * 2/3 = 5/6.
    AUPR-Out (OOD positive, ranked by energy): -1 (out), -2 (in), -2.5 (out): 1/2 + 1/2 * 2/3."""
    m = ood_metrics([-3.0, -2.0], [-1.0, -2.5])
    assert m["auroc"] == pytest.approx(0.75)
    assert m["fpr95"] == pytest.approx(0.5)
    assert m["aupr_in"] == pytest.approx(5 / 6)
    assert m["aupr_out"] == pytest.approx(5 / 6)


# ------------------------------------------------- end to end: a toy with a known OOD set


class Brightness(torch.nn.Module):
    """Two classes scored by mean brightness: confident on bright (clean) images,
    unsure on images pulled towards grey, so energy rises as the image gets greyer."""

    def forward(self, x):
        s = 20 * (x.mean(dim=(1, 2, 3)) - 0.5)
        return torch.stack([s, -s], dim=1)


class Grey(Imputer):
    """Removed pixels become mid-grey: the samples are out of distribution by construction."""

    name = "grey"

    def fill(self, x, keep_mask, context=None):
        return compose(x, keep_mask, torch.full_like(x, 0.5))


class Identity(Imputer):
    """Removed pixels are put back as they were: a perfect in-distribution
    imputer whose samples are the clean images themselves."""

    name = "identity"

    def fill(self, x, keep_mask, context=None):
        return x.clone()


def _clean_images(n):
    """Bright images (mean brightness in [0.92, 0.95]): the ID set."""
    g = torch.Generator().manual_seed(3)
    level = 0.92 + 0.03 * torch.rand(n, 1, 1, 1, generator=g)
    return (level + 0.01 * (torch.rand(n, 3, 6, 6, generator=g) - 0.5)).clamp(0, 1)


def _toy_records(model, x, curves):
    """Records of the real top-k protocol (energies from its sample_response) for
    {curve: imputer}, removing 30/60/90% of the pixels of a random ranking."""
    y = model(x).argmax(1)
    attribution = torch.rand(x.shape, generator=torch.Generator().manual_seed(4))
    frames = []
    for curve, imputer in curves.items():
        res = TopKCurve(curve, [0.3, 0.6, 0.9], mode="remove").run(
            model, x, y, attribution, imputer, list(range(len(x))), (0, curve)
        )
        frames.append(res.records.assign(model="toy", explainer="ig"))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("table", ["table2_ood", "table8_ood", "table11_ood"])
def test_ood_tables_put_the_known_ood_set_on_the_ood_side(table):
    """Grey-filled samples (brightness at most 0.5 + 0.7 * 0.45 < 0.92) are all
    higher in energy than every clean image: AUROC 1, FPR95 0. Samples identical
    to the clean images: AUROC 0.5 (up to ties), FPR95 near 1. The table's
    arrows say lower AUROC = closer to the data, so the identity row must show
    the lower AUROC."""
    model, x = Brightness(), _clean_images(20)
    labels = intermediate_curves(table)
    grey_curve = "deletion_ratios" if table != "table11_ood" else "road_morf"
    records = _toy_records(model, x, {grey_curve: Grey(), "fud": Identity()})
    clean = {"toy": pd.Series(energies(model, x), index=np.arange(len(x)))}
    present = {c: lab for c, lab in labels.items() if c in set(records["curve"])}
    summary, tex = table2_ood(
        records, clean, present, ["toy"], n_boot=50, ci=0.95, seed=0, pooling="run", **OOD_TABLES[table]
    )
    v = summary.set_index(["evaluator", "metric"])["value"]
    grey, faithful = labels[grey_curve], labels["fud"]
    assert v[grey, "AUROC"] == 1.0 and v[grey, "FPR95"] == 0.0
    assert v[grey, "AUPR-In"] == 1.0 and v[grey, "AUPR-Out"] == 1.0
    assert abs(v[faithful, "AUROC"] - 0.5) < 0.05 and v[faithful, "FPR95"] > 0.9
    shown = sanity.tex_cells("ood", tex)  # {(evaluator, model, metric): (cell, arrow up?)}
    (faithful_auroc, up), (grey_auroc, _) = shown[faithful, "toy", "AUROC"], shown[grey, "toy", "AUROC"]
    assert up is False and shown[faithful, "toy", "FPR95"][1] is True  # AUROC down, FPR95 up = closer to data
    assert faithful_auroc.mean < grey_auroc.mean
