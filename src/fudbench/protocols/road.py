"""ROAD: RemOve And Debias (Rong et al. 2022).

Pixel order: the attribution summed over channels (signed), min-max
normalised per image as (s - min) / (max - min + 1e-5) like the reference
code, plus a fixed tie-break jitter `jitter` * N(0, 1) (the reference draws one
jitter map for the whole data set; here it is seeded per image,
derive_seed(*seed_key, "jitter", image_id), so batching does not matter).

For each p in `fractions`:
- MoRF removes the top round(p * HW) pixels;
- LeRF keeps the top round(p * HW) pixels, i.e. removes the bottom (1 - p)
  (the reference code's `remove=False` branch).
Removed pixels are filled by the imputer (ROAD: noisy linear, noise 0.01).

Scoring follows the paper, not the reference code's probability output
(which reads class 0): the records' target is the model's ORIGINAL prediction
on the clean image, confidence = softmax p(original prediction | imputed),
and `accuracy` = 1 if the imputed image is still predicted as the original
class. `explained` holds the class the attribution was computed for.

One protocol instance per order. Records: curve road_morf or road_lerf, one
row per (image, p); `removed` is the actual removed fraction (p for MoRF,
about 1 - p for LeRF). The jitter seed leaves out the curve name, so MoRF and
LeRF rank pixels identically. Samples: the fills (N, steps, C, H, W) float16
if keep_samples (MoRF's are the intermediate samples of Tables 9 and 11).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from tqdm import tqdm

from fudbench.imputers.base import ImputeContext, Imputer
from fudbench.masks import n_pixels, ranks_from_order
from fudbench.protocols.topk import CurveResult, fill_and_score, records_frame
from fudbench.seeding import derive_seed

NORMALISE_EPS = 1e-5


def road_scores(attribution: torch.Tensor, image_ids: Sequence[int], seed_key: tuple,
                jitter: float = 1e-4) -> torch.Tensor:
    """(N, H*W) ordering scores on the CPU: channel sum, min-max normalised, plus seeded jitter."""
    a = attribution.detach().float().cpu()
    s = (a.sum(1) if a.dim() == 4 else a).flatten(1).double()
    s = torch.nan_to_num(s, nan=-np.inf)  # non-finite values: least relevant
    finite = torch.isfinite(s)
    lo = torch.where(finite, s, torch.full_like(s, np.inf)).amin(1, keepdim=True)
    hi = torch.where(finite, s, torch.full_like(s, -np.inf)).amax(1, keepdim=True)
    lo, hi = torch.nan_to_num(lo, posinf=0.0), torch.nan_to_num(hi, neginf=0.0)
    s = torch.where(finite, (s - lo) / (hi - lo + NORMALISE_EPS), torch.full_like(s, -1.0))
    noise = torch.stack([torch.randn(s.shape[1], generator=torch.Generator().manual_seed(
        derive_seed(*seed_key, "jitter", int(i))), dtype=torch.float64) for i in image_ids])
    return s + jitter * noise


@dataclass
class ROAD:
    fractions: Sequence[float]       # p
    order: str = "morf"              # morf | lerf; records curve road_<order>
    jitter: float = 1e-4
    batch_size: int = 64
    keep_samples: bool = False

    def __post_init__(self):
        if self.order not in ("morf", "lerf"):
            raise ValueError(f"ROAD order must be 'morf' or 'lerf', got {self.order!r}")
        if any(not 0 <= p <= 1 for p in self.fractions):
            raise ValueError(f"ROAD fractions must lie in [0, 1], got {list(self.fractions)}")

    @property
    def curve(self) -> str:
        return f"road_{self.order}"

    def run(self, model, x: torch.Tensor, y: torch.Tensor, attribution: torch.Tensor, imputer: Imputer,
            image_ids: Sequence[int], seed_key: tuple) -> CurveResult:
        n, c, h, w = x.shape
        total = h * w
        ids = [int(i) for i in image_ids]
        with torch.no_grad():
            original = torch.cat([model(x[s:s + self.batch_size]).argmax(1)
                                  for s in range(0, n, self.batch_size)])
        # The ordering's jitter does not depend on MoRF/LeRF: drop the curve from its key.
        order_key = seed_key[:-1] if seed_key and seed_key[-1] == self.curve else seed_key
        scores = road_scores(attribution, ids, order_key, self.jitter)
        ranks = ranks_from_order(torch.sort(scores, dim=1, descending=True, stable=True).indices)
        steps = len(self.fractions)
        samples = np.empty((n, steps, c, h, w), np.float16) if self.keep_samples else None
        k_top = [n_pixels(p, total) for p in self.fractions]
        pairs = [(i, j) for i in range(n) for j in range(steps)]
        conf = np.empty(len(pairs)); energy = np.empty(len(pairs)); l2 = np.empty(len(pairs))
        pred = np.empty(len(pairs), np.int64); seconds = np.empty(len(pairs)); removed = np.empty(len(pairs))
        for start in tqdm(range(0, len(pairs), self.batch_size), desc=self.curve, leave=False, mininterval=10):
            batch = pairs[start:start + self.batch_size]
            ii = torch.tensor([i for i, _ in batch])
            top = torch.stack([ranks[i] < k_top[j] for i, j in batch])  # (B, HW): the top-p pixels
            keep = ~top if self.order == "morf" else top
            masks = keep.float().view(-1, 1, h, w).to(x.device)
            xb = x[ii.to(x.device)]
            target = original[ii.to(original.device)]
            ctx = ImputeContext(classifier=model, target=target,
                                seeds=[derive_seed(*seed_key, ids[i], j) for i, j in batch])
            filled, logits, dt, response = fill_and_score(model, imputer, xb, masks, ctx, target)
            sl = slice(start, start + len(batch))
            seconds[sl] = dt
            conf[sl], pred[sl], energy[sl], l2[sl] = response
            removed[sl] = 1 - keep.float().mean(1).numpy()
            if samples is not None:
                for b, (i, j) in enumerate(batch):
                    samples[i, j] = filled[b].float().cpu().numpy()
        ii = np.array([i for i, _ in pairs])
        orig = original.cpu().numpy()[ii]
        records = records_frame(
            self.curve, image=np.array(ids)[ii], step=np.array([j for _, j in pairs]), kept=1 - removed,
            removed=removed, target=orig, explained=y.cpu().numpy()[ii], accuracy=(pred == orig).astype(float),
            confidence=conf, prediction=pred, energy=energy, l2=l2, seconds=seconds)
        return CurveResult(records, samples)
