"""What the robustness evaluators share: their settings, curve and cost (one module per metric beside)."""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.auc import mean_of
from fudbench.core.settings import Settings, setting
from fudbench.evaluators.base import NON_NEGATIVE, ROBUSTNESS, CurveSpec, EvaluatorSpec

# Quantus 0.6 draws 200 perturbations per image; each is an explainer call, so the default here is 10
# (a tenth of the cost of a 100-step IG map per image): the max over 10 draws is a lower estimate of the
# max over 200, the mean over 10 an unbiased but noisier one. Raise n_samples for the paper's numbers.
DEFAULT_SAMPLES = 10
# Their records' per-image value is not a pixel statistic: the norms cover every channel of the map
WHOLE_MAP = "none: the whole map as stored, every channel (a norm of its difference, Yeh et al.)"


@dataclass(frozen=True)
class PerturbationSettings(Settings):
    n_samples: int = setting(
        DEFAULT_SAMPLES, minimum=1, description="perturbed copies per image, each explained again (Quantus: 200)"
    )
    batch_size: int = setting(64, minimum=1, description="perturbed images per explainer call")


def robustness_curve(name: str, label: str, caption: str) -> list[CurveSpec]:
    return [
        CurveSpec(
            name,
            label,
            False,
            mean_of("value"),
            table="appendix_scores",
            value_range=NON_NEGATIVE,
            caption=caption,
        )
    ]


def perturbation_cost(settings: dict, evaluation: dict) -> dict:
    """Passes per image (fudbench.workflow.cost.Passes' fields): n_samples explainer calls on perturbed
    copies, one more to check that the explainer reproduces the stored map, one clean forward."""
    n = settings["n_samples"]
    return {"forwards": 1, "explains": n + 1, "note": f"{n} + 1 explains per explainer (perturbed copies, check)"}


def robustness_spec(module: str, doc: str, settings: type, label: str, caption: str) -> EvaluatorSpec:
    """The spec of a robustness evaluator named after its module (`module`: its __name__, whose `build`
    makes the protocol), with this category's curve, cost, reduction and quick settings."""
    name = module.rsplit(".", 1)[-1]
    return EvaluatorSpec(
        name,
        doc.splitlines()[0],
        settings,
        lambda resolved: robustness_curve(name, label, caption),
        f"{module}:build",
        reduction=WHOLE_MAP,
        quick={"n_samples": 2},
        cost=perturbation_cost,
        category=ROBUSTNESS,
        needs_explainer=True,
    )
