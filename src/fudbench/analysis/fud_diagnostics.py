"""Inside FUD's sampler: what the paper's Figs. 3, 5, 6 and Table 5 look at.

`trace_fud` runs the sampler on keep-top-rho masks of one explainer and
records, per sample and denoising step,
- l2:     ||x_t - x|| in [0, 1] space (x_t after the known pixels are put
          back), from x_T on (Fig. 5; the final value is Fig. 6's L2(x_0, x));
- energy: the classifier's energy of the step's denoised estimate, i.e. what
          the classifier would see if sampling stopped there (Fig. 3).

Our choice for Fig. 3 (the paper does not say which image it scores): the
estimate at step t is the sampler's prediction x0_hat(x_t), with the kept
pixels copied from x and clipped to [0, 1]. The noisy x_t itself would be
detected as OOD at every step but the last, which says nothing about
guidance; x0_hat shows how the fill evolves. If the sampler's callback does not
provide x0_hat, x_t is used and the records say so (column `scored`).

AUROC per step (Fig. 3) = the Energy detector's AUROC between the clean
evaluated images (ID) and the samples' estimates at that step (OOD); 0.5
means the two cannot be told apart.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from fudbench.models.energy import ood_metrics
from fudbench.core.seeding import derive_seed

# torch is imported inside the sampling functions: the figure jobs that only
# read traces run in the analysis env, without torch.


def keep_masks(attribution, ratios: Sequence[float], reduction: str, order_seeds):
    """(N, R, 1, H, W) masks keeping the top rho of each image's pixels."""
    import torch

    from fudbench.core.masks import keep_mask, pixel_order, ranks_from_order, reduce_attribution

    h, w = attribution.shape[-2:]
    ranks = ranks_from_order(pixel_order(reduce_attribution(attribution, reduction), order_seeds))
    return torch.stack([keep_mask(ranks, r, "keep", (h, w)) for r in ratios], dim=1)


def trace_fud(imputer, model, x, y, masks, seeds: Sequence[int], batch_size: int = 64):
    """Run `imputer` (a DiffusionImputer) on (x[i], masks[i]) pairs.

    x: (N, C, H, W) in [0, 1]; masks: (N, 1, H, W) keep-masks; seeds: one per pair.
    Returns (final samples (N, C, H, W), l2 (N, steps + 1), energy (N, steps), scored: 'x0_hat' | 'x_t').
    """
    import torch

    from fudbench.models.energy import energy
    from fudbench.imputers.base import ImputeContext, compose

    finals, l2s, energies = [], [], []
    scored = "x0_hat"
    for start in range(0, len(x), batch_size):
        sl = slice(start, start + batch_size)
        xb, mb = x[sl], masks[sl]
        per_step = []

        def record(step, t, x_t, x0_hat=None):
            nonlocal scored
            if x0_hat is None:
                scored, est = "x_t", x_t
            else:
                est = x0_hat
            img = compose(xb, mb, ((est + 1) / 2).clamp(0, 1))
            with torch.no_grad():
                per_step.append(energy(model(img).float()).cpu())

        ctx = ImputeContext(classifier=model, target=y[sl], seeds=list(seeds[sl]))
        out, dist = imputer.sample(xb, mb, ctx, trace=True, callback=record)
        finals.append(out.cpu())
        l2s.append(dist)
        energies.append(torch.stack(per_step, 1))
    return torch.cat(finals), torch.cat(l2s).numpy(), torch.cat(energies).numpy(), scored


def diagnostics_frame(
    model_name: str, guidance_start: float, ratios, image_ids, timesteps, l2, energies, scored: str
) -> pd.DataFrame:
    """Long format: one row per (sample, step); step 0 is x_T (no energy),
    step k the state after the k-th denoising step (timestep timesteps[k-1])."""
    n_images, n_ratios = len(image_ids), len(ratios)
    n_steps = l2.shape[1]
    image = np.repeat(np.repeat(np.asarray(image_ids), n_ratios), n_steps)
    kept = np.tile(np.repeat(np.asarray(ratios, float), n_steps), n_images)
    step = np.tile(np.arange(n_steps), n_images * n_ratios)
    t = np.r_[np.nan, np.asarray(timesteps, float)][step]
    e = np.concatenate([np.full((len(energies), 1), np.nan), energies], axis=1).ravel()
    return pd.DataFrame(
        {
            "model": model_name,
            "guidance_start": guidance_start,
            "kept": kept,
            "image": image,
            "step": step,
            "t": t,
            "energy": e,
            "l2": l2.ravel(),
            "scored": scored,
        }
    )


def sample_seeds(seed_key: tuple, image_ids, ratios) -> list[int]:
    """Per-(image, ratio) seeds in the (image-major, ratio-minor) order of the
    pairs. Keyed by the ratio's value, so runs that differ only in a setting
    (switch point, constraint) start from the same noise."""
    return [derive_seed(*seed_key, int(i), f"{r:.6f}") for i in image_ids for r in ratios]


def auroc_by_step(frame: pd.DataFrame, clean_energy: pd.Series) -> pd.DataFrame:
    """Energy-detector AUROC (clean ID vs step estimates OOD) per
    (model, guidance_start, kept, step); clean_energy: the model's clean energies."""
    rows = []
    d = frame.dropna(subset=["energy"])
    for key, g in d.groupby(["guidance_start", "kept", "step", "t"], sort=True):
        rows.append(
            {
                **dict(zip(["guidance_start", "kept", "step", "t"], key)),
                "auroc": ood_metrics(clean_energy.to_numpy(), g["energy"].to_numpy())["auroc"],
            }
        )
    return pd.DataFrame(rows)


def final_l2(frame: pd.DataFrame) -> pd.DataFrame:
    """L2(x_0, x) per (guidance_start, kept): mean and std over images (Fig. 6)."""
    last = frame[frame["step"] == frame["step"].max()]
    return last.groupby(["guidance_start", "kept"])["l2"].agg(["mean", "std", "count"]).reset_index()
