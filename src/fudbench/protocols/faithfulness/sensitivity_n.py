"""Sensitivity-N (Ancona et al. 2017), following the paper, not Quantus.

For each fraction n of the H*W pixels and each image, `n_subsets` random
pixel subsets S of size round(n*H*W) (rounded half up, `masks.n_pixels`) are
drawn; each subset is removed with the imputer (keep-mask 0 on S, one mask
shared by the channels), and the score of the (image, n) pair is the Pearson
correlation across the subsets between

  (a) sum_{p in S} sum_c attribution[c, p]  (signed: summed over channels,
      then over the subset's pixels; non-finite values count as 0), and
  (b) f_y(x) - f_y(x with S removed), f_y the target LOGIT (Ancona use the
      network output before the softmax).

Quantus' SensitivityN (its issue #354) deviates from this; it is not followed.
If (a) or (b) is constant over the subsets (standard deviation <= 1e-6 of its
largest magnitude, i.e. constant up to float32 rounding), the correlation is
undefined: it is recorded as 0, counted in the averages, and flagged in the
`degenerate` column.

Randomness: the subsets of (image, step) come from a CPU torch.Generator
seeded with derive_seed(*seed_key, "subsets", image_id, step); the imputer's
per-sample seed is derive_seed(*seed_key, image_id, step, subset). Batched
runs therefore equal per-image runs. Every (image, step, subset) fill is one
work item of the protocol loop (fudbench.protocols.base), in batches of at
most `batch_size` (halved on out-of-memory); a batch draws the subsets it
needs, so no shard's subsets are held at once.

Shared work: the subsets, fills and model responses depend on the images,
targets, imputer and seed key, not on the attribution. With paired noise (a
seed key without the explainer, fudbench.workflow.pipeline.paired_seed_key) one
evaluate job runs every explainer of a shard through the same protocol
object, which keeps the responses of the last (images, targets, imputer,
seed key) and only recomputes the attribution sums and correlations.

Records: one row per (image, step): curve, image, step, kept, removed (the
actual removed fraction of pixels), target, correlation, degenerate, and for
the step's first subset (this evaluator's "intermediate sample"): confidence
(softmax p_y), prediction, energy (-logsumexp of the logits), l2 (||filled -
x|| over all entries, [0, 1] space); seconds = mean imputer + model time per
subset of the step. Samples: (N, steps, C, H, W) float16 of the first subset.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from fudbench.core.masks import n_pixels, reduce_attribution
from fudbench.protocols.base import CurveResult, Item, Points, Protocol, Shard, per_point

log = logging.getLogger(__name__)

DEFAULT_FRACTIONS = tuple(round(0.1 * k, 10) for k in range(1, 10))


def signed_pixel_attribution(attribution: torch.Tensor) -> torch.Tensor:
    """(N, C, H, W) or (N, H, W) -> (N, H*W) float64 on the CPU: summed over
    channels (signed); non-finite values become 0 (with a warning)."""
    a = reduce_attribution(attribution, "sum").reshape(attribution.shape[0], -1).double().cpu()
    bad = ~torch.isfinite(a)
    if bad.any():
        log.warning(
            "%d non-finite attribution values in %d image(s): counted as 0", int(bad.sum()), int(bad.any(1).sum())
        )
        a = a.masked_fill(bad, 0.0)
    return a


def _is_constant(v: np.ndarray) -> bool:
    scale = float(np.max(np.abs(v))) if v.size else 0.0
    return scale == 0.0 or float(np.std(v)) <= 1e-6 * scale


def pearson(a: np.ndarray, b: np.ndarray) -> tuple[float, bool]:
    """Pearson correlation in float64; (0.0, True) when either side is constant."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.size < 2 or _is_constant(a) or _is_constant(b):
        return 0.0, True
    a = a - a.mean()
    b = b - b.mean()
    return float(np.clip((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()), -1.0, 1.0)), False


def random_subsets(n_subsets: int, total: int, k: int, seed: int) -> torch.Tensor:
    """(n_subsets, k) pixel indices, each row a uniform random k-subset of
    range(total), from a CPU generator seeded with `seed`."""
    g = torch.Generator().manual_seed(int(seed))
    if n_subsets == 0:
        return torch.empty(0, k, dtype=torch.long)
    return torch.stack([torch.randperm(total, generator=g)[:k] for _ in range(n_subsets)])


@dataclass
class SensitivityN(Protocol):
    curve: str = "sensitivity_n"
    fractions: Sequence[float] = DEFAULT_FRACTIONS  # removed fractions n of the H*W pixels
    n_subsets: int = 100
    batch_size: int = 256
    keep_samples: bool = False

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        n, c, h, w = shard.x.shape
        steps = len(self.fractions)
        a_pix = signed_pixel_attribution(attribution)
        points, drop = self.attribution_free(shard, self._responses)

        attr_sum = np.empty((n, steps, self.n_subsets))
        for i in range(n):
            for j in range(steps):
                attr_sum[i, j] = a_pix[i][self._subsets(shard, i, j)].sum(1).numpy()
        corr = np.empty((n, steps))
        degenerate = np.zeros((n, steps), bool)
        for i in range(n):
            for j in range(steps):
                corr[i, j], degenerate[i, j] = pearson(attr_sum[i, j], drop[i, j])
        removed = np.array([n_pixels(f, h * w) for f in self.fractions]) / (h * w)
        records = points.frame(
            self.curve, shard, kept=1 - removed, removed=removed, correlation=corr, degenerate=degenerate
        )
        return CurveResult(records, None if points.samples is None else points.samples.copy())

    def _subsets(self, shard: Shard, i: int, j: int) -> torch.Tensor:
        """(n_subsets, k) removed pixel indices of image i at step j."""
        total = shard.x.shape[-2] * shard.x.shape[-1]
        seed = shard.seed("subsets", shard.ids[i], j)
        return random_subsets(self.n_subsets, total, n_pixels(self.fractions[j], total), seed)

    def _responses(self, shard: Shard) -> tuple[Points, np.ndarray]:
        """Everything that does not depend on the attribution: per (image, step,
        subset) the drop f_y(x) - f_y(x with S removed), and per (image, step)
        the first subset's response and sample."""
        n, c, h, w = shard.x.shape
        steps, S = len(self.fractions), self.n_subsets
        # f_y(x) on the clean images
        clean = self.per_image(
            shard, lambda xb, yb: shard.model(xb).float().gather(1, yb.view(-1, 1)).squeeze(1).cpu().numpy()
        ).astype(np.float64)
        drop = np.empty((n, steps, S))
        points = Points.empty(shard.x, steps, self.keep_samples, draws=S)

        def masks(batch):
            subsets = per_point(batch, lambda i, j: self._subsets(shard, i, j))
            keep = torch.ones(len(batch), h * w)
            for r, it in enumerate(batch):
                keep[r, subsets[it.image, it.step][it.draw]] = 0.0
            return keep.view(-1, 1, h, w)

        def scored(batch):
            f_y = batch.logits.gather(1, shard.y[batch.image].view(-1, 1)).squeeze(1).cpu().numpy()
            points.record(batch)
            i, j = batch.ij
            drop[i, j, [it.draw for it in batch.items]] = clean[i] - f_y

        items = [Item(i, j, s) for i in range(n) for j in range(steps) for s in range(S)]
        self.fill_items(shard, items, masks, scored)
        return points, drop
