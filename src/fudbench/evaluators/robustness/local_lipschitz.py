"""`local_lipschitz`: Local Lipschitz Estimate (Alvarez-Melis & Jaakkola 2018), the largest change of the
map per unit change of the input over Gaussian perturbations.

    score(x) = max_k ||Phi(x) - Phi(x + e_k)||_2 / ||e_k||_2,  e_k ~ N(0, sigma^2 I), k = 1..n_samples

Lower is better (more robust), in [0, inf); not relative: it scales with the map's units, so compare
explainers whose maps share a scale, or read ranks. A constant map and the `random` control (seeds fixed
per image) score 0, the trivial winners. Hyperparameters: sigma 0.1 (Quantus 0.6's perturb_std),
n_samples 10 (Quantus: 200; robustness.common.DEFAULT_SAMPLES). The paper maximises by optimisation;
sampling, as Quantus does, bounds it from below. Protocol: fudbench.protocols.robustness.lipschitz.
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.settings import setting
from fudbench.evaluators.robustness.common import PerturbationSettings, robustness_spec


@dataclass(frozen=True)
class LocalLipschitzSettings(PerturbationSettings):
    std: float = setting(0.1, minimum=0.0, description="sigma of the Gaussian input noise (Quantus: 0.1)")


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.robustness.lipschitz import LocalLipschitz

    protocol = LocalLipschitz(
        "local_lipschitz", settings["n_samples"], settings["batch_size"], "max", std=settings["std"]
    )
    return Evaluator("local_lipschitz", [(protocol, None)])


SPEC = robustness_spec(
    __name__,
    __doc__,
    LocalLipschitzSettings,
    "Local Lipschitz",
    "Local Lipschitz Estimate (largest map change per unit input change, lower better)",
)
