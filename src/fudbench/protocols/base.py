"""The protocol base: the loop every protocol shares, written once.

    Protocol.run(model, x, y, attribution, imputer, image_ids, seed_key) -> CurveResult

A protocol evaluates one shard of images. Its `evaluate(shard, attribution)`
lists the work items (`Item`: one fill of one image at one point of its
curve, or one of several random draws of that point), makes their keep masks
and reduces what comes back; the base

- fills and classifies the items in batches (`fill_items`) through
  `fudbench.core.batching.run_batched`: a batch that runs out of GPU memory is
  retried at half the size, and the working size (`batch_state`) is kept for
  the protocol's later runs. On a GPU the first size is also fitted to the
  free memory when the imputer estimates its memory per sample
  (`Imputer.bytes_per_sample`). Passes over the clean images (`per_image`)
  go through the same batches;
- seeds every fill from the seed key, the image id, the step and the draw
  (`Shard.item_seed`), never from the position in a batch, so where the
  batches are cut changes no number;
- records per (image, step) the response and the sample of the point's first
  draw and the time per point (`Points`), and writes the records frame
  (`records_frame`, the columns every protocol shares); when the model has a
  feature-based OOD detector attached (fudbench.models.features.FeatureTap,
  set up by pipeline.ShardEvaluation), the response's `ood` scores become
  columns next to `energy`;
- shows the progress.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, ClassVar, NamedTuple, Optional, Sequence

import numpy as np
import pandas as pd
import torch
from fudbench.core.bars import progress as progress_bar

from fudbench.models.energy import energy
from fudbench.core.batching import AdaptiveBatchSize, fit_batch_size, run_batched
from fudbench.imputers.base import ImputeContext, Imputer
from fudbench.models.features import DETECTOR_ATTR, FEATURES_ATTR
from fudbench.core.seeding import derive_seed

log = logging.getLogger(__name__)


class Response(tuple):
    """sample_response's (confidence, prediction, energy, l2) (unpacks as those
    four), plus `ood`: {detector column: (N,) scores} of the feature-based OOD
    detectors (fudbench.analysis.feature_ood), {} when the model that gave the
    logits has no detector attached. Computed on first access: a protocol that
    does not record them (SRG) does not pay for them."""

    def __new__(cls, values, features: Optional[torch.Tensor] = None, detector=None, ood: Optional[dict] = None):
        self = super().__new__(cls, values)
        self._features, self._detector, self._ood = features, detector, ood
        return self

    @property
    def ood(self) -> dict:
        if self._ood is None:
            self._ood = (
                {}
                if self._features is None or self._detector is None
                else self._detector.score(self._features.double().cpu().numpy())
            )
            self._features = None
        return self._ood

    def take(self, index) -> "Response":
        """The rows `index` (a boolean or integer numpy array) of every column;
        features not scored yet are sliced first (only the rows kept are scored)."""
        values = [v[index] for v in self]
        if self._ood is None and self._features is not None:
            rows = torch.as_tensor(np.asarray(index), device=self._features.device)
            return Response(values, self._features[rows], self._detector)
        return Response(values, ood={k: v[index] for k, v in self.ood.items()})


def sample_response(logits: torch.Tensor, target: torch.Tensor, filled: torch.Tensor, original: torch.Tensor):
    """What every protocol records of an intermediate sample: softmax p(target),
    the predicted class, the energy -logsumexp(logits) and the L2 distance to
    the original in [0, 1] space. Returns a Response: numpy arrays (confidence,
    prediction, energy, l2), and in `.ood` the feature-based OOD scores when the
    model that gave the logits has a reference attached (pipeline.ShardEvaluation)."""
    features, detector = getattr(logits, FEATURES_ATTR, None), getattr(logits, DETECTOR_ATTR, None)
    logits = logits.float()
    return Response(
        (
            torch.softmax(logits, 1).gather(1, target.view(-1, 1)).squeeze(1).cpu().numpy(),
            logits.argmax(1).cpu().numpy(),
            energy(logits).cpu().numpy(),
            (filled - original).float().flatten(1).norm(dim=1).cpu().numpy(),
        ),
        features,
        detector,
    )


def fill_and_score(model, imputer, x: torch.Tensor, masks: torch.Tensor, context: ImputeContext, target: torch.Tensor):
    """Fill one batch, classify it and time both (per sample, CUDA synchronised).
    Returns (filled, logits, seconds per sample, sample_response(...)). The
    feature-based OOD scores (if any) are computed after the timing, and an
    imputer's one-off warm-up (torch.compile of a new batch shape) before it."""
    warm_up = getattr(imputer, "warm_up", None)
    if warm_up is not None:
        warm_up(x)
    t0 = time.perf_counter()
    filled = imputer.fill(x, masks, context)
    with torch.no_grad():
        logits = model(filled)
    if logits.is_cuda:
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / len(x)
    return filled, logits, seconds, sample_response(logits, target, filled, x)


