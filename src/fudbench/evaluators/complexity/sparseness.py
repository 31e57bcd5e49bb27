"""`sparseness`: Sparseness (Chalasani et al. 2020), the Gini index of the map's |per-pixel relevance|.

Per image: G = sum_i (2i - d - 1) v_(i) / (d sum_i v_i), v = |the map reduced per pixel| (|map| summed over
channels) sorted ascending, d pixels. Higher is better (sparser), in [0, 1): a constant map scores 0
(maximally non-sparse), a one-hot map (d - 1) / d, a uniform random map about 1/3. An all-zero map has no
distribution: NaN, flagged degenerate. No hyperparameters (Quantus 0.6 adds 1e-7 to every value, which
moves G by ~1e-7 / mean|v|). Protocol: fudbench.protocols.complexity.statistic.
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.auc import mean_of
from fudbench.core.settings import Settings, setting
from fudbench.evaluators.base import MAGNITUDES, COMPLEXITY, CurveSpec, EvaluatorSpec


@dataclass(frozen=True)
class SparsenessSettings(Settings):
    batch_size: int = setting(64, minimum=1, description="clean images per classifier forward (the response columns)")


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "sparseness",
            "Sparseness (Gini)",
            True,
            mean_of("value"),
            table="appendix_scores",
            value_range=(0.0, 1.0),
            caption="Sparseness, the Gini index of |map| (higher: relevance on fewer pixels)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.complexity.statistic import MapStatistic

    return Evaluator("sparseness", [(MapStatistic("sparseness", "gini", "abs_sum", settings["batch_size"]), None)])


def cost(settings: dict, evaluation: dict) -> dict:
    """Passes per image: one clean forward (the records' response columns); the index is a sort of the map."""
    return {"forwards": 1, "note": "1 forward per explainer (the Gini index is a sort of the map)"}


SPEC = EvaluatorSpec(
    "sparseness",
    __doc__.splitlines()[0],
    SparsenessSettings,
    curves,
    f"{__name__}:build",
    cost=cost,
    reduction=MAGNITUDES,
    category=COMPLEXITY,
)
