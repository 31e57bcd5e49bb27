"""`ffid`: F-Fidelity (seeds/004) with its two baselines, six curves, all with
dataset-mean removal (fudbench.protocols.faithfulness.ffidelity):
  ffid_plus / ffid_minus   fine-tuned surrogate, alpha sampling, cap beta*HW;
  rfid_plus / rfid_minus   original classifier, alpha sampling, no cap (R-Fidelity);
  fid_plus / fid_minus     original classifier, whole set removed (Fidelity).
Per image: the normalised AUC of the fidelity over the sparsity levels; the
Fid+ family higher (removing the explanation should hurt), the Fid- family
lower is better. Only ffid_plus keeps its intermediate samples (the first
stochastic sample per sparsity). Needs assets["surrogate"], the surrogate
fine-tuned by rule train_surrogate.
"""

from __future__ import annotations

from dataclasses import dataclass

from fudbench.core.auc import normalised_auc
from fudbench.evaluators.base import CurveSpec, EvaluatorSpec
from fudbench.core.settings import Settings, setting

# (curve, side, metric family, label, higher is better), in the order of the records
FFID_CURVES = [
    ("ffid_plus", "plus", "ffid", "FFid+", True),
    ("ffid_minus", "minus", "ffid", "FFid-", False),
    ("rfid_plus", "plus", "rfid", "RFid+", True),
    ("rfid_minus", "minus", "rfid", "RFid-", False),
    ("fid_plus", "plus", "fid", "Fid+", True),
    ("fid_minus", "minus", "fid", "Fid-", False),
]
FINETUNE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["epochs", "lr", "batch_size", "weight_decay"],
    "properties": {
        "epochs": {"type": "integer", "minimum": 1},
        "lr": {"type": "number", "exclusiveMinimum": 0},
        "batch_size": {"type": "integer", "minimum": 1},
        "weight_decay": {"type": "number", "minimum": 0},
    },
}


@dataclass(frozen=True)
class FFidSettings(Settings):
    beta: float = setting(
        0.1,
        exclusiveMinimum=0,
        exclusiveMaximum=1,
        description="max fraction of pixels removed, in fine-tuning and evaluation (paper: 0.1)",
    )
    alpha: float = setting(
        0.5, exclusiveMinimum=0, maximum=1, description="removal probability of each candidate pixel (paper: 0.5)"
    )
    n_samples: int = setting(50, minimum=1, description="stochastic samples per image and sparsity (paper: 50)")
    sparsities: list[float] = setting(
        default_factory=lambda: [round(0.05 + 0.1 * k, 10) for k in range(10)],
        minItems=2,
        items={"exclusiveMinimum": 0, "exclusiveMaximum": 1},
        description="explanation sizes as fractions of the pixels, increasing (paper: 0.05 to 0.95)",
    )
    finetune: dict = setting(
        default_factory=lambda: {"epochs": 100, "lr": 1e-4, "batch_size": 64, "weight_decay": 1e-4},
        schema=FINETUNE_SCHEMA,
        description="the surrogate's fine-tuning (paper: 100 epochs)",
    )
    batch_size: int = setting(256, minimum=1)

    def problems(self, key: str) -> list[str]:
        s = list(self.sparsities)
        if any(b <= a for a, b in zip(s, s[1:])):
            return [f"config key '{key}.sparsities': {s} must be strictly increasing"]
        return []


def fidelity_auc(g) -> float:
    """Per image: normalised AUC of the fidelity over the sparsity levels (the seed
    paper's macro aggregation; dividing by the sparsity range keeps the ranking
    and puts the value on the fidelity scale)."""
    return normalised_auc(g["sparsity"], g["fidelity"])


def curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(
            curve,
            label,
            higher,
            fidelity_auc,
            table="ffidelity_scores",
            keeps_samples=curve == "ffid_plus",
            step_value="fidelity",
        )
        for curve, _, _, label, higher in FFID_CURVES
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.models.classifiers import load_classifier
    from fudbench.protocols.faithfulness.ffidelity import ClassifierMeanImputer, FidelityCurve

    path = (assets or {}).get("surrogate")
    if not path:
        raise ValueError(
            "the ffid evaluator needs assets['surrogate'], the path of the fine-tuned surrogate "
            "checkpoint (rule train_surrogate: results/<run>/models/<model>_surrogate.pt)"
        )
    surrogate = load_classifier(path, device)
    common = {
        "sparsities": settings["sparsities"],
        "batch_size": settings["batch_size"],
        "reduction": evaluation["reduction"],
    }
    stochastic = {"alpha": settings["alpha"], "n_samples": settings["n_samples"]}
    per_family = {
        "ffid": {**stochastic, "beta": settings["beta"], "model": surrogate},
        "rfid": {**stochastic, "beta": None},
        "fid": {"alpha": 1.0, "beta": None, "n_samples": 1},
    }
    imputer = ClassifierMeanImputer()
    return Evaluator(
        "ffid",
        [
            (FidelityCurve(curve, side, keep_samples=curve == "ffid_plus", **common, **per_family[family]), imputer)
            for curve, side, family, _, _ in FFID_CURVES
        ],
    )


SPEC = EvaluatorSpec(
    "ffid",
    "F-Fidelity (seeds/004) with Fidelity and R-Fidelity beside it",
    FFidSettings,
    curves,
    f"{__name__}:build",
    assets=lambda s: {"surrogate"},
    # alpha 1, beta 0.5: a label can flip at the few sparsities a quick run has
    quick={"n_samples": 2, "sparsities": [0.25, 0.5, 0.75], "alpha": 1.0, "beta": 0.5},
)