def records_frame(
    curve: str,
    image,
    step,
    kept,
    removed,
    target,
    confidence,
    prediction,
    energy,
    l2,
    seconds,
    ood: Optional[dict] = None,
    **extra,
) -> pd.DataFrame:
    """Every protocol's records share these columns, in this order; protocol-
    specific values (e.g. correlation, infidelity) follow the target column.
    ood: {detector column: values} of the feature-based OOD detectors, placed
    right after energy (no columns without them)."""
    return pd.DataFrame(
        {
            "curve": curve,
            "image": image,
            "step": step,
            "kept": kept,
            "removed": removed,
            "target": target,
            **extra,
            "confidence": confidence,
            "prediction": prediction,
            "energy": energy,
            **(ood or {}),
            "l2": l2,
            "seconds": seconds,
        }
    )


@dataclass
class CurveResult:
    records: pd.DataFrame  # one row per (image, step)
    samples: Optional[np.ndarray]  # (N, steps, C, H, W) float16, if kept


class Item(NamedTuple):
    """One fill: image `image` (its index in the shard) at point `step` of its
    curve. `draw` numbers the random fills of protocols that fill a point
    several times; None for one fill per point."""

    image: int
    step: int
    draw: Optional[int] = None


def per_point(items: Sequence[Item], fn: Callable[[int, int], object]) -> dict:
    """{(image, step): fn(image, step)} once per point of the items: what the
    draws of a point share (its random subsets, its removals), made per batch
    so that no shard's worth is held at once."""
    return {p: fn(*p) for p in dict.fromkeys((it.image, it.step) for it in items)}


@dataclass
class Shard:
    """One run's inputs, as a protocol's evaluate sees them."""

    model: torch.nn.Module
    x: torch.Tensor  # (N, C, H, W) in [0, 1]
    y: torch.Tensor  # (N,) target classes, on x's device
    imputer: Optional[Imputer]
    ids: list  # image ids (ints): seeds come from them, not from positions
    seed_key: tuple
    masks: Optional[torch.Tensor] = None  # (N, H, W) 0/1 object masks in x's order (needs_masks protocols)
    # explainers.again.ExplainAgain of the maps' explainer (needs_explainer protocols): explainer(model, x, y, ids)
    explainer: Optional[Callable] = None

    def seed(self, *parts) -> int:
        return derive_seed(*self.seed_key, *parts)

    def item_seed(self, item: Item) -> int:
        """The imputer's seed of a work item: seed key, image id, step (and draw)."""
        draw = () if item.draw is None else (item.draw,)
        return self.seed(self.ids[item.image], item.step, *draw)


@dataclass
class Batch:
    """A batch of work items, filled and classified."""

    items: Sequence
    image: torch.Tensor  # (B,) image indices, on x's device
    masks: torch.Tensor  # (B, 1, H, W) keep masks as the protocol made them
    filled: torch.Tensor
    logits: torch.Tensor  # float32
    seconds: float  # imputer + model time per sample
    response: tuple  # sample_response(...): Response (confidence, prediction, energy, l2; .ood)

    @property
    def ij(self) -> tuple[np.ndarray, np.ndarray]:
        """The (image, step) indices of the items."""
        return np.array([it.image for it in self.items], np.int64), np.array([it.step for it in self.items], np.int64)


