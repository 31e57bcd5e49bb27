"""GIG: Guided Integrated Gradients (Kapishnikov et al. 2021), batched torch version.

Semantics of guided_ig in PAIR's "saliency" package (own implementation, every
image of the batch walks its own path, vectorised over the batch). The path
starts at the baseline; at step t = 1..n_steps the gradient g of the target
output is taken once at the current point, then the point is moved until its
L1 distance to the input is (1 - t/n_steps) of the total: features whose
position alpha lags below t/n_steps - max_dist are first pulled up to it, then,
repeatedly, the `fraction` of features with the smallest |g| (among those not
yet at t/n_steps + max_dist) are moved towards that upper bound, all the way or
by the ratio gamma that closes the remaining L1 gap. The attribution
accumulates (change of the point) * g, a left Riemann sum along the path; the
path ends at x, so for a linear f it sums exactly to f(x) - f(baseline). For a
nonlinear f the sum misses f(x) - f(baseline) by a discretisation error that,
at fixed max_dist, does not vanish as n_steps grows (a feature can jump by up
to 2 max_dist of its range on one gradient), and on ReLU networks it can be
large; PAIR's code behaves identically. max_dist = 0 gives left-Riemann IG.

Settings (authors' use): n_steps 15, fraction 0.25, max_dist 0.02, zero
baseline ('mean' = per-image channel mean, as in IG, is also offered).
output: 'prob' (default) differentiates the softmax probability of the target,
as the authors' call of guided_ig does (softmax applied once here, to the
logits); 'logit' differentiates the target logit. batch_size = images per
forward pass (memory only). Cost: n_steps forward + n_steps backward passes
per image. The path is kept in float64 (float32 on MPS) as PAIR does in
numpy; the model sees x's dtype. No randomness (seeds are ignored).
"""

from __future__ import annotations

import math

import torch

from fudbench.explainers.base import Explainer


class GuidedIG(Explainer):
    name = "gig"

    def __init__(
        self,
        n_steps: int = 15,
        fraction: float = 0.25,
        max_dist: float = 0.02,
        baseline: str = "zero",
        output: str = "prob",
        batch_size: int = 64,
    ):
        if int(n_steps) < 1:
            raise ValueError(f"GIG n_steps must be >= 1, got {n_steps!r}")
        if not 0.0 <= fraction <= 1.0 or not 0.0 <= max_dist <= 1.0:
            raise ValueError(f"GIG fraction and max_dist must lie in [0, 1], got {fraction!r}, {max_dist!r}")
        if baseline not in ("zero", "mean"):
            raise ValueError(f"GIG baseline must be 'zero' or 'mean', got {baseline!r}")
        if output not in ("prob", "logit"):
            raise ValueError(f"GIG output must be 'prob' or 'logit', got {output!r}")
        self.n_steps, self.fraction, self.max_dist = int(n_steps), float(fraction), float(max_dist)
        self.baseline, self.output, self.batch_size = baseline, output, int(batch_size)

    def baselines(self, x):
        if self.baseline == "zero":
            return torch.zeros_like(x)
        return x.mean(dim=(2, 3), keepdim=True).expand_as(x)

    def target_grad(self, model, points, target):
        """Gradient of the target output (probability or logit) at each point."""
        grads = torch.empty_like(points)
        for start in range(0, len(points), self.batch_size):
            sl = slice(start, start + self.batch_size)
            p = points[sl].clone().requires_grad_(True)
            with torch.enable_grad():
                out = model(p)
                if self.output == "prob":
                    out = torch.softmax(out, dim=1)
                (grads[sl],) = torch.autograd.grad(out.gather(1, target[sl]).sum(), p)
        return grads

    def explain(self, model, x, target, seeds=None):
        x = x.detach()
        n, shape = len(x), x.shape
        wd = torch.float32 if x.device.type == "mps" else torch.float64
        tol = 1e-9 if wd == torch.float64 else 1e-5  # PAIR: math.isclose(rel_tol=1e-9, abs_tol=1e-9)
        x_in = x.reshape(n, -1).to(wd)
        base = self.baselines(x).reshape(n, -1).to(wd)
        diff = x_in - base
        moving = diff != 0
        l1_total = diff.abs().sum(dim=1)
        n_feat = x_in.shape[1]
        kth = math.floor(self.fraction * (n_feat - 1)) + 1  # numpy quantile(..., 'lower')
        tgt = target.to(x.device).view(-1, 1)
        cur, attr = base.clone(), torch.zeros_like(x_in)
        inf = torch.tensor(math.inf, dtype=wd, device=x.device)
        for step in range(self.n_steps):
            grad = self.target_grad(model, cur.view(shape).to(x.dtype), tgt).reshape(n, -1).to(wd)
            alpha = (step + 1) / self.n_steps
            a_min, a_max = max(alpha - self.max_dist, 0.0), min(alpha + self.max_dist, 1.0)
            x_min, x_max = base + diff * a_min, base + diff * a_max
            l1_target = l1_total * (1 - alpha)
            active = l1_total > 0  # an input equal to its baseline gets zero attribution
            for _ in range(n_feat + 2):  # each pass saturates >= 1 feature; ~1/fraction + 2 in practice
                if not bool(active.any()):
                    break
                old = cur
                pos = torch.where(moving, (cur - base) / diff, torch.full_like(cur, a_max))
                cur = torch.where((pos < a_min) & active[:, None], x_min, cur)  # pull laggards up
                l1_cur = (cur - x_in).abs().sum(dim=1)
                gap = l1_cur - l1_target
                close = gap.abs() <= torch.clamp(tol * torch.maximum(l1_cur, l1_target), min=tol)
                go = active & ~close
                g = grad.abs().masked_fill(cur == x_max, math.inf)
                thr = g.kthvalue(kth, dim=1).values
                sel = (g <= thr[:, None]) & torch.isfinite(g) & go[:, None]
                l1_sel = ((cur - x_max).abs() * sel).sum(dim=1)
                gamma = torch.where(l1_sel > 0, gap.clamp(min=0) / l1_sel, inf)
                full = gamma > 1
                step_to = torch.where(full[:, None], x_max, cur + (x_max - cur) * gamma.clamp(max=1)[:, None])
                cur = torch.where(sel, step_to, cur)
                attr += (cur - old) * grad
                active = go & full
        return attr.view(shape).to(x.dtype)
