"""`complexity`: Complexity (Bhatt et al. 2020), the entropy of the map's |per-pixel relevance| as a
distribution over the pixels.

Per image: H = -sum_i p_i log p_i, p = v / sum v, v = |the map reduced per pixel| (|map| summed over
channels), natural log. Lower is better (less complex), in [0, log d] for d pixels: a constant map
scores log d (the most complex), a one-hot map 0, a uniform random map about log d - 0.19 (log 2 - 1/2).
An all-zero map has no distribution: NaN, flagged degenerate. No hyperparameters (Quantus 0.6 computes
the same with scipy.stats.entropy). Protocol: fudbench.protocols.complexity.statistic.
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.auc import mean_of
from fudbench.core.settings import Settings, setting
from fudbench.evaluators.base import MAGNITUDES, COMPLEXITY, NON_NEGATIVE, CurveSpec, EvaluatorSpec


@dataclass(frozen=True)
class ComplexitySettings(Settings):
    batch_size: int = setting(64, minimum=1, description="clean images per classifier forward (the response columns)")


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "complexity",
            "Complexity (entropy)",
            False,
            mean_of("value"),
            table="appendix_scores",
            value_range=NON_NEGATIVE,
            caption="Complexity, the entropy of |map| over the pixels (lower: relevance on fewer pixels)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.complexity.statistic import MapStatistic

    return Evaluator("complexity", [(MapStatistic("complexity", "entropy", "abs_sum", settings["batch_size"]), None)])


def cost(settings: dict, evaluation: dict) -> dict:
    """Passes per image: one clean forward (the records' response columns); the entropy is a sum over the map."""
    return {"forwards": 1, "note": "1 forward per explainer (the entropy is a sum over the map)"}


SPEC = EvaluatorSpec(
    "complexity",
    __doc__.splitlines()[0],
    ComplexitySettings,
    curves,
    f"{__name__}:build",
    cost=cost,
    reduction=MAGNITUDES,
    category=COMPLEXITY,
)
