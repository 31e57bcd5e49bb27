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
the stored R-OMS records replayed beside them (fudbench.protocols.stored).

Records: one row per (curve, image, step) for the curves srg_mif__<imp>,
srg_lif__<imp>, srg_roms__<imp>; kept/removed = fractions of superpixels
(the AUC's x axis), plus n_occluded, n_segments and removed_pixels (fraction
of pixels occluded, mean over orderings). confidence = the averaged y(n);
prediction, energy and l2 describe the first fill (first ordering); seconds =
mean imputer + model time per fill.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from fudbench.imputers.base import ImputeContext, Imputer
from fudbench.masks import pixel_order, reduce_attribution
from fudbench.protocols.topk import CurveResult, fill_and_score, records_frame, sample_response
from fudbench.seeding import derive_seed

KINDS = ("mif", "lif", "roms")
SEGMENTATIONS = ("slic", "squares")


def srg_curve_name(kind: str, imputer_name: str) -> str:
    return f"srg_{kind}__{imputer_name}"


def occlusion_steps(n_superpixels: int, n_steps: int = 15) -> list[int]:
    """{0} u round(geomspace(1, K, n_steps)) u {K}, sorted and unique."""
    if n_superpixels < 1:
        raise ValueError(f"need at least one superpixel, got {n_superpixels}")
    geo = np.rint(np.geomspace(1, n_superpixels, n_steps)).astype(int) if n_steps > 0 else []
    return sorted({0, n_superpixels, *(int(v) for v in geo)})


