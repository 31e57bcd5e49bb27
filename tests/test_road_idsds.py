"""ROAD and IDSDS protocols, and the five appendix evaluators end to end on a tiny CNN."""

import numpy as np
import pytest
import torch

from fudbench.analysis.curves import APPENDIX_INTERMEDIATE_CURVES, CURVE_SCORES, derived_scores, per_image_scores
from fudbench.evaluators import build_evaluator, configured_curves
from fudbench.evaluators.base import APPENDIX_SAMPLES
from fudbench.imputers import ImputeContext, Imputer, ZeroImputer
from fudbench.imputers.base import compose
from fudbench.protocols.faithfulness.idsds import IDSDS, grid_cells, spearman
from fudbench.protocols.faithfulness.road import ROAD, road_scores

from numerics_support import RECORDS

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


class NeverClassZero(torch.nn.Module):
    """logits = [-10, s, -s], s from the mean brightness: class 0 is never predicted."""

    def forward(self, x):
        s = 8 * (x.mean(dim=(1, 2, 3)) - 0.5)
        return torch.stack([torch.full_like(s, -10.0), s, -s], 1)


class SpyImputer(Imputer):
    """Zero fill that remembers the keep-masks it saw."""

    name = "spy"
    stochastic = False

    def __init__(self):
        self.masks = []

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        self.masks.append(keep_mask.clone())
        return compose(x, keep_mask, torch.zeros_like(x))


