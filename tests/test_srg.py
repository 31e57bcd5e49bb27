"""SRG / R-OMS superpixel pixel flipping (seeds/002): steps, superpixels,
known answers on a model with known gradients, seeding and the relevance gains."""

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from fudbench.analysis.curves import CURVE_SCORES, per_image_scores
from fudbench.evaluators.faithfulness.srg import relevance_gains
from fudbench.imputers import ImputeContext, Imputer, MeanImputer, UniformNoiseImputer
from fudbench.imputers.base import compose
from fudbench.protocols.faithfulness.srg import SRG, occlusion_steps
from fudbench.core.superpixels import region_means as superpixel_relevance
from fudbench.core.superpixels import segment as superpixels

from numerics_support import assert_records_close

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


def _blocks(n=12, seed=0):
    """16x16 images made of 4x4 blocks of random brightness (plus a little noise)."""
    g = torch.Generator().manual_seed(seed)
    levels = 0.1 + 0.8 * torch.rand(n, 1, 4, 4, generator=g)
    x = F.interpolate(levels, scale_factor=4, mode="nearest").expand(n, 3, 16, 16)
    return (x + 0.02 * torch.rand(x.shape, generator=g)).clamp(0, 1), g


def _run(proto, model, x, y, a, explainer="e", ids=None, imputer=None):
    ids = list(range(len(x))) if ids is None else ids
    rec = proto.run(
        model, x, y, a, imputer or MeanImputer([0.5] * 3), ids, (0, "evaluate", "m", explainer, "srg", proto.curve)
    ).records
    rec.insert(0, "model", "m")
    rec.insert(1, "explainer", explainer)
    return rec


def test_occlusion_steps_are_zero_geomspace_and_all():
    assert occlusion_steps(1) == [0, 1]
    steps = occlusion_steps(16)
    assert steps[0] == 0 and steps[-1] == 16 and steps == sorted(set(steps))
    # geomspace(1, 16, 15) = 1, 1.22, 1.49, 1.81, 2.21, 2.69, 3.28, 4, 4.88, 5.94, 7.25, 8.83, 10.8, 13.1, 16
    assert steps == [0, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 16]
    assert occlusion_steps(500) == [0, 1, 2, 4, 6, 9, 14, 22, 35, 54, 85, 132, 206, 321, 500]
    with pytest.raises(ValueError):
        occlusion_steps(0)


def test_superpixels_squares_and_slic_give_consecutive_labels():
    x, _ = _blocks(2)
    sq = superpixels(x.numpy(), "squares", square_side=4)
    assert len(sq) == 2 and sq[0].max() == 15 and np.all(np.bincount(sq[0].ravel()) == 16)
    odd = superpixels(np.zeros((1, 3, 10, 10)), "squares", square_side=4)[0]
    assert odd.max() == 8 and odd[9, 9] == 8  # partial squares at the edge are their own superpixels
    sl = superpixels(x.numpy(), "slic", n_segments=16, compactness=10)
    for lab in sl:
        assert lab.shape == (16, 16) and lab.min() == 0 and set(np.unique(lab)) == set(range(lab.max() + 1))
        assert lab.max() >= 3
    with pytest.raises(ValueError, match="segmentation"):
        superpixels(x.numpy(), "sam")


def test_superpixel_relevance_is_the_mean_and_non_finite_is_least_relevant():
    labels = np.array([[0, 0], [1, 2]])
    rel = superpixel_relevance(np.array([[1.0, 3.0], [np.nan, -1.0]]), labels)
    assert rel[0] == 2.0 and rel[1] == -np.inf and rel[2] == -1.0


def test_oracle_attribution_gives_mif_below_roms_below_lif(brightness_classifier):
    """The brightness model's p(class 0) moves with the mean brightness; filling a
    block with 0.5 changes it by (0.5 - block brightness): attribution x - 0.5
    (sign-flipped for class 1) is exact, its negation is the worst ordering."""
    x, _ = _blocks()
    y = brightness_classifier(x).argmax(1)
    oracle = torch.where(y == 0, 1.0, -1.0).view(-1, 1, 1, 1) * (x - 0.5)
    proto = SRG("mean", segmentation="squares", square_side=4, n_random=8)
    pi = per_image_scores(_run(proto, brightness_classifier, x, y, oracle)).pivot(
        index="image", columns="curve", values="score"
    )
    assert (pi["srg_mif__mean"] < pi["srg_roms__mean"]).all()
    assert (pi["srg_roms__mean"] < pi["srg_lif__mean"]).all()
    anti = per_image_scores(_run(proto, brightness_classifier, x, y, -oracle)).pivot(
        index="image", columns="curve", values="score"
    )
    assert (anti["srg_lif__mean"] < anti["srg_mif__mean"]).all()
    # R-OMS depends on the image, not the explainer
    np.testing.assert_array_equal(pi["srg_roms__mean"].to_numpy(), anti["srg_roms__mean"].to_numpy())


