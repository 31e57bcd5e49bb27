"""The step maths: guided-diffusion's DDIM timesteps and alphas, and one DDIM step.

The update is written out (clip x0, then re-derive eps from it) instead of
calling diffusers' DDIMScheduler.step per step; tests check it equals that
scheduler (use_clipped_model_output=True). The scheduler only supplies the
respaced timesteps and the alphas.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from fudbench.imputers.diffusion.settings import StepSettings, check


def ddim_step(x_t: torch.Tensor, e: torch.Tensor, abar_t: float, abar_prev: float, clip_x0: bool = True):
    """One deterministic DDIM step (eta = 0). Returns (x_{t-1}, predicted x0)."""
    x0 = (x_t - math.sqrt(1 - abar_t) * e) / math.sqrt(abar_t)
    if clip_x0:
        x0 = x0.clamp(-1, 1)
        e = (x_t - math.sqrt(abar_t) * x0) / math.sqrt(1 - abar_t)
    return math.sqrt(abar_prev) * x0 + math.sqrt(1 - abar_prev) * e, x0


class DDIMSteps:
    """The DDIM timesteps (descending) of `settings.steps` steps over the training
    schedule, their cumulative alphas (abar_{-1} = 1 after the last step) and the step."""

    def __init__(self, schedule: dict, settings: StepSettings = StepSettings()):
        from fudbench.models.score import ddim_scheduler  # diffusers takes seconds to import: only here

        self.schedule = schedule
        self.settings = check(settings)
        self.scheduler = ddim_scheduler(schedule, clip_x0=settings.clip_x0)
        self.scheduler.set_timesteps(settings.steps)
        self.T = self.scheduler.config.num_train_timesteps
        self.timesteps = tuple(int(t) for t in self.scheduler.timesteps)

    def with_steps(self, steps: int) -> "DDIMSteps":
        return DDIMSteps(self.schedule, dataclasses.replace(self.settings, steps=steps))

    def _abar(self, t: int) -> float:
        return float(self.scheduler.alphas_cumprod[t]) if t >= 0 else float(self.scheduler.final_alpha_cumprod)

    def alphas(self, i: int) -> tuple[float, float]:
        """(abar_t, abar_{t-1}) of step i."""
        prev = self.timesteps[i + 1] if i + 1 < len(self.timesteps) else -1
        return self._abar(self.timesteps[i]), self._abar(prev)

    def step(self, x_t: torch.Tensor, e: torch.Tensor, abar_t: float, abar_prev: float):
        return ddim_step(x_t, e, abar_t, abar_prev, self.settings.clip_x0)
