"""Diffusion imputation: FUD's sampler (paper Algorithm 1, Appendix C, D).

    x_T = M * x + (1 - M) * eps                      (M: 1 = keep; x, x_t in [-1, 1])
          [renoise_ddim:  M * (sqrt(abar_t0) x + sqrt(1 - abar_t0) eps) + (1 - M) * eps]
          [renoise_fresh: M * (sqrt(abar_t0) x + sqrt(1 - abar_t0) eps') + (1 - M) * eps]
    for t in the DDIM timesteps (eta = 0):
        e = eps_theta(x_t, t)                        (first 3 output channels)
        if t is a guided timestep (paper: t < O = guidance_start * T):
            e = e + s * sqrt(1 - abar_t) * grad_x log p(y | x_t)    (AWAY from y)
        [soft constraint: e = e - sqrt(1 - abar_t) * M * (x - x_t) / sigma^2]
        x0  = clip((x_t - sqrt(1 - abar_t) e) / sqrt(abar_t), -1, 1)
        e   = (x_t - sqrt(abar_t) x0) / sqrt(1 - abar_t)            (eps of the clipped x0)
        x_{t-1} = sqrt(abar_{t-1}) x0 + sqrt(1 - abar_{t-1}) e     (abar_{-1} = 1)
        [hard constraint: x_{t-1} = M * x + (1 - M) * x_{t-1}]
        [renoise_ddim: M * x replaced by M * (sqrt(abar_{t-1}) x + sqrt(1 - abar_{t-1}) eps), x_T's eps]
        [renoise_fresh: M * x replaced by M * a fresh draw from q(x_{t-1} | x)]
        [resampling (resamplings r > 1, jump_length j): at a jump point, x is
         re-noised j levels back with q and those steps are redone, r - 1 times]

Each line belongs to a part: eps_theta to the runtime (runtime.py), the
guidance term and which timesteps get it to the guidance part (guidance.py),
x_T's kept pixels and the bracketed constraint lines to the constraint part
(constraints.py), the DDIM update and the resampling schedule to the step
maths (steps.py). With no guidance (NoGuidance, or guidance_scale = 0) this
is the plain diffusion imputer.

RePaint's resampling (Lugmayr et al. 2022): the order of steps and jumps is
steps.resample_schedule; a jump from level k to k - j draws x_{k-j} from
q(x_{k-j} | x_k) = N(sqrt(abar_{k-j} / abar_k) x_k, (1 - abar_{k-j} / abar_k) I)
in one draw (RePaint re-noises one step at a time, which has the same
distribution), then the constraint projects the kept pixels. The jump noise
comes from one generator per sample seeded with seed ^ 0x7E5A. With r = 1
the loop is the plain one, bit for bit.

Randomness is per sample (context.seeds): the starting noise of every sample
is drawn from its own generator on the CPU, so a batched call equals
per-sample calls and results do not depend on the device's RNG. On a GPU
each draw reaches the device in one asynchronous copy from pinned memory per
sample() call (per step only for renoise_fresh and resampling jumps), and
the timesteps are made on the device once per call, not per step.
"""

from __future__ import annotations

import copy
from typing import Optional

import torch

from fudbench.imputers.base import ImputeContext, Imputer, compose, takes_x0_hat
from fudbench.imputers.diffusion.runtime import ScoreModelRuntime
from fudbench.imputers.diffusion.settings import ResampleSettings
from fudbench.imputers.diffusion.steps import DDIMSteps, renoise, resample_schedule


def cpu_draws(shape, generators, like: torch.Tensor) -> torch.Tensor:
    """One standard-normal draw of `shape` per generator (CPU generators: the numbers do
    not depend on the device), stacked and moved to like's device and dtype. On a GPU
    the batch is drawn into pinned memory and copied once, asynchronously; on a CPU
    the draws are the same tensor as torch.stack of them."""
    pin = like.is_cuda
    out = torch.empty((len(generators), *shape), dtype=torch.float32, pin_memory=pin)
    for i, g in enumerate(generators):
        torch.randn(shape, generator=g, out=out[i])
    return out.to(like.device, like.dtype, non_blocking=pin)


def _noise_like(x: torch.Tensor, seeds) -> torch.Tensor:
    return cpu_draws(x.shape[1:], [torch.Generator().manual_seed(int(s)) for s in seeds], x)


class _JumpNoise:
    """The noise of resampling jumps: one generator per sample (seed ^ 0x7E5A), drawn in order."""

    def __init__(self, x: torch.Tensor, seeds):
        self.like = x
        self.generators = [torch.Generator().manual_seed(int(s) ^ 0x7E5A) for s in seeds]

    def __call__(self) -> torch.Tensor:
        return cpu_draws(self.like.shape[1:], self.generators, self.like)


