"""The protocol loop (fudbench.protocols.base): every protocol backs off when a
batch runs out of GPU memory and then records what a run without the failure
records (to float rounding: tests/numerics_support.py); other errors propagate;
the first batch is fitted to the free GPU memory; which protocols need an
attribution."""

import logging
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.evaluators import EVALUATORS, build_evaluator, spec
from fudbench.imputers import GaussianNoiseImputer, Imputer
from fudbench.protocols.base import Shard
from fudbench.protocols.faithfulness.srg import SRG
from fudbench.protocols.faithfulness.stored import StoredCurve

from numerics_support import assert_records_close, assert_samples_close

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

# The protocols under test are every registered evaluator's, built with its
# quick settings (EvaluatorSpec.quick): a new evaluator is covered here without
# being named.
BATCH = 8  # work items per batch
EVALUATION = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}
FAILING = [(method, part) for method in EVALUATORS for part in ("model", "imputer")]
ERRORS = {
    "OutOfMemoryError": lambda: torch.OutOfMemoryError("CUDA out of memory"),
    "RuntimeError": lambda: RuntimeError("CUDA error: out of memory"),
}


@pytest.fixture(scope="module")
def assets(tmp_path_factory, tiny_cnn, tiny_unet):
    """The files the evaluators may ask for, at the tiny models' 8 px."""
    from fudbench.models.classifiers import save_classifier
    from fudbench.models.score import save_score_model

    d = tmp_path_factory.mktemp("protocol_assets")
    save_classifier(d / "surrogate.pt", tiny_cnn, {"arch": "small_cnn", "width": 4}, 4, 8, {})
    unet_cfg = {
        "block_out_channels": [8, 16],
        "attention": [False, True],
        "layers_per_block": 1,
        "num_train_timesteps": 100,
        "beta_schedule": "linear",
    }
    save_score_model(d / "score.pt", tiny_unet[0], unet_cfg, 8, {})
    images = torch.randint(0, 256, (4, 3, 8, 8), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    np.savez(d / "train.npz", images=images.numpy(), labels=np.zeros(4, np.int64))
    return {"score_model": d / "score.pt", "surrogate": d / "surrogate.pt", "reference_images": d / "train.npz"}


def protocols(method: str, assets: dict, batch: int = BATCH) -> list:
    """(protocol, imputer) of each curve of the registered evaluator, fresh."""
    s = spec(method)
    settings = {**s.quick, "batch_size": batch}
    needed = s.assets(s.resolve(settings)) - s.optional_assets
    return build_evaluator(method, settings, EVALUATION, {k: assets[k] for k in needed}, "cpu").curves


class CountingModel(torch.nn.Module):
    """The model, remembering the largest batch it was called with."""

    def __init__(self, model):
        super().__init__()
        self.model, self.largest = model, 0
        self.eval()

    def forward(self, x):
        self.largest = max(self.largest, len(x))
        return self.model(x)

    @property
    def normalize(self):
        return self.model.normalize


class LimitedModel(torch.nn.Module):
    """The model, failing with error() on every batch of more than `limit` inputs."""

    def __init__(self, model, limit, error):
        super().__init__()
        self.model, self.limit, self.error = model, limit, error
        self.eval()  # as the model it wraps (Quantus refuses models in training mode)

    def forward(self, x):
        if len(x) > self.limit:
            raise self.error()
        return self.model(x)

    @property
    def normalize(self):  # fills defined in the classifier's normalised space read it
        return self.model.normalize


class LimitedImputer(Imputer):
    """The imputer, failing with error() on every batch of more than `limit` samples."""

    def __init__(self, imputer, limit, error):
        self.imputer, self.limit, self.error = imputer, limit, error
        self.stochastic = imputer.stochastic

    def fill(self, x, keep_mask, context):
        if len(x) > self.limit:
            raise self.error()
        return self.imputer.fill(x, keep_mask, context)


def _run(proto, model, imputer, data):
    """Every protocol gets the images' ground-truth masks; those that read them (needs_masks) use them.
    A protocol that explains again (needs_explainer) gets gradient saliency, which calls the model (so
    the failing models fail inside the explainer too)."""
    from fudbench.explainers import build_explainer
    from fudbench.explainers.again import ExplainAgain

    x, y, attribution, masks = data
    explainer = ExplainAgain("sm", build_explainer("sm", {}), {i: i for i in (5, 2, 9)})
    return proto.run(
        model,
        x,
        y,
        attribution,
        imputer,
        image_ids=[5, 2, 9],
        seed_key=(0, "t", proto.curve),
        masks=masks,
        **({"explainer": explainer} if getattr(proto, "needs_explainer", False) else {}),
    )


@pytest.fixture(scope="module")
def data(tiny_cnn):
    g = torch.Generator().manual_seed(4)
    x = torch.rand(3, 3, 8, 8, generator=g)
    with torch.no_grad():
        y = tiny_cnn(x).argmax(1)
    masks = torch.zeros(3, 8, 8)
    masks[0, :4, :4], masks[1, 2:, 3:], masks[2, :, :2] = 1, 1, 1  # a different object per image
    return x, y, torch.randn(3, 3, 8, 8, generator=g), masks


@pytest.mark.parametrize("method, failing", FAILING)
def test_out_of_memory_backs_off_and_records_equal_an_unfailing_run(method, failing, tiny_cnn, data, assets, caplog):
    """Each curve fails at half the largest batch an unfailing run makes, in the
    model or in the imputer, and then records what the unfailing run did (to float rounding)."""
    error = ERRORS["OutOfMemoryError" if failing == "model" else "RuntimeError"]
    for (ok_proto, imputer), (flaky_proto, _) in zip(protocols(method, assets), protocols(method, assets)):
        counting = CountingModel(tiny_cnn)
        ok = _run(ok_proto, counting, imputer, data)
        if failing == "imputer" and imputer is None:
            continue  # the protocol perturbs by itself (Infidelity)
        limit = counting.largest // 2
        if limit == 0:
            continue  # one input per call: nothing to back off to
        flaky_model = LimitedModel(tiny_cnn, limit, error) if failing == "model" else tiny_cnn
        flaky_imputer = LimitedImputer(imputer, limit, error) if failing == "imputer" else imputer
        with caplog.at_level(logging.WARNING, logger="fudbench.core.batching"):
            flaky = _run(flaky_proto, flaky_model, flaky_imputer, data)
        assert ok_proto.batch_state.shrinks == 0 and ok_proto.batch_state.size == ok_proto.batch_cap
        state = flaky_proto.batch_state
        assert state.shrinks > 0 and state.size < flaky_proto.batch_cap, ok_proto.curve
        assert "out of memory at batch size" in caplog.text
        # the flaky run classifies and fills in smaller batches than the unfailing one: the same numbers up to
        # float32 rounding (a CPU's kernels may round by batch size: numerics_support); every id, step,
        # prediction and flag exactly
        assert_records_close(flaky.records.drop(columns="seconds"), ok.records.drop(columns="seconds"))
        assert_samples_close(flaky.samples, ok.samples)


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_other_errors_propagate_without_back_off(method, tiny_cnn, data, assets):
    for (proto, imputer), (probe, _) in zip(protocols(method, assets), protocols(method, assets)):
        counting = CountingModel(tiny_cnn)
        _run(probe, counting, imputer, data)
        if counting.largest == 0:
            continue  # the curve scores with its own model (F-Fidelity's surrogate)
        model = LimitedModel(tiny_cnn, 0, lambda: ValueError("not a memory problem"))
        with pytest.raises(ValueError, match="not a memory problem"):
            _run(proto, model, imputer, data)
        assert proto.batch_state is None or proto.batch_state.shrinks == 0


class EstimatingImputer(GaussianNoiseImputer):
    def bytes_per_sample(self, sample_shape, device):
        return 2.0**20


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_first_batch_is_fitted_to_free_gpu_memory(method, assets, monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 * 2**20, 80 * 2**30))
    for proto, imputer in protocols(method, assets, batch=64):
        on_gpu = SimpleNamespace(is_cuda=True, shape=(3, 3, 8, 8), device=torch.device("cuda"))
        estimating = None if imputer is None else EstimatingImputer()
        state = proto._batch_size(Shard(None, on_gpu, None, estimating, [0, 1, 2], ()))
        # 0.85 * 10 MiB free / 1 MiB per sample; a protocol without an imputer has nothing to estimate
        assert state.size == (proto.batch_cap if estimating is None else min(8, proto.batch_cap)), proto.curve


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_a_protocol_that_needs_an_attribution_refuses_to_run_without_one(method, tiny_cnn, data, assets):
    x, y, _, masks = data
    for proto, imputer in protocols(method, assets):
        if proto.needs_attribution:
            with pytest.raises(ValueError, match=f"{proto.curve} needs an attribution"):
                _run(proto, tiny_cnn, imputer, (x, y, None, masks))
        else:
            _run(proto, tiny_cnn, imputer, (x, y, None, masks))


