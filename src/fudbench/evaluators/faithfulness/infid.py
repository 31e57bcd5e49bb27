"""`infid`: Infidelity (Yeh et al. 2019) through captum, perturbation from config
(fudbench.protocols.faithfulness.infidelity). Score: the image's infidelity; lower is better."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fudbench.core.auc import mean_of
from fudbench.evaluators.base import MAIN_SAMPLES, NON_NEGATIVE, CurveSpec, EvaluatorSpec
from fudbench.core.settings import Settings, setting


@dataclass(frozen=True)
class InfidSettings(Settings):
    perturbation: Literal["authors", "gaussian", "blur"] = setting(
        "authors", description="FUD authors' near-black noise | gaussian | blur"
    )
    n_perturb: int = setting(100, minimum=2, description="perturbations per image (authors: 100)")
    sigma: float = setting(0.2, exclusiveMinimum=0)
    batch_size: int = setting(256, minimum=1)


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            "infidelity",
            "INFID",
            False,
            mean_of("infidelity"),
            table="table7_scores",
            keeps_samples=True,
            samples_label="INFID",
            samples_tables=(MAIN_SAMPLES,),
            value_range=NON_NEGATIVE,
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.faithfulness.infidelity import Infidelity  # imports captum (seconds): only here

    protocol = Infidelity(
        perturbation=settings["perturbation"],
        n_perturb=settings["n_perturb"],
        sigma=settings["sigma"],
        batch_size=settings["batch_size"],
        keep_samples=True,
    )
    return Evaluator("infid", [(protocol, None)])


SPEC = EvaluatorSpec(
    "infid",
    __doc__.splitlines()[0],
    InfidSettings,
    curves,
    f"{__name__}:build",
    quick={"n_perturb": 4},
    reduction="none: the signed map itself, per input value (Yeh et al.)",
)
