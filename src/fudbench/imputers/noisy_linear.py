"""ROAD's noisy linear imputer (Rong et al. 2022).

Every removed pixel equals the weighted mean of its in-image 8-neighbours
(weight 1/6 for the 4 edge neighbours, 1/12 for the 4 diagonal ones), where
neighbours may themselves be removed. That is one sparse linear system per
image, A u = b, with u the removed pixels: the row of pixel p holds the sum of
its valid neighbour weights on the diagonal, minus the weight of each removed
neighbour, and b collects the weighted known neighbours. A depends only on the
mask, so one factorisation solves all channels at once. The solution is a
discrete harmonic interpolation: a linear ramp is reproduced exactly inside
removed regions that do not touch the image border (a border pixel averages
its in-image neighbours only, as in the reference code).

Gaussian noise of std `noise` (ROAD: 0.01) is added to the filled pixels only,
from a per-sample generator (context.seeds). ROAD applies it in the
classifier's normalised space; here it is in [0, 1] space.
"""

from __future__ import annotations

import numpy as np
import torch

from fudbench.imputers.base import ImputeContext, Imputer, compose
from fudbench.imputers.baselines import NOTHING_KEPT_FILL, _seeds, per_sample_noise

EDGE, DIAGONAL = 1 / 6, 1 / 12
NEIGHBOURS = [
    (-1, 0, EDGE),
    (1, 0, EDGE),
    (0, -1, EDGE),
    (0, 1, EDGE),
    (-1, -1, DIAGONAL),
    (-1, 1, DIAGONAL),
    (1, -1, DIAGONAL),
    (1, 1, DIAGONAL),
]


def linear_fill(image: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """image (C, H, W) float, keep (H, W) bool -> image with removed pixels
    solved from their neighbours (float64). Nothing kept -> NOTHING_KEPT_FILL
    (the system has no anchor and is singular)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    c, h, w = image.shape
    out = image.astype(np.float64, copy=True)
    removed = ~keep
    n_u = int(removed.sum())
    if n_u == 0:
        return out
    if n_u == h * w:
        out[:] = NOTHING_KEPT_FILL
        return out
    index = np.full((h, w), -1, dtype=np.int64)
    index[removed] = np.arange(n_u)
    ys, xs = np.nonzero(removed)
    p = index[ys, xs]
    diag = np.zeros(n_u)
    b = np.zeros((n_u, c))
    rows, cols, vals = [], [], []
    for dy, dx, weight in NEIGHBOURS:
        qy, qx = ys + dy, xs + dx
        valid = (qy >= 0) & (qy < h) & (qx >= 0) & (qx < w)
        pv, qy, qx = p[valid], qy[valid], qx[valid]
        diag[pv] += weight
        q_removed = removed[qy, qx]
        rows.append(pv[q_removed])
        cols.append(index[qy[q_removed], qx[q_removed]])
        vals.append(np.full(int(q_removed.sum()), -weight))
        known = ~q_removed
        np.add.at(b, pv[known], weight * image[:, qy[known], qx[known]].T)
    rows.append(np.arange(n_u))
    cols.append(np.arange(n_u))
    vals.append(diag)
    a = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_u, n_u)).tocsc()
    u = np.asarray(spsolve(a, b)).reshape(n_u, c)
    out[:, ys, xs] = u.T
    return out


class NoisyLinearImputer(Imputer):
    name = "noisy_linear"

    def __init__(self, noise: float = 0.01):
        if noise < 0:
            raise ValueError(f"noisy-linear noise std must be >= 0, got {noise}")
        self.noise = float(noise)

    @property
    def stochastic(self) -> bool:
        return self.noise > 0

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        keep = (keep_mask[:, 0] >= 0.5).cpu().numpy()
        images = x.detach().double().cpu().numpy()
        # Protocols that average several noisy fills (SRG) send the same image and
        # mask more than once per batch: solve each distinct pair once.
        solutions: dict[bytes, np.ndarray] = {}
        out = []
        for i in range(len(x)):
            key = images[i].tobytes() + keep[i].tobytes()
            if key not in solutions:
                solutions[key] = linear_fill(images[i], keep[i])
            out.append(solutions[key])
        solved = torch.from_numpy(np.stack(out)).to(x)
        if self.noise > 0:
            solved = solved + self.noise * per_sample_noise(x, _seeds(context, len(x), "NoisyLinearImputer"), "normal")
        return compose(x, keep_mask, solved)
