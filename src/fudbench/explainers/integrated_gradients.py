"""IG: Integrated Gradients (Sundararajan et al. 2017) via captum.

Authors' setting: 50 steps, trapezoid rule, zero (black) baseline.
"""

from __future__ import annotations

import torch
from captum.attr import IntegratedGradients as _CaptumIG

from fudbench.explainers.base import Explainer

_METHODS = {
    "trapezoid": "riemann_trapezoid",
    "left": "riemann_left",
    "right": "riemann_right",
    "middle": "riemann_middle",
    "gausslegendre": "gausslegendre",
}


class IntegratedGradients(Explainer):
    name = "ig"

    def __init__(self, n_steps: int = 50, baseline: str = "zero", method: str = "trapezoid", batch_size: int = 64):
        if baseline not in ("zero", "mean"):
            raise ValueError(f"IG baseline must be 'zero' or 'mean', got {baseline!r}")
        if method not in _METHODS:
            raise ValueError(f"IG method must be one of {', '.join(_METHODS)}, got {method!r}")
        self.n_steps, self.baseline, self.method, self.batch_size = n_steps, baseline, method, batch_size

    def baselines(self, x):
        if self.baseline == "zero":
            return torch.zeros_like(x)
        return x.mean(dim=(2, 3), keepdim=True).expand_as(x)

    def explain(self, model, x, target, seeds=None):
        ig = _CaptumIG(model)
        return ig.attribute(
            x,
            baselines=self.baselines(x),
            target=target,
            n_steps=self.n_steps,
            method=_METHODS[self.method],
            internal_batch_size=max(len(x), self.batch_size),
        ).detach()
