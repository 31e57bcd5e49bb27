"""`mprt`: model-parameter randomisation (Adebayo et al. 2018), cascading from the top layer: how alike
the map stays as the model's layers are re-initialised one by one.

Per image and cascade step k (the top k parameterised layers re-initialised, seeded from the run's seed
and the model, never the explainer: every explainer faces the same randomised models), the explainer is
run again on the randomised model, and its |map| compared with the original |map| (|map| summed over
channels): curve `mprt` by Spearman rank correlation, `mprt_ssim` by SSIM. The per-image score is the mean
similarity over the cascade (Quantus' return_average_correlation). Lower is better, in [-1, 1]: a map
computed from the model decorrelates; a map that ignores the model (constant, edge detector) and the
`random` control (same seeds, same map) score 1 and fail the check. Layers: modules holding parameters of
their own, in model.modules() order, counted from the output end (explainers.controlled.parameterised_layers;
Quantus counts modules with reset_parameters: the same 13 on the shipped CNN and 41 on resnet18, but 32 vs
31 on the shipped ViT and 77 vs 63 on vit_b_16, whose attention and norm modules count apart).
`max_layers` stops the cascade after the top layers (cost: one explain per layer and image).
Protocol: fudbench.protocols.randomisation.model_parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from fudbench.core.auc import mean_of
from fudbench.core.settings import Settings, setting
from fudbench.evaluators.base import MAGNITUDES, CORRELATION, RANDOMISATION, CurveSpec, EvaluatorSpec

# The cost estimate's layer count when max_layers is not set (the shipped synthetic CNN has about this many)
GUESSED_LAYERS = 10


@dataclass(frozen=True)
class MPRTSettings(Settings):
    max_layers: Optional[int] = setting(
        None, minimum=1, description="the top layers randomised, one more per step (null: every layer)"
    )
    batch_size: int = setting(64, minimum=1, description="images per explainer call")


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            name,
            label,
            False,
            mean_of("similarity"),
            table="appendix_scores",
            value_range=CORRELATION,
            caption=f"model-parameter randomisation, {what} of the map to the randomised models' (lower better)",
        )
        for name, label, what in (
            ("mprt", "MPRT (Spearman)", "mean Spearman correlation"),
            ("mprt_ssim", "MPRT (SSIM)", "mean SSIM"),
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.randomisation.model_parameter import ModelParameterRandomisation

    protocol = ModelParameterRandomisation("mprt", settings["max_layers"], "abs_sum", settings["batch_size"])
    return Evaluator("mprt", [(protocol, None)])


def cost(settings: dict, evaluation: dict) -> dict:
    """Passes per image: one explain per randomised layer (max_layers, or a guess of GUESSED_LAYERS), one to
    check the explainer reproduces the map, one clean forward."""
    layers = settings["max_layers"] or GUESSED_LAYERS
    guess = (
        "" if settings["max_layers"] else f" (the model's layer count is not known before the run: {layers} guessed)"
    )
    return {"forwards": 1, "explains": layers + 1, "note": f"{layers} + 1 explains per explainer{guess}"}


SPEC = EvaluatorSpec(
    "mprt",
    __doc__.splitlines()[0],
    MPRTSettings,
    curves,
    f"{__name__}:build",
    quick={"max_layers": 2},
    cost=cost,
    reduction=MAGNITUDES,
    category=RANDOMISATION,
    needs_explainer=True,
)
