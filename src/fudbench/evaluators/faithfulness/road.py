"""`road`: ROAD (Rong et al. 2022), MoRF and LeRF at p = the removal fractions
1 - rho, with the configured imputer (ROAD: noisy linear, fudbench.protocols.faithfulness.road).

Scores: area under p(original prediction) over the removed fraction, MoRF
lower and LeRF higher is better; and the same areas of the accuracy
1[prediction == original prediction] (road_<order>_accuracy). MoRF keeps its
intermediate samples (Tables 9 and 11).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from fudbench.core.auc import auc_removed, normalised_auc
from fudbench.evaluators.base import APPENDIX_SAMPLES, PROBABILITY_AREA, CurveSpec, EvaluatorSpec
from fudbench.evaluators.imputing import IMPUTER_OPTIONS_SCHEMA, SingleFillSettings
from fudbench.core.settings import setting

ORDERS = {"morf": ("ROAD MoRF", False), "lerf": ("ROAD LeRF", True)}


@dataclass(frozen=True)
class ROADSettings(SingleFillSettings):
    FILL_KEY: ClassVar[str] = "imputer"
    imputer: str = setting("noisy_linear", description="imputer name or alias (ROAD: noisy_linear)")
    imputer_options: dict = setting(default_factory=dict, schema=IMPUTER_OPTIONS_SCHEMA)
    orders: list[Literal["morf", "lerf"]] = setting(
        default_factory=lambda: ["morf", "lerf"], minItems=1, uniqueItems=True
    )
    jitter: float = setting(
        1e-4, minimum=0, description="std of the fixed tie-break noise added to the normalised attribution (ROAD: 1e-4)"
    )
    batch_size: int = setting(64, minimum=1)


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            f"road_{order}",
            ORDERS[order][0],
            ORDERS[order][1],
            auc_removed,
            table="road_scores",
            keeps_samples=order == "morf",
            samples_label="ROAD" if order == "morf" else None,
            samples_tables=(APPENDIX_SAMPLES,) if order == "morf" else (),
            auc_over_ratios=True,
            value_range=PROBABILITY_AREA,
        )
        for order in ORDERS
        if order in settings["orders"]
    ]


def accuracy_curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            f"road_{order}_accuracy",
            f"{ORDERS[order][0]} acc.",
            ORDERS[order][1],
            table="road_scores",
            value_range=PROBABILITY_AREA,
        )
        for order in ORDERS
        if order in settings["orders"]
    ]


def accuracy_name(curve: str) -> str:
    """road_morf -> road_morf_accuracy, road_morf@entry -> road_morf_accuracy@entry."""
    base, sep, entry = curve.partition("@")
    return f"{base}_accuracy{sep}{entry}"


def road_accuracy(records):
    """Per (model, explainer, image): AUC of ROAD's accuracy over the removed
    fraction, curves road_morf_accuracy / road_lerf_accuracy (per_image format)."""
    import pandas as pd

    cols = ["model", "explainer", "curve", "image", "score"]
    d = records[records["curve"].str.match(r"^road_(morf|lerf)(@.+)?$")]
    rows = [
        {
            "model": m,
            "explainer": e,
            "curve": accuracy_name(c),
            "image": i,
            "score": normalised_auc(g["removed"], g["accuracy"]),
        }
        for (m, e, c, i), g in d.groupby(["model", "explainer", "curve", "image"], sort=True)
    ]
    return pd.DataFrame(rows, columns=cols)


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator, removal_fractions
    from fudbench.protocols.faithfulness.road import ROAD

    imputer = ROADSettings.build_fill(settings, assets, device)
    fractions = removal_fractions(evaluation["ratios"])
    return Evaluator(
        "road",
        [
            (
                ROAD(
                    fractions,
                    order=order,
                    jitter=settings["jitter"],
                    batch_size=settings["batch_size"],
                    keep_samples=order == "morf",
                ),
                imputer,
            )
            for order in settings["orders"]
        ],
    )


SPEC = EvaluatorSpec(
    "road",
    "ROAD (Rong 2022) MoRF / LeRF at p = 1 - rho",
    ROADSettings,
    curves,
    f"{__name__}:build",
    assets=ROADSettings.assets,
    derived=lambda records, per_image: road_accuracy(records),
    derived_curves=accuracy_curves,
    reduction="signed sum over channels (its MoRF / LeRF order)",
)
