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

Shared work: the deletions, the model's responses and the output drops do not
depend on the attribution. As in Sensitivity-N, one evaluate job runs every
explainer of a shard through the same protocol object, which keeps them for
the last (model, imputer, images, ids, targets, seed key) and only recomputes
the cells' attribution mass and the correlations (issue 47); the records'
seconds are those of the explainer that computed the responses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fudbench.protocols.base import CurveResult, Item, Points, Protocol, Shard
from fudbench.protocols.faithfulness.sensitivity_n import pearson

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
class IDSDS(Protocol):
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

    def evaluate(self, shard: Shard, attribution: torch.Tensor) -> CurveResult:
        n, c, h, w = shard.x.shape
        cells = grid_cells(h, w, self.grid)
        a = attribution.detach().double().cpu()
        a = a.sum(1) if a.dim() == 4 else a
        a = torch.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
        mass = np.array([[float(a[i][cell].sum()) for cell in cells] for i in range(n)])
        points, drop = self.attribution_free(shard, lambda s: self._responses(s, cells))
        corr = np.empty(n)
        degenerate = np.zeros(n, bool)
        for i in range(n):
            corr[i], degenerate[i] = spearman(mass[i], drop[i])
        frac = np.array([(cell[0].stop - cell[0].start) * (cell[1].stop - cell[1].start) / (h * w) for cell in cells])
        records = points.frame(
            self.curve,
            shard,
            kept=1 - frac,
            removed=frac,
            cell_attribution=mass,
            output_drop=drop,
            correlation=corr[:, None],
            degenerate=degenerate[:, None],
        )
        return CurveResult(records, None if points.samples is None else points.samples.copy())

    def _responses(self, shard: Shard, cells) -> tuple[Points, np.ndarray]:
        """Everything that does not depend on the attribution: per (image, cell) the single-deletion
        sample's response and the output drop f(x) - f(x without the cell)."""
        n, c, h, w = shard.x.shape
        m = len(cells)
        clean = self.per_image(shard, lambda xb, yb: self._f(shard.model(xb), yb))
        points = Points.empty(shard.x, m, self.keep_samples)
        drop = np.empty((n, m))

        def masks(batch):
            keep = torch.ones(len(batch), 1, h, w)
            for b, it in enumerate(batch):
                keep[b, 0][cells[it.step]] = 0.0
            return keep

        def scored(batch):
            f = self._f(batch.logits, shard.y[batch.image])
            points.record(batch)
            i, j = batch.ij
            drop[i, j] = clean[i] - f

        self.fill_items(shard, [Item(i, j) for i in range(n) for j in range(m)], masks, scored)
        return points, drop
