"""Which curves and columns make each of the paper's OOD and quality tables.

Tables 2/8 and 3 compare the main evaluators' intermediate samples; Tables 11
and 9 rebuild the appendix comparison (IDSDS, ROAD, Distill, Gevaert, with FUD
as the reference row) with the same analysis code.
"""

from __future__ import annotations

from fudbench.analysis import curves

_OOD_CAPTION = (
    "Energy-score OOD detection of the intermediate samples (OOD) against the clean images (ID) "
    "($\\pm$ half-width of the bootstrap 95\\% CI over images). Arrows: the direction in which the "
    "intermediate samples are harder to tell from clean data. {what}"
)


def intermediate_curves(table: str) -> dict[str, str]:
    """{curve in the records: row label} of an OOD or quality table."""
    main = dict(curves.INTERMEDIATE_CURVES)
    appendix = dict(curves.APPENDIX_INTERMEDIATE_CURVES)
    return {
        "table2_ood": main,
        "table8_ood": main,
        "table3_quality": main,
        "table11_ood": appendix,
        "table9_quality": appendix,
    }[table]


OOD_TABLES = {
    "table2_ood": {
        "columns": ["AUROC", "FPR95", "AUPR-Out"],
        "caption": _OOD_CAPTION.format(what="Table 2 of FUD."),
        "tex_label": "tab:ood",
    },
    "table8_ood": {
        "columns": None,
        "caption": _OOD_CAPTION.format(what="Extended with AUPR-In (Table 8 of FUD)."),
        "tex_label": "tab:ood-extended",
    },
    "table11_ood": {
        "columns": None,
        "caption": _OOD_CAPTION.format(what="Appendix protocols against FUD (Table 11 of FUD)."),
        "tex_label": "tab:ood-appendix",
    },
}

QUALITY_TABLES = {
    "table3_quality": {"caption": None, "tex_label": "tab:quality"},
    "table9_quality": {
        "caption": "Image quality of the appendix protocols' intermediate samples against their "
        "originals, mean over all runs ($\\pm$ half-width of the bootstrap 95\\% CI over "
        "images; best in bold); FUD for reference (Table 9 of FUD).",
        "tex_label": "tab:quality-appendix",
    },
}


def score_labels(curves=()) -> dict[str, tuple[str, bool]]:
    """{curve or derived score: (column name, higher is better)} of every known
    score, plus the aliased curves (<curve>@<entry>) among `curves`, listed last."""
    from fudbench.analysis.curves import CATALOGUE
    from fudbench.evaluators import find_curve

    labels = {c.name: (c.label, c.higher_is_better) for c in CATALOGUE.values()}
    for curve in curves:
        spec = find_curve(curve, CATALOGUE)
        if curve not in labels and spec is not None:
            labels[curve] = (spec.label, spec.higher_is_better)
    return labels


def in_table(table: str):
    """Whether a per-image curve (aliased ones included) belongs to a score table, by its spec."""
    from fudbench.evaluators import find_curve

    def select(curve: str) -> bool:
        spec = find_curve(curve)
        return spec is not None and spec.table == table

    return select


# Score tables beside Table 7: which per-image curves each one shows.
SCORE_TABLES = {
    "srg_scores": {
        "select": in_table("srg_scores"),
        "caption": "SRG / R-OMS (seeds/002) per imputer: MRG = R-OMS - MIF, LRG = LIF - R-OMS, SRG = LIF - MIF "
        "(areas over the occluded superpixel fraction; 0 for a random explainer; higher is better); "
        "mean over images, $\\pm$ half-width of the bootstrap 95\\% CI. MIF, LIF and R-OMS areas are "
        "in analysis/per\\_image.parquet.",
        "tex_label": "tab:srg",
    },
    "road_scores": {
        "select": in_table("road_scores"),
        "caption": "ROAD (Rong et al. 2022) with noisy-linear imputation: area under p(original prediction) and "
        "under accuracy over the removed fraction, MoRF (lower better) and LeRF (higher better); "
        "mean over images, $\\pm$ half-width of the bootstrap 95\\% CI.",
        "tex_label": "tab:road",
    },
    "ffidelity_scores": {
        "select": in_table("ffidelity_scores"),
        "caption": "F-Fidelity (seeds/004) with the fine-tuned surrogate, and plain Fidelity / R-Fidelity with "
        "the original classifier, averaged over sparsity levels; mean over images, $\\pm$ half-width "
        "of the bootstrap 95\\% CI.",
        "tex_label": "tab:ffidelity",
    },
    "appendix_scores": {
        "select": in_table("appendix_scores"),
        # built from the captions of the curves it shows (CurveSpec.caption): appendix_caption
        "caption": None,
        "tex_label": "tab:appendix-scores",
    },
}


def appendix_caption(curves, latex: bool = True) -> str:
    """The appendix score table's caption: each shown curve's CurveSpec.caption
    (its label where it has none), once each, in column order."""
    from fudbench.evaluators import find_curve

    parts = []
    for curve in curves:
        spec = find_curve(curve)
        text = (spec.caption or spec.label) if spec is not None else curve
        if text not in parts:
            parts.append(text)
    ci = "$\\pm$ half-width of the bootstrap 95\\% CI" if latex else "+- half-width of the bootstrap 95% CI"
    return f"Appendix protocols' scores: {'; '.join(parts)}; mean over images, {ci}."


def score_table_caption(name: str, curves, latex: bool = True) -> str:
    """The caption of score table `name` showing `curves`."""
    return appendix_caption(curves, latex) if name == "appendix_scores" else SCORE_TABLES[name]["caption"]


def tables_of(evaluators: dict) -> set[str]:
    """The tables a config's evaluators contribute to: score tables (Table 7, the
    appendix score tables) and sample tables (2, 3, 8 for the main evaluators;
    9, 11 for the appendix protocols, FUD being only their reference row)."""
    from fudbench.evaluators import configured_curves
    from fudbench.evaluators.base import APPENDIX_SAMPLES, MAIN_SAMPLES

    out = set()
    for c in configured_curves(evaluators).values():
        out.update({c.table} if c.table else set())
        if MAIN_SAMPLES in c.samples_tables:
            out.update(("table2_ood", "table8_ood", "table3_quality"))
        elif APPENDIX_SAMPLES in c.samples_tables:
            out.update(("table9_quality", "table11_ood"))
    return out
