"""From attributions to pixel orders and keep-masks.

Conventions (DESIGN.md): masks are 1 = keep, 0 = remove, one value per pixel
shared by the channels. An attribution (N, C, H, W) is reduced to one value
per pixel by `reduce_attribution`; pixels are ranked from most to least
relevant, ties broken by a seeded random permutation (so a constant map gives
a seeded random order rather than raster order), and non-finite values rank
last.

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
        log.warning("%d non-finite attribution values in %d image(s): ranked least relevant",
                    counts["non_finite_values"], counts["non_finite_images"])
    if counts["constant_images"]:
        log.warning("%d image(s) with a constant attribution map: seeded random pixel order",
                    counts["constant_images"])
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
    return {"non_finite_values": int(bad.sum()), "non_finite_images": int(bad.any(1).sum()),
            "constant_images": int(constant.sum())}


def ranks_from_order(order: torch.Tensor) -> torch.Tensor:
    """rank[n, p] = position of pixel p in order[n] (0 = most relevant)."""
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(order.shape[1]).expand_as(order).contiguous())
    return ranks


def n_pixels(fraction: float, total: int) -> int:
    """Number of pixels for a fraction of the image (rounded half up, exact for grids)."""
    return int(fraction * total + 0.5 + 1e-9)


def keep_mask(ranks: torch.Tensor, fraction: float, mode: str, shape) -> torch.Tensor:
    """(N, 1, H, W) float mask. mode 'keep': keep the top `fraction` of pixels;
    mode 'remove': remove the top `fraction` (keep the rest)."""
    k = n_pixels(fraction, ranks.shape[1])
    if mode == "keep":
        m = ranks < k
    elif mode == "remove":
        m = ranks >= k
    else:
        raise ValueError(f"mode must be 'keep' or 'remove', got {mode!r}")
    h, w = shape
    return m.float().view(-1, 1, h, w)
