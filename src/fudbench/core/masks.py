"""From attributions to pixel orders and keep-masks.

Conventions (DESIGN.md): masks are 1 = keep, 0 = remove, one value per pixel
shared by the channels. An attribution (N, C, H, W) is reduced to one value
per pixel by `reduce_attribution`; pixels are ranked from most to least
relevant, ties broken by a seeded random permutation (so a constant map gives
a seeded random order rather than raster order), and non-finite values rank
last.

Regions (FUD's `granularity`): `region_order` ranks whole regions (patches,
superpixels) the same way by a score per region and lists their pixels
region by region; its `cuts` (the pixel counts of the rank-order prefixes of
whole regions) make `keep_mask` / `top_count` take whole regions only.
`reverse_order` turns an order into least-relevant-first (keeping the bottom).

Degenerate attributions (the rule for every ranking protocol: FUD, INS/DEL;
docs/reliability.md):
- NaN, +inf and -inf pixel scores mean "least relevant": they rank after every
  finite score, in the seeded random order among themselves. They are not an
  error, so one explainer's numerical failure lowers its own scores instead of
  stopping the run. (Protocols that sum attributions, Sensitivity-N and
  Infidelity, count non-finite values as 0 instead, with their own warning.)
- A constant map (every pixel equal; an all-non-finite map counts as constant)
  carries no ranking: its order is the seeded random tie-break, a uniformly
  random order that is reproducible and the same whatever the constant is.
- Both are reported: `pixel_order` logs a warning with the counts, which lands
  in the evaluate job's log file; `degenerate_counts` returns the counts.
"""

from __future__ import annotations

import logging
from typing import Optional, Sequence

import numpy as np
import torch

log = logging.getLogger(__name__)

REDUCTIONS = ("abs_sum", "sum", "max_abs", "l2")


def reduce_attribution(attribution: torch.Tensor, reduction: str = "abs_sum") -> torch.Tensor:
    """(N, C, H, W) or (N, H, W) -> (N, H, W)."""
    a = attribution.float()
    if a.dim() == 3:
        return a
    if reduction == "abs_sum":
        return a.abs().sum(1)
    if reduction == "sum":
        return a.sum(1)
    if reduction == "max_abs":
        return a.abs().amax(1)
    if reduction == "l2":
        return a.pow(2).sum(1).sqrt()
    raise ValueError(f"unknown reduction {reduction!r}; choose from {', '.join(REDUCTIONS)}")


def pixel_order(scores: torch.Tensor, seeds) -> torch.Tensor:
    """Indices of the H*W pixels of each image, most relevant first.

    scores: (N, H, W); seeds: one int per image for the tie-breaking permutation.
    Non-finite scores go last; they and constant maps are counted in the log.
    """
    n = scores.shape[0]
    flat = scores.reshape(n, -1).float().cpu()
    counts = degenerate_counts(flat)
    if counts["non_finite_values"]:
        log.warning(
            "%d non-finite attribution values in %d image(s): ranked least relevant",
            counts["non_finite_values"],
            counts["non_finite_images"],
        )
    if counts["constant_images"]:
        log.warning("%d image(s) with a constant attribution map: seeded random pixel order", counts["constant_images"])
    flat = flat.masked_fill(~torch.isfinite(flat), float("-inf"))
    orders = []
    for i in range(n):
        g = torch.Generator().manual_seed(int(seeds[i]))
        perm = torch.randperm(flat.shape[1], generator=g)
        # Stable sort of a random permutation: equal scores keep the random order.
        idx = torch.sort(flat[i, perm], descending=True, stable=True).indices
        orders.append(perm[idx])
    return torch.stack(orders)


def degenerate_counts(scores: torch.Tensor) -> dict[str, int]:
    """Counts of the degenerate cases of per-pixel scores (N, ...): non-finite
    values, images with any non-finite value, images whose map is constant
    (non-finite values count as equal to each other: they all rank last)."""
    flat = scores.reshape(scores.shape[0], -1).float()
    bad = ~torch.isfinite(flat)
    ranked = flat.masked_fill(bad, float("-inf"))
    constant = (ranked == ranked[:, :1]).all(1)
    return {
        "non_finite_values": int(bad.sum()),
        "non_finite_images": int(bad.any(1).sum()),
        "constant_images": int(constant.sum()),
    }


