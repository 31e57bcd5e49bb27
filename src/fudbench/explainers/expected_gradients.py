"""EG: Expected Gradients (Erion et al. 2021), IG averaged over data baselines.

attribution_i = mean over k draws of (x_i - r) * grad f_y(r + a (x_i - r)),
with r drawn uniformly (with replacement) from the reference images given to
prepare() (the evaluated image set, as the authors draw from their data set),
except the image itself: r = x_i would add a zero term (with k = 1, an
all-zero map). The references identical to x_i are left out of its draws; an
image with no other reference is an error. a ~ U[0, 1) per draw, and f_y the
target *logit* (as captum's GradientShap; not log-softmax, not probability).

Settings: k draws per image (authors: 1), batch_size = points per forward pass
(memory only, results do not depend on it). Cost: k forward + k backward
passes per image.

Randomness: image i's k reference indices and alphas come from a CPU
torch.Generator seeded with seeds[i], so the batched result equals the
per-image result; seeds=None uses seed 0 for every image. prepare() must be
called before explain() (RuntimeError otherwise): falling back to the batch
itself would make an image's attribution depend on the rest of its batch.
The authors' code differentiates the sum of all outputs of a softmax model (no
target); that is not copied.
"""

from __future__ import annotations

import torch

from fudbench.explainers.base import Explainer


class ExpectedGradients(Explainer):
    name = "eg"

    def __init__(self, k: int = 1, batch_size: int = 64):
        if int(k) < 1:
            raise ValueError(f"EG needs k >= 1 reference draws per image, got {k!r}")
        if int(batch_size) < 1:
            raise ValueError(f"EG batch_size must be >= 1, got {batch_size!r}")
        self.k, self.batch_size = int(k), int(batch_size)
        self.references = None

    def prepare(self, references):
        if references.dim() != 4 or len(references) == 0:
            raise ValueError(f"EG references must be a non-empty (N, C, H, W) tensor, got {tuple(references.shape)}")
        self.references = references.detach()

    def draws(self, seeds, n_ref: int, excluded=None):
        """Reference indices (N, k) and alphas (N, k), one CPU generator per image seed.
        excluded[i]: reference indices image i may not draw (itself); the draw is
        uniform over the others, so with nothing excluded it is the plain uniform draw."""
        idx, alpha = [], []
        for i, s in enumerate(seeds):
            g = torch.Generator().manual_seed(int(s))
            allowed = torch.arange(n_ref)
            if excluded is not None and len(excluded[i]):
                allowed = allowed[~torch.isin(allowed, torch.as_tensor(excluded[i]))]
            idx.append(allowed[torch.randint(len(allowed), (self.k,), generator=g)])
            alpha.append(torch.rand(self.k, generator=g))
        return torch.stack(idx), torch.stack(alpha)

    def copies_of(self, x) -> list:
        """Per image, the indices of the references equal to it (cheap sums first, then exact)."""
        refs = self.references.to(x.device, x.dtype).flatten(1)
        sums, out = refs.double().sum(1), []
        for xi in x.flatten(1):
            candidates = torch.nonzero(sums == xi.double().sum()).flatten()
            out.append([int(j) for j in candidates if torch.equal(refs[j], xi)])
        return out

    def explain(self, model, x, target, seeds=None):
        if self.references is None:
            raise RuntimeError("ExpectedGradients.explain needs reference images: call prepare(references) first")
        if self.references.shape[1:] != x.shape[1:]:
            raise ValueError(
                f"EG references have image shape {tuple(self.references.shape[1:])}, inputs {tuple(x.shape[1:])}"
            )
        n, k = len(x), self.k
        seeds = [0] * n if seeds is None else list(seeds)
        if len(seeds) != n:
            raise ValueError(f"EG got {len(seeds)} seeds for {n} images")
        excluded = self.copies_of(x.detach())
        alone = [i for i, e in enumerate(excluded) if len(e) == len(self.references)]
        if alone:
            raise ValueError(
                f"EG: image(s) at positions {alone} have no reference image other than themselves; "
                f"pass more references to prepare()"
            )
        idx, alpha = self.draws(seeds, len(self.references), excluded)
        x = x.detach()
        refs = self.references[idx.flatten().to(self.references.device)].to(x.device, x.dtype)
        delta = x.repeat_interleave(k, dim=0) - refs
        points = refs + alpha.flatten().to(x.device, x.dtype).view(-1, *[1] * (x.dim() - 1)) * delta
        tgt = target.to(x.device).repeat_interleave(k).view(-1, 1)
        grads = torch.empty_like(points)
        for start in range(0, len(points), self.batch_size):
            sl = slice(start, start + self.batch_size)
            p = points[sl].clone().requires_grad_(True)
            with torch.enable_grad():
                (grads[sl],) = torch.autograd.grad(model(p).gather(1, tgt[sl]).sum(), p)
        return (delta * grads).view(n, k, *x.shape[1:]).mean(dim=1).detach()