@dataclass
class Points:
    """What a curve records per (image, step): the response and sample of the
    point's first draw, and the time of all its draws (`draws` fills).

    Images may have different numbers of steps (e.g. one step per superpixel,
    and SLIC gives each image its own count): the arrays are (N, most steps),
    `valid` marks each image's steps, samples past an image's last step stay
    NaN, and `frame` writes rows for the valid points only."""

    confidence: np.ndarray  # (N, steps)
    prediction: np.ndarray
    energy: np.ndarray
    l2: np.ndarray
    seconds: np.ndarray
    samples: Optional[np.ndarray]  # (N, steps, C, H, W) float16, if kept
    draws: int = 1
    ood: dict = field(default_factory=dict)  # detector column -> (N, steps), NaN where not scored
    valid: Optional[np.ndarray] = None  # (N, steps) bool: the image has this step (None: all)

    @classmethod
    def empty(cls, x: torch.Tensor, steps, keep_samples: bool, draws: int = 1) -> "Points":
        """steps: the number of steps of every image, or one number per image."""
        n = len(x)
        per_image = np.broadcast_to(np.asarray(steps, np.int64), (n,))
        width = int(per_image.max()) if n else 0
        valid = np.arange(width)[None, :] < per_image[:, None]
        shape = (n, width)
        return cls(
            np.full(shape, np.nan),
            np.full(shape, -1, np.int64),
            np.full(shape, np.nan),
            np.full(shape, np.nan),
            np.zeros(shape),
            np.full((*shape, *x.shape[1:]), np.nan, np.float16) if keep_samples else None,
            draws,
            valid=None if valid.all() else valid,
        )

    def put(self, i, j, response, filled: Optional[torch.Tensor]) -> None:
        """Store the responses (and, if kept, the samples) of the points (i, j) (index arrays or slices)."""
        for column, values in zip((self.confidence, self.prediction, self.energy, self.l2), response):
            column[i, j] = values
        for name, values in getattr(response, "ood", {}).items():
            self.ood.setdefault(name, np.full(self.energy.shape, np.nan))[i, j] = values
        if self.samples is not None:
            self.samples[i, j] = filled.float().cpu().numpy()

    def record(self, batch: Batch) -> None:
        """fill_items' default on_batch: every item's time, the first draws' responses and samples."""
        i, j = batch.ij
        first = np.array([it.draw in (None, 0) for it in batch.items], bool)
        kept = batch.filled[torch.from_numpy(first).to(batch.filled.device)] if self.samples is not None else None
        response = batch.response
        response = response.take(first) if isinstance(response, Response) else [v[first] for v in response]
        self.put(i[first], j[first], response, kept)
        np.add.at(self.seconds, (i, j), batch.seconds / self.draws)  # last: an OOM above retries the batch

    def frame(self, curve: str, shard: Shard, kept, removed, target=None, **extra) -> pd.DataFrame:
        """The records, one row per (image, step) the image has, image-major. kept,
        removed and extra columns: anything that broadcasts to (N, steps), i.e.
        per step (steps,), per image (N, 1) or per point (values past an image's
        last step are ignored). target: per image (default shard.y)."""
        n, steps = self.confidence.shape
        rows = slice(None) if self.valid is None else self.valid.ravel()

        def flat(v):
            return np.broadcast_to(np.asarray(v), (n, steps)).ravel()[rows]

        target = shard.y.cpu().numpy() if target is None else np.asarray(target)
        return records_frame(
            curve,
            image=flat(np.asarray(shard.ids, np.int64)[:, None]),
            step=flat(np.arange(steps)),
            kept=flat(kept),
            removed=flat(removed),
            target=flat(target[:, None]),
            **{k: flat(v) for k, v in extra.items()},
            confidence=flat(self.confidence),
            prediction=flat(self.prediction),
            energy=flat(self.energy),
            l2=flat(self.l2),
            seconds=flat(self.seconds),
            ood={k: flat(v) for k, v in self.ood.items()},
        )


