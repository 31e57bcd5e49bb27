"""Evaluators: named compositions of protocols and imputers (DESIGN.md).

Each name in config maps to a builder that returns an Evaluator, i.e. a list of
curves, each curve a protocol (which pixels are kept or removed, at which
fractions) run with an imputer (how the removed pixels are filled).
"""
from fudbench.registry import resolve

EVALUATORS = {
    "fud": "fudbench.evaluation:build_fud",
    "insdel": "fudbench.evaluation:build_insdel",
    "sensn": "fudbench.evaluation:build_sensn",
    "infid": "fudbench.evaluation:build_infid",
    "srg": "fudbench.evaluation_baselines:build_srg",
    "road": "fudbench.evaluation_baselines:build_road",
    "idsds": "fudbench.evaluation_baselines:build_idsds",
    "distill": "fudbench.evaluation_baselines:build_distill",
    "gevaert": "fudbench.evaluation_baselines:build_gevaert",
    "ffid": "fudbench.evaluation_ffidelity:build_ffid",
}


def build_evaluator(name: str, settings: dict, evaluation: dict, assets: dict, device):
    return resolve(EVALUATORS, name, "evaluator")(settings, evaluation, assets, device)
