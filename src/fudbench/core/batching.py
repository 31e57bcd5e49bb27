"""Batches that survive running out of GPU memory.

A FUD job puts as many (image, ratio) masks through the U-Net as memory
allows. How many fit depends on the GPU, its other tenants, the resolution
and the precision, so the batch size is
- chosen up front from the free memory and a per-sample estimate
  (`fit_batch_size`, `measure_bytes_per_sample`), and
- halved whenever a batch still runs out of memory (`run_batched`): the cache
  is freed, the failed batch is retried at the smaller size, and the working
  size is remembered (`AdaptiveBatchSize`) for the rest of the job.

Results do not depend on where the batches are cut as long as `fn` uses
per-sample randomness (seeds per item), which every protocol here does.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

log = logging.getLogger(__name__)

OOM_MESSAGES = ("out of memory", "CUDNN_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_ALLOC_FAILED")


def is_out_of_memory(exc: BaseException) -> bool:
    """True for torch's OutOfMemoryError and for RuntimeErrors that report an
    allocation failure (cuDNN / cuBLAS raise plain RuntimeErrors)."""
    import torch

    oom_type = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in OOM_MESSAGES)


def free_cached_memory() -> None:
    """Return cached blocks to the driver so the retry starts from a clean pool."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass
class AdaptiveBatchSize:
    """The current batch size of a job; shrinks on OOM and stays shrunk, so
    later batches (and later calls sharing this object) do not fail again."""

    size: int
    min_size: int = 1
    shrinks: int = 0

    def __post_init__(self):
        if self.size < 1 or self.min_size < 1:
            raise ValueError(f"batch size must be >= 1, got size={self.size}, min_size={self.min_size}")

    def shrink(self, failed_size: int) -> bool:
        """After a batch of failed_size items ran out of memory: halve that
        size (a short last batch may be below self.size). False if the failed
        batch was already at the minimum."""
        if failed_size <= self.min_size:
            return False
        self.size = min(self.size, max(self.min_size, failed_size // 2))
        self.shrinks += 1
        return True


def run_batched(
    fn: Callable[[Sequence], object],
    items: Sequence,
    batch_size,
    *,
    desc: str = "batch",
    on_oom: Optional[Callable[[int], None]] = None,
) -> list:
    """Call fn on consecutive slices of items; return the results in order.

    batch_size: an int or an AdaptiveBatchSize (shared state, updated in place).
    If fn raises an out-of-memory error, the cache is freed, the batch size is
    halved and the same slice is retried with the smaller size; at the minimum
    size the error is re-raised with a hint. Slices may therefore be smaller
    than requested: callers must not depend on where the cuts fall (write
    results by item, or concatenate the returned list).
    on_oom(new_size), if given, is called after each halving (for tests, logs).
    """
    state = batch_size if isinstance(batch_size, AdaptiveBatchSize) else AdaptiveBatchSize(int(batch_size))
    results = []
    start = 0
    while start < len(items):
        stop = min(start + state.size, len(items))
        failed = None
        try:
            results.append(fn(items[start:stop]))
        except Exception as exc:  # noqa: BLE001 (re-raised below unless it is an OOM)
            if not is_out_of_memory(exc):
                raise
            failed = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if failed is None:
            start = stop
            continue
        # Outside the except block: the traceback (and the tensors its frames
        # hold) is gone, so the cache can really be freed.
        free_cached_memory()
        tried = stop - start
        if not state.shrink(tried):
            raise RuntimeError(
                f"{desc}: out of memory even at batch size {tried} ({failed}); lower the "
                f"resolution or the precision, or free the GPU"
            )
        log.warning("%s: out of memory at batch size %d; retrying with %d", desc, tried, state.size)
        if on_oom is not None:
            on_oom(state.size)
    return results


def fit_batch_size(
    max_batch: int, bytes_per_sample: Optional[float], device, *, fixed_bytes: float = 0.0, headroom: float = 0.85
) -> int:
    """The largest batch <= max_batch whose estimated memory fits in the free
    memory of a CUDA device (times headroom, minus fixed_bytes already needed).
    Without an estimate or on a CPU, max_batch is returned unchanged."""
    import torch

    device = torch.device(device)
    if device.type != "cuda" or not bytes_per_sample or bytes_per_sample <= 0:
        return max(1, int(max_batch))
    free, _total = torch.cuda.mem_get_info(device)
    fit = int((free * headroom - fixed_bytes) // bytes_per_sample)
    return max(1, min(int(max_batch), fit))


def measure_bytes_per_sample(run: Callable[[int], object], device, sizes: tuple[int, int] = (1, 2)) -> Optional[float]:
    """Peak CUDA memory per extra sample: run(b) at two batch sizes, difference
    of their peak allocations divided by the size difference. None on a CPU.
    run(b) must build its own inputs of batch size b and drop them on return."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    peaks = []
    for b in sizes:
        free_cached_memory()
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        run(b)
        torch.cuda.synchronize(device)
        peaks.append(torch.cuda.max_memory_allocated(device) - base)
    per_sample = (peaks[1] - peaks[0]) / (sizes[1] - sizes[0])
    return float(max(per_sample, peaks[0] / sizes[0] * 0.5, 1.0))
