"""Imputer names -> builder ("module:attribute"), resolved lazily so that config
validation and the analysis jobs can list the names without importing torch.

Each builder is called as builder(options, references, assets, device); see
fudbench.imputers.factory.build_imputer.
"""

IMPUTERS = {
    "zero": "fudbench.imputers.factory:zero",
    "blur": "fudbench.imputers.factory:blur",
    "mean": "fudbench.imputers.factory:mean",
    "sample_average": "fudbench.imputers.factory:sample_average",
    "uniform": "fudbench.imputers.factory:uniform",
    "gaussian": "fudbench.imputers.factory:gaussian",
    "train_set": "fudbench.imputers.factory:train_set",
    "histogram": "fudbench.imputers.factory:histogram",
    "telea": "fudbench.imputers.factory:telea",
    "noisy_linear": "fudbench.imputers.factory:noisy_linear",
    "box_blur": "fudbench.imputers.factory:box_blur",
    "max_distance": "fudbench.imputers.factory:max_distance",
    "diffusion_plain": "fudbench.imputers.factory:diffusion_plain",
}

# Fills of the Distill (Sturmfels 2020) and Gevaert (attribench 2024)
# evaluators; their curves are distill__<fill>, gevaert_del__<fill>, gevaert_ins__<fill>.
DISTILL_FILLS = ("blur", "uniform", "gaussian", "max_distance")
GEVAERT_FILLS = ("constant", "noise", "box_blur", "sample_average")


def imputers_of(evaluator: str, settings: dict) -> list[str]:
    """The imputer names an appendix evaluator's settings use (srg: imputers,
    road: imputer, idsds: fill); [] for evaluators that do not name imputers."""
    if evaluator == "srg":
        return list(settings.get("imputers", []))
    if evaluator == "road":
        return [settings["imputer"]] if "imputer" in settings else []
    if evaluator == "idsds":
        return [settings["fill"]] if "fill" in settings else []
    return []


def needed_assets(evaluator: str, settings: dict) -> set[str]:
    """Asset keys an evaluate job of this evaluator reads, known at parse time:
    'score_model' for diffusion_plain, 'reference_images' for train_set and for
    a mean imputer without an explicit mean (the dataset channel mean)."""
    options = settings.get("imputer_options") or {}
    needed = set()
    for name in imputers_of(evaluator, settings):
        if name == "diffusion_plain":
            needed.add("score_model")
        if name == "train_set" or (name == "mean" and (options.get("mean") or {}).get("mean") is None):
            needed.add("reference_images")
    return needed
