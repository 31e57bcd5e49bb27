"""Round four of the meta-evaluation (docs/meta_evaluation.md, "Round four", pre-registered in commit 4db201a).

Truth: the planted cue. Families: the cue mask made strict, displaced (`oracle_shifted`) or tile-shuffled
(`oracle_blocks`). Per cell (model x family) the per-image recovery r_i (claims.per_image_recovery: the
Spearman of the members' oriented scores with the known order) of a challenger minus a comparator, its
mean with inference.mean_interval (bounds (-2, 2)), Holm within each comparison (analysis.endpoint).

- `with_avg2`: the compute-matched comparator FUD-avg2, per image and map the mean of the keep-top AUCs
  of two independent fill-noise draws (`fud` and `fud@fud_draw1`), added as the curve `fud_avg2`;
- `kept_cue_share` / `protocol_gate`: the gate's truth from the maps alone (no metric): per image, the
  share of the cue's pixels inside the keep-top set of each ratio (the protocol's own sets:
  masks.n_pixels), averaged over the ratios; a family passes on a model where the model's cue
  intervention passed and the members are in order on that truth (mean per-image Spearman with the known
  order, 95% interval above 0; analysis.gate.family_gate's order condition);
- `round4_cells`: the primary and secondary comparisons;
- `replication_table`: each primary-run cell beside the same cell of the replication run (models
  cnn_seed1 / vit_seed1 on other images, models and noise) and the pre-registered "replicates" label;
- `equivalence_cells`: FUD-25L vs the paper's FUD at 100 steps, per cell the 90% interval of the mean
  recovery difference and whether it lies within +-margin (two one-sided tests at 5%).
Torch-free: the tool passes arrays in (tools/round4_table.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.analysis.endpoint import ALPHA, joint_holm
from fudbench.analysis.inference import mean_interval

AVG2, DRAW1 = "fud_avg2", "fud@fud_draw1"
COMPARISONS = (("primary", "fud_symmetric", AVG2), ("S1 bottom vs avg2", "fud_bottom", AVG2),
               ("S2 symmetric vs single", "fud_symmetric", "fud"), ("S3 avg2 vs single", AVG2, "fud"))
# higher is better?  (fud_bottom: keep-bottom area, lower is better)
CURVE_DIRECTIONS = {"fud": True, "fud_symmetric": True, "fud_bottom": False, AVG2: True, "fud@fud_100": True}
EQUIVALENCE_MARGIN = 0.25
REPLICATES = {"cnn": "cnn_seed1", "vit": "vit_seed1"}


def curve_scores(curves=CURVE_DIRECTIONS) -> dict:
    """{curve: (label, higher is better, None)} in analysis.curves.CURVE_SCORES' shape."""
    return {c: (c, better, None) for c, better in curves.items()}


def with_avg2(per_image: pd.DataFrame, top: str = "fud", draw: str = DRAW1) -> pd.DataFrame:
    """per_image plus the rows of curve `fud_avg2`: per (model, explainer, image) the mean of the two draws'
    keep-top scores (where both exist)."""
    keys = ["model", "explainer", "image"]
    a = per_image[per_image["curve"] == top].set_index(keys)["score"]
    b = per_image[per_image["curve"] == draw].set_index(keys)["score"]
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    avg = both.mean(axis=1).rename("score").reset_index().assign(curve=AVG2)
    return pd.concat([per_image, avg.reindex(columns=per_image.columns)], ignore_index=True)


def kept_cue_share(scores: np.ndarray, cue: np.ndarray, ratios) -> np.ndarray:
    """scores (N, H, W) per-pixel map values, cue (N, H, W) bool: per image the share of the cue's
    pixels inside the top round(rho HW) pixels (descending, stable), averaged over `ratios`."""
    from fudbench.masks import n_pixels

    n, h, w = scores.shape
    order = np.argsort(-scores.reshape(n, -1), axis=1, kind="stable")
    flat_cue = cue.reshape(n, -1).astype(bool)
    sizes = flat_cue.sum(1)
    out = np.zeros(n)
    ranked_cue = np.take_along_axis(flat_cue, order, axis=1).cumsum(1)  # cue pixels among the top k
    for rho in ratios:
        k = n_pixels(float(rho), h * w)
        out += ranked_cue[:, k - 1] / np.maximum(sizes, 1)
    return out / len(ratios)


def intervention_passes(intervention: pd.DataFrame) -> dict[str, bool]:
    """{model: every condition's check is 'ok'} of a cue_intervention table."""
    return {m: bool((d["check"] == "ok").all()) for m, d in intervention.groupby("model")}


