"""Which curves and columns make each of the paper's OOD and quality tables.

Tables 2/8 and 3 compare the main evaluators' intermediate samples; Tables 11
and 9 rebuild the appendix comparison (IDSDS, ROAD, Distill, Gevaert, with FUD
as the reference row) with the same analysis code.
"""
from __future__ import annotations

from fudbench.analysis import curves

_OOD_CAPTION = ("Energy-score OOD detection of the intermediate samples (OOD) against the clean images (ID) "
                "($\\pm$ half-width of the bootstrap 95\\% CI over images). Arrows: the direction in which the "
                "intermediate samples are harder to tell from clean data. {what}")


def intermediate_curves(table: str) -> dict[str, str]:
    """{curve in the records: row label} of an OOD or quality table."""
    main = dict(curves.INTERMEDIATE_CURVES)
    appendix = {**getattr(curves, "APPENDIX_INTERMEDIATE_CURVES", {}), "fud": "FUD"}
    return {"table2_ood": main, "table8_ood": main, "table3_quality": main,
            "table11_ood": appendix, "table9_quality": appendix}[table]


OOD_TABLES = {
    "table2_ood": {"columns": ["AUROC", "FPR95", "AUPR-Out"],
                   "caption": _OOD_CAPTION.format(what="Table 2 of FUD."), "tex_label": "tab:ood"},
    "table8_ood": {"columns": None,
                   "caption": _OOD_CAPTION.format(what="Extended with AUPR-In (Table 8 of FUD)."),
                   "tex_label": "tab:ood-extended"},
    "table11_ood": {"columns": None,
                    "caption": _OOD_CAPTION.format(what="Appendix protocols against FUD (Table 11 of FUD)."),
                    "tex_label": "tab:ood-appendix"},
}

QUALITY_TABLES = {
    "table3_quality": {"caption": None, "tex_label": "tab:quality"},
    "table9_quality": {"caption": "Image quality of the appendix protocols' intermediate samples against their "
                                  "originals, mean over all runs ($\\pm$ half-width of the bootstrap 95\\% CI over "
                                  "images; best in bold); FUD for reference (Table 9 of FUD).",
                       "tex_label": "tab:quality-appendix"},
}


def score_labels() -> dict[str, tuple[str, bool]]:
    """{curve or derived score: (column name, higher is better)} of every score
    in the per-image table."""
    from fudbench.analysis.curves import CURVE_SCORES, DERIVED_SCORES
    from fudbench.evaluation_ffidelity import FFID_CURVE_SCORES

    labels = {c: (v[0], v[1]) for c, v in CURVE_SCORES.items()}
    labels.update({c: (v[0], v[1]) for c, v in FFID_CURVE_SCORES.items()})
    labels.update(DERIVED_SCORES)
    return labels


# Score tables beside Table 7: which per-image curves each one shows.
SCORE_TABLES = {
    "srg_scores": {
        "select": lambda c: c.startswith(("srg__", "mrg__", "lrg__")),
        "caption": "SRG / R-OMS (seeds/002) per imputer: MRG = R-OMS - MIF, LRG = LIF - R-OMS, SRG = LIF - MIF "
                   "(areas over the occluded superpixel fraction; 0 for a random explainer; higher is better); "
                   "mean over images, $\\pm$ half-width of the bootstrap 95\\% CI. MIF, LIF and R-OMS areas are "
                   "in analysis/per\\_image.parquet.",
        "tex_label": "tab:srg"},
    "road_scores": {
        "select": lambda c: c.startswith("road_"),
        "caption": "ROAD (Rong et al. 2022) with noisy-linear imputation: area under p(original prediction) and "
                   "under accuracy over the removed fraction, MoRF (lower better) and LeRF (higher better); "
                   "mean over images, $\\pm$ half-width of the bootstrap 95\\% CI.",
        "tex_label": "tab:road"},
    "ffidelity_scores": {
        "select": lambda c: c.startswith(("ffid_", "fid_", "rfid_")),
        "caption": "F-Fidelity (seeds/004) with the fine-tuned surrogate, and plain Fidelity / R-Fidelity with "
                   "the original classifier, averaged over sparsity levels; mean over images, $\\pm$ half-width "
                   "of the bootstrap 95\\% CI.",
        "tex_label": "tab:ffidelity"},
    "appendix_scores": {
        "select": lambda c: c == "idsds" or c.startswith(("distill__", "gevaert_")),
        "caption": "Appendix protocols' scores: IDSDS (Spearman correlation of cell attribution and output drop, "
                   "higher better), Distill baselines and Gevaert et al. deletion (area under confidence over the "
                   "removed fraction, lower better) and insertion (higher better); mean over images, $\\pm$ "
                   "half-width of the bootstrap 95\\% CI.",
        "tex_label": "tab:appendix-scores"},
}
# evaluator each score table needs in the config
SCORE_TABLE_EVALUATORS = {"srg_scores": {"srg"}, "road_scores": {"road"}, "ffidelity_scores": {"ffid"},
                          "appendix_scores": {"idsds", "distill", "gevaert"}}
