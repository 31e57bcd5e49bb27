"""SM: Saliency map (Simonyan et al. 2013), |d logit_y / d x| via captum."""

from __future__ import annotations

from captum.attr import Saliency as _CaptumSaliency

from fudbench.explainers.base import Explainer


class Saliency(Explainer):
    name = "sm"

    def __init__(self, abs: bool = True):  # noqa: A002 - captum's name
        self.abs = abs

    def explain(self, model, x, target, seeds=None):
        x = x.detach().clone().requires_grad_(True)  # captum warns otherwise
        return _CaptumSaliency(model).attribute(x, target=target, abs=self.abs).detach()
