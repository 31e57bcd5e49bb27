"""The score model's quality gate.

Score model: draw unconditional DDIM samples (the FUD sampler with nothing
kept and no guidance) and measure, under each classifier, how well the
energy score separates them from real test images. AUROC near 0.5 means the
classifier cannot tell the samples from real data (good); near 1.0 means the
samples are obviously out of distribution.
"""

from __future__ import annotations

import numpy as np
import torch

from fudbench.models.energy import energies, ood_metrics
from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion import fud_sampler
from fudbench.core.seeding import derive_seed


def unconditional_samples(
    unet,
    schedule: dict,
    n: int,
    image_size: int,
    steps: int,
    seed: int,
    device="cpu",
    batch_size: int = 64,
    amp_dtype=None,
    channels_last: bool = False,
) -> torch.Tensor:
    """n DDIM samples of the score model (FUD's sampler with nothing kept and no
    guidance), in the precision and layout FUD runs it in."""
    sampler = fud_sampler(
        unet, schedule, {"steps": steps, "guidance_scale": 0.0, "amp_dtype": amp_dtype, "channels_last": channels_last}
    )
    out = []
    for start in range(0, n, batch_size):
        b = min(batch_size, n - start)
        x = torch.zeros(b, 3, image_size, image_size, device=device)
        nothing_kept = torch.zeros(b, 1, image_size, image_size, device=device)
        seeds = [derive_seed(seed, "unconditional", start + i) for i in range(b)]
        out.append(sampler.fill(x, nothing_kept, ImputeContext(seeds=seeds)).cpu())
    return torch.cat(out)


def score_model_report(samples: torch.Tensor, real: torch.Tensor, classifiers: dict, class_names) -> dict:
    report = {"n_samples": len(samples), "n_real": len(real), "classifiers": {}}
    for name, model in classifiers.items():
        device = next(model.parameters()).device
        e_real = energies(model, real.to(device))
        e_fake = energies(model, samples.to(device))
        with torch.no_grad():
            probs = torch.softmax(model(samples.to(device)), 1).cpu()
        counts = np.bincount(probs.argmax(1).numpy(), minlength=len(class_names))
        report["classifiers"][name] = {
            **ood_metrics(e_real, e_fake),
            "mean_energy_real": float(e_real.mean()),
            "mean_energy_samples": float(e_fake.mean()),
            "mean_max_softmax_samples": float(probs.max(1).values.mean()),
            "predicted_classes_of_samples": dict(zip(class_names, counts.tolist())),
        }
    return report
