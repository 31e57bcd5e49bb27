"""The step maths: guided-diffusion's DDIM timesteps and alphas, one DDIM step,
and RePaint's resampling schedule with its re-noising step.

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


def renoise(x: torch.Tensor, abar_from: float, abar_to: float, noise: torch.Tensor) -> torch.Tensor:
    """A draw from q(x_to | x_from) (abar_to <= abar_from, a noisier level):
    sqrt(abar_to / abar_from) x + sqrt(1 - abar_to / abar_from) noise."""
    ratio = abar_to / abar_from
    return math.sqrt(ratio) * x + math.sqrt(1 - ratio) * noise


def resample_schedule(n_steps: int, jump_length: int = 10, resamplings: int = 1) -> list[tuple[str, int]]:
    """RePaint's time schedule (Lugmayr et al. 2022, get_schedule_jump) over
    the DDIM steps, as operations on levels (level k: x at the noise of the
    k-th sampled timestep; level n_steps: x_0): ("step", k) is DDIM step k,
    level k -> k + 1; ("jump", k) re-noises level k back to k - jump_length
    with q. The jump points are the levels n_steps - m * jump_length
    (m = 0, 1, ...) above jump_length; each is jumped from resamplings - 1
    times, the steps in between redone each time. resamplings = 1: the plain
    loop, ("step", 0) ... ("step", n_steps - 1)."""
    if resamplings > 1 and jump_length >= n_steps:
        raise ValueError(
            f"jump_length ({jump_length}) must be below the number of DDIM steps ({n_steps}) for "
            f"resamplings ({resamplings}) to resample anything"
        )
    left = {k: resamplings - 1 for k in range(n_steps, jump_length, -jump_length)}
    ops, level = [], 0
    while level < n_steps:
        ops.append(("step", level))
        level += 1
        if left.get(level, 0) > 0:
            left[level] -= 1
            ops.append(("jump", level))
            level -= jump_length
    return ops


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

    def level_abar(self, level: int) -> float:
        """abar of x at a level (resample_schedule): the level-th sampled timestep's, 1 after the last step."""
        return self._abar(self.timesteps[level] if level < len(self.timesteps) else -1)

    def alphas(self, i: int) -> tuple[float, float]:
        """(abar_t, abar_{t-1}) of step i."""
        prev = self.timesteps[i + 1] if i + 1 < len(self.timesteps) else -1
        return self._abar(self.timesteps[i]), self._abar(prev)

    def step(self, x_t: torch.Tensor, e: torch.Tensor, abar_t: float, abar_prev: float):
        return ddim_step(x_t, e, abar_t, abar_prev, self.settings.clip_x0)
