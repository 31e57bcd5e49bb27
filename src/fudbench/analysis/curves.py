"""Scores of confidence curves.

- normalised_auc: trapezoid area divided by the x range. On a uniform grid
  over [0, 1] with n points this equals RISE's (sum - first/2 - last/2)/(n-1).
- FUD score (Table 7): per image the normalised AUC of confidence over the
  kept fractions rho; higher is better.
- Insertion (higher better) / Deletion (lower better): normalised AUC over
  the inserted / removed fraction.
- Sen-N (higher better): the image's Pearson correlation averaged over n.
- INFID (lower better): the image's infidelity.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# curve name in the records -> (name in the tables, higher is better, per-image score of its rows)
CURVE_SCORES = {
    "fud": ("FUD", True, lambda g: normalised_auc(g["kept"], g["confidence"])),
    "insertion": ("Insertion", True, lambda g: normalised_auc(g["kept"], g["confidence"])),
    "deletion": ("Deletion", False, lambda g: normalised_auc(g["removed"], g["confidence"])),
    "sensitivity_n": ("Sen-N", True, lambda g: float(g["correlation"].mean())),
    "infidelity": ("INFID", False, lambda g: float(g["infidelity"].mean())),
}
# the paper's Table 7 columns, in its order
MAIN_CURVE_SCORES = tuple(CURVE_SCORES)
# curves whose 9 removal steps are the "intermediate samples" of an evaluator
# (Kendall tau, Table 4): curve -> evaluator label
TAU_CURVES = {"deletion_ratios": "INS/DEL", "fud": "FUD"}
# every evaluator's intermediate samples (OOD and quality, Tables 2 and 3)
INTERMEDIATE_CURVES = {"deletion_ratios": "INS/DEL", "sensitivity_n": "Sen-N", "infidelity": "INFID", "fud": "FUD"}


def normalised_auc(x, y) -> float:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    order = np.argsort(x)
    x, y = x[order], y[order]
    span = x[-1] - x[0]
    if span <= 0:
        raise ValueError("AUC needs at least two distinct x values")
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2) / span)


def per_image_scores(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, explainer, curve, image): the curve's score and,
    for the TAU_CURVES, Kendall's tau of its removal sequence."""
    from fudbench.analysis.kendall import is_constant, removal_tau

    rows = []
    keys = ["model", "explainer", "curve", "image"]
    for (model, explainer, curve, image), g in records.groupby(keys, sort=True):
        row = {"model": model, "explainer": explainer, "curve": curve, "image": image}
        if curve in CURVE_SCORES:
            row["score"] = CURVE_SCORES[curve][2](g)
        if curve in TAU_CURVES:
            row["tau"] = removal_tau(g["removed"].to_numpy(), g["confidence"].to_numpy())
            row["constant"] = is_constant(g["confidence"].to_numpy())
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------- appendix protocols (seeds/002, FUD appendix)
# SRG curves per imputer: srg_mif__<imp> (AUC over the occluded superpixel
# fraction, lower better), srg_lif__<imp> (higher better), srg_roms__<imp> (the
# random-ordering baseline R-OMS; higher = a more reliable occlusion). ROAD:
# AUC of p(original prediction) over the removed fraction (MoRF lower, LeRF
# higher better). IDSDS: the image's Spearman correlation. Distill / Gevaert
# deletion: AUC over the removed fraction (lower better); Gevaert insertion:
# AUC over the kept fraction (higher better).
# These entries are merged into CURVE_SCORES; APPENDIX_CURVE_SCORES keeps them
# apart so that a table of the main paper can leave them out.
def _auc_removed(g) -> float:
    return normalised_auc(g["removed"], g["confidence"])


def _auc_kept(g) -> float:
    return normalised_auc(g["kept"], g["confidence"])


def _appendix_curve_scores() -> dict:
    from fudbench.imputer_registry import DISTILL_FILLS, GEVAERT_FILLS, IMPUTERS

    scores = {}
    for imp in IMPUTERS:
        scores[f"srg_mif__{imp}"] = (f"MIF ({imp})", False, _auc_removed)
        scores[f"srg_lif__{imp}"] = (f"LIF ({imp})", True, _auc_removed)
        scores[f"srg_roms__{imp}"] = (f"R-OMS ({imp})", True, _auc_removed)
    scores["road_morf"] = ("ROAD MoRF", False, _auc_removed)
    scores["road_lerf"] = ("ROAD LeRF", True, _auc_removed)
    scores["idsds"] = ("IDSDS", True, lambda g: float(g["correlation"].iloc[0]))
    for fill in DISTILL_FILLS:
        scores[f"distill__{fill}"] = (f"Distill {fill}", False, _auc_removed)
    for fill in GEVAERT_FILLS:
        scores[f"gevaert_del__{fill}"] = (f"Gevaert del. {fill}", False, _auc_removed)
        scores[f"gevaert_ins__{fill}"] = (f"Gevaert ins. {fill}", True, _auc_kept)
    return scores