def test_map_free_protocols_declare_it():
    assert not SRG("gauss", kinds=("roms",)).needs_attribution
    assert SRG("gauss", kinds=("mif", "roms")).needs_attribution
    assert not StoredCurve("c", pd.DataFrame()).needs_attribution


def test_points_with_a_different_number_of_steps_per_image(tiny_cnn, data):
    """A curve whose images have 1, 2 and 3 steps (one per region, say): rows
    for the valid points only, samples NaN past each image's last step, and
    the removed fraction per image and step."""
    from dataclasses import dataclass

    from fudbench.evaluators.base import Evaluator, removed_per_step
    from fudbench.protocols.base import CurveResult, Item, Points, Protocol

    @dataclass
    class Ragged(Protocol):
        curve: str = "ragged"
        batch_size: int = 2

        def evaluate(self, shard, attribution):
            n = len(shard.x)
            steps = np.arange(1, n + 1)
            points = Points.empty(shard.x, steps, keep_samples=True)
            items = [Item(i, j) for i in range(n) for j in range(steps[i])]
            h = shard.x.shape[-1]
            self.fill_items(
                shard,
                items,
                lambda b: torch.stack(
                    [
                        (torch.arange(h * h).view(1, h, h) >= h * h * (it.step + 1) // steps[it.image]).float()
                        for it in b
                    ]
                ),
                points.record,
            )
            removed = (np.arange(n)[None, :] + 1) / steps[:, None]  # per image and step; ignored past the end
            return CurveResult(points.frame(self.curve, shard, kept=1 - removed, removed=removed), points.samples)

    x, y, a, _ = data
    records, samples = Evaluator("ragged", [(Ragged(), GaussianNoiseImputer(std=0.1))]).run(
        tiny_cnn, x, y, a, [5, 2, 9], (0, "ragged")
    )
    assert records.groupby("image", sort=False).size().tolist() == [1, 2, 3]
    assert records["confidence"].notna().all() and (records["prediction"] >= 0).all()
    kept = samples["ragged"]
    assert kept.shape == (3, 3, 3, 8, 8)
    finite = np.isfinite(kept.reshape(3, 3, -1)).all(axis=2)
    assert finite.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    removed = samples["removed_ragged"]
    np.testing.assert_allclose(removed, [[1, np.nan, np.nan], [0.5, 1, np.nan], [1 / 3, 2 / 3, 1]])
    regular = pd.DataFrame({"curve": "c", "image": [1, 1, 2, 2], "step": [0, 1, 0, 1], "removed": [0.2, 0.6, 0.2, 0.6]})
    np.testing.assert_array_equal(removed_per_step(regular, "c"), [0.2, 0.6])  # the same for every image: per step
