"""Fidelity, R-Fidelity and F-Fidelity (seeds/004, Sec. 2-3), one protocol.

At each sparsity s the explanation set E is the top k = round(s * H*W) pixels
by attribution (`masks.pixel_order`, seeded tie-break). The `plus` side
removes pixels of E (like MoRF), the `minus` side pixels of its complement
(keeping the explanation, like LeRF). Each of `n_samples` stochastic samples
removes every candidate pixel independently with probability

    alpha' = min(alpha, beta * H*W / |candidates|)        (seeds/004, eq. 6)

and, when `beta` is set, keeps at most floor(beta * H*W) of the drawn pixels
(a uniformly random subset of them), so no sample ever removes more than
the surrogate saw during fine-tuning. Removed pixels take the dataset mean
(0 in the classifier's normalised space; `ClassifierMeanImputer`).

Score of an (image, s) pair, the paper's definition:

    fidelity = 1[argmax f(x) = y] - mean_samples 1[argmax f(x_removed) = y]

with f the model of the curve (the surrogate for F-Fidelity) and y the
evaluation target: the true label when the config's `target` is `label`
(exactly the paper's Fid), the original classifier's prediction otherwise.
Fid+ high and Fid- low mean a faithful explanation. Values can be negative
(the masked image classified correctly, the clean one not).

The three metrics are three settings of the same protocol:
  fid   original classifier, alpha = 1, no cap, 1 sample (deterministic);
  rfid  original classifier, alpha, no cap, n_samples (Zheng et al. 2024);
  ffid  fine-tuned surrogate, alpha, cap beta, n_samples.

Randomness: the samples of (image, s) come from a CPU generator seeded with
derive_seed(*seed_key, "removal", image_id, step): batched = per-image.

Records: one row per (image, step): kept / removed = mean fraction of pixels
kept / removed over the samples, target, sparsity, fidelity, and for the
step's first sample (the "intermediate sample") confidence, prediction,
energy, l2; seconds = mean imputer + model time per sample.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

import numpy as np
import torch

from fudbench.imputers.base import ImputeContext, Imputer, compose
from fudbench.core.masks import n_pixels, pixel_order, ranks_from_order, reduce_attribution
from fudbench.models.surrogate import max_removed, removal_value
from fudbench.protocols.base import CurveResult, Item, Points, Protocol, Shard, per_point

DEFAULT_SPARSITIES = tuple(round(0.05 + 0.1 * k, 10) for k in range(10))  # 5%, 15%, ..., 95%
SIDES = ("plus", "minus")


class ClassifierMeanImputer(Imputer):
    """Removed pixels take the classifier's normalisation mean, i.e. 0 in its
    normalised input space (F-Fidelity's removal, all channels)."""

    name = "classifier_mean"

    def fill(self, x, keep_mask, context: ImputeContext):
        value = removal_value(context.classifier).to(x.device, x.dtype)
        return compose(x, keep_mask, value.expand_as(x))


def sample_removals(
    candidates: torch.Tensor, alpha: float, cap: Optional[int], n_samples: int, g: torch.Generator
) -> torch.Tensor:
    """(n_samples, P) bool: which pixels each sample removes.

    candidates: (P,) bool, the pixels that may be removed. Each candidate is
    drawn with probability min(alpha, cap / |candidates|); if more than `cap`
    were drawn, only the `cap` with the smallest uniform keys are kept (a
    uniformly random subset of the drawn ones).
    """
    total = candidates.numel()
    n_cand = int(candidates.sum())
    u = torch.rand(n_samples, total, generator=g)
    if n_cand == 0:
        return torch.zeros(n_samples, total, dtype=torch.bool)
    rate = alpha if cap is None else min(alpha, cap / n_cand)
    drawn = candidates.view(1, -1) & (u < rate)
    if cap is not None and int(drawn.sum(1).max()) > cap:
        order = torch.where(drawn, u, torch.full_like(u, 2.0)).argsort(1)[:, :cap]
        first = torch.zeros_like(drawn).scatter_(1, order, True)
        drawn = drawn & first
    return drawn


@dataclass
class FidelityCurve(Protocol):
    curve: str  # record name, e.g. ffid_plus
    side: str  # plus: remove from the explanation; minus: from its complement
    sparsities: Sequence[float] = DEFAULT_SPARSITIES
    alpha: float = 0.5  # removal probability of each candidate pixel
    beta: Optional[float] = None  # cap: at most floor(beta * H*W) pixels removed; None = no cap
    n_samples: int = 50
    model: Optional[torch.nn.Module] = None  # evaluate this model (the surrogate) instead of the given one
    batch_size: int = 256
    reduction: str = "abs_sum"
    keep_samples: bool = False

    def __post_init__(self):
        if self.side not in SIDES:
            raise ValueError(f"{self.curve}: side must be 'plus' or 'minus', got {self.side!r}")
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"{self.curve}: alpha must be in (0, 1], got {self.alpha}")
        if self.beta is not None and not 0.0 < self.beta <= 1.0:
            raise ValueError(f"{self.curve}: beta must be in (0, 1], got {self.beta}")
        s = list(self.sparsities)
        if not s or any(not 0.0 < v < 1.0 for v in s) or any(b <= a for a, b in zip(s, s[1:])):
            raise ValueError(f"{self.curve}: sparsities {s} must be strictly increasing values in (0, 1)")
        if self.n_samples < 1:
            raise ValueError(f"{self.curve}: n_samples must be >= 1, got {self.n_samples}")

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        if self.model is not None:
            shard = replace(shard, model=self.model)
        n, c, h, w = shard.x.shape
        total, steps, S = h * w, len(self.sparsities), self.n_samples
        cap = None if self.beta is None else max_removed(self.beta, total)  # the surrogate's bound
        order_seeds = [shard.seed("order", i) for i in shard.ids]
        ranks = ranks_from_order(pixel_order(reduce_attribution(attribution, self.reduction), order_seeds))
        ks = [n_pixels(s, total) for s in self.sparsities]
        clean_correct = self.per_image(shard, lambda xb, yb: (shard.model(xb).argmax(1) == yb).float().cpu().numpy())
        points = Points.empty(shard.x, steps, self.keep_samples, draws=S)
        hits = np.zeros((n, steps), dtype=np.int64)
        n_removed = np.zeros((n, steps), dtype=np.int64)

        def removals(i: int, j: int) -> torch.Tensor:
            """(S, H*W) bool: the pixels each sample of image i at step j removes."""
            in_set = ranks[i] < ks[j]
            g = torch.Generator().manual_seed(shard.seed("removal", shard.ids[i], j))
            return sample_removals(in_set if self.side == "plus" else ~in_set, self.alpha, cap, S, g)

        def masks(batch):
            drawn = per_point(batch, removals)
            return torch.stack([(~drawn[it.image, it.step][it.draw]).float() for it in batch]).view(-1, 1, h, w)

        def scored(batch):
            hit = (batch.logits.argmax(1) == shard.y[batch.image]).cpu().numpy()
            points.record(batch)
            np.add.at(hits, batch.ij, hit)
            np.add.at(n_removed, batch.ij, (batch.masks == 0).flatten(1).sum(1).numpy())

        self.fill_items(shard, [Item(i, j, s) for i in range(n) for j in range(steps) for s in range(S)], masks, scored)
        removed = n_removed / (S * total)
        fidelity = clean_correct[:, None] - hits / S
        records = points.frame(
            self.curve, shard, kept=1 - removed, removed=removed, sparsity=np.array(ks) / total, fidelity=fidelity
        )
        return CurveResult(records, points.samples)
