"""Energy-based OOD detection (Liu et al. 2020): E(x) = -T logsumexp(f(x) / T).

In-distribution inputs have lower energy. Scores use -E as the "in-distribution"
score, so AUROC = 0.5 means the detector cannot tell the two sets apart and
1.0 means it separates them perfectly. ood_metrics serves any score for which
larger = more OOD: the feature-based Mahalanobis and k-NN distances
(fudbench.analysis.feature_ood) go through it like energies.
"""

from __future__ import annotations

import numpy as np

# No module-level torch import: table jobs use ood_metrics without torch.


def energy(logits, temperature: float = 1.0):
    """Per row of a (N, classes) logits tensor."""
    return -temperature * (logits / temperature).logsumexp(dim=1)


def energies(model, images, batch_size: int = 256, temperature: float = 1.0) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = [
            energy(model(images[i : i + batch_size]).float(), temperature).cpu()
            for i in range(0, len(images), batch_size)
        ]
    return torch.cat(out).numpy()


def energies_and_features(model, images, batch_size: int = 256, temperature: float = 1.0, name: str = "model"):
    """(energies as `energies` computes them, penultimate features (N, D) float64
    from the same forward passes: fudbench.models.features.penultimate_features).
    Features are None, with a logged warning, when the model has none."""
    import logging

    import torch

    from fudbench.models.features import NoFeatures, penultimate_features

    try:
        logits, features = penultimate_features(model, images, batch_size, name)
    except NoFeatures as exc:
        logging.getLogger(__name__).warning("%s; its feature-based OOD scores are NaN", exc)
        return energies(model, images, batch_size, temperature), None
    return energy(torch.from_numpy(logits), temperature).numpy(), features


def ood_metrics(energy_in, energy_out) -> dict:
    """AUROC, FPR at 95% TPR, AUPR-In and AUPR-Out, in-distribution = positive."""
    from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

    e_in, e_out = np.asarray(energy_in, float), np.asarray(energy_out, float)
    labels = np.r_[np.ones(len(e_in)), np.zeros(len(e_out))]
    score = -np.r_[e_in, e_out]
    fpr, tpr, _ = roc_curve(labels, score)
    return {
        "auroc": float(roc_auc_score(labels, score)),
        "fpr95": float(fpr[np.searchsorted(tpr, 0.95, side="left")]),
        "aupr_in": float(average_precision_score(labels, score)),
        "aupr_out": float(average_precision_score(1 - labels, -score)),
    }
