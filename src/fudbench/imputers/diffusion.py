"""Diffusion imputation: FUD's sampler (paper Algorithm 1, Appendix C, D).

    x_T = M * x + (1 - M) * eps                      (M: 1 = keep; x, x_t in [-1, 1])
    for t in the DDIM timesteps (eta = 0):
        e = eps_theta(x_t, t)                        (first 3 output channels)
        if guidance is on at t (t < O = guidance_start * T):
            e = e + s * sqrt(1 - abar_t) * grad_x log p(y | x_t)    (AWAY from y)
        [soft constraint: e = e - sqrt(1 - abar_t) * M * (x - x_t) / sigma^2]
        x0  = clip((x_t - sqrt(1 - abar_t) e) / sqrt(abar_t), -1, 1)
        e   = (x_t - sqrt(abar_t) x0) / sqrt(1 - abar_t)            (eps of the clipped x0)
        x_{t-1} = sqrt(abar_{t-1}) x0 + sqrt(1 - abar_{t-1}) e     (abar_{-1} = 1)
        [hard constraint: x_{t-1} = M * x + (1 - M) * x_{t-1}]

Standard classifier guidance subtracts the gradient term to move towards y;
FUD adds it, so the fill may not create new evidence for the evaluated class.
With guidance_scale = 0 this is the plain (RePaint-like) diffusion imputer.
The DDIM update is written out here (guided-diffusion's DDIM: clip x0, then
re-derive eps from it) instead of calling diffusers' DDIMScheduler.step per
step; tests check it equals that scheduler (use_clipped_model_output=True).

Constraints (paper Sec. 4.3.4, Appendix C; Table 5):
- hard (default, the paper's FUD): the likelihood of the kept pixels given
  x_t is a product of Diracs; in practice the kept pixels are overwritten with
  the known values after every step (Eq. 14), and the returned image copies
  them from x bit for bit.
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

Randomness is per sample (context.seeds): the starting noise of every sample
is drawn from its own generator on the CPU, so a batched call equals
per-sample calls and results do not depend on the device's RNG.

Speed (docs/performance.md): amp_dtype runs the U-Net under torch.autocast
(bf16 or fp16) with GroupNorm computed in fp32 (as guided-diffusion's fp16
mode does; attention softmax runs inside SDPA, which accumulates in fp32);
channels_last and torch.compile are optional; the classifier gradient is
computed only in the guided steps, in fp32. The sampler state x_t stays fp32.
"""
from __future__ import annotations

import contextlib
import copy
import math
import types
from typing import Optional

import torch
import torch.nn.functional as F

from fudbench.imputers.base import ImputeContext, Imputer, compose, takes_x0_hat
from fudbench.models.score import ddim_scheduler

CONSTRAINTS = ("hard", "soft")
AMP_DTYPES = {None: None, "none": None, "fp32": None, "float32": None,
              "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
              "fp16": torch.float16, "float16": torch.float16}


def _noise_like(x: torch.Tensor, seeds) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.float32)
    for i, s in enumerate(seeds):
        g = torch.Generator().manual_seed(int(s))
        out[i] = torch.randn(x.shape[1:], generator=g)
    return out.to(x.device, x.dtype)


def ddim_step(x_t: torch.Tensor, e: torch.Tensor, abar_t: float, abar_prev: float, clip_x0: bool = True):
    """One deterministic DDIM step (eta = 0). Returns (x_{t-1}, predicted x0)."""
    x0 = (x_t - math.sqrt(1 - abar_t) * e) / math.sqrt(abar_t)
    if clip_x0:
        x0 = x0.clamp(-1, 1)
        e = (x_t - math.sqrt(abar_t) * x0) / math.sqrt(1 - abar_t)
    return math.sqrt(abar_prev) * x0 + math.sqrt(1 - abar_prev) * e, x0


def _group_norm_fp32(self, x):
    """GroupNorm in fp32 under autocast, result in the input's dtype (guided-
    diffusion's GroupNorm32). Outside autocast x is fp32 and this is nn.GroupNorm."""
    with torch.autocast(x.device.type, enabled=False):
        w = None if self.weight is None else self.weight.float()
        b = None if self.bias is None else self.bias.float()
        return F.group_norm(x.float(), self.num_groups, w, b, self.eps).to(x.dtype)