DEGENERATE_KINDS = ("non-finite", "zero", "constant")


def degenerate_maps(attribution) -> list[str]:
    """Per image, what is degenerate about its map ('' if nothing): 'non-finite'
    (any NaN or inf), 'zero' (all zero), 'constant' (one value everywhere). Such a
    map ranks no pixel above another: evaluations fall back to a seeded random order."""
    a = torch.as_tensor(attribution).reshape(len(attribution), -1).float()
    finite = torch.isfinite(a).all(1)
    zero = (a == 0).all(1)
    constant = (a == a[:, :1]).all(1)
    return [
        "non-finite" if not f else "zero" if z else "constant" if c else ""
        for f, z, c in zip(finite.tolist(), zero.tolist(), constant.tolist())
    ]


def ranks_from_order(order: torch.Tensor) -> torch.Tensor:
    """rank[n, p] = position of pixel p in order[n] (0 = most relevant)."""
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(order.shape[1]).expand_as(order).contiguous())
    return ranks


def region_order(relevance: Sequence, labels: Sequence[np.ndarray], seeds) -> tuple[torch.Tensor, list]:
    """Pixel orders that list whole regions, most relevant region first.

    relevance: per image its (K,) region scores; labels: per image the (H, W)
    region (0..K-1) of each pixel; seeds: per image the tie-break seed.
    Regions are ranked by `pixel_order` (non-finite last, ties by the seeded
    permutation); each image's order lists its regions' pixels region by
    region in that rank (raster order inside a region). Returns (orders
    (N, H*W), cuts), cuts[i] = (K + 1,) the pixel counts of image i's first
    0, 1, ..., K regions: the only counts that keep whole regions."""
    orders, cuts = [], []
    for rel, lab, seed in zip(relevance, labels, seeds):
        lab = torch.as_tensor(np.asarray(lab)).reshape(-1).long()
        regions = pixel_order(torch.as_tensor(np.asarray(rel)).view(1, 1, -1), [seed])[0]
        position = ranks_from_order(regions[None])[0]  # rank of each region
        orders.append(torch.sort(position[lab], stable=True).indices)
        sizes = torch.bincount(lab, minlength=len(regions))[regions]
        cuts.append(torch.cat([sizes.new_zeros(1), sizes.cumsum(0)]))
    return torch.stack(orders), cuts


def reverse_order(order: torch.Tensor, cuts: Optional[list] = None) -> tuple[torch.Tensor, Optional[list]]:
    """The orders least relevant first (and their cuts): keep-top masks of it keep the bottom."""
    total = order.shape[1]
    return order.flip(1), None if cuts is None else [total - c.flip(0) for c in cuts]


def n_pixels(fraction: float, total: int) -> int:
    """Number of pixels for a fraction of the image (rounded half up, exact for grids)."""
    return int(fraction * total + 0.5 + 1e-9)


def top_count(fraction: float, total: int, cuts: Optional[torch.Tensor] = None) -> int:
    """Pixels in the top `fraction` of an order: n = n_pixels(fraction, total);
    with an image's region cuts, the smallest cut >= n, i.e. whole regions are
    taken in rank order until the count first reaches round(fraction * total).
    So the count never falls short of n, overshoots it by less than one region,
    and is non-decreasing in fraction."""
    n = n_pixels(fraction, total)
    return n if cuts is None else int(cuts[torch.searchsorted(cuts, torch.tensor(n, dtype=cuts.dtype))])


def keep_mask(ranks: torch.Tensor, fraction: float, mode: str, shape, cuts: Optional[list] = None) -> torch.Tensor:
    """(N, 1, H, W) float mask. mode 'keep': keep the top `fraction` of pixels;
    mode 'remove': remove the top `fraction` (keep the rest). cuts (one per
    row of ranks, from region_order): the top is `top_count` pixels, whole regions."""
    total = ranks.shape[1]
    k = n_pixels(fraction, total) if cuts is None else torch.tensor([[top_count(fraction, total, c)] for c in cuts])
    if mode == "keep":
        m = ranks < k
    elif mode == "remove":
        m = ranks >= k
    else:
        raise ValueError(f"mode must be 'keep' or 'remove', got {mode!r}")
    h, w = shape
    return m.float().view(-1, 1, h, w)
