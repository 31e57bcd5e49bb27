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

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch
from tqdm import tqdm

from fudbench.imputers.base import ImputeContext, Imputer, compose
from fudbench.masks import n_pixels, pixel_order, ranks_from_order, reduce_attribution
from fudbench.models.surrogate import max_removed, removal_value
from fudbench.protocols.topk import CurveResult, fill_work_items, record_first_draws, records_frame
from fudbench.seeding import derive_seed

DEFAULT_SPARSITIES = tuple(round(0.05 + 0.1 * k, 10) for k in range(10))  # 5%, 15%, ..., 95%
SIDES = ("plus", "minus")


class ClassifierMeanImputer(Imputer):
    """Removed pixels take the classifier's normalisation mean, i.e. 0 in its
    normalised input space (F-Fidelity's removal, all channels)."""

    name = "classifier_mean"

    def fill(self, x, keep_mask, context: ImputeContext):
        value = removal_value(context.classifier).to(x.device, x.dtype)
        return compose(x, keep_mask, value.expand_as(x))


def sample_removals(candidates: torch.Tensor, alpha: float, cap: Optional[int], n_samples: int,
                    g: torch.Generator) -> torch.Tensor:
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
class FidelityCurve:
    curve: str                          # record name, e.g. ffid_plus
    side: str                           # plus: remove from the explanation; minus: from its complement
    sparsities: Sequence[float] = DEFAULT_SPARSITIES
    alpha: float = 0.5                  # removal probability of each candidate pixel
    beta: Optional[float] = None        # cap: at most floor(beta * H*W) pixels removed; None = no cap
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

    def run(self, model, x: torch.Tensor, y: torch.Tensor, attribution: torch.Tensor,
            imputer: Imputer, image_ids: Sequence[int], seed_key: tuple) -> CurveResult:
        model = self.model if self.model is not None else model
        n, c, h, w = x.shape
        total, steps, S = h * w, len(self.sparsities), self.n_samples
        cap = None if self.beta is None else max_removed(self.beta, total)  # the surrogate's bound
        y = y.to(x.device)
        order_seeds = [derive_seed(*seed_key, "order", int(i)) for i in image_ids]
        ranks = ranks_from_order(pixel_order(reduce_attribution(attribution, self.reduction), order_seeds))
        ks = [n_pixels(s, total) for s in self.sparsities]

        with torch.no_grad():
            clean_correct = torch.cat([model(x[i:i + self.batch_size]).argmax(1) == y[i:i + self.batch_size]
                                       for i in range(0, n, self.batch_size)]).float().cpu().numpy()

        hits = np.zeros((n, steps), dtype=np.int64); removed = np.zeros((n, steps)); seconds = np.zeros((n, steps))
        conf = np.empty((n, steps)); energy = np.empty((n, steps)); l2 = np.empty((n, steps))
        pred = np.empty((n, steps), dtype=np.int64)
        samples = np.empty((n, steps, c, h, w), np.float16) if self.keep_samples else None
        pending: list = []  # (i, j, s, keep mask (P,) float)

        def flush():
            if not pending:
                return
            keep = torch.stack([m for *_, m in pending]).view(len(pending), 1, h, w)
            ii, filled, logits, dt, response = fill_work_items(model, imputer, x, y, keep, pending, seed_key,
                                                               image_ids)
            hit = (logits.argmax(1) == y[ii]).cpu().numpy()
            for r, (i, j, _, _) in enumerate(pending):
                hits[i, j] += int(hit[r])
                seconds[i, j] += dt / S
            record_first_draws(pending, filled, response, conf, pred, energy, l2, samples)
            pending.clear()

        for i in tqdm(range(n), desc=self.curve, leave=False, mininterval=10):
            for j, k in enumerate(ks):
                in_set = ranks[i] < k
                candidates = in_set if self.side == "plus" else ~in_set
                g = torch.Generator().manual_seed(derive_seed(*seed_key, "removal", int(image_ids[i]), j))
                drop = sample_removals(candidates, self.alpha, cap, S, g)
                removed[i, j] = float(drop.sum()) / (S * total)
                for s in range(S):
                    pending.append((i, j, s, (~drop[s]).float()))
                    if len(pending) >= self.batch_size:
                        flush()
        flush()

        fidelity = clean_correct[:, None] - hits / S
        sparsity = np.array(ks) / total
        records = records_frame(
            self.curve, image=np.repeat([int(i) for i in image_ids], steps), step=np.tile(np.arange(steps), n),
            kept=1 - removed.ravel(), removed=removed.ravel(), target=np.repeat([int(t) for t in y.cpu()], steps),
            sparsity=np.tile(sparsity, n), fidelity=fidelity.ravel(), confidence=conf.ravel(),
            prediction=pred.ravel(), energy=energy.ravel(), l2=l2.ravel(), seconds=seconds.ravel())
        return CurveResult(records, samples)
