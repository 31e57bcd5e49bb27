"""`avg_sensitivity`: Avg-Sensitivity (Yeh et al. 2019), the mean relative change of the map over
uniform perturbations of the input in an L_inf ball of radius r.

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
from fudbench.evaluators.base import ROBUSTNESS, EvaluatorSpec
from fudbench.evaluators.robustness.common import (
    WHOLE_MAP,
    PerturbationSettings,
    perturbation_cost,
    robustness_curve,
)


@dataclass(frozen=True)
class AvgSensitivitySettings(PerturbationSettings):
    radius: float = setting(0.2, minimum=0.0, description="L_inf radius r of the uniform noise (Quantus: 0.2)")


def curves(settings: dict):
    return robustness_curve(
        "avg_sensitivity",
        "Avg-Sensitivity",
        "Avg-Sensitivity (mean relative change of the map under input noise, lower better)",
    )


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.robustness.sensitivity import Sensitivity

    protocol = Sensitivity(
        "avg_sensitivity", settings["n_samples"], settings["batch_size"], "mean", radius=settings["radius"]
    )
    return Evaluator("avg_sensitivity", [(protocol, None)])


SPEC = EvaluatorSpec(
    "avg_sensitivity",
    __doc__.splitlines()[0],
    AvgSensitivitySettings,
    curves,
    f"{__name__}:build",
    reduction=WHOLE_MAP,
    quick={"n_samples": 2},
    cost=perturbation_cost,
    category=ROBUSTNESS,
    needs_explainer=True,
)
