"""`max_sensitivity`: Max-Sensitivity (Yeh et al. 2019) in Quantus' relative form (the change divided by
the map's own norm, Quantus' norm_denominator), the largest change of the map over uniform perturbations
of the input in an L_inf ball of radius r.

    score(x) = max_k ||Phi(x) - Phi(x + u_k)||_F / ||Phi(x)||_F,  u_k ~ U[-r, r]^d, k = 1..n_samples

Lower is better (more robust), in [0, inf). A constant map and the `random` control (its seeds fixed per
image) score 0: robust by ignoring the input, the trivial winners. An all-zero map has no relative
change: NaN, flagged degenerate. Hyperparameters: radius 0.2 (Quantus 0.6's lower_bound), n_samples 10
(Quantus: 200; robustness.common.DEFAULT_SAMPLES says why). The explainer is run again
(needs_explainer); protocol: fudbench.protocols.robustness.sensitivity.
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.settings import setting
from fudbench.evaluators.robustness.common import PerturbationSettings, robustness_spec


@dataclass(frozen=True)
class MaxSensitivitySettings(PerturbationSettings):
    radius: float = setting(0.2, minimum=0.0, description="L_inf radius r of the uniform noise (Quantus: 0.2)")


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.robustness.sensitivity import Sensitivity

    protocol = Sensitivity(
        "max_sensitivity", settings["n_samples"], settings["batch_size"], "max", radius=settings["radius"]
    )
    return Evaluator("max_sensitivity", [(protocol, None)])


SPEC = robustness_spec(
    __name__,
    __doc__,
    MaxSensitivitySettings,
    "Max-Sensitivity",
    "Max-Sensitivity (largest relative change of the map under input noise, lower better)",
)
