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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from fudbench.masks import keep_mask, n_pixels, pixel_order, ranks_from_order, reduce_attribution
from fudbench.protocols.base import CurveResult, Item, Points, Protocol, Shard


@dataclass
class TopKCurve(Protocol):
    curve: str                  # name of the curve in the records
    fractions: Sequence[float]  # fractions kept ('keep') or removed ('remove')
    mode: str = "keep"
    batch_size: int = 64
    reduction: str = "abs_sum"
    keep_samples: bool = False

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        n, c, h, w = shard.x.shape
        order_seeds = [shard.seed("order", i) for i in shard.ids]
        ranks = ranks_from_order(pixel_order(reduce_attribution(attribution, self.reduction), order_seeds))
        points = Points.empty(shard.x, len(self.fractions), self.keep_samples)

        def masks(batch):
            return torch.cat([keep_mask(ranks[it.image:it.image + 1], self.fractions[it.step], self.mode, (h, w))
                              for it in batch])

        items = [Item(i, j) for i in range(n) for j in range(len(self.fractions))]
        self.fill_items(shard, items, masks, points.record)
        top = np.array([n_pixels(f, h * w) for f in self.fractions]) / (h * w)  # fraction of pixels in the top
        kept, removed = (top, 1 - top) if self.mode == "keep" else (1 - top, top)
        return CurveResult(points.frame(self.curve, shard, kept=kept, removed=removed), points.samples)
