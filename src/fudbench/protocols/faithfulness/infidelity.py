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
so that one forward sees at most `batch_size` perturbed inputs; the groups are
the batches of the protocol loop (fudbench.protocols.base), halved when one
runs out of GPU memory.

Records: one row per image: curve, image, step=0, kept, removed (nominal
fraction of the C*H*W entries a perturbation touches: 1/C for "authors", 1 for
"gaussian", blur_fraction for "blur"), target, infidelity, and for the first
perturbed input x - I_0 (this evaluator's "intermediate sample"): confidence
(softmax p_y), prediction, energy (-logsumexp), l2 (||x - I_0 - x|| = ||I_0||,
[0, 1] space); seconds = perturbation + captum time per perturbed input.
Samples: (N, 1, C, H, W) float16 of x - I_0.

Shared work: the perturbations and every model response captum asks for
(f(x - I) and f(x)) depend on the images and the seed key, not on the
attribution. With paired noise (a seed key without the explainer) one
evaluate job runs every explainer of a shard through the same protocol
object, which keeps them (Protocol.attribution_free) and hands captum the
same tensors again: only the attribution terms are
recomputed, so the scores are bit for bit those of a fresh run, at 1/13 of
the classifier's work in the default profile (issue 47). The records'
seconds are those of the explainer that computed the responses (the cost of
the protocol on its own, not the marginal cost of one more explainer).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch

from fudbench.imputers.simple import gaussian_blur
from fudbench.protocols.base import CurveResult, Points, Protocol, Shard, sample_response

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
class Infidelity(Protocol):
    curve: str = "infidelity"
    perturbation: str = "authors"
    n_perturb: int = 100
    sigma: float = 0.2  # noise std of "authors" and "gaussian"
    blur_kernel: int = 11
    blur_sigma: float = 5.0
    blur_fraction: float = 0.5
    batch_size: int = 256
    keep_samples: bool = False

    def __post_init__(self):
        if self.perturbation not in PERTURBATIONS:
            raise ValueError(f"unknown perturbation {self.perturbation!r}; choose from {', '.join(PERTURBATIONS)}")
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

    @property
    def batch_cap(self) -> int:
        """Images per captum call: each is n_perturb perturbed inputs."""
        return max(1, self.batch_size // self.n_perturb)

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        x, y = shard.x, shard.y
        n, c, h, w = x.shape
        attr = attribution_like_input(attribution, c).to(x.device)
        score = np.empty(n)
        points = Points.empty(x, 1, self.keep_samples)
        groups = self.attribution_free(shard, lambda s: {})  # {first image of a group: _GroupResponses}

        def group(images: range):
            sl = slice(images.start, images.stop)
            xb = x[sl].float()
            shared = groups.get(images.start)
            if shared is None or shared.stop != images.stop:  # first explainer, or other batch cuts
                shared = groups[images.start] = _GroupResponses(images.stop)
            t0 = time.perf_counter()
            if shared.pert is None:  # kept on the CPU: a GPU holds one group's at a time, as before
                shared.pert = torch.stack([self.perturbations(x[i], shard.seed(shard.ids[i])) for i in images])
            pert = shared.pert.to(x.device)
            score[sl] = self._infidelity(shard.model, xb, attr[sl], y[sl], pert, shared)
            if shared.seconds is None:
                shared.seconds = (time.perf_counter() - t0) / (len(xb) * self.n_perturb)
            points.seconds[sl, 0] = shared.seconds
            first = xb - pert[:, 0]
            if shared.first_logits is None:
                with torch.no_grad():
                    shared.first_logits = shard.model(first).float()
            points.put(sl, 0, sample_response(shared.first_logits, y[sl], first, xb), first)

        self.batches(shard, range(n), group)
        removed = self.removed_fraction(c)
        records = points.frame(self.curve, shard, kept=1 - removed, removed=removed, infidelity=score[:, None])
        return CurveResult(records, points.samples)

    def _infidelity(
        self,
        model,
        xb: torch.Tensor,
        attr: torch.Tensor,
        target: torch.Tensor,
        pert: torch.Tensor,
        shared: "_GroupResponses",
    ) -> np.ndarray:
        """captum's normalised infidelity of a group of images, with their drawn
        perturbations pert (b, n_perturb, C, H, W) served in captum's order.
        shared.outputs: the model's outputs for captum's forward calls, in call
        order; filled by the first call for these images and perturbations (then
        marked complete), replayed by the later ones (captum's calls depend on the
        inputs and perturbations only)."""
        from captum.metrics import infidelity

        b, p, c, h, w = pert.shape
        offset, calls = [0], [0]

        def perturb_func(inputs):
            k = inputs.shape[0] // b
            if inputs.shape[0] != b * k or not torch.equal(inputs.view(b, k, c, h, w)[:, 0], xb):
                raise RuntimeError("captum's perturbation batch layout is not the expected repeat_interleave")
            chunk = pert[:, offset[0] : offset[0] + k].reshape(b * k, c, h, w)
            offset[0] += k
            return chunk, inputs - chunk

        outputs = shared.outputs

        def forward(inputs):
            i = calls[0]
            calls[0] += 1
            if not shared.complete:
                outputs.append(model(inputs).float())
            elif i >= len(outputs) or outputs[i].shape[0] != inputs.shape[0]:
                raise RuntimeError(
                    f"captum's forward call {i} ({inputs.shape[0]} inputs) does not match the "
                    f"responses kept from the first explainer ({len(outputs)} calls): its calls "
                    f"changed between explainers"
                )
            return outputs[i]

        if not shared.complete:
            outputs.clear()  # what a call that ran out of memory part-way left

        values = infidelity(
            forward,
            perturb_func,
            xb,
            attr,
            target=target,
            n_perturb_samples=p,
            max_examples_per_batch=min(self.batch_size, b * p),
            normalize=True,
        )
        if values.is_cuda:
            torch.cuda.synchronize()
        if offset[0] != p:
            raise RuntimeError(f"captum asked for {offset[0]} perturbations, expected {p}")
        if calls[0] != len(outputs):
            raise RuntimeError(f"captum made {calls[0]} forward calls, {len(outputs)} were kept")
        shared.complete = True
        return values.float().cpu().numpy()


@dataclass
class _GroupResponses:
    """The attribution-free work of one group of images (Infidelity's "Shared work")."""

    stop: int  # the group is images [start, stop)
    pert: Optional[torch.Tensor] = None  # (b, n_perturb, C, H, W), on the CPU
    outputs: list = field(default_factory=list)  # captum's forward outputs, in call order
    complete: bool = False  # outputs hold every call of a finished captum run
    seconds: Optional[float] = None  # perturbation + captum time per perturbed input
    first_logits: Optional[torch.Tensor] = None  # the model's logits for x - I_0
