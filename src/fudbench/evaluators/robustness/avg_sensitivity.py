"""`avg_sensitivity`: Avg-Sensitivity (Yeh et al. 2019) in Quantus' relative form (the change divided by
the map's own norm), the mean change of the map over uniform perturbations of the input in an L_inf ball
of radius r (the same copies as max_sensitivity's: the maximum bounds the mean).

    score(x) = mean_k ||Phi(x) - Phi(x + u_k)||_F / ||Phi(x)||_F,  u_k ~ U[-r, r]^d, k = 1..n_samples

Lower is better (more robust), in [0, inf). A constant map and the `random` control (its seeds fixed per
image) score 0: robust by ignoring the input, the trivial winners. An all-zero map has no relative
change: NaN, flagged degenerate. Hyperparameters: radius 0.2 (Quantus 0.6's lower_bound), n_samples 10
(Quantus: 200; robustness.common.DEFAULT_SAMPLES says why; the mean over
10 draws is unbiased, noisier). The explainer is run again
(needs_explainer); protocol: fudbench.protocols.robustness.sensitivity.
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.settings import setting
from fudbench.evaluators.robustness.common import PerturbationSettings, robustness_spec


@dataclass(frozen=True)
class AvgSensitivitySettings(PerturbationSettings):
    radius: float = setting(0.2, minimum=0.0, description="L_inf radius r of the uniform noise (Quantus: 0.2)")


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.robustness.sensitivity import Sensitivity

    protocol = Sensitivity(
        "avg_sensitivity", settings["n_samples"], settings["batch_size"], "mean", radius=settings["radius"]
    )
    return Evaluator("avg_sensitivity", [(protocol, None)])


SPEC = robustness_spec(
    __name__,
    __doc__,
    AvgSensitivitySettings,
    "Avg-Sensitivity",
    "Avg-Sensitivity (mean relative change of the map under input noise, lower better)",
)