def test_random_explainer_has_srg_near_zero(brightness_classifier):
    x, g = _blocks(12, seed=3)
    y = brightness_classifier(x).argmax(1)
    proto = SRG("mean", segmentation="squares", square_side=4, n_random=8)
    oracle = torch.where(y == 0, 1.0, -1.0).view(-1, 1, 1, 1) * (x - 0.5)
    good = relevance_gains(per_image_scores(_run(proto, brightness_classifier, x, y, oracle, "oracle")))
    rand = relevance_gains(
        per_image_scores(_run(proto, brightness_classifier, x, y, torch.randn(x.shape, generator=g), "random"))
    )
    srg_good = good[good.curve == "srg__mean"]["score"]
    srg_rand = rand[rand.curve == "srg__mean"]["score"]
    assert srg_good.mean() > 0.3
    assert abs(srg_rand.mean()) < 3 * srg_rand.std() / np.sqrt(len(srg_rand))
    assert abs(srg_rand.mean()) < 0.25 * srg_good.mean()


def test_records_curves_meet_at_both_ends_and_columns(brightness_classifier):
    x, g = _blocks(3)
    y = brightness_classifier(x).argmax(1)
    proto = SRG("uniform", segmentation="squares", square_side=4, n_random=3, n_imputations=2)
    rec = _run(proto, brightness_classifier, x, y, torch.randn(x.shape, generator=g), imputer=UniformNoiseImputer())
    assert list(rec.columns[2:8]) == ["curve", "image", "step", "kept", "removed", "target"]
    assert {"n_occluded", "n_segments", "removed_pixels"} <= set(rec.columns)
    assert set(rec["curve"]) == {"srg_mif__uniform", "srg_lif__uniform", "srg_roms__uniform"}
    assert set(rec["curve"]) <= set(CURVE_SCORES)
    for _, g_img in rec.groupby("image"):
        first = g_img[g_img.n_occluded == 0]["confidence"]
        last = g_img[g_img.n_occluded == g_img.n_segments]["confidence"]
        assert first.nunique() == 1 and last.nunique() == 1 and len(first) == len(last) == 3
    ends = rec[rec.n_occluded == rec.n_segments]
    assert np.allclose(ends["removed"], 1.0) and np.allclose(ends["removed_pixels"], 1.0)


def test_batched_equals_per_image_and_shard_layout(brightness_classifier):
    x, g = _blocks(4)
    y = brightness_classifier(x).argmax(1)
    a = torch.randn(x.shape, generator=g)
    proto = SRG("uniform", segmentation="squares", square_side=4, n_random=2, n_imputations=2, batch_size=7)
    ids = [10, 11, 12, 13]
    whole = _run(proto, brightness_classifier, x, y, a, ids=ids, imputer=UniformNoiseImputer())
    parts = pd.concat(
        [
            _run(
                proto,
                brightness_classifier,
                x[i : i + 1],
                y[i : i + 1],
                a[i : i + 1],
                ids=[ids[i]],
                imputer=UniformNoiseImputer(),
            )
            for i in range(4)
        ]
    )
    key = ["curve", "image", "step"]
    cols = ["confidence", "prediction", "removed", "removed_pixels"]
    # per image, the fills land in other batches of 7: confidences to float32 rounding (numerics_support)
    assert_records_close(
        whole.sort_values(key)[key + cols].reset_index(drop=True),
        parts.sort_values(key)[key + cols].reset_index(drop=True),
    )


class CountingImputer(Imputer):
    """A deterministic fill that counts the samples it is asked to fill."""

    name = "counting"
    stochastic = False

    def __init__(self):
        self.calls = 0

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        self.calls += len(x)
        return compose(x, keep_mask, torch.full_like(x, 0.5))


def test_deterministic_imputer_is_filled_once_per_point(brightness_classifier):
    x, g = _blocks(1)
    y = brightness_classifier(x).argmax(1)
    imp = CountingImputer()
    proto = SRG("counting", segmentation="squares", square_side=4, n_random=2, n_imputations=5)
    _run(proto, brightness_classifier, x, y, torch.randn(x.shape, generator=g), imputer=imp)
    inner = len(occlusion_steps(16)) - 2  # n = 0 needs no fill, n = K is shared
    assert imp.calls == 1 + (2 + 2) * inner


