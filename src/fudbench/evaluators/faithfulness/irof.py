"""`irof`: IROF (Rieger & Hansen 2020): SLIC superpixels removed in order of mean
attribution, filled with the image's mean (fudbench.protocols.faithfulness.irof). Score: the
area over the curve of p(target) / p(target | clean), higher is better."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fudbench.core.auc import normalised_auc
from fudbench.evaluators.base import APPENDIX_SAMPLES, CurveSpec, EvaluatorSpec
from fudbench.evaluators.imputing import IMPUTER_OPTIONS_SCHEMA, SingleFillSettings, deterministic_fill
from fudbench.core.settings import setting


@dataclass(frozen=True)
class IROFSettings(SingleFillSettings):
    FILL_KEY: ClassVar[str] = "fill"
    n_segments: int = setting(16, minimum=2, description="SLIC's target number of superpixels per image")
    compactness: float = setting(10.0, exclusiveMinimum=0, description="SLIC compactness")
    fill: str = setting("image_mean", description="imputer name or alias (IROF: the image's mean per channel)")
    imputer_options: dict = setting(default_factory=dict, schema=IMPUTER_OPTIONS_SCHEMA)
    batch_size: int = setting(64, minimum=1)


def area_over_curve(g) -> float:
    """Per image: 1 - the area under p(target) / p(target | clean) over the
    fraction of superpixels removed (0 at step 0, 1 when all are gone). The
    ratio can exceed 1 (a removal that raises the probability), so the score
    has no lower bound; 1 means the probability fell to 0 at once."""
    clean = max(float(g.loc[g["step"].idxmin(), "confidence"]), 1e-12)
    return 1.0 - normalised_auc(g["region_fraction"], g["confidence"] / clean)  # x spans [0, 1]


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "irof",
            "IROF",
            True,
            area_over_curve,
            table="appendix_scores",
            keeps_samples=True,
            samples_label="IROF",
            samples_tables=(APPENDIX_SAMPLES,),
            value_range=(-np.inf, 1.0),
            ranking_only=deterministic_fill(settings, settings["fill"]),
            caption="IROF (area over the normalised-probability curve as superpixels are removed, higher better)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.faithfulness.irof import IROF

    protocol = IROF(
        n_segments=settings["n_segments"],
        compactness=settings["compactness"],
        reduction=evaluation["reduction"],
        batch_size=settings["batch_size"],
        keep_samples=True,
    )
    return Evaluator("irof", [(protocol, IROFSettings.build_fill(settings, assets, device))])


SPEC = EvaluatorSpec(
    "irof",
    __doc__.splitlines()[0],
    IROFSettings,
    curves,
    f"{__name__}:build",
    assets=IROFSettings.assets,
    quick={"n_segments": 6},
)