class DiffusionImputer(Imputer):
    """The inpainting loop over its parts. Build it with fud_sampler or plain_sampler."""

    name = "diffusion"
    stochastic = True  # the fill depends on context.seeds

    def __init__(
        self,
        runtime: ScoreModelRuntime,
        ddim: DDIMSteps,
        guidance,
        constraint,
        name: str = "diffusion",
        resampling: ResampleSettings = ResampleSettings(),
    ):
        self.runtime = runtime
        self.ddim = ddim
        self.guidance = guidance
        self.constraint = constraint
        self.name = name
        self.resampling = resampling
        resample_schedule(self.steps, resampling.jump_length, resampling.resamplings)  # fails here, not in a fill

    @property
    def schedule(self) -> list[tuple[str, int]]:
        """The loop's steps and resampling jumps (steps.resample_schedule)."""
        return resample_schedule(self.steps, self.resampling.jump_length, self.resampling.resamplings)

    def with_steps(self, steps: int) -> "DiffusionImputer":
        """The same sampler (same U-Net, compiled forward and settings) with another
        DDIM step count: step studies and benchmarks compile the U-Net once."""
        other = copy.copy(self)
        other.ddim = self.ddim.with_steps(steps)
        return other

    @property
    def steps(self) -> int:
        return self.ddim.settings.steps

    @property
    def timesteps(self) -> list[int]:
        return list(self.ddim.timesteps)

    @property
    def guided_timesteps(self) -> list[int]:
        return self.guidance.guided_timesteps(self.ddim.timesteps)

    def warm_up(self, x: torch.Tensor) -> bool:
        """Compile (where compilation is on) the U-Net graph that a batch like x will run,
        so that callers timing fill() do not time the compilation. True if it compiled."""
        return self.runtime.warm_up(len(x), tuple(x.shape[1:]), x.device)

    @property
    def copies_kept_pixels(self) -> bool:
        """Whether the output's kept pixels are x's bit for bit (hard) or the sampler's own (soft)."""
        return self.constraint.exact

    @torch.no_grad()
    def sample(
        self, x: torch.Tensor, keep_mask: torch.Tensor, context: ImputeContext, trace: bool = False, callback=None
    ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Returns (x_0 in [0, 1], and, if trace, the (N, 1 + steps taken) L2 distances
        ||x_t - x|| in [0, 1] space, from x_T on; steps taken = steps without
        resampling, the redone steps included with it). With the hard constraint the
        kept pixels of x_0 are copied from x; with the soft one they are the
        sampler's own values.
        callback(step, t, x_t) sees x_t (in [-1, 1]) after each step taken; a callback
        that takes an `x0_hat` keyword also gets that step's clipped x0 estimate."""
        if context.seeds is None or len(context.seeds) != len(x):
            raise ValueError("DiffusionImputer needs one seed per sample in context.seeds")
        guided = set(self.guided_timesteps) if self.guidance.applies(context) else set()
        if keep_mask.shape[0] != x.shape[0] or keep_mask.shape[-2:] != x.shape[-2:]:
            raise ValueError(f"keep_mask {tuple(keep_mask.shape)} does not match images {tuple(x.shape)}")
        m = keep_mask.to(x.dtype).expand_as(x)
        x_clean = x * 2 - 1
        kept = self.constraint.start(x_clean, m, context.seeds)
        x_t = kept.initial(_noise_like(x, context.seeds), self.ddim.alphas(0)[0])
        distances = [self._distance(x_t, x_clean)] if trace else None
        with_x0 = callback is not None and takes_x0_hat(callback)
        jump_noise = _JumpNoise(x_t, context.seeds) if self.resampling.resamplings > 1 else None
        # contiguous rows: a compiled graph is specialised on its inputs' strides too
        t_batches = torch.tensor(self.ddim.timesteps, dtype=torch.long).repeat_interleave(len(x)).view(-1, len(x))
        t_batches = t_batches.to(x.device)
        for op, i in self.schedule:
            if op == "jump":  # RePaint: back jump_length levels with q, the kept pixels at their rule there
                back = i - self.resampling.jump_length
                abar_back = self.ddim.level_abar(back)
                x_t = kept.project(renoise(x_t, self.ddim.level_abar(i), abar_back, jump_noise()), abar_back)
                continue
            t = self.ddim.timesteps[i]
            abar_t, abar_prev = self.ddim.alphas(i)
            e = self.runtime.eps(x_t, t_batches[i])
            if t in guided:
                e = self.guidance.eps(e, x_t, abar_t, context)
            e = kept.eps(e, x_t, abar_t)
            x_prev, x0_hat = self.ddim.step(x_t, e, abar_t, abar_prev)
            x_t = kept.project(x_prev, abar_prev)
            if callback is not None:
                if with_x0:
                    callback(i, t, x_t, x0_hat=x0_hat)
                else:
                    callback(i, t, x_t)
            if trace:
                distances.append(self._distance(x_t, x_clean))
        filled = ((x_t + 1) / 2).contiguous()
        out = compose(x, keep_mask, filled) if self.constraint.exact else filled.clamp(0, 1)
        return out, (torch.stack(distances, 1) if trace else None)

    @staticmethod
    def _distance(x_t, x_clean):
        return ((x_t - x_clean) / 2).flatten(1).norm(dim=1).cpu()

    def fill(self, x, keep_mask, context: ImputeContext):
        return self.sample(x, keep_mask, context)[0]

    def bytes_per_sample(self, sample_shape, device) -> Optional[float]:
        return self.runtime.bytes_per_sample(sample_shape, device)
