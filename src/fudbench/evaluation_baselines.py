"""Evaluators of the appendix protocols, built like fudbench.evaluation's:
build_<name>(settings, evaluation, assets, device) -> Evaluator.

- srg:     SRG / R-OMS superpixel pixel flipping, one MIF/LIF/R-OMS triple of
           curves per configured imputer (srg_<kind>__<imputer>); R-OMS is
           read from assets["srg_reference"] when the rules computed it once.
- road:    ROAD MoRF and LeRF at p = the removal fractions 1 - rho, noisy
           linear imputation (road_morf keeps its samples).
- idsds:   single deletion of grid cells, Spearman correlation (idsds).
- distill: deletion at the removal fractions with each Distill baseline
           (distill__<fill>: blur, uniform, gaussian, max_distance).
- gevaert: attribench-style deletion (gevaert_del__<fill>) and insertion
           (gevaert_ins__<fill>) with fills constant, noise, box_blur,
           sample_average.

assets (keys the rules provide): "score_model" (checkpoint, for
diffusion_plain), "reference_images" (npz with an "images" uint8 (M, C, H, W)
array, for train_set and the dataset mean), "srg_reference" (parquet of R-OMS
records, rule srg_reference). Only the imputers a config names are built, so
assets are only needed when used.
"""
from __future__ import annotations

from fudbench.evaluation import Evaluator, removal_fractions
from fudbench.imputer_registry import DISTILL_FILLS, GEVAERT_FILLS
from fudbench.imputers.factory import build_imputer, load_references

# Imputers that read the reference images (the mean only when no explicit mean is given).
_NEEDS_REFERENCES = {"train_set"}


def _imputer_options(settings: dict, name: str) -> dict:
    return dict((settings.get("imputer_options") or {}).get(name) or {})


def _references(names, settings: dict, assets: dict):
    """The reference images, loaded once, if one of the named imputers reads them:
    train_set always, mean unless the config gives the mean (without
    reference images the mean falls back to the classifier's normalisation mean)."""
    for name in names:
        if name in _NEEDS_REFERENCES or (name == "mean" and _imputer_options(settings, name).get("mean") is None
                                         and (assets or {}).get("reference_images")):
            return load_references(assets, name)
    return None


def srg_curves(settings: dict, assets: dict, device, kinds=("mif", "lif", "roms")) -> list:
    """[(SRG protocol, imputer)] per configured imputer, computing the curves `kinds`."""
    from fudbench.protocols.srg import SRG

    names = list(settings["imputers"])
    if len(set(names)) != len(names):
        raise ValueError(f"config key 'evaluators.srg.imputers': {names} names an imputer twice")
    refs = _references(names, settings, assets)
    return [(SRG(imputer_name=name, segmentation=settings["segmentation"], n_segments=settings["n_segments"],
                 compactness=settings["compactness"], square_side=settings["square_side"],
                 n_steps=settings["n_steps"], n_imputations=settings["n_imputations"],
                 n_random=settings["n_random"], reduction=settings["reduction"],
                 batch_size=settings["batch_size"], kinds=kinds),
             build_imputer(name, _imputer_options(settings, name), refs, assets, device))
            for name in names]


