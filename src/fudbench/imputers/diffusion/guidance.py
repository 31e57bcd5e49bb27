"""Guidance parts: FUD's anti-class guidance, and none (diffusion_plain).

Standard classifier guidance subtracts the gradient term to move towards y;
FUD adds it, so the fill may not create new evidence for the evaluated class.
The gradient is computed only in the guided steps, in fp32, outside autocast.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion.settings import GuidanceSettings


def class_gradient(classifier, target: torch.Tensor, x_t: torch.Tensor) -> torch.Tensor:
    """grad_x log p(y | x_t), per sample (x_t in [-1, 1]); fp32, outside autocast."""
    with torch.enable_grad():
        xg = x_t.detach().requires_grad_(True)
        logp = F.log_softmax(classifier((xg + 1) / 2).float(), dim=1)
        picked = logp.gather(1, target.view(-1, 1)).sum()
        (grad,) = torch.autograd.grad(picked, xg)
    return grad


class AntiClassGuidance:
    """e <- e + s * sqrt(1 - abar_t) * grad_x log p(y | x_t) for t < guidance_start * T."""

    def __init__(self, settings: GuidanceSettings, num_train_timesteps: int):
        self.scale = settings.guidance_scale
        self.switch = settings.guidance_start * num_train_timesteps  # guidance on for t < switch

    def applies(self, context: ImputeContext) -> bool:
        """Whether this call is guided: a scale > 0 and a classifier to guide away from."""
        guided = self.scale > 0 and context.classifier is not None
        if guided and context.target is None:
            raise ValueError("guidance needs context.target (the evaluated class per sample)")
        return guided

    def guided_timesteps(self, timesteps) -> list[int]:
        return [t for t in timesteps if t < self.switch]

    def eps(self, e: torch.Tensor, x_t: torch.Tensor, t: int, abar_t: float, context: ImputeContext) -> torch.Tensor:
        if t >= self.switch:
            return e
        grad = class_gradient(context.classifier, context.target, x_t)
        return e + self.scale * math.sqrt(1 - abar_t) * grad


class NoGuidance:
    """The null part: the prior alone (the loop never asks it for eps)."""

    def applies(self, context: ImputeContext) -> bool:
        return False

    def guided_timesteps(self, timesteps) -> list[int]:
        return []
