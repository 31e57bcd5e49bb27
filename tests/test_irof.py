"""IROF (fudbench.evaluators.faithfulness.irof, fudbench.protocols.faithfulness.irof): the score's value
on known curves, the steps (one per superpixel, K + 1 per image, K its own),
the removal order, and the fill. Its direction, shard invariance, value range
and reduction are checked with every other evaluator in
tests/test_evaluator_registry.py."""

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.evaluators import build_evaluator, spec
from fudbench.evaluators.faithfulness.irof import area_over_curve
from fudbench.core.masks import region_order
from fudbench.core.superpixels import segment


def test_area_over_the_normalised_probability_curve():
    curve = pd.DataFrame({"step": [0, 1, 2], "region_fraction": [0, 0.5, 1], "confidence": [0.8, 0.4, 0.0]})
    assert area_over_curve(curve) == pytest.approx(0.5)  # ratio 1, 0.5, 0
    flat = curve.assign(confidence=0.8)
    assert area_over_curve(flat) == pytest.approx(0.0)  # nothing changes
    instant = curve.assign(confidence=[0.8, 0.0, 0.0])
    assert area_over_curve(instant) == pytest.approx(0.75)  # drop at the first superpixel
    rising = curve.assign(confidence=[0.4, 0.8, 0.8])
    assert area_over_curve(rising) == pytest.approx(-0.75)  # ratio 1, 2, 2: help scores < 0
    assert area_over_curve(curve.iloc[::-1]) == pytest.approx(0.5)  # row order does not matter


def _region_ranking(means, seed):
    """The regions in the order IROF removes them (masks.region_order, one pixel per region)."""
    order, _ = region_order([np.asarray(means)], [np.arange(len(means)).reshape(1, -1)], [seed])
    return order[0].tolist()


def test_regions_ranked_by_mean_with_seeded_ties():
    assert _region_ranking([0.1, 0.9, 0.5], 0) == [1, 2, 0]
    ties = np.zeros(6)
    assert sorted(_region_ranking(ties, 1)) == list(range(6))
    assert _region_ranking(ties, 1) == _region_ranking(ties, 1)
    assert any(_region_ranking(ties, 1) != _region_ranking(ties, s) for s in range(2, 6))


@pytest.fixture(scope="module")
def run(tiny_cnn):
    g = torch.Generator().manual_seed(0)
    # smooth images (SLIC needs regions): a bright square on a grey ramp
    x = torch.linspace(0.2, 0.6, 8).view(1, 1, 1, 8).expand(3, 3, 8, 8).clone()
    x[:, :, 1:4, 1:4] = 0.9
    x[1, :, 4:7, 4:7] = 0.1
    y = tiny_cnn(x).argmax(1)
    a = torch.rand(x.shape, generator=g)
    settings = {"n_segments": 4, "compactness": 10.0}
    ev = build_evaluator("irof", settings, {"ratios": [0.5], "reduction": "abs_sum"}, {}, "cpu")
    records, samples = ev.run(tiny_cnn, x, y, a, [4, 7, 9], (0, "irof"))
    return tiny_cnn, x, y, a, records, samples


def test_one_step_per_superpixel_and_the_first_is_the_clean_image(run):
    model, x, y, a, records, samples = run
    counts = [len(np.unique(lab)) for lab in segment(x.numpy(), "slic", n_segments=4, compactness=10.0)]
    assert records.groupby("image", sort=False).size().tolist() == [k + 1 for k in counts]
    with torch.no_grad():
        clean = torch.softmax(model(x), 1).gather(1, y[:, None]).squeeze(1).numpy()
    first = records[records["step"] == 0].set_index("image").loc[[4, 7, 9]]
    np.testing.assert_allclose(first["confidence"], clean, rtol=1e-5)
    assert (first["removed"] == 0).all() and (first["region_fraction"] == 0).all()
    last = records.loc[records.groupby("image")["step"].idxmax()]
    np.testing.assert_allclose(last["removed"], 1.0)
    np.testing.assert_allclose(last["region_fraction"], 1.0)
    assert records.groupby("image")["removed"].apply(lambda r: bool(np.all(np.diff(r.to_numpy()) > 0))).all()


def test_everything_removed_is_the_image_mean_and_the_regions_go_in_rank_order(run):
    model, x, y, a, records, samples = run
    kept = samples["irof"].astype(np.float32)  # (N, most steps, C, H, W), NaN past an image's last step
    for i, image in enumerate([4, 7, 9]):
        steps = int((records["image"] == image).sum())
        final = kept[i, steps - 1]
        np.testing.assert_allclose(
            final, np.broadcast_to(x[i].mean((1, 2), keepdim=True).numpy(), final.shape), atol=2e-3
        )  # float16 samples
        assert np.isnan(kept[i, steps:]).all()
        # step 1 removes the superpixel of highest mean attribution
        lab = segment(x[i : i + 1].numpy(), "slic", n_segments=4, compactness=10.0)[0]
        score = a[i].abs().sum(0).numpy()
        top = np.argmax([score[lab == k].mean() for k in range(lab.max() + 1)])
        changed = np.abs(kept[i, 1] - kept[i, 0]).sum(0) > 1e-3
        assert changed.any() and set(np.unique(lab[changed])) == {top}


def test_spec_declares_its_curve_fill_and_quick_settings():
    s = spec("irof")
    resolved = s.resolve({})
    assert resolved["fill"] == "image_mean" and s.assets(resolved) == set()
    (curve,) = s.curves(resolved)
    assert curve.higher_is_better and curve.ranking_only and curve.keeps_samples and curve.table == "appendix_scores"
    assert not s.curves(s.resolve({"fill": "noise"}))[0].ranking_only
    assert s.check({"fill": "fog"}, "evaluators.irof")  # an unknown fill is refused at parse time
