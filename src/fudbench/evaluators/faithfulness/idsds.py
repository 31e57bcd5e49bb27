"""`idsds`: IDSDS single deletion of grid cells (Hesse et al. 2024), without the
in-domain fine-tuning (fudbench.protocols.faithfulness.idsds). Score: the image's Spearman
correlation of cell attribution and output drop; higher is better."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from fudbench.evaluators.base import APPENDIX_SAMPLES, CurveSpec, EvaluatorSpec
from fudbench.evaluators.imputing import IMPUTER_OPTIONS_SCHEMA, SingleFillSettings
from fudbench.core.settings import setting


@dataclass(frozen=True)
class IDSDSSettings(SingleFillSettings):
    FILL_KEY: ClassVar[str] = "fill"
    grid: int = setting(4, minimum=1, description="cells per side (Hesse: 4)")
    output: Literal["logit", "probability"] = setting(
        "logit", description="model output whose drop is correlated (reference code: logit)"
    )
    fill: str = setting(
        "zero",
        description="imputer name or alias; zero = black, mean without options = 0 in "
        "the model's normalised space (Hesse's zeros)",
    )
    imputer_options: dict = setting(default_factory=dict, schema=IMPUTER_OPTIONS_SCHEMA)
    batch_size: int = setting(64, minimum=1)


def first_correlation(g) -> float:
    return float(g["correlation"].iloc[0])


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "idsds",
            "IDSDS",
            True,
            first_correlation,
            table="appendix_scores",
            keeps_samples=True,
            samples_label="IDSDS",
            samples_tables=(APPENDIX_SAMPLES,),
            caption="IDSDS (Spearman correlation of cell attribution and output drop, higher better)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.faithfulness.idsds import IDSDS

    imputer = IDSDSSettings.build_fill(settings, assets, device)
    protocol = IDSDS(
        grid=settings["grid"], output=settings["output"], batch_size=settings["batch_size"], keep_samples=True
    )
    return Evaluator("idsds", [(protocol, imputer)])


SPEC = EvaluatorSpec(
    "idsds",
    __doc__.splitlines()[0],
    IDSDSSettings,
    curves,
    f"{__name__}:build",
    assets=IDSDSSettings.assets,
    quick={"grid": 2},
    reduction="signed sum over channels and cell pixels (Hesse et al.)",
)
