"""Relevance Mass Accuracy (Arras, Osman & Samek 2022, "CLEVR-XAI"): the share
of an image's positive relevance that falls inside its ground-truth object mask.

    RMA = sum_{p in mask} max(R_p, 0) / sum_p max(R_p, 0)

R_p: the map reduced to one value per pixel (`reduction`; `sum`, the signed
sum over channels, is Arras et al.'s pixel relevance, whose positive part
counts), non-finite values counted as 0. A map with no positive relevance
has no mass to place: its RMA is undefined, recorded as NaN and flagged in the
`degenerate` column (the analysis leaves that image out of the metric's
means, as it does Quantus' refusals). A map spread evenly over the image
scores the mask's share of the pixels (`mask_fraction`, in the records), a
map inside the mask 1. Higher is better.

No pixel is removed or filled: the records have one row per image, step 0,
kept 1, removed 0, with the clean image's response (one classifier forward
per image: confidence, prediction, energy; l2 = 0) beside the score columns
`mass_inside`, `mask_fraction` and `degenerate`. The masks come with the
images (Protocol.needs_masks: the evaluate job's eval npz, fudbench.evaluate's
`masks=`), one per image in the images' order: ids are not positions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fudbench.core.masks import reduce_attribution
from fudbench.protocols.base import CurveResult, Protocol, Shard


def relevance_mass(attribution: torch.Tensor, masks: torch.Tensor, reduction: str = "sum") -> np.ndarray:
    """(N,) share of each image's positive relevance inside its mask; NaN where a map has none."""
    values = reduce_attribution(attribution, reduction).double()
    positive = torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0).clamp(min=0).flatten(1)
    inside = (positive * masks.to(positive.device).double().flatten(1)).sum(1)
    total = positive.sum(1)
    return torch.where(total > 0, inside / total.clamp(min=1e-300), torch.nan).cpu().numpy()


@dataclass
class RelevanceMass(Protocol):
    curve: str = "rma"
    reduction: str = "sum"
    batch_size: int = 64  # clean images per classifier forward (the records' response columns)

    needs_masks: ClassVar[bool] = True

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        t0 = time.perf_counter()
        mass = relevance_mass(attribution, shard.masks, self.reduction)
        fraction = shard.masks.flatten(1).double().mean(1).cpu().numpy()
        return self.clean_records(shard, t0, mass_inside=mass, mask_fraction=fraction, degenerate=np.isnan(mass))
