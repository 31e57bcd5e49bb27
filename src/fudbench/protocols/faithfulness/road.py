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

from fudbench.core.masks import n_pixels, ranks_from_order
from fudbench.protocols.base import CurveResult, Item, Points, Protocol, Shard
from fudbench.core.seeding import derive_seed

NORMALISE_EPS = 1e-5


def road_scores(
    attribution: torch.Tensor, image_ids: Sequence[int], seed_key: tuple, jitter: float = 1e-4
) -> torch.Tensor:
    """(N, H*W) ordering scores on the CPU: channel sum, min-max normalised, plus seeded jitter."""
    a = attribution.detach().float().cpu()
    s = (a.sum(1) if a.dim() == 4 else a).flatten(1).double()
    s = torch.nan_to_num(s, nan=-np.inf)  # non-finite values: least relevant
    finite = torch.isfinite(s)
    lo = torch.where(finite, s, torch.full_like(s, np.inf)).amin(1, keepdim=True)
    hi = torch.where(finite, s, torch.full_like(s, -np.inf)).amax(1, keepdim=True)
    lo, hi = torch.nan_to_num(lo, posinf=0.0), torch.nan_to_num(hi, neginf=0.0)
    s = torch.where(finite, (s - lo) / (hi - lo + NORMALISE_EPS), torch.full_like(s, -1.0))
    noise = torch.stack(
        [
            torch.randn(
                s.shape[1],
                generator=torch.Generator().manual_seed(derive_seed(*seed_key, "jitter", int(i))),
                dtype=torch.float64,
            )
            for i in image_ids
        ]
    )
    return s + jitter * noise


@dataclass
class ROAD(Protocol):
    fractions: Sequence[float]  # p
    order: str = "morf"  # morf | lerf; records curve road_<order>
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

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        n, c, h, w = shard.x.shape
        original = torch.from_numpy(self.per_image(shard, lambda xb, yb: shard.model(xb).argmax(1).cpu().numpy()))
        # The ordering's jitter does not depend on MoRF/LeRF: drop the curve from its key.
        key = shard.seed_key
        order_key = key[:-1] if key and key[-1] == self.curve else key
        scores = road_scores(attribution, shard.ids, order_key, self.jitter)
        ranks = ranks_from_order(torch.sort(scores, dim=1, descending=True, stable=True).indices)
        k_top = [n_pixels(p, h * w) for p in self.fractions]
        points = Points.empty(shard.x, len(self.fractions), self.keep_samples)
        removed = np.empty((n, len(self.fractions)))

        def masks(batch):
            top = torch.stack([ranks[it.image] < k_top[it.step] for it in batch])  # (B, HW): the top-p pixels
            keep = ~top if self.order == "morf" else top
            return keep.float().view(-1, 1, h, w)

        def scored(batch):
            points.record(batch)
            removed[batch.ij] = 1 - batch.masks.flatten(1).mean(1).numpy()

        items = [Item(i, j) for i in range(n) for j in range(len(self.fractions))]
        self.fill_items(shard, items, masks, scored, target=original.to(shard.x.device))
        orig = original.numpy()
        records = points.frame(
            self.curve,
            shard,
            kept=1 - removed,
            removed=removed,
            target=orig,
            explained=shard.y.cpu().numpy()[:, None],
            accuracy=(points.prediction == orig[:, None]).astype(float),
        )
        return CurveResult(records, points.samples)
