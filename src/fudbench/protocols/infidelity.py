"""Infidelity (Yeh et al. 2019) through captum.metrics.infidelity, normalize=True.

    INFD = E_I[(beta * I . Phi - (f_y(x) - f_y(x - I)))^2],
    beta = E_I[I . Phi (f_y(x) - f_y(x - I))] / E_I[(I . Phi)^2]

with f_y the target LOGIT (captum's forward is the model's logits, indexed by
the target), Phi the attribution ((N, 1, H, W) or (N, H, W) maps are repeated
over the channels; non-finite values count as 0) and the expectation a mean
over `n_perturb` perturbations I per image. Perturbations (`perturbation`):

- "authors" (default, the FUD authors' code): H*W entries of the C*H*W tensor
  chosen at random (without replacement); on them I = r, r ~ N(x, sigma)
  clipped to [x - 1, x], elsewhere I = 0; so x - I = clip(-sigma*z, 0, 1) on
  the chosen entries: near-black noise, always in [0, 1].
- "gaussian": z ~ N(0, 1) on every entry; the perturbed input
  clamp(x - sigma*z, 0, 1) stays in [0, 1] and I = x - that input (captum
  receives (I, x - I), consistent with the clamp).
- "blur": each pixel (shared by the channels) is replaced with probability
  `blur_fraction` by a Gaussian blur of x (kernel `blur_kernel`, sigma
  `blur_sigma`, reflect padding; kernel shrunk to fit small images as in
  BlurImputer); I = x - that input. The random pixel subset is what makes the
  perturbations differ (one fixed blur would make normalised infidelity 0).

The imputer argument is ignored: the perturbation replaces it.

Randomness: the n_perturb perturbations of an image come from one CPU
torch.Generator seeded with derive_seed(*seed_key, image_id), drawn before
captum is called; the perturb_func handed to captum serves them in the order
captum asks for them (captum repeat_interleaves the inputs and, when
max_examples_per_batch splits the samples, calls perturb_func sequentially;
both are checked). So batched runs equal per-image runs. Images are grouped
so that one forward sees at most `batch_size` perturbed inputs.

Records: one row per image: curve, image, step=0, kept, removed (nominal
fraction of the C*H*W entries a perturbation touches: 1/C for "authors", 1 for
"gaussian", blur_fraction for "blur"), target, infidelity, and for the first
perturbed input x - I_0 (this evaluator's "intermediate sample"): confidence
(softmax p_y), prediction, energy (-logsumexp), l2 (||x - I_0 - x|| = ||I_0||,
[0, 1] space); seconds = perturbation + captum time per perturbed input.
Samples: (N, 1, C, H, W) float16 of x - I_0.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from fudbench.imputers.simple import gaussian_blur
from fudbench.protocols.topk import CurveResult, records_frame, sample_response
from fudbench.seeding import derive_seed

log = logging.getLogger(__name__)

PERTURBATIONS = ("authors", "gaussian", "blur")


def attribution_like_input(attribution: torch.Tensor, channels: int) -> torch.Tensor:
    """Attribution as (N, C, H, W) float32: per-pixel maps repeated over the
    channels, non-finite values set to 0 (with a warning)."""
    a = attribution.detach().float()
    if a.dim() == 3:
        a = a.unsqueeze(1)
    bad = ~torch.isfinite(a)
    if bad.any():
        log.warning("%d non-finite attribution values: counted as 0", int(bad.sum()))
        a = a.masked_fill(bad, 0.0)
    if a.shape[1] == 1 and channels > 1:
        a = a.expand(-1, channels, -1, -1)
    return a.contiguous()


@dataclass
class Infidelity:
    curve: str = "infidelity"
    perturbation: str = "authors"
    n_perturb: int = 100
    sigma: float = 0.2          # noise std of "authors" and "gaussian"
    blur_kernel: int = 11
    blur_sigma: float = 5.0
    blur_fraction: float = 0.5
    batch_size: int = 256
    keep_samples: bool = False

    def __post_init__(self):
        if self.perturbation not in PERTURBATIONS:
            raise ValueError(f"unknown perturbation {self.perturbation!r}; "
                             f"choose from {', '.join(PERTURBATIONS)}")
        if self.blur_kernel % 2 == 0:
            raise ValueError(f"blur kernel size must be odd, got {self.blur_kernel}")

    def removed_fraction(self, channels: int) -> float:
        return {"authors": 1.0 / channels, "gaussian": 1.0, "blur": float(self.blur_fraction)}[self.perturbation]

    def perturbations(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        """I for one image x (C, H, W): (n_perturb, C, H, W) float32 on the CPU."""
        x = x.detach().float().cpu()
        c, h, w = x.shape
        g = torch.Generator().manual_seed(int(seed))
        p = self.n_perturb
        if self.perturbation == "authors":
            e, m = c * h * w, min(h * w, c * h * w)
            z = torch.randn(p, e, generator=g)
            chosen = torch.zeros(p, e, dtype=torch.bool)
            for k in range(p):
                chosen[k, torch.randperm(e, generator=g)[:m]] = True
            xf = x.flatten().expand(p, -1)
            r = torch.clamp(xf + self.sigma * z, min=xf - 1, max=xf)
            return torch.where(chosen, r, torch.zeros(())).view(p, c, h, w)
        if self.perturbation == "gaussian":
            z = torch.randn(p, c, h, w, generator=g)
            return x - (x - self.sigma * z).clamp(0, 1)
        k = min(self.blur_kernel, 2 * (min(h, w) // 2) - 1)
        blurred = gaussian_blur(x[None], k, self.blur_sigma)[0] if k >= 3 else x
        chosen = torch.rand(p, 1, h, w, generator=g) < self.blur_fraction
        return x - torch.where(chosen, blurred, x)

    def run(self, model, x: torch.Tensor, y: torch.Tensor, attribution: torch.Tensor,
            imputer, image_ids: Sequence[int], seed_key: tuple) -> CurveResult:
        from captum.metrics import infidelity

        n, c, h, w = x.shape
        p = self.n_perturb
        attr = attribution_like_input(attribution, c).to(x.device)
        y = y.to(x.device)
        per_call = max(1, self.batch_size // p)
        score = np.empty(n); conf = np.empty(n); energy = np.empty(n); l2 = np.empty(n)
        pred = np.empty(n, dtype=np.int64); seconds = np.empty(n)
        samples = np.empty((n, 1, c, h, w), np.float16) if self.keep_samples else None

        def forward(inp):
            return model(inp).float()

        for start in range(0, n, per_call):
            sl = slice(start, min(start + per_call, n))
            xb = x[sl].float()
            b = xb.shape[0]
            t0 = time.perf_counter()
            pert = torch.stack([self.perturbations(x[i], derive_seed(*seed_key, int(image_ids[i])))
                                for i in range(sl.start, sl.stop)]).to(x.device)  # (b, p, C, H, W)
            offset = [0]

            def perturb_func(inputs):
                k = inputs.shape[0] // b
                if inputs.shape[0] != b * k or not torch.equal(inputs.view(b, k, c, h, w)[:, 0], xb):
                    raise RuntimeError("captum's perturbation batch layout is not the expected repeat_interleave")
                chunk = pert[:, offset[0]:offset[0] + k].reshape(b * k, c, h, w)
                offset[0] += k
                return chunk, inputs - chunk

            values = infidelity(forward, perturb_func, xb, attr[sl], target=y[sl], n_perturb_samples=p,
                                max_examples_per_batch=min(self.batch_size, b * p), normalize=True)
            if values.is_cuda:
                torch.cuda.synchronize()
            seconds[sl] = (time.perf_counter() - t0) / (b * p)
            if offset[0] != p:
                raise RuntimeError(f"captum asked for {offset[0]} perturbations, expected {p}")
            score[sl] = values.float().cpu().numpy()
            first = xb - pert[:, 0]
            with torch.no_grad():
                logits = forward(first)
            conf[sl], pred[sl], energy[sl], l2[sl] = sample_response(logits, y[sl], first, xb)
            if samples is not None:
                samples[sl, 0] = first.cpu().numpy()
        removed = self.removed_fraction(c)
        records = records_frame(
            self.curve, image=np.array([int(i) for i in image_ids]), step=0, kept=1 - removed, removed=removed,
            target=np.array([int(t) for t in y.cpu()]), infidelity=score, confidence=conf, prediction=pred,
            energy=energy, l2=l2, seconds=seconds)
        return CurveResult(records, samples)
