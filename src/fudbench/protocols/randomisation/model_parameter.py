"""Model-parameter randomisation (Adebayo et al. 2018, "Sanity checks for saliency maps"), cascading.

The model's parameterised layers (explainers.controlled.parameterised_layers: modules holding parameters
of their own, in model.modules() order) are re-initialised from the output end, one more at each step
(randomise_layers: the same seed re-draws the same values at every step, so the cascade nests), and the
explainer is run again on each randomised copy for the image's target with its seeds. Step k compares the
k-layer map with the original map: Spearman rank correlation of the two pixel maps (Adebayo et al.'s
"rank correlation (abs)", on |map| summed over channels) and SSIM of the same |map|.

The seed of the randomisation comes from the seed key (not the explainer): every explainer of a model
is checked against the same randomised models. Records: one row per (image, step) per curve: `<curve>`
(Spearman) and `<curve>_ssim`, with `layers` randomised and `similarity`; kept = the share of layers still
trained. A map that depends on the model loses similarity as layers are randomised: lower is better.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, Optional

import numpy as np
import pandas as pd
import torch

from fudbench.core.masks import reduce_attribution
from fudbench.explainers.controlled import parameterised_layers, randomise_layers
from fudbench.protocols.base import CurveResult, Protocol, Shard, clean_response, records_frame
from fudbench.protocols.randomisation.similarity import spearman, ssim


@dataclass
class ModelParameterRandomisation(Protocol):
    curve: str = "mprt"
    max_layers: Optional[int] = None  # the top layers randomised (None: all, Adebayo et al.'s full cascade)
    reduction: str = "abs_sum"
    batch_size: int = 64  # images per explainer call

    needs_explainer: ClassVar[bool] = True

    def steps(self, model) -> tuple[int, int]:
        """(layers in the cascade, the model's parameterised layers)."""
        total = len(parameterised_layers(model))
        return (total if self.max_layers is None else min(total, self.max_layers)), total

    def explain_all(self, shard: Shard, model) -> torch.Tensor:
        """The explainer on every image of the shard under `model`, in batches with the out-of-memory back-off."""

        def explain(r):
            return shard.explainer(
                model, shard.x[r.start : r.stop], shard.y[r.start : r.stop], shard.ids[r.start : r.stop]
            )

        return torch.cat(self.batches(shard, range(len(shard.x)), explain))

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        t0 = time.perf_counter()
        n = len(shard.x)
        steps, total = self.steps(shard.model)
        original = reduce_attribution(attribution.float(), self.reduction).abs()  # |map|, as Adebayo et al.
        seed = shard.seed("randomised_model") % 2**63
        rank, structure = np.full((n, steps), np.nan), np.full((n, steps), np.nan)
        for k in range(1, steps + 1):
            randomised = randomise_layers(shard.model, k / total, seed)
            again = reduce_attribution(self.explain_all(shard, randomised).to(original.device), self.reduction).abs()
            rank[:, k - 1] = spearman(original, again).cpu().numpy()
            structure[:, k - 1] = ssim(original, again).cpu().numpy()
            del randomised

        response = clean_response(self, shard)
        seconds = (time.perf_counter() - t0) / max(n, 1)
        frames = [
            self.frame(curve, shard, values, response, steps, total, seconds)
            for curve, values in ((self.curve, rank), (f"{self.curve}_ssim", structure))
        ]
        return CurveResult(pd.concat(frames, ignore_index=True), None)

    @staticmethod
    def frame(curve, shard, values, response, steps, total, seconds) -> pd.DataFrame:
        n = len(shard.ids)
        layers = np.arange(1, steps + 1)

        def per_image(v):
            return np.repeat(np.asarray(v), steps)

        return records_frame(
            curve,
            image=per_image(np.asarray(shard.ids, np.int64)),
            step=np.tile(layers - 1, n),
            kept=np.tile(1 - layers / total, n),
            removed=np.tile(layers / total, n),
            target=per_image(shard.y.cpu().numpy()),
            layers=np.tile(layers, n),
            similarity=values.ravel(),
            confidence=per_image(response[0]),
            prediction=per_image(response[1]),
            energy=per_image(response[2]),
            l2=per_image(response[3]),
            seconds=np.full(n * steps, seconds),
        )