def test_relevance_gains_from_per_image_scores():
    pi = pd.DataFrame(
        {
            "model": "m",
            "explainer": "e",
            "image": [0, 0, 0, 1, 1],
            "curve": ["srg_mif__telea", "srg_lif__telea", "srg_roms__telea", "srg_mif__telea", "srg_lif__telea"],
            "score": [0.2, 0.7, 0.5, 0.1, 0.9],
        }
    )
    rg = relevance_gains(pi).set_index("curve")
    assert len(rg) == 3  # image 1 lacks its R-OMS: no gains
    assert rg.loc["mrg__telea", "score"] == pytest.approx(0.3)
    assert rg.loc["lrg__telea", "score"] == pytest.approx(0.2)
    assert rg.loc["srg__telea", "score"] == pytest.approx(0.5)
    assert relevance_gains(pi[pi.curve != "srg_roms__telea"]).empty


def test_roms_computed_once_and_replayed_equals_the_full_protocol(brightness_classifier, tmp_path):
    """The workflow's split (rule srg_reference computes R-OMS once per shard,
    each explainer job MIF / LIF and replays it) gives the records of one full run."""
    from fudbench.evaluators.faithfulness.srg import build as build_srg
    from fudbench.core.io import write_parquet
    from fudbench.workflow.pipeline import _targets

    x, g = _blocks(3)
    y = _targets(brightness_classifier, x, None, "prediction")
    a = torch.randn(x.shape, generator=g)
    settings = {
        "segmentation": "squares",
        "n_segments": 4,
        "compactness": 10.0,
        "square_side": 4,
        "n_steps": 15,
        "n_imputations": 2,
        "n_random": 3,
        "reduction": "sum",
        "batch_size": 16,
        "imputers": ["uniform", "telea"],
    }
    ids, key = [5, 6, 7], (0, "evaluate", "m", "e", "srg")
    full, _ = build_srg(settings, {}, {}, "cpu").run(brightness_classifier, x, y, a, ids, key)

    from fudbench.evaluators.base import Evaluator
    from fudbench.evaluators.faithfulness.srg import srg_curves

    roms_only = srg_curves(settings, {}, "cpu", kinds=("roms",))
    assert [p.kinds for p, _ in roms_only] == [("roms",), ("roms",)]
    reference, _ = Evaluator("ref", roms_only).run(brightness_classifier, x, y, None, ids, (0, "srg_reference"))
    assert set(reference["curve"]) == {"srg_roms__uniform", "srg_roms__telea"}
    write_parquet(tmp_path / "ref.parquet", reference)
    split, _ = build_srg(settings, {}, {"srg_reference": str(tmp_path / "ref.parquet")}, "cpu").run(
        brightness_classifier, x, y, a, ids, key
    )
    cols = [c for c in full.columns if c != "seconds"]
    # the replayed R-OMS fills were classified in the reference job's batches, the full run's between its
    # MIF / LIF fills: to float32 rounding (numerics_support)
    assert_records_close(split[cols], full[cols])

    # a reference of other images or other target classes is refused, naming the file
    write_parquet(tmp_path / "short.parquet", reference[reference.image != 7])
    with pytest.raises(ValueError, match=r"short\.parquet holds no srg_roms__uniform records for images \[7\]"):
        build_srg(settings, {}, {"srg_reference": str(tmp_path / "short.parquet")}, "cpu").run(
            brightness_classifier, x, y, a, ids, key
        )
    with pytest.raises(ValueError, match="other target classes"):
        build_srg(settings, {}, {"srg_reference": str(tmp_path / "ref.parquet")}, "cpu").run(
            brightness_classifier, x, (y + 1) % 2, a, ids, key
        )


def test_srg_kinds_are_checked_and_mif_needs_an_attribution(brightness_classifier):
    with pytest.raises(ValueError, match="kinds"):
        SRG("mean", kinds=("mif", "random"))
    with pytest.raises(ValueError, match="kinds"):
        SRG("mean", kinds=())
    assert SRG("mean", kinds=("roms", "mif")).kinds == ("mif", "roms")
    x, _ = _blocks(1)
    with pytest.raises(ValueError, match="attribution"):
        SRG("mean", segmentation="squares", square_side=4, kinds=("lif",)).run(
            brightness_classifier, x, torch.zeros(1, dtype=torch.long), None, MeanImputer([0.5] * 3), [0], (0,)
        )


def test_dataset_mean_spelling_gives_the_records_of_mean(brightness_classifier):
    """`dataset_mean` is `mean` by a descriptive name (imputers.registry.ALIASES):
    R-OMS's random orderings are keyed by the short name, so the two spellings
    give the same records under their own curve names."""
    x, g = _blocks(4, seed=5)
    y = brightness_classifier(x).argmax(1)
    a = torch.randn(x.shape, generator=g)
    runs = {}
    for name in ("mean", "dataset_mean"):
        proto = SRG(name, segmentation="squares", square_side=4, n_random=3)
        rec = _run(proto, brightness_classifier, x, y, a)
        rec["curve"] = rec["curve"].str.replace("dataset_mean", "mean")
        runs[name] = rec.drop(columns=["seconds"])
    pd.testing.assert_frame_equal(runs["mean"], runs["dataset_mean"])
