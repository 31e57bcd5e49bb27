"""Localisation of attributions against ground-truth object masks.

mass_inside: the share of an image's attribution mass (|a| summed over
channels) that falls inside the object mask. A random map scores the mask's
area fraction on average; a map that points at the object scores more.
"""

from __future__ import annotations

import torch

from fudbench.core.masks import reduce_attribution


def mass_inside(attribution: torch.Tensor, masks: torch.Tensor, reduction: str = "abs_sum") -> torch.Tensor:
    """(N,) share of attribution mass inside each image's mask."""
    a = reduce_attribution(attribution, reduction).abs().flatten(1)
    m = masks.to(a.device, a.dtype).flatten(1)
    return (a * m).sum(1) / a.sum(1).clamp_min(1e-12)
