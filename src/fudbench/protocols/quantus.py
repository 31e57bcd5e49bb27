"""A Quantus metric run image by image (fudbench.evaluators.quantus).

Each image is scored by its own call of the metric on that image alone, with
numpy's global generator, Python's and torch's seeded from the image's seed
(seed key and image id, never its place in the shard) and restored after:
Quantus draws its random subsets and perturbations from np.random. So a
score does not depend on the shard, the batch or the other images, and
calling Quantus directly with np.random.seed(that seed) gives the same number.

What Quantus receives: the images in [0, 1] (the project's classifiers
normalise inside), the targets, and the map reduced to one channel by
`evaluation.reduction` (N, 1, H, W), as the top-k metrics see it; Quantus
then applies its own `abs` / `normalise` defaults unless the settings say
otherwise. The model's outputs are its logits (Quantus' softmax=False).

Records: one row per image: step 0, kept / removed NaN, the target, `value`
(the per-image value), the clean image's confidence, prediction and energy,
and the seconds the call took. A constant map, all-zero (Grad-CAM's ReLU can
zero a whole ViT map) or uniform (a box covering the whole image), is refused by
Quantus (an assertion in every metric): its
`value` is NaN, counted in the job's log, and the analysis leaves that
image out for that metric instead of the job failing.

Metrics that explain again (robustness, randomisation: `explains`) get Quantus' `explain_func` from the
shard's explainer (explainers.again.ExplainAgain: the entry's explainer with the image's seeds), returning
the map reduced as the stored one. Quantus perturbs without clipping, and every explainer here takes
images in [0, 1]: explain_func explains the copy clipped to [0, 1] (Quantus' own distances, e.g. the
Lipschitz estimate's, stay unclipped). RandomLogit's num_classes defaults to the model's logits.

Batches: the clean responses go through the protocol loop (halved on
out-of-memory); Quantus' own calls see one image each, and an out-of-memory
error inside one is not retried.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import torch

from fudbench.core.auc import normalised_auc
from fudbench.core.masks import reduce_attribution
from fudbench.protocols.base import CurveResult, Protocol, Shard, records_frame, sample_response

log = logging.getLogger(__name__)


def reduce_output(value, how: str) -> float:
    """One float from a metric's output for one image: its value, or for a curve
    (steps,) the normalised area under it (auc) or its mean (mean)."""
    arr = np.asarray(value, dtype=float).ravel()
    if how == "value":
        return float(arr[0])
    if how == "mean":
        return float(arr.mean())
    if len(arr) < 2:
        return float(arr[0])
    return normalised_auc(np.linspace(0.0, 1.0, len(arr)), arr)


@dataclass
class QuantusCurve(Protocol):
    curve: str
    metric: str
    settings: dict = field(default_factory=dict)
    reduce: str = "value"
    reduction: str = "abs_sum"
    batch_size: int = 64
    check: Optional[Callable] = None  # (settings, key, side, side_key) -> problems, before Quantus runs
    explains: bool = False  # the metric calls the explainer again: Protocol.needs_explainer for this object

    def __post_init__(self):
        self.needs_explainer = self.explains

    def explain_func(self, shard: Shard, image_id: int) -> Callable:
        """Quantus' explain_func for one image: the shard's explainer on Quantus' inputs (clipped to
        [0, 1]), with that image's seeds, reduced as the stored map (N, 1, H, W)."""

        def explain(model, inputs, targets, **kwargs):
            x = torch.as_tensor(np.asarray(inputs), dtype=torch.float32, device=shard.x.device).clamp(0, 1)
            y = torch.as_tensor(np.asarray(targets), device=shard.x.device).long().view(-1)
            a = shard.explainer(model, x, y, [image_id] * len(x))
            return reduce_attribution(a, self.reduction)[:, None].cpu().numpy()

        return explain

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        import quantus

        from fudbench.core.seeding import seeded

        x, y = shard.x, shard.y
        # the config checks these at parse time; the API and other sizes of images are checked here, before Quantus
        # fails on them with an error that names no setting (check: fudbench.evaluators.quantus.value_problems)
        square = x.shape[-1] == x.shape[-2]
        problems = (
            self.check(
                self.settings,
                f"quantus.{self.metric}",
                x.shape[-1] if square else None,
                "the images given",
                self.metric,
            )
            if self.check
            else []
        )
        if problems:
            raise ValueError("; ".join(p.replace("config key ", "") for p in problems))
        maps = reduce_attribution(attribution, self.reduction)[:, None].cpu().numpy()
        images, targets = x.float().cpu().numpy(), y.cpu().numpy()
        # the clean images' responses through the protocol loop's batches (out-of-memory back-off)
        clean = self.per_image(shard, lambda xb, yb: tuple(sample_response(shard.model(xb), yb, xb, xb)))
        scores, seconds = [], []
        # Quantus asserts the map is not uniform (all-zero included: Grad-CAM's ReLU on a ViT; a box that
        # covers the whole crop, a ground-truth map on a folder's photo)
        flat = maps.reshape(len(maps), -1)
        zero = (flat == flat[:, :1]).all(axis=1)
        if zero.any():
            log.warning(
                "%s: %d constant map(s), all-zero or uniform (images %s): Quantus refuses them, their score is NaN",
                self.metric,
                int(zero.sum()),
                [int(shard.ids[i]) for i in np.flatnonzero(zero)],
            )
        settings = dict(self.settings)
        if self.metric == "RandomLogit" and "num_classes" not in settings:
            with torch.no_grad():
                settings["num_classes"] = int(shard.model(x[:1]).shape[1])
        for i, image_id in enumerate(shard.ids):
            t0 = time.perf_counter()
            if zero[i]:
                scores.append(np.nan)
                seconds.append(time.perf_counter() - t0)
                continue
            with seeded(shard.seed(image_id), x.device), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Quantus warns about its defaults on every call
                metric = getattr(quantus, self.metric)(**settings, disable_warnings=True, display_progressbar=False)
                explain = {"explain_func": self.explain_func(shard, image_id)} if self.explains else {}
                out = metric(
                    model=shard.model,
                    x_batch=images[i : i + 1],
                    y_batch=targets[i : i + 1],
                    a_batch=maps[i : i + 1],
                    device=str(x.device),
                    batch_size=self.batch_size,
                    **explain,
                )
            scores.append(reduce_output(out[0], self.reduce))
            seconds.append(time.perf_counter() - t0)
        n = len(shard.ids)
        return CurveResult(
            records_frame(
                self.curve,
                image=np.asarray(shard.ids, np.int64),
                step=np.zeros(n, np.int64),
                kept=np.full(n, np.nan),
                removed=np.full(n, np.nan),
                target=targets,
                value=np.asarray(scores),
                confidence=clean[0],
                prediction=clean[1],
                energy=clean[2],
                l2=np.zeros(n),
                seconds=np.asarray(seconds),
            ),
            None,
        )
