"""The top-k curve protocol, shared by FUD, insertion and deletion.

For each fraction f, every image gets a keep-mask from its attribution
ranking: mode 'keep' keeps the top f of the pixels (FUD's rho, RISE
insertion), mode 'remove' removes the top f (RISE deletion). The imputer fills
the removed pixels and the model's softmax confidence in the target class is
recorded, with the energy -logsumexp(logits), the L2 distance to the original
and the imputer's time per sample.

All (image, fraction) pairs are flattened and processed in batches, so a GPU
sees large batches whatever the shard size. Per-sample seeds come from the
image id and the step, not from the position in the batch, so a batch that
runs out of GPU memory is simply retried at half the size (fudbench.batching)
and the results do not change.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from fudbench.analysis.energy import energy
from fudbench.batching import AdaptiveBatchSize, fit_batch_size, run_batched
from fudbench.imputers.base import ImputeContext, Imputer
from fudbench.masks import keep_mask, n_pixels, pixel_order, ranks_from_order, reduce_attribution
from fudbench.seeding import derive_seed

log = logging.getLogger(__name__)


def sample_response(logits: torch.Tensor, target: torch.Tensor, filled: torch.Tensor, original: torch.Tensor):
    """What every protocol records of an intermediate sample: softmax p(target),
    the predicted class, the energy -logsumexp(logits) and the L2 distance to
    the original in [0, 1] space. Returns numpy arrays (confidence, prediction, energy, l2)."""
    logits = logits.float()
    return (torch.softmax(logits, 1).gather(1, target.view(-1, 1)).squeeze(1).cpu().numpy(),
            logits.argmax(1).cpu().numpy(),
            energy(logits).cpu().numpy(),
            (filled - original).float().flatten(1).norm(dim=1).cpu().numpy())


def fill_and_score(model, imputer, x: torch.Tensor, masks: torch.Tensor, context: ImputeContext,
                   target: torch.Tensor):
    """Fill one batch, classify it and time both (per sample, CUDA synchronised).
    Returns (filled, logits, seconds per sample, sample_response(...))."""
    t0 = time.perf_counter()
    filled = imputer.fill(x, masks, context)
    with torch.no_grad():
        logits = model(filled)
    if logits.is_cuda:
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / len(x)
    return filled, logits, seconds, sample_response(logits, target, filled, x)


def fill_work_items(model, imputer, x: torch.Tensor, y: torch.Tensor, keep: torch.Tensor, items, seed_key: tuple,
                    image_ids):
    """Fill and classify a batch of work items (i, j, s, ...): image i, point j,
    random draw s, with keep masks (B, 1, H, W) and the imputer seeds
    derive_seed(*seed_key, image_id, j, s), so batching does not change numbers.
    Returns (image indices, filled, fp32 logits, seconds per sample, sample_response)."""
    ii = torch.tensor([it[0] for it in items], device=x.device)
    ctx = ImputeContext(classifier=model, target=y[ii],
                        seeds=[derive_seed(*seed_key, int(image_ids[i]), j, s) for i, j, s, *_ in items])
    filled, logits, seconds, response = fill_and_score(model, imputer, x[ii], keep.to(x.device), ctx, y[ii])
    return ii, filled, logits.float(), seconds, response


def record_first_draws(items, filled, response, conf, pred, energy, l2, samples=None):
    """Store what protocols with several draws per point record of the first
    draw (s == 0): its response and, if kept, its sample."""
    cf, pf, ef, df = response
    for r, (i, j, s, *_) in enumerate(items):
        if s == 0:
            conf[i, j], pred[i, j], energy[i, j], l2[i, j] = cf[r], pf[r], ef[r], df[r]
            if samples is not None:
                samples[i, j] = filled[r].float().cpu().numpy()


def records_frame(curve: str, image, step, kept, removed, target, confidence, prediction, energy, l2, seconds,
                  **extra) -> pd.DataFrame:
    """Every protocol's records share these columns, in this order; protocol-
    specific values (e.g. correlation, infidelity) follow the target column."""
    return pd.DataFrame({"curve": curve, "image": image, "step": step, "kept": kept, "removed": removed,
                         "target": target, **extra, "confidence": confidence, "prediction": prediction,
                         "energy": energy, "l2": l2, "seconds": seconds})


@dataclass
class CurveResult:
    records: pd.DataFrame            # one row per (image, step)
    samples: Optional[np.ndarray]    # (N, steps, C, H, W) float16, if kept


@dataclass
class TopKCurve:
    curve: str                  # name of the curve in the records
    fractions: Sequence[float]  # fractions kept ('keep') or removed ('remove')
    mode: str = "keep"
    batch_size: int = 64
    reduction: str = "abs_sum"
    keep_samples: bool = False
    # The working batch size, shrunk on out-of-memory and kept for later runs.
    batch_state: Optional[AdaptiveBatchSize] = field(default=None, init=False, repr=False, compare=False)

    def _batch_state(self, imputer: Imputer, x: torch.Tensor) -> AdaptiveBatchSize:
        """batch_size caps the batch; on a GPU the first batch is also fitted to the
        free memory when the imputer can estimate its memory per sample."""
        if self.batch_state is None:
            size = self.batch_size
            estimate = getattr(imputer, "bytes_per_sample", None)
            if x.is_cuda and estimate is not None:
                size = fit_batch_size(size, estimate(tuple(x.shape[1:]), x.device), x.device)
                log.info("%s: batch size %d (cap %d, fitted to free GPU memory)", self.curve, size, self.batch_size)
            self.batch_state = AdaptiveBatchSize(size)
        return self.batch_state

    def run(self, model, x: torch.Tensor, y: torch.Tensor, attribution: torch.Tensor,
            imputer: Imputer, image_ids: Sequence[int], seed_key: tuple) -> CurveResult:
        n, c, h, w = x.shape
        order_seeds = [derive_seed(*seed_key, "order", int(i)) for i in image_ids]
        ranks = ranks_from_order(pixel_order(reduce_attribution(attribution, self.reduction), order_seeds))
        pairs = [(i, j) for i in range(n) for j in range(len(self.fractions))]
        conf = np.empty(len(pairs)); energy = np.empty(len(pairs)); l2 = np.empty(len(pairs))
        pred = np.empty(len(pairs), dtype=np.int64); seconds = np.empty(len(pairs))
        samples = np.empty((n, len(self.fractions), c, h, w), np.float16) if self.keep_samples else None
        progress = tqdm(total=len(pairs), desc=self.curve, leave=False, mininterval=10)

        def one_batch(positions):
            """Fill and score the pairs at these positions; results are written by
            position, so an OOM retry with smaller batches gives the same arrays."""
            batch = [pairs[p] for p in positions]
            ii = torch.tensor([i for i, _ in batch])
            masks = torch.cat([keep_mask(ranks[i:i + 1], self.fractions[j], self.mode, (h, w)) for i, j in batch])
            xb = x[ii]
            ctx = ImputeContext(classifier=model, target=y[ii],
                                seeds=[derive_seed(*seed_key, int(image_ids[i]), j) for i, j in batch])
            t0 = time.perf_counter()
            filled = imputer.fill(xb, masks.to(x.device), ctx)
            if filled.is_cuda:
                torch.cuda.synchronize()
            dt = (time.perf_counter() - t0) / len(batch)
            with torch.no_grad():
                logits = model(filled)
            sl = np.asarray(positions)
            conf[sl], pred[sl], energy[sl], l2[sl] = sample_response(logits, y[ii], filled, xb)
            seconds[sl] = dt
            if samples is not None:
                for k, (i, j) in enumerate(batch):
                    samples[i, j] = filled[k].cpu().numpy()
            progress.update(len(batch))

        run_batched(one_batch, range(len(pairs)), self._batch_state(imputer, x), desc=f"{self.curve} curve")
        progress.close()
        total = h * w
        frac = np.array([self.fractions[j] for _, j in pairs])
        kept = np.array([n_pixels(f, total) for f in frac]) / total
        records = records_frame(
            self.curve, image=np.array([int(image_ids[i]) for i, _ in pairs]), step=np.array([j for _, j in pairs]),
            kept=kept if self.mode == "keep" else 1 - kept, removed=1 - kept if self.mode == "keep" else kept,
            target=np.array([int(y[i]) for i, _ in pairs]), confidence=conf, prediction=pred, energy=energy,
            l2=l2, seconds=seconds)
        return CurveResult(records, samples)
