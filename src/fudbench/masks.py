"""From attributions to pixel orders and keep-masks.

Conventions (DESIGN.md): masks are 1 = keep, 0 = remove, one value per pixel
shared by the channels. An attribution (N, C, H, W) is reduced to one value
per pixel by `reduce_attribution`; pixels are ranked from most to least
relevant, ties broken by a seeded random permutation (so a constant map gives
a seeded random order rather than raster order), and non-finite values rank
last.
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
    Non-finite scores go last (and are counted in the log).
    """
    n = scores.shape[0]
    flat = scores.reshape(n, -1).float().cpu()
    bad = ~torch.isfinite(flat)
    if bad.any():
        log.warning("%d non-finite attribution values in %d image(s): ranked least relevant",
                    int(bad.sum()), int(bad.any(1).sum()))
        flat = flat.masked_fill(bad, float("-inf"))
    orders = []
    for i in range(n):
        g = torch.Generator().manual_seed(int(seeds[i]))
        perm = torch.randperm(flat.shape[1], generator=g)
        # Stable sort of a random permutation: equal scores keep the random order.
        idx = torch.sort(flat[i, perm], descending=True, stable=True).indices
        orders.append(perm[idx])
    return torch.stack(orders)


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