APPENDIX_CURVE_SCORES = _appendix_curve_scores()
CURVE_SCORES.update(APPENDIX_CURVE_SCORES)


def _ffid_curve_scores() -> dict:
    from fudbench.evaluation_ffidelity import FFID_CURVE_SCORES  # torch-free

    return dict(FFID_CURVE_SCORES)


# F-Fidelity, R-Fidelity and Fidelity (seeds/004): normalised AUC over sparsity
CURVE_SCORES.update(_ffid_curve_scores())

# intermediate samples of the appendix protocols (Tables 9 and 11): curve -> label
APPENDIX_INTERMEDIATE_CURVES = {
    "idsds": "IDSDS",
    "road_morf": "ROAD",
    **{f"distill__{fill}": "Distill" for fill in ("blur", "uniform", "gaussian", "max_distance")},
    **{f"gevaert_del__{fill}": "Gevaert" for fill in ("constant", "noise", "box_blur", "sample_average")},
}

# Scores computed from several curves (or another column) of an image:
# name -> (name in the tables, higher is better). MRG = R-OMS - MIF,
# LRG = LIF - R-OMS, SRG = LIF - MIF (seeds/002 Eqs. 4-5; 0 for a random
# explainer); ROAD accuracy = AUC of 1[prediction == original prediction].
def _derived_scores() -> dict:
    from fudbench.imputer_registry import IMPUTERS

    scores = {}
    for imp in IMPUTERS:
        scores[f"mrg__{imp}"] = (f"MRG ({imp})", True)
        scores[f"lrg__{imp}"] = (f"LRG ({imp})", True)
        scores[f"srg__{imp}"] = (f"SRG ({imp})", True)
    scores["road_morf_accuracy"] = ("ROAD MoRF acc.", False)
    scores["road_lerf_accuracy"] = ("ROAD LeRF acc.", True)
    return scores


DERIVED_SCORES = _derived_scores()


def relevance_gains(per_image: pd.DataFrame) -> pd.DataFrame:
    """MRG, LRG, SRG per (model, explainer, image, imputer) from the per-image
    AUCs of the srg_{mif,lif,roms}__<imputer> curves (per_image_scores' output).
    Rows in per_image_scores' format: model, explainer, curve
    (mrg__/lrg__/srg__<imputer>), image, score."""
    cols = ["model", "explainer", "curve", "image", "score"]
    parts = per_image["curve"].str.extract(r"^srg_(?P<kind>mif|lif|roms)__(?P<imputer>.+)$")
    d = per_image.assign(kind=parts["kind"], imputer=parts["imputer"]).dropna(subset=["kind"])
    if d.empty:
        return pd.DataFrame(columns=cols)
    wide = d.pivot_table(index=["model", "explainer", "imputer", "image"], columns="kind", values="score",
                         aggfunc="first")
    if not {"mif", "lif", "roms"} <= set(wide.columns):
        return pd.DataFrame(columns=cols)
    wide = wide.dropna(subset=["mif", "lif", "roms"]).reset_index()
    gains = {"mrg": wide["roms"] - wide["mif"], "lrg": wide["lif"] - wide["roms"], "srg": wide["lif"] - wide["mif"]}
    return pd.concat([pd.DataFrame({"model": wide["model"], "explainer": wide["explainer"],
                                    "curve": name + "__" + wide["imputer"], "image": wide["image"], "score": v})
                      for name, v in gains.items()], ignore_index=True)[cols]


def road_accuracy(records: pd.DataFrame) -> pd.DataFrame:
    """Per (model, explainer, image): AUC of ROAD's accuracy over the removed
    fraction, curves road_morf_accuracy / road_lerf_accuracy (per_image format)."""
    cols = ["model", "explainer", "curve", "image", "score"]
    d = records[records["curve"].isin(["road_morf", "road_lerf"])]
    rows = [{"model": m, "explainer": e, "curve": f"{c}_accuracy", "image": i,
             "score": normalised_auc(g["removed"], g["accuracy"])}
            for (m, e, c, i), g in d.groupby(["model", "explainer", "curve", "image"], sort=True)]
    return pd.DataFrame(rows, columns=cols)


def derived_scores(records: pd.DataFrame, per_image: pd.DataFrame) -> pd.DataFrame:
    """The DERIVED_SCORES rows, to be appended to per_image_scores(records)."""
    return pd.concat([relevance_gains(per_image), road_accuracy(records)], ignore_index=True)