def protocol_gate(truth: pd.DataFrame, explainers: dict, intervention: pd.DataFrame,
                  random_entry: str = "random", ci: float = 0.95) -> pd.DataFrame:
    """analysis.gate.family_gate on the kept-cue-share truth (columns model, explainer, image, value), with
    `passes` = the model's intervention passed and the members are in order on the truth (the
    best-member-vs-random columns are reported, not required: the pre-registered gate), plus the column
    `intervention_ok`."""
    from fudbench.analysis.gate import family_gate
    from fudbench.analysis.meta import degraded_explainers

    gate = family_gate(truth, degraded_explainers(explainers), random_entry, truth_name="kept_cue_share", ci=ci)
    ok = intervention_passes(intervention)
    gate["intervention_ok"] = gate["model"].map(lambda m: ok.get(m, False))
    gate["passes"] = gate["intervention_ok"] & (gate["order_low"] > 0)
    return gate


def round4_cells(per_image: pd.DataFrame, explainers: dict, gate: pd.DataFrame, comparisons=COMPARISONS,
                 ci: float = 0.95) -> pd.DataFrame:
    """The cells of every comparison (analysis.endpoint's COLUMNS), Holm within each comparison."""
    from fudbench.analysis.endpoint import endpoint_cells

    cells = endpoint_cells(with_avg2(per_image), explainers, curve_scores(), gate, ci, comparisons=comparisons)
    return joint_holm(cells)


def replication_table(primary: pd.DataFrame, replication: pd.DataFrame, pairs: dict = REPLICATES,
                      alpha: float = ALPHA) -> pd.DataFrame:
    """One row per primary cell: its estimate, interval, p_holm and verdict, the replication run's cell of
    the paired model (same comparison and family) and `replication`: "replicates" (decided the same way),
    "fails to replicate" (decided the other way), "not replicated (undecided)", or "no replication cell"."""
    keep = ["endpoint", "challenger", "paper", "family", "estimate", "ci_low", "ci_high", "p_holm", "verdict",
            "n_images"]
    rep = replication.assign(model=replication["model"].map({v: k for k, v in pairs.items()}))
    out = primary.merge(rep[["model", *keep]], on=["model", "endpoint", "challenger", "paper", "family"], how="left",
                        suffixes=("", "_rep"))
    labels = []
    for r in out.itertuples():
        if not isinstance(r.verdict_rep, str):
            labels.append("no replication cell")
        elif r.verdict_rep == "undecided":
            labels.append("not replicated (undecided)")
        elif r.verdict == "undecided":
            labels.append("decided in the replication only")
        elif r.verdict_rep == r.verdict:
            labels.append("replicates")
        else:
            labels.append("fails to replicate")
    out["replication_model"] = out["model"].map(pairs)
    out["replication"] = labels
    return out


def equivalence_cells(per_image: pd.DataFrame, explainers: dict, gate: pd.DataFrame, cheap: str = "fud",
                      paper: str = "fud@fud_100", margin: float = EQUIVALENCE_MARGIN) -> pd.DataFrame:
    """Per cell: the mean of r_i(cheap) - r_i(paper) with its 90% interval (inference.mean_interval) and
    `equivalent` = the interval within [-margin, margin] (two one-sided tests at 5%); the 95% cell
    columns of analysis.endpoint beside."""
    from fudbench.analysis.endpoint import endpoint_cells

    scores = curve_scores({cheap: True, paper: True})
    wide95 = endpoint_cells(per_image, explainers, scores, gate, 0.95, comparisons=(("equivalence", cheap, paper),))
    wide90 = endpoint_cells(per_image, explainers, scores, gate, 0.90, comparisons=(("equivalence", cheap, paper),))
    out = wide95.merge(wide90[["model", "family", "ci_low", "ci_high"]], on=["model", "family"],
                       suffixes=("", "_90"))
    out["margin"] = margin
    out["equivalent"] = (out["ci_low_90"] >= -margin) & (out["ci_high_90"] <= margin)
    return out


def equivalence_verdict(cells: pd.DataFrame, expected_cells: int = 4) -> str:
    """The pre-registered rule: FUD-25L is "paper FUD" only if every cell (all `expected_cells`) is equivalent."""
    if len(cells) < expected_cells:
        return f"not shown: {len(cells)} of {expected_cells} cells passed the gate or ran"
    return "equivalent in every cell" if bool(cells["equivalent"].all()) else \
        f"not shown equivalent ({int((~cells['equivalent']).sum())} of {len(cells)} cells)"


def summary_interval(values, bounds=(-2.0, 2.0), ci: float = 0.95) -> tuple:
    return mean_interval(np.asarray(values, float), bounds, ci)
