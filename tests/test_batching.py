"""Out-of-memory back-off: halve the batch, retry, remember; results unchanged."""

import numpy as np
import pytest
import torch

from fudbench.core.batching import (
    AdaptiveBatchSize,
    fit_batch_size,
    is_out_of_memory,
    measure_bytes_per_sample,
    run_batched,
)
from fudbench.imputers.base import ImputeContext, Imputer
from fudbench.protocols import TopKCurve

from numerics_support import assert_records_close

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


def _oom_above(k, calls):
    """A batch function that runs out of memory for batches larger than k."""

    def fn(batch):
        calls.append(len(batch))
        if len(batch) > k:
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {len(batch)} GiB")
        return [v * v for v in batch]

    return fn


def test_back_off_gives_the_same_results_and_remembers_the_size():
    items = list(range(23))
    calls = []
    seen_sizes = []
    state = AdaptiveBatchSize(16)
    out = run_batched(_oom_above(5, calls), items, state, on_oom=seen_sizes.append)
    reference = run_batched(lambda b: [v * v for v in b], items, 16)
    assert sum(out, []) == sum(reference, []) == [v * v for v in items]
    assert seen_sizes == [8, 4]  # 16 -> 8 -> 4, then 4 works
    assert state.size == 4 and state.shrinks == 2
    assert calls[:3] == [16, 8, 4] and max(calls[3:]) == 4  # no further failures once shrunk
    calls.clear()
    run_batched(_oom_above(5, calls), items, state)  # a later call starts at the remembered size
    assert max(calls) == 4


def test_short_last_batch_that_fails_is_halved_from_its_own_size():
    calls = []
    state = AdaptiveBatchSize(10)
    out = run_batched(_oom_above(2, calls), list(range(13)), state)
    assert sum(out, []) == [v * v for v in range(13)]
    assert state.size <= 2


def test_runtime_error_out_of_memory_is_recognised_but_other_errors_propagate():
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))

    def broken(batch):
        raise ValueError("not an OOM")

    with pytest.raises(ValueError, match="not an OOM"):
        run_batched(broken, [1, 2, 3], 2)


def test_out_of_memory_at_batch_size_one_is_reported():
    with pytest.raises(RuntimeError, match="out of memory even at batch size 1"):
        run_batched(_oom_above(0, []), [1, 2, 3], 4, desc="fud curve")


def test_fit_batch_size_uses_free_gpu_memory(monkeypatch):
    assert fit_batch_size(64, 1e9, "cpu") == 64  # CPU: the cap as given
    assert fit_batch_size(64, None, "cuda") == 64  # no estimate: the cap
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 * 2**30, 80 * 2**30))
    assert fit_batch_size(64, 2**30, "cuda") == 8  # 0.85 * 10 GiB / 1 GiB
    assert fit_batch_size(4, 2**30, "cuda") == 4  # never above the cap
    assert fit_batch_size(64, 2**30, "cuda", fixed_bytes=9 * 2**30) == 1  # at least 1
    assert measure_bytes_per_sample(lambda b: None, "cpu") is None


class FlakyZeroImputer(Imputer):
    """Zero fill that runs out of memory for batches larger than k."""

    def __init__(self, k):
        self.k = k
        self.sizes = []

    def fill(self, x, keep_mask, context: ImputeContext):
        self.sizes.append(len(x))
        if len(x) > self.k:
            raise torch.OutOfMemoryError("CUDA out of memory")
        noise = torch.stack(
            [torch.rand(x.shape[1:], generator=torch.Generator().manual_seed(s % 2**31)) for s in context.seeds]
        )
        return torch.where(keep_mask.bool(), x, noise)


def test_topk_curve_backs_off_and_records_equal_an_unfailing_run(cnn_batch):
    model, x, y = cnn_batch
    attribution = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    fractions = [0.25, 0.5, 0.75]
    runs = {}
    for k, batch_size in ((100, 8), (2, 8), (100, 2)):
        imputer = FlakyZeroImputer(k)
        curve = TopKCurve("fud", fractions, mode="keep", batch_size=batch_size, keep_samples=True)
        res = curve.run(model, x, y, attribution, imputer, image_ids=[3, 4, 5], seed_key=(0, "t"))
        runs[k, batch_size] = (res, imputer.sizes, curve.batch_state.size)
    (ok, ok_sizes, ok_size), (flaky, flaky_sizes, flaky_size) = runs[100, 8], runs[2, 8]
    same_cuts, same_cuts_sizes, _ = runs[100, 2]
    assert ok_sizes == [8, 1] and ok_size == 8
    assert flaky_sizes[:3] == [8, 4, 2] and flaky_size == 2
    # after the back-off the classifier sees the batches of an unfailing run at batch size 2: bit for bit
    assert [n for n in flaky_sizes if n <= 2] == same_cuts_sizes == [2, 2, 2, 2, 1]
    cols = ["image", "step", "kept", "confidence", "prediction", "energy", "l2"]
    assert same_cuts.records[cols].equals(flaky.records[cols])
    # the unfailing run at batch size 8 classified in other batches: within float32 rounding (numerics_support)
    assert_records_close(flaky.records[cols], ok.records[cols])
    np.testing.assert_array_equal(ok.samples, flaky.samples)  # seeded per item, filled elementwise: any batch
