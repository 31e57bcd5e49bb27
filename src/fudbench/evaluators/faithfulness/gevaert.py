"""`gevaert`: attribench-style deletion (at 1 - rho, gevaert_del__<fill>, lower
is better) and insertion (at rho, gevaert_ins__<fill>, higher is better) of
Gevaert et al. 2024, with attribench's maskers as fills. The fills are
imputer names; `constant` and `noise` are aliases defined in imputer_options:
0 and N(0, 1) in the classifier's normalised input space, as attribench
applies them to normalised images (for [0, 1] space: constant: {method:
zero}, noise: {method: gaussian, std: 1.0, mean: 0.0})."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fudbench.core.auc import auc_kept, auc_removed
from fudbench.evaluators.base import APPENDIX_SAMPLES, PROBABILITY_AREA, CurveSpec, EvaluatorSpec
from fudbench.evaluators.imputing import (
    IMPUTER_OPTIONS_SCHEMA,
    FillSettings,
    build_imputers,
    deterministic_fill,
    imputer_assets,
)
from fudbench.core.settings import setting

DEFAULT_FILL_OPTIONS = {
    "constant": {"method": "classifier_mean"},
    "noise": {"method": "gaussian", "std": 1.0, "mean": 0.0, "model_space": True},
    "box_blur": {"fraction": 0.5},
}


@dataclass(frozen=True)
class GevaertSettings(FillSettings):
    DEFAULT_OPTIONS: ClassVar[dict] = DEFAULT_FILL_OPTIONS

    fills: list[str] = setting(
        default_factory=lambda: ["constant", "noise", "box_blur"],
        minItems=1,
        uniqueItems=True,
        description="imputer names or aliases (constant, noise: attribench's maskers in the model's space)",
    )
    imputer_options: dict = setting(
        default_factory=dict,
        schema=IMPUTER_OPTIONS_SCHEMA,
        description="per-fill options over attribench's (box_blur fraction 0.5)",
    )
    insertion: bool = setting(True, description="also the insertion curves")
    batch_size: int = setting(64, minimum=1)


def curves(settings: dict) -> list[CurveSpec]:
    out = []
    for fill in settings["fills"]:
        common = {
            "table": "appendix_scores",
            "auc_over_ratios": True,
            "value_range": PROBABILITY_AREA,
            "ranking_only": deterministic_fill(settings, fill, DEFAULT_FILL_OPTIONS),
        }
        out.append(
            CurveSpec(
                f"gevaert_del__{fill}",
                f"Gevaert del. {fill}",
                False,
                auc_removed,
                keeps_samples=True,
                samples_label="Gevaert",
                samples_tables=(APPENDIX_SAMPLES,),
                **common,
                caption="Gevaert et al. deletion (area under confidence over the removed fraction, lower better)",
            )
        )
        if settings["insertion"]:
            out.append(
                CurveSpec(
                    f"gevaert_ins__{fill}",
                    f"Gevaert ins. {fill}",
                    True,
                    auc_kept,
                    **common,
                    caption="Gevaert et al. insertion (area under confidence over the kept fraction, higher better)",
                )
            )
    return out


def catalogue_variants() -> list[dict]:
    return [{"fills": ["constant", "noise", "box_blur", "sample_average"]}]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator, removal_fractions
    from fudbench.protocols import TopKCurve

    settings = GevaertSettings.resolved(settings)
    common = {"batch_size": settings["batch_size"], "reduction": evaluation["reduction"]}
    pairs = []
    for fill, imputer in zip(settings["fills"], build_imputers(settings, settings["fills"], assets, device)):
        pairs.append(
            (
                TopKCurve(
                    f"gevaert_del__{fill}",
                    removal_fractions(evaluation["ratios"]),
                    mode="remove",
                    keep_samples=True,
                    **common,
                ),
                imputer,
            )
        )
        if settings["insertion"]:
            pairs.append(
                (TopKCurve(f"gevaert_ins__{fill}", list(evaluation["ratios"]), mode="keep", **common), imputer)
            )
    return Evaluator("gevaert", pairs)


SPEC = EvaluatorSpec(
    "gevaert",
    "attribench-style deletion (1 - rho) and insertion (rho) (Gevaert 2024)",
    GevaertSettings,
    curves,
    f"{__name__}:build",
    assets=lambda s: imputer_assets(GevaertSettings.resolved(s), s["fills"]),
    catalogue_variants=catalogue_variants,
)