def _data(n=3, h=8, w=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return 0.05 + 0.9 * torch.rand(n, 3, h, w, generator=g), torch.randn(n, 3, h, w, generator=g)


# ---------------------------------------------------------------------- ROAD


def test_road_scores_original_prediction_not_class_zero():
    x, a = _data()
    model = NeverClassZero()
    original = model(x).argmax(1)
    assert (original != 0).all()
    explained = torch.zeros(3, dtype=torch.long)  # an explained class that differs from the prediction
    key = ("t", "road_morf")
    rec = (
        ROAD([0.1, 0.5, 0.9], order="morf", batch_size=4)
        .run(model, x, explained, a, ZeroImputer(), [0, 1, 2], key)
        .records
    )
    assert (rec["target"].to_numpy() == np.repeat(original.numpy(), 3)).all()
    assert (rec["explained"] == 0).all()
    # confidence = p(original prediction | zero-filled image), recomputed by hand
    top = torch.argsort(road_scores(a, [0, 1, 2], ("t",)), 1, descending=True)
    for _, row in rec.iterrows():
        i, p = int(row["image"]), [0.1, 0.5, 0.9][int(row["step"])]
        keep = torch.ones(64)
        keep[top[i, : round(p * 64)]] = 0
        filled = x[i : i + 1] * keep.view(1, 1, 8, 8)
        probs = torch.softmax(model(filled), 1)[0]
        assert row["confidence"] == pytest.approx(float(probs[original[i]]), rel=1e-5)
        assert abs(row["confidence"] - float(probs[0])) > 1e-4  # not the reference code's class 0
        assert row["accuracy"] == float(int(probs.argmax()) == int(original[i]))


def test_road_morf_removes_the_top_p_and_lerf_the_bottom():
    x, a = _data(2)
    ids = [4, 5]
    key = ("t", "evaluate", "m", "e", "road")
    scores = road_scores(a, ids, key)
    # min-max normalised channel sum + tiny jitter
    assert scores.min() > -1e-3 and scores.max() < 1 + 1e-3
    top = torch.argsort(scores, 1, descending=True)
    for order in ("morf", "lerf"):
        spy = SpyImputer()
        rec = (
            ROAD([0.25, 0.75], order=order)
            .run(NeverClassZero(), x, torch.ones(2, dtype=torch.long), a, spy, ids, (*key, f"road_{order}"))
            .records
        )
        masks = torch.cat(spy.masks).view(-1, 64)  # pairs in (image, step) order
        for r, (i, p) in enumerate([(0, 0.25), (0, 0.75), (1, 0.25), (1, 0.75)]):
            k = int(p * 64)
            first_k = torch.zeros(64, dtype=torch.bool)
            first_k[top[i, :k]] = True
            removed = masks[r] == 0
            assert torch.equal(removed, first_k if order == "morf" else ~first_k)
        expect = [0.25, 0.75] if order == "morf" else [0.75, 0.25]
        np.testing.assert_allclose(rec["removed"], expect * 2)


def test_road_jitter_breaks_ties_per_image_reproducibly():
    flat = torch.ones(2, 3, 4, 4)
    s1 = road_scores(flat, [0, 1], ("k",))
    assert torch.equal(s1, road_scores(flat, [0, 1], ("k",)))
    assert not torch.equal(s1[0], s1[1]) and s1.std() < 1e-3
    assert torch.equal(road_scores(flat[1:], [1], ("k",))[0], s1[1])


def test_road_batched_equals_per_image_with_noisy_linear():
    from fudbench.imputers import NoisyLinearImputer

    x, a = _data(3)
    proto = ROAD([0.2, 0.6], order="morf", batch_size=4, keep_samples=True)
    key = ("t", "road_morf")
    whole = proto.run(NeverClassZero(), x, torch.ones(3, dtype=torch.long), a, NoisyLinearImputer(), [0, 1, 2], key)
    for i in range(3):
        one = proto.run(
            NeverClassZero(),
            x[i : i + 1],
            torch.ones(1, dtype=torch.long),
            a[i : i + 1],
            NoisyLinearImputer(),
            [i],
            key,
        )
        np.testing.assert_array_equal(one.samples[0], whole.samples[i])  # solved and noised per image
        # classified in a batch of 2 against batches of 4 and 2: to float32 rounding (numerics_support)
        np.testing.assert_allclose(one.records["confidence"], whole.records["confidence"][2 * i : 2 * i + 2], **RECORDS)


# ---------------------------------------------------------------------- IDSDS


def test_grid_cells_partition_the_image():
    for h, w, grid in [(8, 8, 4), (10, 7, 4), (5, 5, 5)]:
        cover = np.zeros((h, w), int)
        for rows, cols in grid_cells(h, w, grid):
            cover[rows, cols] += 1
        assert (cover == 1).all() and len(grid_cells(h, w, grid)) == grid * grid
    with pytest.raises(ValueError, match="grid"):
        grid_cells(4, 4, 5)


class OneCellModel(torch.nn.Module):
    """logit 0 = 10 * sum of cell (1, 2) of a 4x4 grid on 8x8 images; logit 1 = 0."""

    def forward(self, x):
        s = 10 * x[:, :, 2:4, 4:6].sum(dim=(1, 2, 3))
        return torch.stack([s, torch.zeros_like(s)], 1)


@pytest.mark.parametrize("output", ["logit", "probability"])
def test_idsds_matching_attribution_correlates_perfectly(output):
    x, noise = _data(2)
    model = OneCellModel()
    y = torch.zeros(2, dtype=torch.long)
    cell = torch.zeros(1, 1, 8, 8)
    cell[..., 2:4, 4:6] = 1.0
    proto = IDSDS(grid=4, output=output, keep_samples=True)
    res = proto.run(model, x, y, x * cell, ZeroImputer(), [0, 1], ("t", "idsds"))
    rec = res.records
    np.testing.assert_allclose(rec["correlation"], 1.0)
    assert not rec["degenerate"].any() and len(rec) == 32 and res.samples.shape == (2, 16, 3, 8, 8)
    assert (rec[rec.step != 6]["output_drop"].abs() < 1e-6).all() and (rec[rec.step == 6]["output_drop"] > 0).all()
    # the attribution on another cell does not correlate
    wrong = torch.zeros(1, 1, 8, 8)
    wrong[..., 6:8, 0:2] = 1.0
    bad = proto.run(model, x, y, x * wrong, ZeroImputer(), [0, 1], ("t", "idsds")).records
    assert (bad["correlation"] < 0.1).all()
    # a constant attribution has no ranking: degenerate, scored 0
    flat = proto.run(model, x, y, torch.ones_like(x), ZeroImputer(), [0, 1], ("t", "idsds")).records
    assert flat["degenerate"].all() and (flat["correlation"] == 0).all()


def test_idsds_reuses_its_responses_across_attributions():
    """Later explainers of a shard (same model, imputer, images, ids, targets, seed key) reuse the deletions'
    responses: records bit for bit those of a fresh protocol, no forward pass of the model."""
    import pandas as pd

    x, noise = _data(2)
    calls = []

    class Counting(OneCellModel):
        def forward(self, x):
            calls.append(len(x))
            return super().forward(x)

    model, imputer, y, key = Counting(), ZeroImputer(), torch.zeros(2, dtype=torch.long), ("t", "idsds")
    shared = IDSDS(grid=4, keep_samples=True)
    shared.run(model, x, y, noise, imputer, [0, 1], key)
    n_calls = len(calls)
    again = shared.run(model, x, y, x, imputer, [0, 1], key)
    assert len(calls) == n_calls
    fresh = IDSDS(grid=4, keep_samples=True).run(model, x, y, x, imputer, [0, 1], key)
    cols = [c for c in fresh.records.columns if c != "seconds"]
    pd.testing.assert_frame_equal(again.records[cols], fresh.records[cols])
    np.testing.assert_array_equal(again.samples, fresh.samples)
    shared.run(model, x, y, x, imputer, [0, 1], ("other", "key"))  # another seed key: computed again
    assert len(calls) > n_calls


def test_spearman_is_rank_based_with_average_ranks_for_ties():
    from fudbench.protocols.faithfulness.idsds import average_ranks

    np.testing.assert_array_equal(average_ranks([10, 20, 20, 5]), [2, 3.5, 3.5, 1])
    assert spearman([1, 2, 3, 4], [1, 4, 9, 100])[0] == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1])[0] == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) == (0.0, True)


