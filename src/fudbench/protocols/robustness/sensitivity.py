"""Max- and Avg-Sensitivity (Yeh et al. 2019, "On the (in)fidelity and sensitivity of explanations").

    SENS(x) = max_k (or mean_k) || Phi(x) - Phi(x + u_k) ||_F / || Phi(x) ||_F,   u_k ~ U[-r, r]^d

Phi: the stored map of the image (as the explainer gives it, every channel), Phi(x + u_k) the explainer
run again on the k-th uniformly perturbed copy (an L_inf ball of radius r, Quantus' `uniform_noise` with
`lower_bound` r), with the image's target and seeds. Lower is more robust; 0 for a map that does not
move. A map that is zero everywhere has no relative change: NaN, flagged `degenerate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from fudbench.protocols.robustness.perturbed import PerturbedExplanations, flat_norm


@dataclass
class Sensitivity(PerturbedExplanations):
    curve: str = "max_sensitivity"
    radius: float = 0.2  # r: Quantus 0.6's lower_bound default
    noise_family: ClassVar[str] = "uniform_ball"  # Max and Avg draw the same copies

    def noise(self, shape, generator):
        return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1).float() * self.radius

    def ratio(self, a, a_p, x, x_p):
        norm = flat_norm(a)
        return torch.where(norm > 0, flat_norm(a - a_p) / norm.clamp(min=1e-300), torch.nan)
