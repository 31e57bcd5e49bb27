"""The protocol loop (fudbench.protocols.base): every protocol backs off when a
batch runs out of GPU memory and then records exactly what a run without the
failure records; other errors propagate; the first batch is fitted to the free
GPU memory; which protocols need an attribution."""
import logging
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.imputers import GaussianNoiseImputer, Imputer
from fudbench.protocols import TopKCurve
from fudbench.protocols.base import Shard
from fudbench.protocols.ffidelity import FidelityCurve
from fudbench.protocols.idsds import IDSDS
from fudbench.protocols.infidelity import Infidelity
from fudbench.protocols.road import ROAD
from fudbench.protocols.sensitivity_n import SensitivityN
from fudbench.protocols.srg import SRG
from fudbench.protocols.stored import StoredCurve

PROTOCOLS = {
    "topk_keep": lambda bs: TopKCurve("k", [0.25, 0.5, 0.75], mode="keep", batch_size=bs, keep_samples=True),
    "topk_remove": lambda bs: TopKCurve("r", [0.25, 0.5, 0.75], mode="remove", batch_size=bs, keep_samples=True),
    "road_morf": lambda bs: ROAD([0.2, 0.6], order="morf", batch_size=bs, keep_samples=True),
    "road_lerf": lambda bs: ROAD([0.2, 0.6], order="lerf", batch_size=bs, keep_samples=True),
    "idsds": lambda bs: IDSDS(grid=2, batch_size=bs, keep_samples=True),
    "sensitivity_n": lambda bs: SensitivityN(fractions=(0.25, 0.5), n_subsets=3, batch_size=bs, keep_samples=True),
    "srg": lambda bs: SRG("gauss", segmentation="squares", square_side=4, n_steps=3, n_imputations=2, n_random=2,
                          batch_size=bs),
    "ffid": lambda bs: FidelityCurve("ffid_plus", "plus", sparsities=(0.25, 0.5), n_samples=3, beta=0.5,
                                     batch_size=bs, keep_samples=True),
    # Infidelity batches images of n_perturb = 4 inputs each: 16 -> 4 images per captum call.
    "infidelity": lambda bs: Infidelity(n_perturb=4, batch_size=2 * bs, keep_samples=True),
}
BATCH = 8  # work items per batch, of which only 3 fit (Infidelity: 8 inputs, i.e. 2 images)
LIMITS = {"infidelity": 8}
LIMIT = 3
# What fails: the model (every protocol) or the imputer (all but Infidelity, which perturbs by itself).
FAILING = [(name, part) for name in PROTOCOLS for part in ("model", "imputer")
           if not (name == "infidelity" and part == "imputer")]
ERRORS = {"OutOfMemoryError": lambda: torch.OutOfMemoryError("CUDA out of memory"),
          "RuntimeError": lambda: RuntimeError("CUDA error: out of memory")}


class LimitedModel(torch.nn.Module):
    """The model, failing with error() on every batch of more than `limit` inputs."""

    def __init__(self, model, limit, error):
        super().__init__()
        self.model, self.limit, self.error = model, limit, error

    def forward(self, x):
        if len(x) > self.limit:
            raise self.error()
        return self.model(x)


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
    x, y, attribution = data
    return proto.run(model, x, y, attribution, imputer, image_ids=[5, 2, 9], seed_key=(0, "t", proto.curve))


@pytest.fixture(scope="module")
def data(tiny_cnn):
    g = torch.Generator().manual_seed(4)
    x = torch.rand(3, 3, 8, 8, generator=g)
    with torch.no_grad():
        y = tiny_cnn(x).argmax(1)
    return x, y, torch.randn(3, 3, 8, 8, generator=g)


@pytest.mark.parametrize("name, failing", FAILING)
def test_out_of_memory_backs_off_and_records_equal_an_unfailing_run(name, failing, tiny_cnn, data, caplog):
    imputer = GaussianNoiseImputer(std=0.2, around_image=True)  # stochastic: seeds must follow the items
    ok_proto, flaky_proto = PROTOCOLS[name](BATCH), PROTOCOLS[name](BATCH)
    error = ERRORS["OutOfMemoryError" if failing == "model" else "RuntimeError"]
    limit = LIMITS.get(name, LIMIT)
    flaky_model = LimitedModel(tiny_cnn, limit, error) if failing == "model" else tiny_cnn
    flaky_imputer = LimitedImputer(imputer, limit, error) if failing == "imputer" else imputer

    ok = _run(ok_proto, tiny_cnn, imputer, data)
    with caplog.at_level(logging.WARNING, logger="fudbench.batching"):
        flaky = _run(flaky_proto, flaky_model, flaky_imputer, data)

    assert ok_proto.batch_state.shrinks == 0 and ok_proto.batch_state.size == ok_proto.batch_cap
    state = flaky_proto.batch_state
    assert state.shrinks > 0 and state.size < flaky_proto.batch_cap
    assert "out of memory at batch size" in caplog.text
    pd.testing.assert_frame_equal(ok.records.drop(columns="seconds"), flaky.records.drop(columns="seconds"),
                                  check_exact=True)
    assert (ok.samples is None) == (flaky.samples is None)
    if ok.samples is not None:
        assert np.array_equal(ok.samples, flaky.samples)


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_other_errors_propagate_without_back_off(name, tiny_cnn, data):
    proto = PROTOCOLS[name](BATCH)
    model = LimitedModel(tiny_cnn, 0, lambda: ValueError("not a memory problem"))
    with pytest.raises(ValueError, match="not a memory problem"):
        _run(proto, model, GaussianNoiseImputer(std=0.2), data)
    assert proto.batch_state.shrinks == 0


class EstimatingImputer(GaussianNoiseImputer):
    def bytes_per_sample(self, sample_shape, device):
        return 2.0 ** 20


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_first_batch_is_fitted_to_free_gpu_memory(name, monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 * 2**20, 80 * 2**30))
    proto = PROTOCOLS[name](64)
    on_gpu = SimpleNamespace(is_cuda=True, shape=(3, 3, 8, 8), device=torch.device("cuda"))
    imputer = None if name == "infidelity" else EstimatingImputer()
    state = proto._batch_size(Shard(None, on_gpu, None, imputer, [0, 1, 2], ()))
    # 0.85 * 10 MiB free / 1 MiB per sample; Infidelity has no imputer to estimate
    assert state.size == (proto.batch_cap if imputer is None else 8)


def test_which_protocols_need_an_attribution(tiny_cnn, data):
    assert all(PROTOCOLS[name](BATCH).needs_attribution for name in PROTOCOLS)
    assert not SRG("gauss", kinds=("roms",)).needs_attribution
    assert not StoredCurve("c", pd.DataFrame()).needs_attribution
    x, y, _ = data
    with pytest.raises(ValueError, match="k needs an attribution"):
        _run(PROTOCOLS["topk_keep"](BATCH), tiny_cnn, GaussianNoiseImputer(), (x, y, None))