def group_norm_in_fp32(module: torch.nn.Module) -> torch.nn.Module:
    """Make every GroupNorm of module compute in fp32 (in place, idempotent).
    Harmless for fp32 use of the same module, so a shared U-Net can be patched."""
    for m in module.modules():
        if isinstance(m, torch.nn.GroupNorm) and not getattr(m, "_fud_fp32", False):
            m.forward = types.MethodType(_group_norm_fp32, m)
            m._fud_fp32 = True
    return module


class DiffusionImputer(Imputer):
    name = "diffusion"

    def __init__(self, unet, schedule: dict, steps: int = 100, guidance_scale: float = 4.0,
                 guidance_start: float = 0.05, known: str = "clean", clip_x0: bool = True,
                 constraint: str = "hard", soft_sigma: float = 0.1, amp_dtype: Optional[str] = None,
                 channels_last: bool = False, compile=False):
        if known not in ("clean", "renoise"):
            raise ValueError(f"known must be 'clean' or 'renoise', got {known!r}")
        if constraint not in CONSTRAINTS:
            raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}")
        if constraint == "soft" and known != "clean":
            raise ValueError("constraint 'soft' observes the clean kept pixels; use known: clean with it")
        if not soft_sigma > 0:
            raise ValueError(f"soft_sigma must be > 0, got {soft_sigma!r}")
        if amp_dtype not in AMP_DTYPES:
            raise ValueError(f"amp_dtype must be one of None, 'bf16', 'fp16', 'fp32'; got {amp_dtype!r}")
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        self.unet = unet
        self.scheduler = ddim_scheduler(schedule, clip_x0=clip_x0)
        self.scheduler.set_timesteps(steps)
        self.T = self.scheduler.config.num_train_timesteps
        self.steps = steps
        self.guidance_scale = guidance_scale
        self.guidance_switch = guidance_start * self.T  # guidance on for t < switch
        self.known = known
        self.clip_x0 = clip_x0
        self.constraint = constraint
        self.soft_sigma = float(soft_sigma)
        self.amp_dtype = AMP_DTYPES[amp_dtype]
        self.channels_last = channels_last
        if self.amp_dtype is not None:
            group_norm_in_fp32(unet)
        if channels_last:
            unet.to(memory_format=torch.channels_last)
        self._forward = unet
        if compile:
            kwargs = {"mode": compile} if isinstance(compile, str) else {}
            self._forward = torch.compile(unet, dynamic=False, **kwargs)
        self._bytes_per_sample: dict = {}

    def with_steps(self, steps: int) -> "DiffusionImputer":
        """The same sampler (same U-Net, compiled forward and settings) with another
        DDIM step count: step studies and benchmarks compile the U-Net once."""
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        other = copy.copy(self)
        other.scheduler = type(self.scheduler).from_config(self.scheduler.config)
        other.scheduler.set_timesteps(steps)
        other.steps = steps
        return other

    @property
    def timesteps(self) -> list[int]:
        return [int(t) for t in self.scheduler.timesteps]

    @property
    def guided_timesteps(self) -> list[int]:
        return [t for t in self.timesteps if t < self.guidance_switch]

    def _abar(self, t: int) -> float:
        return float(self.scheduler.alphas_cumprod[t]) if t >= 0 else float(self.scheduler.final_alpha_cumprod)

    def _autocast(self, device: torch.device):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=self.amp_dtype)

    def _eps(self, x_t: torch.Tensor, t_batch: torch.Tensor) -> torch.Tensor:
        """eps_theta(x_t, t) in fp32 (the first 3 channels: learn_sigma models emit 6)."""
        inp = x_t.contiguous(memory_format=torch.channels_last) if self.channels_last else x_t
        with self._autocast(x_t.device):
            out = self._forward(inp, t_batch).sample
        return out[:, :3].float()

    def _class_gradient(self, classifier, target, x_t):
        """grad_x log p(y | x_t), per sample (x_t in [-1, 1]); fp32, outside autocast."""
        with torch.enable_grad():
            xg = x_t.detach().requires_grad_(True)
            logp = F.log_softmax(classifier((xg + 1) / 2).float(), dim=1)
            picked = logp.gather(1, target.view(-1, 1)).sum()
            (grad,) = torch.autograd.grad(picked, xg)
        return grad

    @torch.no_grad()
    def sample(self, x: torch.Tensor, keep_mask: torch.Tensor, context: ImputeContext,
               trace: bool = False, callback=None) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Returns (x_0 in [0, 1], and, if trace, the (N, steps + 1) L2 distances
        ||x_t - x|| in [0, 1] space, from x_T on). With the hard constraint the
        kept pixels of x_0 are copied from x; with the soft one they are the
        sampler's own values.
        callback(step, t, x_t) sees x_t (in [-1, 1]) after each step; a callback
        that takes an `x0_hat` keyword also gets that step's clipped x0 estimate."""
        if context.seeds is None or len(context.seeds) != len(x):
            raise ValueError("DiffusionImputer needs one seed per sample in context.seeds")
        guided = self.guidance_scale > 0 and context.classifier is not None
        if guided and context.target is None:
            raise ValueError("guidance needs context.target (the evaluated class per sample)")
        if keep_mask.shape[0] != x.shape[0] or keep_mask.shape[-2:] != x.shape[-2:]:
            raise ValueError(f"keep_mask {tuple(keep_mask.shape)} does not match images {tuple(x.shape)}")
        m = keep_mask.to(x.dtype).expand_as(x)
        x_clean = x * 2 - 1
        soft = self.constraint == "soft"
        soft_weight = m / self.soft_sigma ** 2 if soft else None
        eps = _noise_like(x, context.seeds)
        if self.known == "renoise":
            renoise_gen = [torch.Generator().manual_seed(int(s) ^ 0x5EED) for s in context.seeds]
        x_t = m * x_clean + (1 - m) * eps
        distances = [self._distance(x_t, x_clean)] if trace else None
        with_x0 = callback is not None and takes_x0_hat(callback)
        timesteps = self.timesteps
        for i, t in enumerate(timesteps):
            abar_t = self._abar(t)
            abar_prev = self._abar(timesteps[i + 1] if i + 1 < len(timesteps) else -1)
            e = self._eps(x_t, torch.full((len(x),), t, dtype=torch.long, device=x.device))
            if guided and t < self.guidance_switch:
                grad = self._class_gradient(context.classifier, context.target, x_t)
                e = e + self.guidance_scale * math.sqrt(1 - abar_t) * grad
            if soft:  # add the Gaussian likelihood's score M (x~ - x_t) / sigma^2 to the prior's
                e = e - math.sqrt(1 - abar_t) * soft_weight * (x_clean - x_t)
            x_prev, x0_hat = ddim_step(x_t, e, abar_t, abar_prev, self.clip_x0)
            if soft:
                x_t = x_prev
            else:
                if self.known == "clean":
                    known = x_clean
                else:  # RePaint-style: known pixels from q(x_{t-1} | x)
                    noise = torch.stack([torch.randn(x.shape[1:], generator=g) for g in renoise_gen]).to(x)
                    known = math.sqrt(abar_prev) * x_clean + math.sqrt(1 - abar_prev) * noise
                x_t = m * known + (1 - m) * x_prev
            if callback is not None:
                if with_x0:
                    callback(i, t, x_t, x0_hat=x0_hat)
                else:
                    callback(i, t, x_t)
            if trace:
                distances.append(self._distance(x_t, x_clean))
        filled = ((x_t + 1) / 2).contiguous()
        out = filled.clamp(0, 1) if soft else compose(x, keep_mask, filled)
        return out, (torch.stack(distances, 1) if trace else None)

    @staticmethod
    def _distance(x_t, x_clean):
        return ((x_t - x_clean) / 2).flatten(1).norm(dim=1).cpu()

    def fill(self, x, keep_mask, context: ImputeContext):
        return self.sample(x, keep_mask, context)[0]

    def bytes_per_sample(self, sample_shape, device) -> Optional[float]:
        """Estimated peak CUDA memory per sample of one sampler step (a U-Net
        forward in this sampler's precision and layout, x1.25 for the guided
        step's classifier backward and the sampler state). None on a CPU."""
        from fudbench.batching import measure_bytes_per_sample

        device = torch.device(device)
        key = (tuple(sample_shape), str(device))
        if device.type != "cuda":
            return None
        if key not in self._bytes_per_sample:
            def run(b):
                with torch.no_grad():
                    xb = torch.zeros(b, *sample_shape, device=device)
                    self._eps(xb, torch.zeros(b, dtype=torch.long, device=device))

            # The eager U-Net: probing the compiled one would compile two extra shapes.
            forward, self._forward = self._forward, self.unet
            try:
                measured = measure_bytes_per_sample(run, device)
            finally:
                self._forward = forward
            self._bytes_per_sample[key] = None if measured is None else 1.25 * measured
        return self._bytes_per_sample[key]