# ------------------------------------------------------------------ evaluators


def _appendix_evaluators() -> dict:
    """{method: quick settings} of every registered evaluator with a curve in the
    appendix tables (intermediate samples or score tables) that needs no asset
    file, from the registry."""
    from fudbench.evaluators import EVALUATORS, spec
    from fudbench.evaluators.base import APPENDIX_SAMPLES

    out = {}
    for method in EVALUATORS:
        s = spec(method)
        resolved = s.resolve(s.quick)
        curves = s.curves(resolved) + s.derived_curves(resolved)
        if s.assets(resolved) - s.optional_assets - {"reference_images"}:
            continue  # needs model files (FUD's score model): tests/test_evaluator_registry.py builds them
        if s.explainer_needed(resolved):
            continue  # explains again (these random maps have no explainer): tests/test_metric_categories.py
        if any(APPENDIX_SAMPLES in c.samples_tables or c.table in ("appendix_scores", "srg_scores") for c in curves):
            out[method] = dict(s.quick)
    return out


SETTINGS = _appendix_evaluators()


def test_appendix_evaluators_run_and_score(cnn_batch, tmp_path):
    model, x, _ = cnn_batch
    np.savez(tmp_path / "train.npz", images=(x.numpy() * 255).astype(np.uint8))
    assets = {"reference_images": tmp_path / "train.npz"}
    y = model(x).argmax(1)
    a = torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    masks = torch.zeros(3, 8, 8)
    masks[:, :4, :4] = 1  # ground-truth masks, for the evaluators that read them (EvaluatorSpec.needs_masks)
    evaluation = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}
    import pandas as pd

    frames, all_samples = [], {}
    for name, settings in SETTINGS.items():
        ev = build_evaluator(name, settings, evaluation, assets, "cpu")
        rec, samples = ev.run(model, x, y, a, [0, 1, 2], (0, "evaluate", "cnn", "e", name), masks=masks)
        assert list(rec.columns[:6]) == ["curve", "image", "step", "kept", "removed", "target"]
        assert list(rec.columns[-5:]) == ["confidence", "prediction", "energy", "l2", "seconds"]
        assert set(rec["curve"]) <= set(CURVE_SCORES), name
        for key, arr in samples.items():
            if not key.startswith("removed_"):
                assert arr.dtype == np.float16 and arr.shape[0] == 3 and arr.shape[2:] == (3, 8, 8)
                assert key in APPENDIX_INTERMEDIATE_CURVES, key
        all_samples.update(samples)
        frames.append(rec.assign(model="cnn", explainer="e"))
    kept = {n for n, c in configured_curves(SETTINGS).items() if APPENDIX_SAMPLES in c.samples_tables}
    assert kept == set(all_samples) - {k for k in all_samples if k.startswith("removed_")}
    records = pd.concat(frames, ignore_index=True)
    pi = per_image_scores(records)
    derived = derived_scores(records, pi)
    from fudbench.evaluators import spec

    expected = {c.name for m, q in SETTINGS.items() for c in spec(m).derived_curves(spec(m).resolve(q))}
    assert {"srg", "road", "idsds", "distill", "gevaert"} <= set(SETTINGS)
    assert set(derived["curve"]) == expected
    assert len(derived) == len(expected) * 3 and np.isfinite(pi["score"]).all() and np.isfinite(derived["score"]).all()
    with pytest.raises(ValueError, match=r"evaluators.distill.fills.*unknown imputer\(s\) \['fog'\]"):
        build_evaluator("distill", {"fills": ["fog"]}, evaluation, {}, "cpu")
