"""`random_logit`: random logit test (Sixt et al. 2020): how alike the map for a random other class is to
the map for the image's target.

Per image a class other than the target is drawn (seeded by the run's seed and the image id, never the
explainer: every explainer explains the same other class), the explainer is run again for it, and the two
maps (the evaluation's reduction) compared by SSIM (Quantus 0.6's RandomLogit default). Lower is better, in
[-1, 1]: a class-sensitive map changes; a map that ignores the class (constant, edge detector, input x
gradient of a model whose classes share features) and the `random` control (same seeds, same map) score 1
and fail the check. Protocol: fudbench.protocols.randomisation.random_logit.
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.auc import mean_of
from fudbench.core.settings import Settings, setting
from fudbench.evaluators.base import CORRELATION, RANDOMISATION, CurveSpec, EvaluatorSpec


@dataclass(frozen=True)
class RandomLogitSettings(Settings):
    batch_size: int = setting(64, minimum=1, description="images per explainer call")


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "random_logit",
            "Random logit (SSIM)",
            False,
            mean_of("similarity"),
            table="appendix_scores",
            value_range=CORRELATION,
            caption="random logit, SSIM of the map for a random other class to the target's map (lower better)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.randomisation.random_logit import RandomLogit

    return Evaluator(
        "random_logit", [(RandomLogit("random_logit", evaluation["reduction"], settings["batch_size"]), None)]
    )


def cost(settings: dict, evaluation: dict) -> dict:
    """Passes per image: one explain for the other class, one to check the explainer reproduces the map,
    one clean forward."""
    return {"forwards": 1, "explains": 2, "note": "2 explains per explainer (the other class, the check)"}


SPEC = EvaluatorSpec(
    "random_logit",
    __doc__.splitlines()[0],
    RandomLogitSettings,
    curves,
    f"{__name__}:build",
    cost=cost,
    category=RANDOMISATION,
    needs_explainer=True,
)