def build_srg(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    """With assets["srg_reference"] (R-OMS records of this model and shard, rule
    srg_reference) only MIF and LIF are computed here and R-OMS is replayed."""
    reference = (assets or {}).get("srg_reference")
    if not reference:
        return Evaluator("srg", srg_curves(settings, assets, device))
    import pandas as pd

    from fudbench.protocols.srg import srg_curve_name
    from fudbench.protocols.stored import StoredCurve

    stored = pd.read_parquet(reference)
    curves = []
    for protocol, imputer in srg_curves(settings, assets, device, kinds=("mif", "lif")):
        curves += [(protocol, imputer),
                   (StoredCurve(srg_curve_name("roms", protocol.imputer_name), stored, reference), None)]
    return Evaluator("srg", curves)


def build_road(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    from fudbench.protocols.road import ROAD

    name = settings["imputer"]
    imputer = build_imputer(name, _imputer_options(settings, name), _references([name], settings, assets), assets,
                            device)
    fractions = removal_fractions(evaluation["ratios"])
    return Evaluator("road", [
        (ROAD(fractions, order=order, jitter=settings["jitter"], batch_size=settings["batch_size"],
              keep_samples=order == "morf"), imputer)
        for order in settings["orders"]])


def build_idsds(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    from fudbench.protocols.idsds import IDSDS

    name = settings["fill"]
    imputer = build_imputer(name, _imputer_options(settings, name), _references([name], settings, assets), assets,
                            device)
    protocol = IDSDS(grid=settings["grid"], output=settings["output"], batch_size=settings["batch_size"],
                     keep_samples=True)
    return Evaluator("idsds", [(protocol, imputer)])


def distill_imputer(fill: str, settings: dict):
    """Sturmfels et al. 2020's baselines as fills."""
    from fudbench.imputers import BlurImputer, GaussianNoiseImputer, MaxDistanceImputer, UniformNoiseImputer

    if fill == "blur":
        return BlurImputer(settings["blur_kernel"], settings["blur_sigma"])
    if fill == "uniform":
        return UniformNoiseImputer(0.0, 1.0)
    if fill == "gaussian":
        return GaussianNoiseImputer(std=settings["gaussian_sigma"], around_image=True)
    if fill == "max_distance":
        return MaxDistanceImputer()
    raise ValueError(f"config key 'evaluators.distill.fills': unknown fill {fill!r}; "
                     f"choose from {', '.join(DISTILL_FILLS)}")


def build_distill(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    from fudbench.protocols import TopKCurve

    fractions = removal_fractions(evaluation["ratios"])
    return Evaluator("distill", [
        (TopKCurve(f"distill__{fill}", fractions, mode="remove", batch_size=settings["batch_size"],
                   reduction=evaluation["reduction"], keep_samples=True), distill_imputer(fill, settings))
        for fill in settings["fills"]])


def gevaert_imputer(fill: str, settings: dict):
    """attribench's maskers as fills. space 'model': constant 0 and N(0, 1) live in
    the classifier's normalised input space (as attribench applies them to
    normalised images); 'pixel': in [0, 1] space (0 = black)."""
    from fudbench.imputers import (BoxBlurImputer, GaussianNoiseImputer, MeanImputer, SampleAverageImputer,
                                   ZeroImputer)

    model_space = settings["space"] == "model"
    if fill == "constant":
        return MeanImputer(None) if model_space else ZeroImputer()
    if fill == "noise":
        return GaussianNoiseImputer(std=settings["noise_std"], mean=0.0, model_space=model_space)
    if fill == "box_blur":
        return BoxBlurImputer(settings["box_blur_fraction"])
    if fill == "sample_average":
        return SampleAverageImputer()
    raise ValueError(f"config key 'evaluators.gevaert.fills': unknown fill {fill!r}; "
                     f"choose from {', '.join(GEVAERT_FILLS)}")


def build_gevaert(settings: dict, evaluation: dict, assets: dict, device) -> Evaluator:
    from fudbench.protocols import TopKCurve

    common = {"batch_size": settings["batch_size"], "reduction": evaluation["reduction"]}
    curves = []
    for fill in settings["fills"]:
        imputer = gevaert_imputer(fill, settings)
        curves.append((TopKCurve(f"gevaert_del__{fill}", removal_fractions(evaluation["ratios"]), mode="remove",
                                 keep_samples=True, **common), imputer))
        if settings["insertion"]:
            curves.append((TopKCurve(f"gevaert_ins__{fill}", list(evaluation["ratios"]), mode="keep", **common),
                           imputer))
    return Evaluator("gevaert", curves)
