"""The robustness protocols' shared loop: `n_samples` noisy copies of every image, each explained again
with the image's target and seeds (Shard.explainer), and one ratio per copy reduced to a per-image score.

The noise of copy k of image i is drawn from a generator seeded by the run, the model's seed group, the
protocol's `noise_family`, the image id and k (never the explainer, nor the metric's name), so every
explainer of an image is compared under the same perturbations (paired noise), Max- and Avg-Sensitivity
of one radius reduce the same copies (the maximum bounds the mean), and where the shard is cut changes
nothing. The perturbed images are clipped to [0, 1], the
images' range, which every explainer here requires (Quantus does not clip: near 0 and 1 its copies
leave the range; the input distance of the Lipschitz estimate is taken after the clip).

Records: one row per image (step 0, kept 1, removed 0), the score column (`value`), `degenerate` (a map
the ratio is undefined for, e.g. all zero: NaN), and the clean image's response.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fudbench.core.seeding import derive_seed
from fudbench.protocols.base import CurveResult, Protocol, Shard, clean_response, image_records


@dataclass
class PerturbedExplanations(Protocol):
    curve: str = "robustness"
    n_samples: int = 10
    batch_size: int = 64  # perturbed images per explainer call
    aggregate: str = "max"  # over the copies: max (worst case) or mean

    needs_explainer: ClassVar[bool] = True
    # what the copies' noise is keyed by in place of the evaluator's and curve's names
    noise_family: ClassVar[str] = "perturbed"

    @abstractmethod
    def noise(self, shape: tuple, generator: torch.Generator) -> torch.Tensor:
        """One image's perturbation (shape (C, H, W)), drawn on the CPU from `generator`."""

    @abstractmethod
    def ratio(self, a: torch.Tensor, a_p: torch.Tensor, x: torch.Tensor, x_p: torch.Tensor) -> torch.Tensor:
        """(B,) the per-copy value from the maps a, a_p and inputs x, x_p (each (B, ...))."""

    def copy_generator(self, seed_key: tuple, image_id, k: int) -> torch.Generator:
        """The generator of copy k of an image. The shard's seed key ends with the entry's noise name and the
        curve (paired_seed_key, Evaluator.run): the noise family replaces both."""
        return torch.Generator().manual_seed(derive_seed(*seed_key[:-2], self.noise_family, image_id, k) % 2**63)

    def perturbed(self, shard: Shard, items) -> torch.Tensor:
        """The perturbed copies of the work items (image index, copy k), clipped to [0, 1]: (B, C, H, W)."""
        shape = tuple(shard.x.shape[1:])
        draws = [self.noise(shape, self.copy_generator(shard.seed_key, shard.ids[i], k)) for i, k in items]
        noise = torch.stack(draws).to(shard.x.device, shard.x.dtype)
        return (shard.x[[i for i, _ in items]] + noise).clamp(0, 1)

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        t0 = time.perf_counter()
        a = attribution.float().to(shard.x.device)
        n = len(shard.x)
        items = [(i, k) for i in range(n) for k in range(self.n_samples)]

        def explain_batch(batch) -> torch.Tensor:  # the explainer calls, with the out-of-memory back-off
            rows = [i for i, _ in batch]
            x_p = self.perturbed(shard, batch)
            a_p = shard.explainer(shard.model, x_p, shard.y[rows], [shard.ids[i] for i in rows]).to(a.device)
            return self.ratio(a[rows], a_p, shard.x[rows], x_p).double().cpu()

        values = torch.cat(self.batches(shard, items, explain_batch)).view(n, self.n_samples)
        score = (values.amax(1) if self.aggregate == "max" else values.mean(1)).numpy()

        response = clean_response(self, shard)
        frame = image_records(
            self.curve,
            shard,
            response,
            (time.perf_counter() - t0) / max(n, 1),
            value=score,
            degenerate=~np.isfinite(score),
        )
        return CurveResult(frame, None)


def flat_norm(v: torch.Tensor) -> torch.Tensor:
    """(B,) the L2 (Frobenius) norm of each row's values."""
    return v.flatten(1).double().norm(dim=1)
