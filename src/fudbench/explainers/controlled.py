"""Controlled explainers for meta-evaluation: their quality is known by construction.

- random:  a seeded noise map (a metric should score it at chance level).
- oracle:  the ground-truth object mask of the synthetic benchmark.
- degrade: any explainer's map mixed with a fraction p of random noise
           (the F-Fidelity paper's protocol, seeds/004): the more noise, the
           worse the explanation, which gives a ground-truth ranking.

Degradation rule (the seed paper adds "a proportion of noise perturbations" to
the explanation without a formula; ours): the per-pixel map a (|attribution|
summed over channels) is min-max normalised per image to [0, 1]; then
- mode "replace" (default): a seeded random fraction p of the pixels get a
  seeded uniform value instead of theirs. The ranking of the other pixels is
  kept, so p = 0 is the base ranking and p = 1 the random explainer. It also
  degrades a binary map such as the oracle mask, whose ranking a convex mix
  with p <= 0.5 would leave unchanged (every object pixel would still outrank
  every background pixel);
- mode "mix": a_p = (1 - p) * norm(a) + p * u, a convex mix with uniform
  noise u (suits continuous maps only, see above).
The result is broadcast back over the channels.
"""
from __future__ import annotations

import torch

from fudbench.explainers.base import Explainer


def seeded_uniform(shape, seeds, device) -> torch.Tensor:
    """One (H, W) uniform map per image, each from its own CPU generator."""
    if seeds is None:
        raise ValueError("this explainer is random: pass one seed per image")
    maps = [torch.rand(shape, generator=torch.Generator().manual_seed(int(s))) for s in seeds]
    return torch.stack(maps).to(device)


class RandomExplainer(Explainer):
    name = "random"

    def explain(self, model, x, target, seeds=None):
        return seeded_uniform(x.shape[-2:], seeds, x.device).unsqueeze(1).expand_as(x).clone()


class OracleExplainer(Explainer):
    """The ground-truth object mask (1 inside the object); needs `masks`."""

    name = "oracle"
    uses_masks = True

    def explain(self, model, x, target, seeds=None, masks=None):
        if masks is None:
            raise ValueError("the oracle explainer needs the ground-truth masks (synthetic benchmark only)")
        return masks.to(x.device, x.dtype).view(len(x), 1, *x.shape[-2:]).expand_as(x).clone()


def _minmax(a: torch.Tensor) -> torch.Tensor:
    flat = a.flatten(1)
    lo, hi = flat.min(1, keepdim=True).values, flat.max(1, keepdim=True).values
    return ((flat - lo) / (hi - lo).clamp_min(1e-12)).view_as(a)


class Degrade(Explainer):
    """`base` explainer (a registered name) with a fraction of noise mixed in."""

    name = "degrade"

    def __init__(self, base: str, fraction: float, base_settings: dict | None = None, mode: str = "replace"):
        from fudbench.explainers import build_explainer

        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"degrade fraction must be in [0, 1], got {fraction}")
        if mode not in ("replace", "mix"):
            raise ValueError(f"degrade mode must be 'replace' or 'mix', got {mode!r}")
        self.mode = mode
        if base == "degrade":
            raise ValueError("degrade cannot wrap itself")
        self.fraction = fraction
        self.base = build_explainer(base, base_settings or {})
        self.uses_masks = self.base.uses_masks

    def prepare(self, references):
        self.base.prepare(references)

    def explain(self, model, x, target, seeds=None, masks=None):
        kwargs = {"masks": masks} if self.uses_masks else {}
        base_seeds = None if seeds is None else [int(s) ^ 0xBA5E for s in seeds]
        a = self.base.explain(model, x, target, seeds=base_seeds, **kwargs).abs().sum(1)
        noise = seeded_uniform(x.shape[-2:], seeds, x.device)
        if self.mode == "mix":
            out = (1 - self.fraction) * _minmax(a) + self.fraction * noise
        else:  # which pixels are replaced: a second seeded uniform map, thresholded
            picked = seeded_uniform(x.shape[-2:], [int(s) ^ 0x9E1EC7 for s in seeds], x.device) < self.fraction
            out = torch.where(picked, noise, _minmax(a))
        return out.unsqueeze(1).expand_as(x).clone()