@dataclass
class Protocol(ABC):
    """Base of the protocols. A subclass is a dataclass with a `curve` (field or
    property: the records' curve name) and a `batch_size`, and implements
    `evaluate(shard, attribution)`:
    - work items: `Item(image, step[, draw])`, or any tuple type with those
      fields and a `seed` function for fill_items;
    - `fill_items(shard, items, masks, on_batch)`: masks(items) -> keep masks;
      on_batch(Batch) records, usually `Points.record` plus the protocol's
      own per-item values (output drops, hits);
    - `per_image(shard, fn)` for passes over the clean images;
    - the reduction (correlations, averages) and `Points.frame` / `records_frame`.
    It may declare `needs_attribution = False` and override `batch_cap` (the
    most work items per batch, default batch_size)."""

    # The working batch size: fitted to the GPU at the first batch, shrunk on
    # out-of-memory and kept for later runs.
    batch_state: Optional[AdaptiveBatchSize] = field(default=None, init=False, repr=False, compare=False)
    # (what it was computed for, the result) of attribution_free
    _attribution_free: Optional[tuple] = field(default=None, init=False, repr=False, compare=False)

    needs_attribution: ClassVar[bool] = True
    # reads the images' ground-truth object masks (shard.masks): Evaluator.run hands them only to these
    needs_masks: ClassVar[bool] = False
    # calls the maps' explainer again (shard.explainer: robustness, randomisation): only these get it
    needs_explainer: ClassVar[bool] = False

    def run(
        self,
        model,
        x: torch.Tensor,
        y: torch.Tensor,
        attribution: Optional[torch.Tensor],
        imputer: Optional[Imputer],
        image_ids: Sequence[int],
        seed_key: tuple,
        masks: Optional[torch.Tensor] = None,
        explainer: Optional[Callable] = None,
    ) -> CurveResult:
        from fudbench.core.checks import check_inputs, check_masks

        check_inputs(f"{type(self).__name__}.run", x, y, attribution, image_ids)
        if attribution is None and self.needs_attribution:
            raise ValueError(f"{self.curve} needs an attribution")
        if self.needs_masks and masks is None:
            raise ValueError(f"{self.curve} needs the images' ground-truth object masks (masks=, in the images' order)")
        if self.needs_explainer and explainer is None:
            raise ValueError(f"{self.curve} explains again and needs the maps' explainer (explainer=)")
        masks = None if masks is None else check_masks(masks, x, f"{type(self).__name__}.run")
        shard = Shard(model, x, y.to(x.device), imputer, [int(i) for i in image_ids], tuple(seed_key), masks, explainer)
        return self.evaluate(shard, attribution)

    @abstractmethod
    def evaluate(self, shard: Shard, attribution: Optional[torch.Tensor]) -> CurveResult:
        """The records (and kept samples) of one shard."""

    def attribution_free(self, shard: Shard, compute: Callable[[Shard], object]):
        """compute(shard): a protocol's work that does not depend on the attribution (fills, model
        responses), kept for the next call with the same model, imputer and image tensor (the same
        objects) and the same ids, targets and seed key. An evaluate job runs every explainer of a
        shard through one protocol object: with paired noise (a seed key without the explainer) the
        later explainers reuse it and only recompute their attribution terms (issue 47)."""
        same = (shard.model, shard.imputer, shard.x, (tuple(shard.ids), tuple(shard.y.tolist()), shard.seed_key))
        kept = self._attribution_free
        if kept is None or any(a is not b for a, b in zip(kept[0][:3], same[:3])) or kept[0][3] != same[3]:
            kept = self._attribution_free = (same, compute(shard))
        return kept[1]

    @property
    def batch_cap(self) -> int:
        """The most work items per batch."""
        return self.batch_size

    def _batch_size(self, shard: Shard) -> AdaptiveBatchSize:
        if self.batch_state is None:
            self.batch_state = AdaptiveBatchSize(self._first_batch_size(shard))
        return self.batch_state

    def _first_batch_size(self, shard: Shard) -> int:
        """batch_cap; on a GPU also fitted to the free memory if the imputer estimates its memory per sample."""
        x = shard.x
        per_sample = None
        if x.is_cuda and shard.imputer is not None:
            per_sample = shard.imputer.bytes_per_sample(tuple(x.shape[1:]), x.device)
        if per_sample is None:
            return self.batch_cap
        size = fit_batch_size(self.batch_cap, per_sample, x.device)
        log.info("%s: batch size %d (cap %d, fitted to free GPU memory)", self.curve, size, self.batch_cap)
        return size

    def batches(self, shard: Shard, items: Sequence, fn: Callable[[Sequence], object]) -> list:
        """fn on consecutive batches of items, with the out-of-memory back-off;
        fn's results in order. fn must not depend on where the batches are cut."""
        progress = progress_bar(total=len(items), desc=self.curve, mininterval=10)

        def one_batch(batch):
            out = fn(batch)
            progress.update(len(batch))
            return out

        try:
            return run_batched(one_batch, items, self._batch_size(shard), desc=self.curve)
        finally:
            progress.close()

    def per_image(self, shard: Shard, fn: Callable[[torch.Tensor, torch.Tensor], object]):
        """fn(x, y) on batches of the clean images, without gradients: a numpy
        array per image (or a tuple of them), concatenated over the batches."""
        with torch.no_grad():
            parts = self.batches(
                shard, range(len(shard.x)), lambda r: fn(shard.x[r.start : r.stop], shard.y[r.start : r.stop])
            )
        if parts and isinstance(parts[0], tuple):
            return tuple(np.concatenate(p) for p in zip(*parts))
        return np.concatenate(parts)

    def clean_records(self, shard: Shard, started: float, **columns) -> CurveResult:
        """One record per image for a metric that removes nothing (localisation, complexity): step 0,
        kept 1, its per-image `columns`, the clean image's response (one forward per image) and the
        seconds per image since `started` (time.perf_counter())."""
        response = clean_response(self, shard)
        seconds = (time.perf_counter() - started) / max(len(shard.x), 1)
        return CurveResult(image_records(self.curve, shard, response, seconds, **columns), None)

    def fill_items(
        self,
        shard: Shard,
        items: Sequence,
        masks: Callable[[Sequence], torch.Tensor],
        on_batch: Callable[[Batch], None],
        target: Optional[torch.Tensor] = None,
        seed: Optional[Callable[[object], int]] = None,
    ) -> None:
        """Fill and classify the work items in batches, in order, and hand each
        Batch to on_batch (e.g. Points.record). masks(batch) -> (B, 1, H, W)
        keep masks; target: (N,) the class each image is scored for (default
        shard.y); seed(item): the imputer seed (default shard.item_seed).
        A batch that runs out of memory, in on_batch too, is retried: on_batch
        finishes its GPU work before it adds anything up."""
        x = shard.x
        target = shard.y if target is None else target
        seed = shard.item_seed if seed is None else seed

        def one_batch(batch):
            image = torch.tensor([it.image for it in batch], device=x.device)
            keep, t = masks(batch), target[image]
            ctx = ImputeContext(classifier=shard.model, target=t, seeds=[seed(it) for it in batch])
            filled, logits, dt, response = fill_and_score(
                shard.model, shard.imputer, x[image], keep.to(x.device), ctx, t
            )
            on_batch(Batch(batch, image, keep, filled, logits.float(), dt, response))

        self.batches(shard, items, one_batch)


# The records of a protocol that scores each image once (no curve of steps): one row per image, step 0,
# kept 1, removed 0, the protocol's own columns, and the clean image's response (one classifier forward
# per image, through the protocol's batches), as every protocol records it.


def clean_response(protocol: Protocol, shard: Shard) -> tuple:
    """(confidence, prediction, energy, l2) of the clean images, numpy arrays per image."""

    def respond(x, y):
        return tuple(sample_response(shard.model(x), y, x, x))[:4]

    return protocol.per_image(shard, respond)


def image_records(curve: str, shard: Shard, response: tuple, seconds: float, **columns) -> pd.DataFrame:
    """One row per image: the shared columns around `columns` (after target), `seconds` per image."""
    n = len(shard.ids)
    confidence, prediction, energy, l2 = response
    return records_frame(
        curve,
        image=np.asarray(shard.ids, np.int64),
        step=np.zeros(n, np.int64),
        kept=np.ones(n),
        removed=np.zeros(n),
        target=shard.y.cpu().numpy(),
        **columns,
        confidence=confidence,
        prediction=prediction,
        energy=energy,
        l2=l2,
        seconds=np.full(n, seconds),
    )
