"""`rma`: Relevance Mass Accuracy (Arras et al. 2022), positive relevance inside the object mask.

Per image: the share of the map's positive relevance that lies inside the
image's ground-truth object mask, in [0, 1]; higher is better.

A localisation metric: it reads the images' ground-truth masks
(`needs_masks`), which the evaluate job takes from the eval npz (the synthetic
benchmark's object masks, a folder's `data.folder.masks`) and
`fudbench.evaluate` from its `masks=` argument; data without masks (ImageNet,
a folder without masks) is refused when the config is parsed, naming the
entry. Nothing is removed or filled, so no imputer and no score model; the
protocol is fudbench.protocols.localisation.rma. The per-pixel relevance is its own
`reduction` (default `sum`: the signed sum over channels, Arras et al.'s pixel
relevance, of which the positive part counts; `abs_sum` counts negative
relevance as mass too). A uniform map scores the mask's share of the pixels,
so read it against `random` (about that share); the ground-truth `oracle`
scores 1 by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fudbench.core.auc import mean_of
from fudbench.evaluators.base import LOCALISATION, OWN_SETTING, CurveSpec, EvaluatorSpec
from fudbench.core.settings import Settings, setting


@dataclass(frozen=True)
class RMASettings(Settings):
    reduction: Literal["abs_sum", "sum", "max_abs", "l2"] = setting(
        "sum", description="per-pixel relevance before its positive part is summed (sum = signed, Arras et al.)"
    )
    batch_size: int = setting(
        64, minimum=1, description="clean images per classifier forward (the records' confidence columns)"
    )


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "rma",
            "RMA",
            True,
            mean_of("mass_inside"),
            table="appendix_scores",
            value_range=(0.0, 1.0),
            caption="Relevance Mass Accuracy (share of the positive relevance inside the object mask, higher better)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.localisation.rma import RelevanceMass

    return Evaluator("rma", [(RelevanceMass(reduction=settings["reduction"], batch_size=settings["batch_size"]), None)])


def cost(settings: dict, evaluation: dict) -> dict:
    """Its passes per image for the estimate before a run (fudbench.workflow.cost.Passes' fields): one clean forward
    per image and explainer (the records' response columns); the mass itself is a sum over the mask."""
    return {"forwards": 1, "note": "1 forward per explainer (the mass is a sum over the mask)"}


SPEC = EvaluatorSpec(
    "rma",
    __doc__.splitlines()[0],
    RMASettings,
    curves,
    f"{__name__}:build",
    reduction=OWN_SETTING,
    needs_masks=True,
    cost=cost,
    category=LOCALISATION,
)
