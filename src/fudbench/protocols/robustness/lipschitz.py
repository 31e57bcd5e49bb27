"""Local Lipschitz Estimate (Alvarez-Melis & Jaakkola 2018, "On the robustness of interpretability methods").

    LLE(x) = max_k || Phi(x) - Phi(x + e_k) ||_2 / || e_k ||_2,   e_k ~ N(0, sigma^2 I)

Phi: the stored map, Phi(x + e_k) the explainer run again on the k-th Gaussian-perturbed copy (Quantus'
`gaussian_noise`, perturb_std sigma), with the image's target and seeds. The paper maximises over a ball
by optimisation; sampling, as Quantus does, gives a lower bound of that maximum. Lower is more robust; 0
for a map that does not move. Unlike Sensitivity it is not relative: it scales with the map's units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from fudbench.protocols.robustness.perturbed import PerturbedExplanations, flat_norm

# Quantus' lipschitz_constant adds this to the input distance (a zero perturbation divides by ~0)
DISTANCE_EPS = 1e-10


@dataclass
class LocalLipschitz(PerturbedExplanations):
    curve: str = "local_lipschitz"
    std: float = 0.1  # sigma: Quantus 0.6's perturb_std default
    noise_family: ClassVar[str] = "gaussian"

    def noise(self, shape, generator):
        return torch.randn(shape, generator=generator) * self.std

    def ratio(self, a, a_p, x, x_p):
        return flat_norm(a - a_p) / (flat_norm(x - x_p) + DISTANCE_EPS)
