"""`sensn`: Sensitivity-N (Ancona et al. 2017) at the removal fractions 1 - rho,
zero fill (fudbench.protocols.faithfulness.sensitivity_n). Score: the image's Pearson
correlation averaged over n; higher is better."""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.auc import mean_of
from fudbench.evaluators.base import MAIN_SAMPLES, CurveSpec, EvaluatorSpec
from fudbench.core.settings import Settings, setting


@dataclass(frozen=True)
class SensNSettings(Settings):
    n_subsets: int = setting(100, minimum=2, description="random pixel subsets per image and n (Ancona: 100)")
    batch_size: int = setting(1024, minimum=1)


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "sensitivity_n",
            "Sen-N",
            True,
            mean_of("correlation"),
            table="table7_scores",
            keeps_samples=True,
            samples_label="Sen-N",
            samples_tables=(MAIN_SAMPLES,),
            step_value="correlation",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator, removal_fractions
    from fudbench.imputers import ZeroImputer
    from fudbench.protocols.faithfulness.sensitivity_n import SensitivityN

    protocol = SensitivityN(
        fractions=removal_fractions(evaluation["ratios"]),
        n_subsets=settings["n_subsets"],
        batch_size=settings["batch_size"],
        keep_samples=True,
    )
    return Evaluator("sensn", [(protocol, ZeroImputer())])


SPEC = EvaluatorSpec(
    "sensn",
    __doc__.splitlines()[0],
    SensNSettings,
    curves,
    f"{__name__}:build",
    quick={"n_subsets": 4},
    reduction="signed sum over channels (Ancona et al.: the attribution of a pixel set is its sum)",
)
