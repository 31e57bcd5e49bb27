"""Superpixel pixel flipping: MIF / LIF, R-OMS and the relevance gains
(Bluecher et al., seeds/002).

Per image:
- superpixels: SLIC (scikit-image, `n_segments`, `compactness`) or squares of
  side `square_side`; K = the number of superpixels actually produced;
- superpixel relevance = mean of the per-pixel attribution (reduced over
  channels with `reduction`, signed 'sum' by default) inside it; ties broken
  by a seeded permutation, non-finite values least relevant;
- orderings: MIF (most relevant first), LIF (the reverse of MIF), and
  `n_random` uniform random orderings (the random-explainer baseline);
- occlusion steps n in {0} u round(geomspace(1, K, n_steps)) u {K} (unique);
- y(n) = softmax p(target | first n superpixels of the ordering occluded),
  averaged over `n_imputations` fills of a stochastic imputer (one fill for a
  deterministic one), and for R-OMS also over the random orderings.
Scores (fudbench.analysis.curves): AUC over the occluded fraction n/K, MIF
(lower better), LIF (higher better), R-OMS = AUC of the random curve;
MRG = R-OMS - MIF, LRG = LIF - R-OMS, SRG = LIF - MIF (0 for a random explainer).

Seeds: MIF/LIF fills use derive_seed(*seed_key, kind, image_id, n, k). The
random orderings, their fills and the fully occluded image (n = K, the same
for every ordering) use a key made of seed_key[0] (the run's global seed, the
first element of every evaluate job's seed key) and the curve name only, so
R-OMS is identical across explainer jobs and the curves meet exactly at both
ends. Everything is per image, so batching and sharding do not change numbers.
That is why the workflow computes R-OMS once per model x shard (`kinds` =
("roms",), rule srg_reference) and the explainer jobs only MIF and LIF, with
the stored R-OMS records replayed beside them (fudbench.protocols.faithfulness.stored).

Records: one row per (curve, image, step) for the curves srg_mif__<imp>,
srg_lif__<imp>, srg_roms__<imp>; kept/removed = fractions of superpixels
(the AUC's x axis), plus n_occluded, n_segments and removed_pixels (fraction
of pixels occluded, mean over orderings). confidence = the averaged y(n);
prediction, energy and l2 describe the first fill (first ordering); seconds =
mean imputer + model time per fill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np
import pandas as pd
import torch

from fudbench.imputers.registry import canonical
from fudbench.core.masks import pixel_order, reduce_attribution
from fudbench.protocols.base import CurveResult, Protocol, Shard, records_frame, sample_response
from fudbench.core.seeding import derive_seed
from fudbench.core.superpixels import SEGMENTATIONS, region_means, segment

KINDS = ("mif", "lif", "roms")
RESPONSE = ("confidence", "prediction", "energy", "l2")  # sample_response's order
TALLIED = ("removed_pixels", *RESPONSE, "seconds")  # per curve, image and step


def srg_curve_name(kind: str, imputer_name: str) -> str:
    return f"srg_{kind}__{imputer_name}"


def occlusion_steps(n_superpixels: int, n_steps: int = 15) -> list[int]:
    """{0} u round(geomspace(1, K, n_steps)) u {K}, sorted and unique."""
    if n_superpixels < 1:
        raise ValueError(f"need at least one superpixel, got {n_superpixels}")
    geo = np.rint(np.geomspace(1, n_superpixels, n_steps)).astype(int) if n_steps > 0 else []
    return sorted({0, n_superpixels, *(int(v) for v in geo)})


class Fill(NamedTuple):
    """A work item: image `image` with the first steps[step] superpixels of
    ordering (kind, order) occluded, fill number `draw`, imputer seed `seed`.
    kind "full": the fully occluded image, shared by every curve."""

    image: int
    step: int
    draw: int
    kind: str
    order: int
    seed: int


@dataclass
class SRG(Protocol):
    imputer_name: str  # curve suffix (one SRG protocol per imputer)
    segmentation: str = "slic"
    n_segments: int = 16
    compactness: float = 10.0
    square_side: int = 8
    n_steps: int = 15
    n_imputations: int = 3
    n_random: int = 8
    reduction: str = "sum"
    batch_size: int = 128
    kinds: tuple = KINDS  # which curves to compute (R-OMS alone needs no attribution)

    def __post_init__(self):
        if not self.kinds or set(self.kinds) - set(KINDS):
            raise ValueError(f"srg kinds must be a non-empty subset of {KINDS}, got {self.kinds!r}")
        self.kinds = tuple(k for k in KINDS if k in self.kinds)  # canonical order, so outputs are too
        if self.segmentation not in SEGMENTATIONS:
            raise ValueError(f"srg segmentation must be one of {SEGMENTATIONS}, got {self.segmentation!r}")
        if self.n_imputations < 1 or self.n_random < 1:
            raise ValueError("srg needs n_imputations >= 1 and n_random >= 1")

    @property
    def curve(self) -> str:
        return f"srg__{self.imputer_name}"

    @property
    def needs_attribution(self) -> bool:
        """MIF and LIF rank by the attribution; R-OMS orders at random."""
        return "mif" in self.kinds or "lif" in self.kinds

    def evaluate(self, shard: Shard, attribution: Optional[torch.Tensor]) -> CurveResult:
        n = len(shard.x)
        # by the imputer's short name: `dataset_mean` draws what `mean` draws (imputers.registry.ALIASES)
        shared = (shard.seed_key[0], "srg_shared", f"srg__{canonical(self.imputer_name)}")
        n_fill = self.n_imputations if shard.imputer.stochastic else 1
        labels = segment(
            shard.x.detach().float().cpu().numpy(),
            self.segmentation,
            self.n_segments,
            self.compactness,
            self.square_side,
        )
        steps = [occlusion_steps(int(lab.max()) + 1, self.n_steps) for lab in labels]
        orders = self._orders(shard, attribution, labels, steps, shared)
        n_orders = {"mif": 1, "lif": 1, "roms": self.n_random}
        width = max(len(s) for s in steps)
        tally = {
            kd: {col: np.zeros((n, width), np.int64 if col == "prediction" else np.float64) for col in TALLIED}
            for kd in self.kinds
        }

        # The clean image (n = 0) needs no fill.
        clean = self.per_image(shard, lambda xb, yb: sample_response(shard.model(xb), yb, xb, xb))
        for kd in self.kinds:
            for col, values in zip(RESPONSE, clean):
                tally[kd][col][:, 0] = values

        def masks(batch):
            keep = torch.ones(len(batch), 1, *shard.x.shape[-2:])
            for b, it in enumerate(batch):
                occluded = (
                    torch.arange(steps[it.image][-1])
                    if it.kind == "full"
                    else orders[it.image][(it.kind, it.order)][: steps[it.image][it.step]]
                )
                keep[b, 0] = torch.from_numpy(~np.isin(labels[it.image], occluded.numpy())).float()
            return keep

        def scored(batch):
            cf, pf, ef, df = batch.response
            frac = (1 - batch.masks.flatten(1).mean(1)).numpy()
            for b, it in enumerate(batch.items):
                for kd in self.kinds if it.kind == "full" else (it.kind,):
                    t, at = tally[kd], (it.image, it.step)
                    share = n_fill * (1 if it.kind == "full" else n_orders[kd])
                    t["confidence"][at] += cf[b] / share
                    t["seconds"][at] += batch.seconds / share
                    t["removed_pixels"][at] += frac[b] / share
                    if it.draw == 0 and it.order == 0:  # the first fill of the first ordering
                        t["prediction"][at], t["energy"][at], t["l2"][at] = pf[b], ef[b], df[b]

        items = self._items(shard, steps, orders, n_fill, shared)
        self.fill_items(shard, items, masks, scored, seed=lambda it: it.seed)
        frames = [self._frame(kd, shard, steps, tally[kd]) for kd in self.kinds]
        return CurveResult(pd.concat(frames, ignore_index=True), None)

    def _items(self, shard: Shard, steps, orders, n_fill: int, shared: tuple) -> list[Fill]:
        """Every fill of every computed curve; the fully occluded image is one
        shared item per (image, fill)."""
        items = []
        for i, image_id in enumerate(shard.ids):
            k_all = steps[i][-1]
            for k in range(n_fill):
                items.append(Fill(i, len(steps[i]) - 1, k, "full", 0, derive_seed(*shared, "full", image_id, k)))
            for kind, r in orders[i]:
                for j, s in enumerate(steps[i]):
                    if s == 0 or s == k_all:
                        continue
                    for k in range(n_fill):
                        seed = (
                            derive_seed(*shared, "random", image_id, r, s, k)
                            if kind == "roms"
                            else shard.seed(kind, image_id, s, k)
                        )
                        items.append(Fill(i, j, k, kind, r, seed))
        return items

    def _frame(self, kind: str, shard: Shard, steps, tally: dict):
        """The records of one curve: one row per (image, step), steps varying per image."""
        rows = [(i, j, s) for i in range(len(steps)) for j, s in enumerate(steps[i])]
        ii = np.array([i for i, _, _ in rows])
        jj = np.array([j for _, j, _ in rows])
        occ = np.array([s for _, _, s in rows])
        total = np.array([steps[i][-1] for i, _, _ in rows])
        return records_frame(
            srg_curve_name(kind, self.imputer_name),
            image=np.array(shard.ids)[ii],
            step=jj,
            kept=1 - occ / total,
            removed=occ / total,
            target=shard.y.cpu().numpy()[ii],
            n_occluded=occ,
            n_segments=total,
            **{col: tally[col][ii, jj] for col in TALLIED},
        )

    def _orders(self, shard: Shard, attribution, labels, steps, shared) -> list[dict]:
        """Per image: {(kind, r): superpixel order} of the computed curves."""
        scores = reduce_attribution(attribution, self.reduction).cpu().numpy() if self.needs_attribution else None
        orders = []
        for i, image_id in enumerate(shard.ids):
            o = {}
            if scores is not None:
                rel = region_means(scores[i], labels[i])
                mif = pixel_order(torch.from_numpy(rel).view(1, 1, -1), [shard.seed("order", image_id)])[0]
                o.update(
                    {kd: order for kd, order in ((("mif", 0), mif), (("lif", 0), mif.flip(0))) if kd[0] in self.kinds}
                )
            if "roms" in self.kinds:
                for r in range(self.n_random):
                    g = torch.Generator().manual_seed(derive_seed(*shared, "random", image_id, r))
                    o[("roms", r)] = torch.randperm(steps[i][-1], generator=g)
            orders.append(o)
        return orders
