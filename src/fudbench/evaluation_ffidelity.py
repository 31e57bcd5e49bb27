"""The `ffid` evaluator: F-Fidelity with its two baselines (seeds/004).

Six curves, all with dataset-mean removal (fudbench.protocols.ffidelity):
  ffid_plus / ffid_minus   fine-tuned surrogate, alpha sampling, cap beta*HW;
  rfid_plus / rfid_minus   original classifier, alpha sampling, no cap (R-Fidelity);
  fid_plus / fid_minus     original classifier, whole set removed (Fidelity).

Only ffid_plus keeps its intermediate samples (the first stochastic sample
per sparsity): they are what the OOD / quality tables can compare with the
other evaluators' samples, at a sixth of the storage.

This module imports torch only inside build_ffid, so that the per-image
score table FFID_CURVE_SCORES can be imported by torch-free analysis jobs.
"""
from __future__ import annotations

# (curve, side, metric family) in the order of the records
FFID_CURVES = [("ffid_plus", "plus", "ffid"), ("ffid_minus", "minus", "ffid"),
               ("rfid_plus", "plus", "rfid"), ("rfid_minus", "minus", "rfid"),
               ("fid_plus", "plus", "fid"), ("fid_minus", "minus", "fid")]


def fidelity_auc(g) -> float:
    """Per image: normalised AUC of the fidelity over the sparsity levels
    (the seed paper's macro aggregation; dividing by the sparsity range keeps
    the ranking and puts the value on the fidelity scale)."""
    from fudbench.analysis.curves import normalised_auc  # lazy: curves.py may import this module

    return normalised_auc(g["sparsity"], g["fidelity"])


# curve -> (name in the tables, higher is better, per-image score of its rows);
# Fid+ family: removing the explanation should hurt (higher better); Fid- family:
# keeping only the explanation should not (lower better).
FFID_CURVE_SCORES = {
    "ffid_plus": ("FFid+", True, fidelity_auc),
    "ffid_minus": ("FFid-", False, fidelity_auc),
    "rfid_plus": ("RFid+", True, fidelity_auc),
    "rfid_minus": ("RFid-", False, fidelity_auc),
    "fid_plus": ("Fid+", True, fidelity_auc),
    "fid_minus": ("Fid-", False, fidelity_auc),
}
# curve -> the per-step column a micro (per-sparsity) comparison uses
FFID_STEP_VALUES = {curve: "fidelity" for curve in FFID_CURVE_SCORES}


def check_ffid_settings(settings: dict) -> None:
    """Errors naming the config key, raised before any model is loaded."""
    if not 0.0 < settings["beta"] < 1.0:
        raise ValueError(f"config key 'evaluators.ffid.beta': {settings['beta']} must be in (0, 1)")
    if not 0.0 < settings["alpha"] <= 1.0:
        raise ValueError(f"config key 'evaluators.ffid.alpha': {settings['alpha']} must be in (0, 1]")
    s = list(settings["sparsities"])
    if not s or any(not 0.0 < v < 1.0 for v in s) or any(b <= a for a, b in zip(s, s[1:])):
        raise ValueError(f"config key 'evaluators.ffid.sparsities': {s} must be strictly increasing "
                         f"values in (0, 1)")


def build_ffid(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluation import Evaluator
    from fudbench.models.classifiers import load_classifier
    from fudbench.protocols.ffidelity import ClassifierMeanImputer, FidelityCurve

    check_ffid_settings(settings)
    path = (assets or {}).get("surrogate")
    if not path:
        raise ValueError("the ffid evaluator needs assets['surrogate'], the path of the fine-tuned surrogate "
                         "checkpoint (rule train_surrogate: results/<run>/models/<model>_surrogate.pt)")
    surrogate = load_classifier(path, device)
    common = {"sparsities": settings["sparsities"], "batch_size": settings["batch_size"],
              "reduction": evaluation["reduction"]}
    stochastic = {"alpha": settings["alpha"], "n_samples": settings["n_samples"]}
    per_family = {
        "ffid": {**stochastic, "beta": settings["beta"], "model": surrogate},
        "rfid": {**stochastic, "beta": None},
        "fid": {"alpha": 1.0, "beta": None, "n_samples": 1},
    }
    imputer = ClassifierMeanImputer()
    return Evaluator("ffid", [
        (FidelityCurve(curve, side, keep_samples=curve == "ffid_plus", **common, **per_family[family]), imputer)
        for curve, side, family in FFID_CURVES
    ])
