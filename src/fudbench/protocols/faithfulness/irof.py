"""IROF: Iterative Removal Of Features (Rieger & Hansen 2020).

Each image is cut into SLIC superpixels (fudbench.core.superpixels.segment) and
its superpixels are ranked by the mean of the reduced attribution inside
them (superpixels.region_means, masks.region_order: ties broken by a
permutation seeded by the image, not by its place in the shard). Step k removes the k most relevant
superpixels, filled by the imputer (IROF: the image's mean), k = 0 .. K, so
an image has K + 1 steps and K is its own: SLIC returns a different number
of superpixels per image (protocols.base.Points with per-image steps).

Records per (image, step): the shared columns (kept / removed are pixel
fractions) and `region_fraction` = k / K, the x axis of the score: the area
over the curve of p(target) / p(target | clean image) over the fraction of
superpixels removed (fudbench.evaluators.faithfulness.irof).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fudbench.core.masks import ranks_from_order, reduce_attribution, region_order
from fudbench.protocols.base import CurveResult, Item, Points, Protocol, Shard
from fudbench.core.superpixels import region_means, segment


@dataclass
class IROF(Protocol):
    curve: str = "irof"
    n_segments: int = 16  # SLIC's target (it may return fewer or more)
    compactness: float = 10.0
    reduction: str = "abs_sum"
    batch_size: int = 64
    keep_samples: bool = False

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        x = shard.x
        n, _, h, w = x.shape
        labels = segment(x.float().cpu().numpy(), "slic", n_segments=self.n_segments, compactness=self.compactness)
        scores = reduce_attribution(attribution, self.reduction).cpu().numpy()
        # regions most relevant first (ties by the image's seeded permutation), as FUD's slic granularity ranks
        # them; cuts[i][k] = the pixels of image i's first k regions, so step k removes ranks < cuts[i][k]
        order, cuts = region_order(
            [region_means(s, lab) for s, lab in zip(scores, labels)],
            labels,
            [shard.seed("order", i) for i in shard.ids],
        )
        ranks = ranks_from_order(order).to(x.device)
        steps = np.array([len(c) for c in cuts])
        points = Points.empty(x, steps, self.keep_samples)

        def masks(batch):
            return torch.stack(
                [(ranks[it.image] >= int(cuts[it.image][it.step])).float().view(1, h, w) for it in batch]
            )

        items = [Item(i, k) for i in range(n) for k in range(steps[i])]
        self.fill_items(shard, items, masks, points.record)
        width = int(steps.max())
        removed = np.full((n, width), np.nan)
        for i, c in enumerate(cuts):
            removed[i, : steps[i]] = c.numpy() / (h * w)
        region_fraction = np.arange(width)[None, :] / (steps[:, None] - 1)
        return CurveResult(
            points.frame(self.curve, shard, kept=1 - removed, removed=removed, region_fraction=region_fraction),
            points.samples,
        )
