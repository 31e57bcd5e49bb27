"""`distill`: deletion at the removal fractions 1 - rho with the Distill
baselines (Sturmfels et al. 2020) as fills: ordinary imputer names (blur,
uniform, gaussian around the image, max_distance), one curve distill__<fill>
each; area under confidence over the removed fraction, lower is better."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fudbench.core.auc import auc_removed
from fudbench.evaluators.base import APPENDIX_SAMPLES, PROBABILITY_AREA, CurveSpec, EvaluatorSpec
from fudbench.evaluators.imputing import (
    IMPUTER_OPTIONS_SCHEMA,
    FillSettings,
    build_imputers,
    deterministic_fill,
    imputer_assets,
)
from fudbench.core.settings import setting

# Sturmfels et al.'s settings of the fills; a config's imputer_options update them per imputer.
DEFAULT_FILL_OPTIONS = {"blur": {"kernel_size": 11, "sigma": 5.0}, "gaussian": {"std": 0.5, "around_image": True}}


@dataclass(frozen=True)
class DistillSettings(FillSettings):
    DEFAULT_OPTIONS: ClassVar[dict] = DEFAULT_FILL_OPTIONS

    fills: list[str] = setting(
        default_factory=lambda: ["blur", "uniform", "gaussian", "max_distance"],
        minItems=1,
        uniqueItems=True,
        description="imputer names (or aliases in imputer_options)",
    )
    imputer_options: dict = setting(
        default_factory=dict,
        schema=IMPUTER_OPTIONS_SCHEMA,
        description="per-fill options over Distill's (blur 11 / 5.0, gaussian std 0.5 around the image)",
    )
    batch_size: int = setting(64, minimum=1)


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            f"distill__{fill}",
            f"Distill {fill}",
            False,
            auc_removed,
            table="appendix_scores",
            keeps_samples=True,
            samples_label="Distill",
            samples_tables=(APPENDIX_SAMPLES,),
            auc_over_ratios=True,
            value_range=PROBABILITY_AREA,
            ranking_only=deterministic_fill(settings, fill, DEFAULT_FILL_OPTIONS),
            caption="Distill baselines (deletion: area under confidence over the removed fraction, lower better)",
        )
        for fill in settings["fills"]
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator, removal_fractions
    from fudbench.protocols import TopKCurve

    settings = DistillSettings.resolved(settings)
    fractions = removal_fractions(evaluation["ratios"])
    imputers = build_imputers(settings, settings["fills"], assets, device)
    return Evaluator(
        "distill",
        [
            (
                TopKCurve(
                    f"distill__{fill}",
                    fractions,
                    mode="remove",
                    batch_size=settings["batch_size"],
                    reduction=evaluation["reduction"],
                    keep_samples=True,
                ),
                imputer,
            )
            for fill, imputer in zip(settings["fills"], imputers)
        ],
    )


SPEC = EvaluatorSpec(
    "distill",
    __doc__.splitlines()[0],
    DistillSettings,
    curves,
    f"{__name__}:build",
    assets=lambda s: imputer_assets(DistillSettings.resolved(s), s["fills"]),
)
