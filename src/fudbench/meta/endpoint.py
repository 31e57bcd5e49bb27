"""The pre-registered primary endpoint of the meta-evaluation (studies/round3_endpoint/README.md,
its pre-registration, committed before the run that decides it).

Question: does scoring both ends of a map's ranking (FUD symmetric: AUC of
keep-top minus AUC of keep-bottom) recover a known order better than the
paper's keep-top FUD, once spatial scatter is held fixed?

Cells: every (model, family) of a scatter-matched family (analysis.meta:
`translate` -> "<base>_shifted", `block_shuffle` -> "<base>_blocks") that
passes the family gate on that model (analysis.gate), plus, where given, the
planted cue's cells (analysis.cue: the order of the explainers' cue coverage),
one per model.
Statistic per cell: the mean over images of r_i(challenger) - r_i(paper FUD),
r_i the per-image recovery (claims.per_image_recovery: the per-image Spearman
of the oriented scores with the known order). Interval and p-value:
inference.mean_interval with bounds (-2, 2).
Comparisons: primary `fud_symmetric` vs `fud`; secondary `fud_bottom` vs `fud`
(keep-bottom alone, oriented: lower AUC is better).
Multiplicity: Holm within each comparison over all of its cells (models x
gated families, plus the cue cells when the joint verdict is formed:
`joint_holm`). A cell's verdict: "challenger better" / "paper better" where
the Holm-adjusted p < 0.05, else "undecided".
Macro recovery (descriptive, not tested): the recovery of the per-member
mean scores of each metric with its compatible-orders interval
(order_stats.compatible_interval), and their difference. The per-image
statistic rewards lower per-image noise as well as a better order (the
design review of issue 38: a challenger that is paper FUD run twice and
averaged is called better with probability 0.96 at 64 images); whether the
ORDER itself differs is read from the macro recoveries: where both metrics'
intervals lie near +1, they order the family alike and a per-image verdict
says "more sensitive per image", not "more faithful".
Amendments after the design review, before any endpoint cell was read
(studies/round3_endpoint/README.md, "Deviations and amendments"): the family gate
also requires the family's order on the truth; the cue's cells form their
own Holm family (they rank different explainers, which differ in scatter:
not scatter-matched), labelled "cue primary" / "cue secondary".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.meta.inference import holm, mean_interval

COMPARISONS = (("primary", "fud_symmetric", "fud"), ("secondary", "fud_bottom", "fud"))
SCATTER_MATCHED_SUFFIXES = ("_shifted", "_blocks", "_displaced", "_graded")
ALPHA = 0.05
COLUMNS = [
    "endpoint",
    "challenger",
    "paper",
    "model",
    "family",
    "source",
    "estimate",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "n_cells",
    "verdict",
    "macro_challenger",
    "macro_challenger_low",
    "macro_challenger_high",
    "macro_paper",
    "macro_paper_low",
    "macro_paper_high",
    "macro_difference",
    "n_images",
]


def scatter_matched(family: str) -> bool:
    return family.endswith(SCATTER_MATCHED_SUFFIXES)


def endpoint_cells(
    per_image: pd.DataFrame,
    explainers: dict,
    curve_scores: dict,
    gate: pd.DataFrame | None,
    ci: float = 0.95,
    comparisons=COMPARISONS,
) -> pd.DataFrame:
    """Unadjusted cells of the comparisons ((endpoint, challenger, comparator)
    triples; default: round three's two) (COLUMNS less p_holm, n_cells,
    verdict) on the run's scatter-matched families that pass the gate.
    Without a gate table no family passes (the endpoint needs its licence)."""
    from fudbench.meta.claims import _scores, per_image_recovery
    from fudbench.meta.gate import passing
    from fudbench.meta.families import degraded_explainers, family_members, family_order
    from fudbench.meta.order_stats import compatible_interval, recovery_rows

    degraded = degraded_explainers(explainers)
    ok = passing(gate)
    rows = []
    for endpoint, challenger, paper in comparisons:
        if challenger not in curve_scores or paper not in curve_scores:
            continue
        signs = {c: 1.0 if curve_scores[c][1] else -1.0 for c in (challenger, paper)}
        for model in sorted(per_image["model"].unique()):
            for family, members in family_members(degraded).items():
                if not scatter_matched(family) or not ok.get((model, family), False):
                    continue
                levels = [degraded[e][1] for e in members]
                order = family_order(family)
                r = {
                    c: per_image_recovery(per_image, model, c, signs[c], members, levels, order)
                    for c in (challenger, paper)
                }
                diff = (r[challenger] - r[paper]).dropna()
                if diff.empty:
                    continue
                est, lo, hi, p = mean_interval(diff.to_numpy(), (-2.0, 2.0), ci)
                macro, macro_ci = {}, {}
                for c in (challenger, paper):
                    wide = _scores(per_image, model, c, members, signs[c]).to_numpy()
                    macro[c] = float(recovery_rows(wide.mean(0)[None], levels, order)[0]) if len(wide) else np.nan
                    macro_ci[c] = compatible_interval(wide, levels, order, ci) if len(wide) > 1 else (np.nan, np.nan)
                rows.append(
                    {
                        "endpoint": endpoint,
                        "challenger": challenger,
                        "paper": paper,
                        "model": model,
                        "family": family,
                        "source": "families",
                        "estimate": est,
                        "ci_low": lo,
                        "ci_high": hi,
                        "p": p,
                        "macro_challenger": macro[challenger],
                        "macro_challenger_low": macro_ci[challenger][0],
                        "macro_challenger_high": macro_ci[challenger][1],
                        "macro_paper": macro[paper],
                        "macro_paper_low": macro_ci[paper][0],
                        "macro_paper_high": macro_ci[paper][1],
                        "macro_difference": macro[challenger] - macro[paper],
                        "n_images": len(diff),
                    }
                )
    return pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("p_holm", "n_cells", "verdict")])


def joint_holm(cells: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """cells (families and cue, any sources) with p_holm (Holm within each
    endpoint over all of its cells), n_cells and the verdict."""
    out = cells.copy()
    out["p_holm"] = np.nan
    out["n_cells"] = 0
    for endpoint, idx in out.groupby("endpoint").groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p"].to_numpy(dtype=float))
        out.loc[idx, "n_cells"] = int(np.isfinite(out.loc[idx, "p"].to_numpy(dtype=float)).sum())
    out["verdict"] = [
        ("challenger better" if e > 0 else "paper better") if np.isfinite(q) and q < alpha and e != 0 else "undecided"
        for e, q in zip(out["estimate"], out["p_holm"])
    ]
    return out.reindex(columns=COLUMNS)


def endpoint_table(
    per_image, explainers, curve_scores, gate, cue_cells: pd.DataFrame | None = None, ci: float = 0.95
) -> pd.DataFrame:
    """The endpoint's cells with Holm's adjustment (joint_holm), the cue's cells
    (same columns, source "cue") included where given."""
    cells = endpoint_cells(per_image, explainers, curve_scores, gate, ci)
    if cue_cells is not None and not cue_cells.empty:
        cells = pd.concat([cells, cue_cells.assign(source="cue")], ignore_index=True)
    return joint_holm(cells)
