"""AGI: Adversarial Gradient Integration (Pan et al. 2021).

For each of k false classes j (sampled per image), an adversarial ascent path
starts at x and moves towards j with signed steps,
x_{t+1} = clip(x_t + eps * sign(grad p_j(x_t) / |grad p_j(x_t)|), 0, 1), until the
model predicts j or `max_iter` steps are done; along the path the gradient of
the target class y is integrated,

    AGI_j = sum_t -grad p_y(x_t) * (x_{t+1} - x_t),

and the map is the mean of AGI_j over the sampled classes. p = softmax(logits),
applied once, by us. Authors' settings: k = 20 classes, eps 0.05, 20 iterations.

Choices where the paper or the code leaves room:
- The path is cumulative, as written in the paper: each step starts from the
  current point. (The authors' code adds each step to the original image, so
  its iterates are x + eps * sign(g_t) rather than a path.)
- Classes are sampled without replacement from all classes except `target`,
  with a CPU torch.Generator seeded by seeds[i] (seed 0 when seeds is None);
  with fewer than k other classes, all of them are used. The authors excluded
  the predicted class; we exclude the explained class `target`, which is the
  same when target is the prediction.
- The stop test (prediction == j) is made on the current point before each
  step, so a path whose start is already classified as j contributes zero.
- Per-class maps are averaged (the authors summed; a constant factor).
- Cost: per class at most `max_iter` forward and 2 x `max_iter` backward
  passes (one for p_j, one for p_y), i.e. ~400 F and 800 B per image with the
  authors' settings, plus one forward to read the number of classes.
- The (image, class) pairs are independent rows, processed `batch_size` rows
  per forward pass.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

from fudbench.explainers.base import Explainer


class AGI(Explainer):
    name = "agi"

    def __init__(
        self, k: int = 20, epsilon: float = 0.05, max_iter: int = 20, batch_size: int = 64, use_softmax: bool = True
    ):
        if k < 1 or max_iter < 1 or epsilon <= 0 or batch_size < 1:
            raise ValueError("AGI needs k >= 1, max_iter >= 1, epsilon > 0 and batch_size >= 1")
        self.k, self.epsilon, self.max_iter = int(k), float(epsilon), int(max_iter)
        self.batch_size, self.use_softmax = int(batch_size), use_softmax

    def sample_classes(
        self, target: torch.Tensor, n_classes: int, seeds: Optional[Sequence[int]] = None
    ) -> torch.Tensor:
        """(N, min(k, n_classes - 1)) false classes per image, on the CPU."""
        target = target.detach().cpu().long()
        if n_classes < 2:
            raise ValueError("AGI needs a model with at least two classes")
        if seeds is None:
            seeds = [0] * len(target)
        if len(seeds) != len(target):
            raise ValueError(f"got {len(seeds)} seeds for {len(target)} images")
        k = min(self.k, n_classes - 1)
        rows = []
        for y, seed in zip(target.tolist(), seeds):
            g = torch.Generator().manual_seed(int(seed))
            pick = torch.randperm(n_classes - 1, generator=g)[:k]
            rows.append(pick + (pick >= y).long())  # skip the target class
        return torch.stack(rows)

    def _score(self, logits):
        return logits.softmax(dim=1) if self.use_softmax else logits

    def _paths(self, model, x, target, adv):
        """Integrated gradient of `target` along ascent paths towards `adv` (rows)."""
        bcast = (-1,) + (1,) * (x.dim() - 1)
        xt = x.clone()
        attribution = torch.zeros_like(x)
        active = torch.ones(len(x), dtype=torch.bool, device=x.device)
        for _ in range(self.max_iter):
            xg = xt.clone().requires_grad_(True)
            logits = model(xg)
            active = active & (logits.argmax(dim=1) != adv)
            if not active.any():
                break
            out = self._score(logits)
            (grad_adv,) = torch.autograd.grad(out.gather(1, adv.view(-1, 1)).sum(), xg, retain_graph=True)
            (grad_lab,) = torch.autograd.grad(out.gather(1, target.view(-1, 1)).sum(), xg)
            moved = (xt + self.epsilon * grad_adv.sign()).clamp(0.0, 1.0)
            x_next = torch.where(active.view(bcast), moved, xt)
            attribution -= grad_lab * (x_next - xt)
            xt = x_next
        return attribution.detach(), xt.detach()

    def paths(self, model: torch.nn.Module, x: torch.Tensor, target: torch.Tensor, classes: torch.Tensor):
        """Per-class maps AGI_j and path endpoints, both (N, k, C, H, W), for false classes (N, k)."""
        x = x.detach()
        target = target.to(x.device).long()
        classes = classes.to(x.device).long()
        n, k = classes.shape
        rows_x = x.repeat_interleave(k, dim=0)
        rows_y = target.repeat_interleave(k)
        rows_adv = classes.reshape(-1)
        maps, ends = torch.empty_like(rows_x), torch.empty_like(rows_x)
        with torch.enable_grad():
            for s in range(0, len(rows_x), self.batch_size):
                sl = slice(s, s + self.batch_size)
                maps[sl], ends[sl] = self._paths(model, rows_x[sl], rows_y[sl], rows_adv[sl])
        return maps.view(n, k, *x.shape[1:]), ends.view(n, k, *x.shape[1:])

    def explain(self, model, x, target, seeds: Optional[Sequence[int]] = None):
        with torch.no_grad():
            n_classes = model(x[:1].detach()).shape[1]
        classes = self.sample_classes(target, n_classes, seeds)
        return self.paths(model, x, target, classes)[0].mean(dim=1)
