"""LA: Local Attribution (Zhu et al. 2024d, "Enhancing Model Interpretability
with Local Attribution over Global Exploration", ACM MM 2024).

LA explores only a small neighbourhood of the image (its "local space"): every
intermediate state is x + delta with |delta| <= x / spatial_range elementwise,
so the step is a fraction of each pixel's own value. Two kinds of exploration
are summed:

- targeted: for each of `sampling_times - 1` sampled classes c != y, iterate
  `max_iter` times: with g_c, g_y the gradients of the softmax probabilities
  p_c, p_y at the current state x_k, the next state is
  x_{k+1} = clamp(x + eps * sign(g_c), 0, 1) (always a single step away from
  x, not a walk), and  -g_y(x_k) * (x_{k+1} - x)  is added to the map;
- untargeted: the same `max_iter` loop with x_{k+1} = clamp(x - eps * sign(g_y)).

An entry is the first-order decrease of p_y caused by moving that feature, so
high = supports the target class. The softmax is applied once, here, to the
model's logits.

Authors' settings (LMBTough/LA): spatial_range 20 (eps = x / 20; a divisor of
the pixel value, not a size in pixels, so it does not depend on image size),
max_iter 20, sampling_times 20 (19 targeted classes + the untargeted pass).
Cost per image: sampling_times * max_iter forward and
(2 * (sampling_times - 1) + 1) * max_iter backward passes = 400 F, 780 B
(fewer when the model has fewer than sampling_times classes, see below).
The (image, class) explorations are independent rows, processed `batch_size`
rows per forward pass.

Choices where the paper or the reference code is ambiguous:
- The class explained is `target` (the reference code uses the model's argmax;
  the two coincide with the project's default `target: predicted`).
- Class sampling is seeded per image (seeds[i]) and draws from the classes
  other than the target, without replacement. When more classes are asked for
  than exist (sampling_times - 1 > n_classes - 1, e.g. 8 classes), the draw
  cycles through random permutations of the other classes, so every class is
  used floor(k / (n-1)) or one more times. Each class's contribution is a
  deterministic function of (x, class), so a class drawn m times is computed
  once and weighted by m: the same result as repeating it, at less cost.
- The reference code replaces a sampled class equal to the prediction by its
  neighbour index (which can duplicate another sample) and, with batches,
  sums the probabilities of all images' classes into one loss; neither is
  copied: every image uses only its own classes.
- The gradient of p_y is taken at the state before the step (x_k) and
  multiplied by the displacement of the state after it (x_{k+1} - x), as in
  the reference code.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from fudbench.explainers.base import Explainer


def sample_classes(target: torch.Tensor, n_classes: int, k: int, seeds: Sequence[int]):
    """Per image, k classes != target as (classes, weights), both (N, m).

    m = min(k, n_classes - 1) distinct classes per image; weights count how
    often each would be drawn when cycling through random permutations of the
    other classes (all ones when k <= n_classes - 1). Seeded by seeds[i] on a
    CPU generator, so an image's draw does not depend on its batch.
    """
    n_other = n_classes - 1
    if k <= 0 or n_other <= 0:
        empty = torch.zeros(len(target), 0, dtype=torch.long)
        return empty, empty.clone()
    m = min(k, n_other)
    base, extra = divmod(k, n_other)
    classes, weights = [], []
    for y, s in zip(target.tolist(), seeds):
        g = torch.Generator().manual_seed(int(s))
        perm = torch.randperm(n_other, generator=g)
        others = perm + (perm >= y).long()  # skip the target class
        classes.append(others[:m])
        if k <= n_other:
            weights.append(torch.ones(m, dtype=torch.long))
        else:  # every class `base` times, the first `extra` of the permutation once more
            weights.append(base + (torch.arange(m) < extra).long())
    return torch.stack(classes), torch.stack(weights)


class LocalAttribution(Explainer):
    name = "la"

    def __init__(self, spatial_range: float = 20, max_iter: int = 20, sampling_times: int = 20, batch_size: int = 64):
        if spatial_range <= 0:
            raise ValueError(f"LA spatial_range must be > 0, got {spatial_range}")
        if max_iter < 1 or sampling_times < 1 or batch_size < 1:
            raise ValueError("LA needs max_iter, sampling_times and batch_size >= 1")
        self.spatial_range, self.max_iter = float(spatial_range), int(max_iter)
        self.sampling_times, self.batch_size = int(sampling_times), int(batch_size)

    def _explore(self, model, x, y, towards=None):
        """max_iter local states per row; towards None = untargeted. Returns (n_classes, map)."""
        eps = x / self.spatial_range
        result = torch.zeros_like(x)
        state = x
        for _ in range(self.max_iter):
            state = state.detach().requires_grad_(True)
            with torch.enable_grad():
                logits = model(state)
                p = F.softmax(logits, dim=1)
                if towards is None:
                    (g_y,) = torch.autograd.grad(p.gather(1, y.view(-1, 1)).sum(), state)
                    step = -eps * g_y.sign()
                else:
                    (g_c,) = torch.autograd.grad(p.gather(1, towards.view(-1, 1)).sum(), state, retain_graph=True)
                    (g_y,) = torch.autograd.grad(p.gather(1, y.view(-1, 1)).sum(), state)
                    step = eps * g_c.sign()
            state = (x + step).clamp(0, 1)
            result -= g_y * (state - x)
        return logits.shape[1], result.detach()

    def _rows(self, model, x, y, towards=None):
        """_explore over rows in chunks of batch_size."""
        out, n_classes = torch.empty_like(x), None
        for s in range(0, len(x), self.batch_size):
            sl = slice(s, s + self.batch_size)
            n_classes, out[sl] = self._explore(model, x[sl], y[sl], None if towards is None else towards[sl])
        return n_classes, out

    def explain(self, model, x, target, seeds: Optional[Sequence[int]] = None):
        if seeds is None or len(seeds) != len(x):
            raise ValueError("LA samples classes at random: pass one seed per image")
        x = x.detach()
        y = target.to(x.device).long()
        n_classes, attribution = self._rows(model, x, y)
        classes, weights = sample_classes(y.cpu(), n_classes, self.sampling_times - 1, seeds)
        n, m = classes.shape
        if m:
            rows = self._rows(
                model, x.repeat_interleave(m, dim=0), y.repeat_interleave(m), classes.reshape(-1).to(x.device)
            )[1]
            w = weights.to(x.device, x.dtype).view(n, m, *([1] * (x.dim() - 1)))
            attribution = attribution + (rows.view(n, m, *x.shape[1:]) * w).sum(1)
        return attribution.detach()
