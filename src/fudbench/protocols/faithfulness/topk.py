"""The top-k curve protocol, shared by FUD, insertion and deletion.

For each fraction f, every image gets a keep-mask from its attribution
ranking: mode 'keep' keeps the top f of the pixels (FUD's rho, RISE
insertion), mode 'remove' removes the top f (RISE deletion). The imputer fills
the removed pixels and the model's softmax confidence in the target class is
recorded, with the energy -logsumexp(logits), the L2 distance to the original
and the imputer and model time per sample.

Every (image, fraction) pair is one work item of the protocol loop
(fudbench.protocols.base), so a GPU sees large batches whatever the shard
size, and a batch that runs out of GPU memory is retried at half the size
with the same results.

FUD's variants (the defaults leave the curve as described above):
- granularity 'patch' (squares of side `patch_size`) or 'slic' (SLIC
  superpixels of the clean image, `n_segments`, `compactness`; both from
  fudbench.core.superpixels.segment): regions are ranked by the mean of the
  reduced per-pixel attribution (superpixels.region_means: a region with a
  non-finite pixel ranks last; ties by the seeded permutation) and taken
  whole: the top f is the smallest rank-order prefix of whole regions with at
  least round(f * H * W) pixels (masks.top_count). The records' kept /
  removed columns hold each image's actual fractions, so the AUCs use them.
- bottom_curve: the same fractions taken from the bottom of the ranking (the
  reversed order: least relevant pixel or region first) are written as a
  second curve, filled under the same noise as the top (the fill seeds are
  keyed by image and step only), so that top and bottom differ only in the mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import torch

from fudbench.core.masks import (
    keep_mask,
    pixel_order,
    ranks_from_order,
    reduce_attribution,
    region_order,
    reverse_order,
    top_count,
)
from fudbench.protocols.base import CurveResult, Item, Points, Protocol, Shard
from fudbench.core.superpixels import region_means, segment

GRANULARITIES = ("pixel", "patch", "slic")


@dataclass
class TopKCurve(Protocol):
    curve: str  # name of the curve in the records
    fractions: Sequence[float]  # fractions kept ('keep') or removed ('remove')
    mode: str = "keep"
    batch_size: int = 64
    reduction: str = "abs_sum"
    keep_samples: bool = False
    granularity: str = "pixel"  # the units taken whole: pixel | patch | slic
    patch_size: int = 4  # patch: side of the squares, pixels
    n_segments: int = 64  # slic: target number of superpixels
    compactness: float = 10.0  # slic
    bottom_curve: Optional[str] = None  # also write this curve, from the bottom of the ranking

    def __post_init__(self):
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {GRANULARITIES}, got {self.granularity!r}")

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        order, cuts = self._order(shard, attribution)
        top = self._curve(shard, self.curve, order, cuts, self.keep_samples)
        if self.bottom_curve is None:
            return top
        bottom = self._curve(shard, self.bottom_curve, *reverse_order(order, cuts), keep_samples=False)
        return CurveResult(pd.concat([top.records, bottom.records], ignore_index=True), top.samples)

    def _order(self, shard: Shard, attribution: torch.Tensor):
        """Per image the pixels most relevant first, and the region cuts (None for pixels)."""
        order_seeds = [shard.seed("order", i) for i in shard.ids]
        scores = reduce_attribution(attribution, self.reduction)
        if self.granularity == "pixel":
            return pixel_order(scores, order_seeds), None
        labels = self._regions(shard.x)
        relevance = [region_means(s, lab) for s, lab in zip(scores.cpu().numpy(), labels)]
        return region_order(relevance, labels, order_seeds)

    def _regions(self, x: torch.Tensor) -> list[np.ndarray]:
        images = x.float().cpu().numpy()
        if self.granularity == "patch":
            return segment(images, "squares", square_side=self.patch_size)
        return segment(images, "slic", n_segments=self.n_segments, compactness=self.compactness)

    def _curve(
        self, shard: Shard, curve: str, order: torch.Tensor, cuts: Optional[list], keep_samples: bool
    ) -> CurveResult:
        n, c, h, w = shard.x.shape
        ranks = ranks_from_order(order)
        points = Points.empty(shard.x, len(self.fractions), keep_samples)

        def masks(batch):
            return torch.cat(
                [
                    keep_mask(
                        ranks[it.image : it.image + 1],
                        self.fractions[it.step],
                        self.mode,
                        (h, w),
                        None if cuts is None else cuts[it.image : it.image + 1],
                    )
                    for it in batch
                ]
            )

        items = [Item(i, j) for i in range(n) for j in range(len(self.fractions))]
        self.fill_items(shard, items, masks, points.record)
        # fraction of pixels in the top: per step, or per image and step for regions
        top = np.array([[top_count(f, h * w, cut) for f in self.fractions] for cut in (cuts or [None])]) / (h * w)
        kept, removed = (top, 1 - top) if self.mode == "keep" else (1 - top, top)
        return CurveResult(points.frame(curve, shard, kept=kept, removed=removed), points.samples)
