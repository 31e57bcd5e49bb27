"""The complexity protocols: one number computed from each map alone (no pixel removed, no explainer
call). The map is reduced to one value per pixel (`reduction`; the evaluators fix abs_sum) and its absolute values
taken: how relevance is spread, not its sign. A map that is zero everywhere has no distribution: NaN,
flagged `degenerate`. Records: one row per image, step 0, `value`, `degenerate`, and the clean image's
response (one classifier forward per image, as every protocol records).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from fudbench.core.masks import reduce_attribution
from fudbench.protocols.base import CurveResult, Protocol, Shard, clean_response, image_records


def pixel_values(attribution: torch.Tensor, reduction: str) -> torch.Tensor:
    """(N, d) |per-pixel relevance|, float64, non-finite values as 0."""
    values = reduce_attribution(attribution, reduction).double().flatten(1).abs()
    return torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)


def gini(values: torch.Tensor) -> torch.Tensor:
    """(N,) Gini index of each row of non-negative values (Chalasani et al. 2020's sparseness, as Hurley &
    Rickard 2009 write it): sum_i (2i - d - 1) v_(i) / (d sum v), v sorted ascending. 0 for equal values,
    (d - 1) / d for a single non-zero one; NaN for an all-zero row."""
    v, _ = values.sort(dim=1)
    d = v.shape[1]
    i = torch.arange(1, d + 1, dtype=v.dtype, device=v.device)
    total = v.sum(1)
    return torch.where(total > 0, ((2 * i - d - 1) * v).sum(1) / (d * total.clamp(min=1e-300)), torch.nan)


def entropy(values: torch.Tensor) -> torch.Tensor:
    """(N,) Shannon entropy (nats) of each row normalised to a distribution, p = v / sum v (Bhatt et al.
    2020's complexity). log(d) for equal values, 0 for a single non-zero one; NaN for an all-zero row."""
    total = values.sum(1, keepdim=True)
    p = values / total.clamp(min=1e-300)
    h = -(torch.where(p > 0, p * p.clamp(min=1e-300).log(), 0.0)).sum(1)
    return torch.where(total.squeeze(1) > 0, h, torch.nan)


STATISTICS = {"gini": gini, "entropy": entropy}


@dataclass
class MapStatistic(Protocol):
    curve: str = "sparseness"
    statistic: str = "gini"  # a name of STATISTICS
    reduction: str = "abs_sum"
    batch_size: int = 64  # clean images per classifier forward (the records' response columns)

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        t0 = time.perf_counter()
        value = STATISTICS[self.statistic](pixel_values(attribution, self.reduction)).cpu().numpy()

        response = clean_response(self, shard)
        seconds = (time.perf_counter() - t0) / max(len(shard.x), 1)
        frame = image_records(self.curve, shard, response, seconds, value=value, degenerate=~np.isfinite(value))
        return CurveResult(frame, None)


def max_entropy(pixels: int) -> float:
    """The largest complexity a map of `pixels` pixels can score (a constant map): log(pixels)."""
    return math.log(pixels)