def superpixels(images: np.ndarray, method: str = "slic", n_segments: int = 16, compactness: float = 10.0,
                square_side: int = 8) -> list[np.ndarray]:
    """(N, C, H, W) images in [0, 1] -> one (H, W) int label map per image,
    labels 0..K-1 consecutive."""
    n, c, h, w = images.shape
    if method == "squares":
        if not 1 <= square_side <= min(h, w):
            raise ValueError(f"square side {square_side} must be in [1, {min(h, w)}] for {h}x{w} images")
        cols = -(-w // square_side)
        yy, xx = np.mgrid[0:h, 0:w]
        labels = (yy // square_side) * cols + xx // square_side
        return [labels.copy() for _ in range(n)]
    if method != "slic":
        raise ValueError(f"segmentation must be one of {SEGMENTATIONS}, got {method!r}")
    from skimage.segmentation import slic

    out = []
    for img in images:
        hwc = np.ascontiguousarray(np.moveaxis(img.astype(np.float64), 0, -1))
        seg = slic(hwc if c > 1 else hwc[..., 0], n_segments=n_segments, compactness=compactness, start_label=0,
                   channel_axis=-1 if c > 1 else None)
        out.append(np.unique(seg, return_inverse=True)[1].reshape(h, w))
    return out


def superpixel_relevance(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean per-pixel score inside each superpixel; any non-finite pixel makes it -inf (least relevant)."""
    flat, lab = scores.ravel().astype(np.float64), labels.ravel()
    k = int(lab.max()) + 1
    bad = ~np.isfinite(flat)
    rel = np.bincount(lab, np.where(bad, 0.0, flat), k) / np.bincount(lab, minlength=k)
    rel[np.bincount(lab, bad.astype(float), k) > 0] = -np.inf
    return rel


@dataclass
class SRG:
    imputer_name: str                 # curve suffix (one SRG protocol per imputer)
    segmentation: str = "slic"
    n_segments: int = 16
    compactness: float = 10.0
    square_side: int = 8
    n_steps: int = 15
    n_imputations: int = 3
    n_random: int = 8
    reduction: str = "sum"
    batch_size: int = 128
    kinds: tuple = KINDS              # which curves to compute (R-OMS alone needs no attribution)

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

    def run(self, model, x: torch.Tensor, y: torch.Tensor, attribution: torch.Tensor, imputer: Imputer,
            image_ids: Sequence[int], seed_key: tuple) -> CurveResult:
        from fudbench.imputers.baselines import is_stochastic

        n, c, h, w = x.shape
        ids = [int(i) for i in image_ids]
        shared = (seed_key[0], "srg_shared", self.curve)
        n_fill = self.n_imputations if is_stochastic(imputer) else 1
        labels = superpixels(x.detach().float().cpu().numpy(), self.segmentation, self.n_segments,
                             self.compactness, self.square_side)
        steps = [occlusion_steps(int(lab.max()) + 1, self.n_steps) for lab in labels]
        ranked = "mif" in self.kinds or "lif" in self.kinds
        if ranked and attribution is None:
            raise ValueError("srg MIF / LIF curves need an attribution")
        scores = reduce_attribution(attribution, self.reduction).cpu().numpy() if ranked else None

        orders = []  # per image: {(kind, r): superpixel order}
        for i in range(n):
            o = {}
            if ranked:
                rel = superpixel_relevance(scores[i], labels[i])
                mif = pixel_order(torch.from_numpy(rel).view(1, 1, -1),
                                  [derive_seed(*seed_key, "order", ids[i])])[0]
                o.update({kd: order for kd, order in ((("mif", 0), mif), (("lif", 0), mif.flip(0)))
                          if kd[0] in self.kinds})
            if "roms" in self.kinds:
                for r in range(self.n_random):
                    g = torch.Generator().manual_seed(derive_seed(*shared, "random", ids[i], r))
                    o[("roms", r)] = torch.randperm(steps[i][-1], generator=g)
            orders.append(o)

        # Work items: (image, kind, ordering, step index, fill index, seed). The
        # fully occluded image is one shared item per (image, fill).
        items = []
        for i in range(n):
            k_all = steps[i][-1]
            for k in range(n_fill):
                items.append((i, "full", 0, len(steps[i]) - 1, k, derive_seed(*shared, "full", ids[i], k)))
            for (kind, r) in orders[i]:
                for j, s in enumerate(steps[i]):
                    if s == 0 or s == k_all:
                        continue
                    for k in range(n_fill):
                        seed = (derive_seed(*shared, "random", ids[i], r, s, k) if kind == "roms"
                                else derive_seed(*seed_key, kind, ids[i], s, k))
                        items.append((i, kind, r, j, k, seed))

        n_orders = {"mif": 1, "lif": 1, "roms": self.n_random}
        width = max(len(s) for s in steps)
        conf = {kd: np.zeros((n, width)) for kd in self.kinds}
        pred = {kd: np.zeros((n, width), np.int64) for kd in self.kinds}
        energy = {kd: np.zeros((n, width)) for kd in self.kinds}
        l2 = {kd: np.zeros((n, width)) for kd in self.kinds}
        secs = {kd: np.zeros((n, width)) for kd in self.kinds}
        removed_px = {kd: np.zeros((n, width)) for kd in self.kinds}

        # The clean image (n = 0) needs no fill.
        with torch.no_grad():
            for start in range(0, n, self.batch_size):
                sl = slice(start, start + self.batch_size)
                cf, pf, ef, df = sample_response(model(x[sl]), y[sl], x[sl], x[sl])
                for kd in self.kinds:
                    conf[kd][sl, 0], pred[kd][sl, 0], energy[kd][sl, 0], l2[kd][sl, 0] = cf, pf, ef, df

        for start in tqdm(range(0, len(items), self.batch_size), desc=self.curve, leave=False, mininterval=10):
            batch = items[start:start + self.batch_size]
            masks = torch.ones(len(batch), 1, h, w)
            for b, (i, kind, r, j, k, _) in enumerate(batch):
                occluded = (torch.arange(steps[i][-1]) if kind == "full"
                            else orders[i][(kind, r)][:steps[i][j]])
                masks[b, 0] = torch.from_numpy(~np.isin(labels[i], occluded.numpy())).float()
            ii = torch.tensor([it[0] for it in batch], device=x.device)
            xb, yb = x[ii], y[ii]
            ctx = ImputeContext(classifier=model, target=yb, seeds=[it[5] for it in batch])
            filled, logits, dt, (cf, pf, ef, df) = fill_and_score(model, imputer, xb, masks.to(x.device), ctx, yb)
            frac = (1 - masks.flatten(1).mean(1)).numpy()
            for b, (i, kind, r, j, k, _) in enumerate(batch):
                for kd in (self.kinds if kind == "full" else (kind,)):
                    share = n_fill * (1 if kind == "full" else n_orders[kd])
                    conf[kd][i, j] += cf[b] / share
                    secs[kd][i, j] += dt / share
                    removed_px[kd][i, j] += frac[b] / share
                    if k == 0 and r == 0:
                        pred[kd][i, j], energy[kd][i, j], l2[kd][i, j] = pf[b], ef[b], df[b]

        frames = []
        for kd in self.kinds:
            rows = [(i, j, s) for i in range(n) for j, s in enumerate(steps[i])]
            ii = np.array([i for i, _, _ in rows]); jj = np.array([j for _, j, _ in rows])
            occ = np.array([s for _, _, s in rows]); total = np.array([steps[i][-1] for i, _, _ in rows])
            frames.append(records_frame(
                srg_curve_name(kd, self.imputer_name), image=np.array(ids)[ii], step=jj, kept=1 - occ / total,
                removed=occ / total, target=y.cpu().numpy()[ii], n_occluded=occ, n_segments=total,
                removed_pixels=removed_px[kd][ii, jj], confidence=conf[kd][ii, jj], prediction=pred[kd][ii, jj],
                energy=energy[kd][ii, jj], l2=l2[kd][ii, jj], seconds=secs[kd][ii, jj]))
        return CurveResult(pd.concat(frames, ignore_index=True), None)
