"""Diffusion imputation: FUD's sampler (paper Algorithm 1, Appendix C, D).

    x_T = M * x + (1 - M) * eps                      (M: 1 = keep)
    for t in the DDIM timesteps (eta = 0):
        e = eps_theta(x_t, t)
        if guidance is on at t (t < O = guidance_start * T):
            e = e + s * sqrt(1 - abar_t) * grad_x log p(y | x_t)    (AWAY from y)
        x_{t-1} = DDIM step(x_t, e)
        x_{t-1} = M * x + (1 - M) * x_{t-1}          (hard constraint)

Standard classifier guidance subtracts the gradient term to move towards y;
FUD adds it, so the fill may not create new evidence for the evaluated class.
With guidance_scale = 0 this is the plain (RePaint-like) diffusion imputer.

Randomness is per sample (context.seeds): the starting noise of every sample
is drawn from its own generator on the CPU, so a batched call equals
per-sample calls and results do not depend on the device's RNG.

The diffusion model works in [-1, 1]; images and masks enter and leave in
[0, 1]. Kept pixels of the output are copied from the input, bit for bit.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from fudbench.imputers.base import ImputeContext, Imputer, compose
from fudbench.models.score import ddim_scheduler


def _noise_like(x: torch.Tensor, seeds) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.float32)
    for i, s in enumerate(seeds):
        g = torch.Generator().manual_seed(int(s))
        out[i] = torch.randn(x.shape[1:], generator=g)
    return out.to(x.device, x.dtype)


class DiffusionImputer(Imputer):
    name = "diffusion"

    def __init__(self, unet, schedule: dict, steps: int = 100, guidance_scale: float = 4.0,
                 guidance_start: float = 0.05, known: str = "clean", clip_x0: bool = True):
        if known not in ("clean", "renoise"):
            raise ValueError(f"known must be 'clean' or 'renoise', got {known!r}")
        self.unet = unet
        self.scheduler = ddim_scheduler(schedule, clip_x0=clip_x0)
        self.scheduler.set_timesteps(steps)
        self.T = self.scheduler.config.num_train_timesteps
        self.steps = steps
        self.guidance_scale = guidance_scale
        self.guidance_switch = guidance_start * self.T  # guidance on for t < switch
        self.known = known

    @property
    def guided_timesteps(self) -> list[int]:
        return [int(t) for t in self.scheduler.timesteps if t < self.guidance_switch]

    def _abar(self, t: int) -> float:
        return float(self.scheduler.alphas_cumprod[t]) if t >= 0 else float(self.scheduler.final_alpha_cumprod)

    def _class_gradient(self, classifier, target, x_t):
        """grad_x log p(y | x_t), per sample (x_t in [-1, 1])."""
        with torch.enable_grad():
            xg = x_t.detach().requires_grad_(True)
            logp = F.log_softmax(classifier((xg + 1) / 2), dim=1)
            picked = logp.gather(1, target.view(-1, 1)).sum()
            (grad,) = torch.autograd.grad(picked, xg)
        return grad

    @torch.no_grad()
    def sample(self, x: torch.Tensor, keep_mask: torch.Tensor, context: ImputeContext,
               trace: bool = False, callback=None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Returns (x_0 in [0, 1] with kept pixels copied from x, and, if trace,
        the (N, steps + 1) L2 distances ||x_t - x|| in [0, 1] space, from x_T on).
        callback(step, t, x_t), if given, sees x_t (in [-1, 1]) after each step."""
        if context.seeds is None or len(context.seeds) != len(x):
            raise ValueError("DiffusionImputer needs one seed per sample in context.seeds")
        guided = self.guidance_scale > 0 and context.classifier is not None
        if guided and context.target is None:
            raise ValueError("guidance needs context.target (the evaluated class per sample)")
        m = keep_mask.to(x.dtype).expand_as(x)
        x_clean = x * 2 - 1
        eps = _noise_like(x, context.seeds)
        if self.known == "renoise":
            renoise_gen = [torch.Generator().manual_seed(int(s) ^ 0x5EED) for s in context.seeds]
        x_t = m * x_clean + (1 - m) * eps
        distances = [self._distance(x_t, x_clean)] if trace else None
        timesteps = [int(t) for t in self.scheduler.timesteps]
        for i, t in enumerate(timesteps):
            e = self.unet(x_t, t).sample[:, :3]
            abar_t = self._abar(t)
            if guided and t < self.guidance_switch:
                grad = self._class_gradient(context.classifier, context.target, x_t)
                e = e + self.guidance_scale * (1 - abar_t) ** 0.5 * grad
            x_prev = self.scheduler.step(e, t, x_t, eta=0.0, use_clipped_model_output=True).prev_sample
            if self.known == "clean":
                known = x_clean
            else:  # RePaint-style: known pixels from q(x_{t-1} | x)
                t_prev = timesteps[i + 1] if i + 1 < len(timesteps) else -1
                abar_prev = self._abar(t_prev)
                noise = torch.stack([torch.randn(x.shape[1:], generator=g) for g in renoise_gen]).to(x)
                known = abar_prev ** 0.5 * x_clean + (1 - abar_prev) ** 0.5 * noise
            x_t = m * known + (1 - m) * x_prev
            if callback is not None:
                callback(i, t, x_t)
            if trace:
                distances.append(self._distance(x_t, x_clean))
        out = compose(x, keep_mask, (x_t + 1) / 2)
        return out, (torch.stack(distances, 1) if trace else None)

    @staticmethod
    def _distance(x_t, x_clean):
        return ((x_t - x_clean) / 2).flatten(1).norm(dim=1).cpu()

    def fill(self, x, keep_mask, context: ImputeContext):
        return self.sample(x, keep_mask, context)[0]
