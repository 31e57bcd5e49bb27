"""Random logit (Sixt, Granz & Landgraf 2020, "When explanations lie: why many modified BP attributions
fail"): the map for a random other class against the map for the image's target.

Per image, a class y' != y is drawn uniformly from the model's other classes (a generator seeded by the
seed key and the image id: every explainer gets the same y'), the explainer is run again for y' with the
image's seeds, and the two pixel maps (the evaluation's reduction) are compared by SSIM (Quantus'
RandomLogit default). A class-sensitive map changes with the class: lower is better.
Records: one row per image, `similarity`, `other_class`, and the clean image's response.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import torch

from fudbench.core.masks import reduce_attribution
from fudbench.protocols.base import CurveResult, Protocol, Shard, clean_response, image_records
from fudbench.protocols.randomisation.similarity import ssim


def other_classes(y: torch.Tensor, n_classes: int, seeds) -> torch.Tensor:
    """(N,) a uniformly drawn class other than y[i] per image, from seeded generators."""
    out = []
    for target, s in zip(y.tolist(), seeds):
        k = int(torch.randint(n_classes - 1, (1,), generator=torch.Generator().manual_seed(int(s))))
        out.append(k + (k >= target))
    return torch.tensor(out, dtype=y.dtype, device=y.device)


@dataclass
class RandomLogit(Protocol):
    curve: str = "random_logit"
    reduction: str = "abs_sum"
    batch_size: int = 64  # images per explainer call

    needs_explainer: ClassVar[bool] = True

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        t0 = time.perf_counter()
        n = len(shard.x)

        response = clean_response(self, shard)
        with torch.no_grad():
            classes = shard.model(shard.x[:1]).shape[1]
        n_classes = int(classes)
        if n_classes < 2:
            raise ValueError(f"{self.curve}: the model has {n_classes} class(es); a random other class needs two")
        other = other_classes(shard.y, n_classes, [shard.seed(i, "other_class") % 2**63 for i in shard.ids])

        def explain(r):  # the explainer calls for the other classes, with the out-of-memory back-off
            return shard.explainer(
                shard.model, shard.x[r.start : r.stop], other[r.start : r.stop], shard.ids[r.start : r.stop]
            )

        maps = self.batches(shard, range(n), explain)
        original = reduce_attribution(attribution.float(), self.reduction)
        again = reduce_attribution(torch.cat(maps).to(original.device), self.reduction)
        similarity = ssim(original, again).cpu().numpy()
        seconds = (time.perf_counter() - t0) / max(n, 1)
        frame = image_records(
            self.curve, shard, response, seconds, other_class=other.cpu().numpy(), similarity=similarity
        )
        return CurveResult(frame, None)
