"""IDSDS single deletion (Hesse et al. 2024), without the in-domain fine-tuning.

The image is cut into a grid x grid array of cells (boundaries round(k * H /
grid)); each cell is deleted on its own (imputer; Hesse et al.: zeros of the
model's input). Per image, the score is the Spearman rank correlation across
the cells between

  (a) the attribution mass of the cell: the signed sum over channels and
      pixels (as the reference code), and
  (b) the output drop f(x) - f(x without the cell), f the target logit
      (`output: logit`, the reference default) or its softmax probability.

Ties get average ranks. If either side is constant the correlation is
undefined: it is recorded as 0 with `degenerate` = True (the reference code
drops such images from its mean; the flag lets the analysis do the same).

The in-domain variant (fine-tuning the model on cell deletions, the "ID" of
IDSDS) is not implemented: the model is used as given.

Records: curve `idsds`, one row per (image, cell) with step = cell index
(row-major), removed = the cell's pixel fraction, cell_attribution,
output_drop, the image's correlation and degenerate flag, and confidence /
prediction / energy / l2 of the single-deletion sample (its intermediate
sample). Samples: (N, grid^2, C, H, W) float16 if keep_samples.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from tqdm import tqdm

from fudbench.imputers.base import ImputeContext, Imputer
from fudbench.protocols.sensitivity_n import pearson
from fudbench.protocols.topk import CurveResult, fill_and_score, records_frame
from fudbench.seeding import derive_seed

OUTPUTS = ("logit", "probability")


def grid_cells(h: int, w: int, grid: int) -> list[tuple[slice, slice]]:
    """Row-major (rows, cols) slices of a grid x grid partition of an h x w image."""
    if not 1 <= grid <= min(h, w):
        raise ValueError(f"IDSDS grid {grid} must be in [1, {min(h, w)}] for {h}x{w} images")
    ys = np.rint(np.linspace(0, h, grid + 1)).astype(int)
    xs = np.rint(np.linspace(0, w, grid + 1)).astype(int)
    return [(slice(ys[r], ys[r + 1]), slice(xs[q], xs[q + 1])) for r in range(grid) for q in range(grid)]


def average_ranks(v) -> np.ndarray:
    """Ranks 1..n, ties sharing their mean rank (scipy's rankdata 'average',
    without importing scipy.stats, which costs seconds per job)."""
    _, inverse, counts = np.unique(np.asarray(v, np.float64), return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts
    return (first + (counts + 1) / 2)[inverse.ravel()]


def spearman(a, b) -> tuple[float, bool]:
    """Spearman rank correlation (average ranks); (0.0, True) if either side is constant."""
    return pearson(average_ranks(a), average_ranks(b))


@dataclass
class IDSDS:
    grid: int = 4
    output: str = "logit"
    curve: str = "idsds"
    batch_size: int = 64
    keep_samples: bool = False

    def __post_init__(self):
        if self.output not in OUTPUTS:
            raise ValueError(f"IDSDS output must be one of {OUTPUTS}, got {self.output!r}")

    def _f(self, logits: torch.Tensor, target: torch.Tensor) -> np.ndarray:
        z = logits.float() if self.output == "logit" else torch.softmax(logits.float(), 1)
        return z.gather(1, target.view(-1, 1)).squeeze(1).cpu().numpy()

    def run(self, model, x: torch.Tensor, y: torch.Tensor, attribution: torch.Tensor, imputer: Imputer,
            image_ids: Sequence[int], seed_key: tuple) -> CurveResult:
        n, c, h, w = x.shape
        cells = grid_cells(h, w, self.grid)
        m = len(cells)
        ids = [int(i) for i in image_ids]
        a = attribution.detach().double().cpu()
        a = a.sum(1) if a.dim() == 4 else a
        a = torch.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
        mass = np.array([[float(a[i][cell].sum()) for cell in cells] for i in range(n)])

        with torch.no_grad():
            clean = np.concatenate([self._f(model(x[s:s + self.batch_size]), y[s:s + self.batch_size])
                                    for s in range(0, n, self.batch_size)])
        pairs = [(i, j) for i in range(n) for j in range(m)]
        drop = np.empty(len(pairs)); conf = np.empty(len(pairs)); energy = np.empty(len(pairs))
        l2 = np.empty(len(pairs)); pred = np.empty(len(pairs), np.int64); seconds = np.empty(len(pairs))
        samples = np.empty((n, m, c, h, w), np.float16) if self.keep_samples else None
        for start in tqdm(range(0, len(pairs), self.batch_size), desc=self.curve, leave=False, mininterval=10):
            batch = pairs[start:start + self.batch_size]
            masks = torch.ones(len(batch), 1, h, w)
            for b, (_, j) in enumerate(batch):
                masks[b, 0][cells[j]] = 0.0
            ii = torch.tensor([i for i, _ in batch], device=x.device)
            xb, yb = x[ii], y[ii]
            ctx = ImputeContext(classifier=model, target=yb,
                                seeds=[derive_seed(*seed_key, ids[i], j) for i, j in batch])
            filled, logits, dt, response = fill_and_score(model, imputer, xb, masks.to(x.device), ctx, yb)
            sl = slice(start, start + len(batch))
            seconds[sl] = dt
            drop[sl] = clean[[i for i, _ in batch]] - self._f(logits, yb)
            conf[sl], pred[sl], energy[sl], l2[sl] = response
            if samples is not None:
                for b, (i, j) in enumerate(batch):
                    samples[i, j] = filled[b].float().cpu().numpy()

        corr = np.empty(n); degenerate = np.zeros(n, bool)
        for i in range(n):
            corr[i], degenerate[i] = spearman(mass[i], drop[i * m:(i + 1) * m])
        frac = np.array([(cell[0].stop - cell[0].start) * (cell[1].stop - cell[1].start) / (h * w)
                         for cell in cells])
        records = records_frame(
            self.curve, image=np.repeat(ids, m), step=np.tile(np.arange(m), n), kept=np.tile(1 - frac, n),
            removed=np.tile(frac, n), target=np.repeat(y.cpu().numpy(), m), cell_attribution=mass.ravel(),
            output_drop=drop, correlation=np.repeat(corr, m), degenerate=np.repeat(degenerate, m),
            confidence=conf, prediction=pred, energy=energy, l2=l2, seconds=seconds)
        return CurveResult(records, samples)
