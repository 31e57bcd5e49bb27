"""Constraint parts: how the kept pixels enter the loop (paper Sec. 4.3.4,
Appendix C; Table 5).

- hard (default, the paper's FUD): the likelihood of the kept pixels given
  x_t is a product of Diracs; in practice the kept pixels are overwritten with
  their known values after every step (Eq. 14), and the returned image copies
  them from x bit for bit. What the known values are at a noise level abar
  is the `known` rule:
  - clean (paper): x itself at every level (x_T = M * x + (1 - M) * eps).
  - renoise_ddim (`renoise` is its alias): the point DDIM with eta = 0 puts x
    at that level, sqrt(abar) x + sqrt(1 - abar) eps, with ONE eps per
    sample, x_T's own draw (the starting noise of the filled pixels), reused
    at every step: the deterministic sampler's forward path of x. So x_T =
    sqrt(abar_t0) M * x + sqrt(1 - abar_t0) M * eps + (1 - M) * eps, t0 the
    first sampled timestep (leading spacing: 990 of 1000 at 100 steps), and
    no other randomness enters the loop.
  - renoise_fresh (the DDPM / RePaint rule, `renoise` before): a fresh draw
    from q(x_t | x) = N(sqrt(abar_t) x, (1 - abar_t) I) at every level, x_T's
    included; the draws come, in that order, from one generator per sample
    seeded with seed ^ 0x5EED (seed: the sample's context.seeds entry), so
    batching changes nothing. A stochastic rule inside a deterministic (DDIM)
    sampler: the kept pixels' noise changes at every step while the filled
    pixels' is carried over.
  At the last step abar = 1 and both renoise rules give x again.
- soft: the kept pixels x~ (= the clean image x) are treated as an observation
  x~ ~ N(M * x_t, sigma^2 I), whose log-likelihood has the score
  grad_{x_t} log p(x~ | x_t, M) = M * (x~ - x_t) / sigma^2. That score is
  added to the prior score s_theta = -e / sqrt(1 - abar_t), i.e.
  e <- e - sqrt(1 - abar_t) * M * (x~ - x_t) / sigma^2, the same way the
  classifier term enters; there is no overwrite, so kept pixels are only
  pulled towards x and the output is x_0 itself (kept pixels included).
  sigma (soft_sigma) is in the diffusion model's [-1, 1] pixel units. The
  pull on x0 is (1 - abar_t) / sigma^2 times the gap, so it is strong early
  and fades as t -> 0; with an explicit step a sigma far below sqrt(1 - abar_t)
  overshoots (the x0 clip bounds it), i.e. sigma -> 0 does not converge to the
  hard overwrite in practice (measured on the tiny test U-Net: mean |x0 - x|
  on kept pixels 0.25 at sigma 0.03, 0.02 at 0.1, 0.05 at 0.3, 0.13 at 1).

A part's start() is called once per sample() call and returns that call's
constraint (its images, mask and random state): the loop takes x_T from its
initial(), then calls its eps() and project() at every step, and project()
after every re-noising jump of RePaint's resampling too (loop.py), so the
kept pixels follow their rule at the level jumped back to.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from fudbench.imputers.diffusion.settings import ConstraintSettings, check


class _Overwrite:
    """One call of a hard constraint: after each step, M * known(abar_{t-1}) + (1 - M) * x_{t-1}."""

    def __init__(self, m: torch.Tensor, known: Callable[[float], torch.Tensor]):
        self.m = m
        self.known = known  # abar -> the kept pixels' values at that noise level

    def initial(self, noise, abar_start):
        """x_T: the known values at the first sampled timestep's noise level, noise elsewhere."""
        return self.m * self.known(abar_start) + (1 - self.m) * noise

    def eps(self, e, x_t, abar_t):
        return e

    def project(self, x_prev, abar_prev):
        return self.m * self.known(abar_prev) + (1 - self.m) * x_prev


class _GaussianObservation:
    """One call of the soft constraint: the likelihood's score enters eps; no overwrite."""

    def __init__(self, x_clean: torch.Tensor, m: torch.Tensor, sigma: float):
        self.x_clean = x_clean
        self.m = m
        self.weight = m / sigma**2

    def initial(self, noise, abar_start):
        """x_T = M * x + (1 - M) * eps, as the hard constraint's (the observation is the clean x)."""
        return self.m * self.x_clean + (1 - self.m) * noise

    def eps(self, e, x_t, abar_t):
        return e - math.sqrt(1 - abar_t) * self.weight * (self.x_clean - x_t)

    def project(self, x_prev, abar_prev):
        return x_prev


class _FixedNoiseOverwrite(_Overwrite):
    """renoise_ddim: the known values on DDIM's path of x under x_T's own noise."""

    def __init__(self, m: torch.Tensor, x_clean: torch.Tensor):
        super().__init__(m, self._on_path)
        self.x_clean = x_clean
        self.noise = None

    def _on_path(self, abar):
        return math.sqrt(abar) * self.x_clean + math.sqrt(1 - abar) * self.noise

    def initial(self, noise, abar_start):
        self.noise = noise  # the one draw of the sample (x_T's), reused at every level
        return super().initial(noise, abar_start)


class HardConstraint:
    """hard, known: clean: the kept pixels are x itself at every step."""

    exact = True  # the output's kept pixels are copied from x

    def start(self, x_clean: torch.Tensor, m: torch.Tensor, seeds: Sequence[int]) -> _Overwrite:
        return _Overwrite(m, lambda abar_prev: x_clean)


class DDIMRenoiseConstraint(HardConstraint):
    """hard, known: renoise_ddim (alias renoise): the kept pixels at sqrt(abar) x +
    sqrt(1 - abar) eps, eps the sample's x_T noise (one draw, reused)."""

    def start(self, x_clean: torch.Tensor, m: torch.Tensor, seeds: Sequence[int]) -> _Overwrite:
        return _FixedNoiseOverwrite(m, x_clean)


class FreshRenoiseConstraint(HardConstraint):
    """hard, known: renoise_fresh: the kept pixels are a fresh draw from q(x_t | x) at
    every level, x_T's included, from one generator per sample seeded with seed ^ 0x5EED."""

    def start(self, x_clean: torch.Tensor, m: torch.Tensor, seeds: Sequence[int]) -> _Overwrite:
        generators = [torch.Generator().manual_seed(int(s) ^ 0x5EED) for s in seeds]

        def known(abar_prev):
            noise = torch.stack([torch.randn(x_clean.shape[1:], generator=g) for g in generators]).to(x_clean)
            return math.sqrt(abar_prev) * x_clean + math.sqrt(1 - abar_prev) * noise

        return _Overwrite(m, known)


class SoftConstraint:
    """soft: a Gaussian likelihood of the clean kept pixels with std sigma."""

    exact = False  # the output's kept pixels are the sampler's own

    def __init__(self, sigma: float):
        self.sigma = float(sigma)

    def start(self, x_clean: torch.Tensor, m: torch.Tensor, seeds: Sequence[int]) -> _GaussianObservation:
        return _GaussianObservation(x_clean, m, self.sigma)


KNOWN_RULES = {"clean": HardConstraint, "renoise_ddim": DDIMRenoiseConstraint, "renoise_fresh": FreshRenoiseConstraint}


def constraint_part(settings: ConstraintSettings):
    if check(settings).constraint == "soft":
        return SoftConstraint(settings.soft_sigma)
    return KNOWN_RULES[settings.known_rule]()
