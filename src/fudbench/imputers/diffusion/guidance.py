"""Guidance parts: FUD's anti-class guidance, and none (diffusion_plain).

Standard classifier guidance subtracts the gradient term to move towards y;
FUD adds it, so the fill may not create new evidence for the evaluated class.
The gradient is computed only in the guided steps, in fp32, outside autocast.

Which sampled steps are guided (guidance_schedule):
- threshold (paper, Appendix D): those with t < guidance_start * T. The count
  depends on the step count: with leading spacing and T = 1000, 100 steps
  guide t = 40, 30, 20, 10, 0; 50 steps 40, 20, 0; 25 steps 40, 0; 10 steps
  only 0.
- last_steps: the last n = ceil(100 * guidance_start) sampled steps (all of
  them if there are fewer), n being what threshold guides at the paper's 100
  steps (T a multiple of 100): 5 at the default 0.05, so 100 steps guide
  exactly as threshold does and 25 steps guide t = 160, 120, 80, 40, 0.
Both count the final step t = 0, whose guidance term barely moves the output:
a guided step moves the x0 estimate by s * (1 - abar_t) / sqrt(abar_t) times
the gradient, 1e-4 s at t = 0 for the linear schedule (2e-3 s at t = 10,
0.02 s at t = 40, 0.27 s at t = 160, 1.8 s at t = 400). So last_steps keeps
n - 1 effective guided steps at every step count >= n, where threshold keeps
4 at 100 steps, 2 at 50, 1 at 25 and none at 10; at few steps last_steps
reaches back to larger t (t = 400 at 10 steps), where guidance acts on the
coarse structure of the fill rather than on its details.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion.settings import GuidanceSettings, check

REFERENCE_STEPS = 100  # the paper's DDIM step count, which last_steps keeps the guided-step count of


def class_gradient(classifier, target: torch.Tensor, x_t: torch.Tensor) -> torch.Tensor:
    """grad_x log p(y | x_t), per sample (x_t in [-1, 1]); fp32, outside autocast."""
    with torch.enable_grad():
        xg = x_t.detach().requires_grad_(True)
        logp = F.log_softmax(classifier((xg + 1) / 2).float(), dim=1)
        picked = logp.gather(1, target.view(-1, 1)).sum()
        (grad,) = torch.autograd.grad(picked, xg)
    return grad


def last_steps_count(guidance_start: float) -> int:
    """ceil(REFERENCE_STEPS * guidance_start): the steps threshold guides at 100 steps (rounded first so that
    e.g. 0.07 * 100 = 7.000000000000001 gives 7)."""
    return math.ceil(round(REFERENCE_STEPS * guidance_start, 9))


class AntiClassGuidance:
    """e <- e + s * sqrt(1 - abar_t) * grad_x log p(y | x_t) at the guided timesteps (module docstring)."""

    def __init__(self, settings: GuidanceSettings, num_train_timesteps: int):
        self.scale = check(settings).guidance_scale
        self.schedule = settings.guidance_schedule
        self.switch = settings.guidance_start * num_train_timesteps  # threshold: guidance on for t < switch
        self.n_last = last_steps_count(settings.guidance_start)  # last_steps: the last n_last steps

    def applies(self, context: ImputeContext) -> bool:
        """Whether this call is guided: a scale > 0 and a classifier to guide away from."""
        guided = self.scale > 0 and context.classifier is not None
        if guided and context.target is None:
            raise ValueError("guidance needs context.target (the evaluated class per sample)")
        return guided

    def guided_timesteps(self, timesteps) -> list[int]:
        """The guided ones of the sampled timesteps (descending), by the schedule."""
        timesteps = list(timesteps)
        if self.schedule == "threshold":
            return [t for t in timesteps if t < self.switch]
        return timesteps[max(len(timesteps) - self.n_last, 0) :]

    def eps(self, e: torch.Tensor, x_t: torch.Tensor, abar_t: float, context: ImputeContext) -> torch.Tensor:
        """The guided eps at a guided timestep (the loop asks only at those)."""
        grad = class_gradient(context.classifier, context.target, x_t)
        return e + self.scale * math.sqrt(1 - abar_t) * grad


class NoGuidance:
    """The null part: the prior alone (the loop never asks it for eps)."""

    def applies(self, context: ImputeContext) -> bool:
        return False

    def guided_timesteps(self, timesteps) -> list[int]:
        return []
