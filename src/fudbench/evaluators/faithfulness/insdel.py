"""`insdel`: RISE deletion and insertion (Petsiuk et al. 2018).

Curves: `deletion` (zero fill, removed fractions 0, 1/n, ..., 1; lower is
better), `insertion` (kept fractions on a blurred substrate; higher is
better), and `deletion_ratios`: zero-fill deletion at the removal fractions
1 - rho, whose intermediate samples are compared with FUD's (Tables 2-4).
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.auc import auc_kept, auc_removed
from fudbench.evaluators.base import MAIN_SAMPLES, PROBABILITY_AREA, CurveSpec, EvaluatorSpec
from fudbench.core.settings import Settings, setting


@dataclass(frozen=True)
class InsDelSettings(Settings):
    n_steps: int = setting(32, minimum=2, description="RISE curve points - 1 (HW / n_steps pixels per step)")
    blur_kernel: int = setting(11, minimum=1, description="insertion substrate's Gaussian kernel (RISE)")
    blur_sigma: float = setting(5.0, exclusiveMinimum=0)
    batch_size: int = setting(256, minimum=1)


def curves(settings: dict) -> list[CurveSpec]:
    area = {"value_range": PROBABILITY_AREA, "ranking_only": True}  # zero / blur fills: deterministic
    return [
        CurveSpec("insertion", "Insertion", True, auc_kept, table="table7_scores", step_value="confidence", **area),
        CurveSpec("deletion", "Deletion", False, auc_removed, table="table7_scores", step_value="confidence", **area),
        CurveSpec(
            "deletion_ratios",
            "Deletion (1 - rho)",
            False,
            keeps_samples=True,
            samples_label="INS/DEL",
            samples_tables=(MAIN_SAMPLES,),
            tau=True,
            value_range=PROBABILITY_AREA,
        ),
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    import numpy as np

    from fudbench.evaluators.base import Evaluator, removal_fractions
    from fudbench.imputers import BlurImputer, ZeroImputer
    from fudbench.protocols import TopKCurve

    grid = np.linspace(0, 1, settings["n_steps"] + 1).tolist()
    common = {"batch_size": settings["batch_size"], "reduction": evaluation["reduction"]}
    zero = ZeroImputer()
    return Evaluator(
        "insdel",
        [
            (TopKCurve("deletion", grid, mode="remove", **common), zero),
            (
                TopKCurve("insertion", grid, mode="keep", **common),
                BlurImputer(settings["blur_kernel"], settings["blur_sigma"]),
            ),
            (
                TopKCurve(
                    "deletion_ratios",
                    removal_fractions(evaluation["ratios"]),
                    mode="remove",
                    keep_samples=True,
                    **common,
                ),
                zero,
            ),
        ],
    )


SPEC = EvaluatorSpec(
    "insdel",
    __doc__.splitlines()[0],
    InsDelSettings,
    curves,
    f"{__name__}:build",
    quick={"n_steps": 4, "blur_kernel": 5, "blur_sigma": 1.0},
)
