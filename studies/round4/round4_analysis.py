"""Round four of the meta-evaluation (studies/round4/README.md, pre-registered in commit 4db201a).

A study-only module (was fudbench.analysis.round4): its tools (round4_table.py) and tests
(tests/test_round4.py) put studies/round4 on sys.path and `import round4_analysis`.

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
  recovery difference and whether it lies within +-margin (two one-sided tests at 5%);
- `keep_top_boundary` / `scatter_only_scores`: a metric that sees nothing but the scatter of the protocol's
  keep-top sets (no model, no fill), run through the same cells: what a family's order hands a metric
  that rewards compact kept sets whatever they show (the standards' check of a ground truth).
Torch-free: the tool passes arrays in (studies/round4/round4_table.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.meta.endpoint import ALPHA, joint_holm
from fudbench.meta.gate import keep_top_boundary  # noqa: F401  (the scatter-only metric's input)
from fudbench.meta.inference import mean_interval

AVG2, DRAW1, SCATTER_ONLY = "fud_avg2", "fud@fud_draw1", "scatter_only"
COMPARISONS = (
    ("primary", "fud_symmetric", AVG2),
    ("S1 bottom vs avg2", "fud_bottom", AVG2),
    ("S2 symmetric vs single", "fud_symmetric", "fud"),
    ("S3 avg2 vs single", AVG2, "fud"),
)
# higher is better?  (fud_bottom: keep-bottom area, lower is better)
CURVE_DIRECTIONS = {
    "fud": True,
    "fud_symmetric": True,
    "fud_bottom": False,
    AVG2: True,
    "fud@fud_100": True,
    SCATTER_ONLY: True,
}
EQUIVALENCE_MARGIN = 0.25
# the scatter-only metric against the FUD curves, in the cells of the primary comparison's families
SCATTER_COMPARISONS = (
    ("scatter-only vs avg2", SCATTER_ONLY, AVG2),
    ("scatter-only vs symmetric", SCATTER_ONLY, "fud_symmetric"),
)
REPLICATES = {"cnn": "cnn_seed1", "vit": "vit_seed1"}


def higher_is_better(curve: str) -> bool:
    """Round four's curves (CURVE_DIRECTIONS), else the evaluator specs' (insertion, road_morf, ...)."""
    from fudbench.analysis.curves import curve_score

    if curve in CURVE_DIRECTIONS:
        return CURVE_DIRECTIONS[curve]
    found = curve_score(curve)
    if found is None:
        raise KeyError(f"no direction known for curve {curve!r}")
    return bool(found[1])


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


def kept_cue_share(scores: np.ndarray, cue: np.ndarray, ratios, completion: bool = False) -> np.ndarray:
    """scores (N, H, W) per-pixel map values, cue (N, H, W) bool: per image the share of the cue's
    pixels inside the top round(rho HW) pixels (descending, stable), averaged over `ratios`. With
    `completion`, the share of ratios at which at least one cue pixel is kept (the truth if the fill
    completed any partly kept cue: the design review's F1)."""
    from fudbench.core.masks import n_pixels

    n, h, w = scores.shape
    order = np.argsort(-scores.reshape(n, -1), axis=1, kind="stable")
    flat_cue = cue.reshape(n, -1).astype(bool)
    sizes = flat_cue.sum(1)
    out = np.zeros(n)
    ranked_cue = np.take_along_axis(flat_cue, order, axis=1).cumsum(1)  # cue pixels among the top k
    for rho in ratios:
        k = n_pixels(float(rho), h * w)
        out += (ranked_cue[:, k - 1] > 0) if completion else ranked_cue[:, k - 1] / np.maximum(sizes, 1)
    return out / len(ratios)


def scatter_only_scores(boundary: pd.DataFrame) -> pd.DataFrame:
    """Rows (model, explainer, image, curve, score) of the scatter-only metric: minus the keep-top boundary
    share (columns model, explainer, image, value), higher = more compact kept sets."""
    return boundary.assign(curve=SCATTER_ONLY, score=-boundary["value"])[
        ["model", "explainer", "image", "curve", "score"]
    ]


def family_recovery(per_image: pd.DataFrame, explainers: dict, curves, ci: float = 0.95) -> pd.DataFrame:
    """Per (model, family, curve): the mean per-image recovery r_i with its interval and the share of images
    ordered perfectly (r_i = 1), on every family (no gate)."""
    from fudbench.meta.claims import per_image_recovery
    from fudbench.meta.families import degraded_explainers, family_members, family_order

    degraded = degraded_explainers(explainers)
    p = with_avg2(per_image)
    rows = []
    for model in sorted(p["model"].unique()):
        for family, members in family_members(degraded).items():
            levels = [degraded[e][1] for e in members]
            for curve in curves:
                r = per_image_recovery(
                    p, model, curve, 1.0 if higher_is_better(curve) else -1.0, members, levels, family_order(family)
                ).to_numpy()
                if len(r) < 2:
                    continue
                est, lo, hi, _ = mean_interval(r, (-1.0, 1.0), ci)
                rows.append(
                    {
                        "model": model,
                        "family": family,
                        "curve": curve,
                        "recovery": est,
                        "ci_low": lo,
                        "ci_high": hi,
                        "perfect_share": float((r > 1 - 1e-9).mean()),
                        "n_images": len(r),
                    }
                )
    return pd.DataFrame(rows)


def equal_share_reactions(
    per_image: pd.DataFrame,
    truth: pd.DataFrame,
    boundary: pd.DataFrame,
    explainers: dict,
    curves=("fud", AVG2, "fud_bottom", "fud_symmetric"),
    tol: float = 1e-12,
) -> pd.DataFrame:
    """How each curve reacts to scatter where the evidence is equal (exploratory; the referee's check of
    round four). For every family, image and pair of members (the less degraded first): the difference of
    the kept cue share (truth), of the keep-top boundary share (the second minus the first: how much more
    scattered the more degraded member's kept sets are) and of each curve's oriented score (first minus
    second). Per (model, family, curve): among the pairs with equal kept cue share, how many, their mean
    boundary difference, the share in which the first (more compact) member scores higher and a two-sided
    sign test over the untied pairs; and over all pairs the least-squares coefficients of the score
    difference on the share and boundary differences (negative on the boundary: the curve prefers the
    scattered member at equal share). Pairs of one image are not independent: a description, not a test
    that decides anything."""
    from scipy.stats import binomtest

    from fudbench.meta.families import degraded_explainers, family_members

    degraded = degraded_explainers(explainers)
    p = with_avg2(per_image)
    rows = []
    for model in sorted(p["model"].unique()):
        t = truth[truth["model"] == model].pivot_table(index="image", columns="explainer", values="value")
        b = boundary[boundary["model"] == model].pivot_table(index="image", columns="explainer", values="value")
        for family, members in family_members(degraded).items():
            members = sorted((e for e in members if e in t.columns), key=lambda e: degraded[e][1])
            for curve in curves:
                w = p[(p["model"] == model) & (p["curve"] == curve)].pivot_table(
                    index="image", columns="explainer", values="score"
                )
                if not set(members) <= set(w.columns):
                    continue
                images = w.index.intersection(t.index).intersection(b.index)
                sign = 1.0 if CURVE_DIRECTIONS[curve] else -1.0
                d_share, d_bound, d_score = [], [], []
                for i, first in enumerate(members):
                    for second in members[i + 1 :]:
                        d_share.append((t.loc[images, first] - t.loc[images, second]).to_numpy())
                        d_bound.append((b.loc[images, second] - b.loc[images, first]).to_numpy())
                        d_score.append(sign * (w.loc[images, first] - w.loc[images, second]).to_numpy())
                ds, db, dy = (np.concatenate(x) for x in (d_share, d_bound, d_score))
                equal = np.abs(ds) < tol
                untied = dy[equal][dy[equal] != 0]
                coef = np.linalg.lstsq(np.c_[np.ones(len(ds)), ds, db], dy, rcond=None)[0]
                rows.append(
                    {
                        "model": model,
                        "family": family,
                        "curve": curve,
                        "equal_pairs": int(equal.sum()),
                        "equal_boundary_difference": float(db[equal].mean()) if equal.any() else np.nan,
                        "compact_higher_share": float((dy[equal] > 0).mean()) if equal.any() else np.nan,
                        "sign_p": float(binomtest(int((untied > 0).sum()), len(untied)).pvalue)
                        if len(untied)
                        else np.nan,
                        "ols_share": float(coef[1]),
                        "ols_boundary": float(coef[2]),
                        "pairs": len(ds),
                    }
                )
    return pd.DataFrame(rows)


def scatter_pair_reactions(per_image: pd.DataFrame, pair: tuple[str, str], curves, ci: float = 0.95) -> pd.DataFrame:
    """Per (model, curve): the mean per-image oriented score of the pair's compact member minus its
    scattered member (claims.scatter_reaction; > 0: the curve favours compact kept sets) with its interval
    (inference.mean_interval, bounds (-1, 1): AUC-like scores), Holm over the models within each curve."""
    from fudbench.meta.claims import scatter_reaction
    from fudbench.meta.inference import holm

    rows = []
    for curve in curves:
        first = len(rows)
        for model in sorted(per_image["model"].unique()):
            r = scatter_reaction(per_image, model, curve, 1.0 if higher_is_better(curve) else -1.0, pair)
            v = r.dropna().to_numpy(dtype=float)
            if len(v) < 2:
                continue
            est, lo, hi, p = mean_interval(np.clip(v, -1.0, 1.0), (-1.0, 1.0), ci)
            rows.append(
                {
                    "model": model,
                    "curve": curve,
                    "reaction": est,
                    "ci_low": lo,
                    "ci_high": hi,
                    "p": p,
                    "compact_higher_share": float((v > 0).mean()),
                    "n_images": len(v),
                }
            )
        for row, p_adj in zip(rows[first:], holm([r["p"] for r in rows[first:]])):
            row["p_holm"] = float(p_adj)
    return pd.DataFrame(rows)


def pairwise_order(truth: pd.DataFrame, degraded: dict, ci: float = 0.95, min_strict: float = 0.5) -> pd.DataFrame:
    """Per (model, family, adjacent member pair): the mean per-image truth difference better - worse with
    its interval (inference.mean_interval, bounds (-1, 1)), the share of images strictly ordered, and
    `ordered` = interval above 0 and that share >= min_strict (the amended gate's condition)."""
    from fudbench.meta.families import family_members

    rows = []
    for model, d in truth.groupby("model", sort=True):
        m = d.pivot_table(index="image", columns="explainer", values="value", aggfunc="mean")
        for family, members in family_members(degraded).items():
            present = sorted((e for e in members if e in m.columns), key=lambda e: degraded[e][1])
            for better, worse in zip(present, present[1:]):
                diff = (m[better] - m[worse]).dropna().to_numpy()
                est, lo, hi, p = mean_interval(diff, (-1.0, 1.0), ci)
                strict = float((diff > 1e-12).mean()) if len(diff) else np.nan
                rows.append(
                    {
                        "model": model,
                        "family": family,
                        "better": better,
                        "worse": worse,
                        "estimate": est,
                        "ci_low": lo,
                        "ci_high": hi,
                        "strict_share": strict,
                        "ordered": bool(np.isfinite(lo) and lo > 0 and strict >= min_strict),
                        "n_images": len(diff),
                    }
                )
    return pd.DataFrame(rows)


def intervention_passes(intervention: pd.DataFrame) -> dict[str, bool]:
    """{model: every condition's check is 'ok'} of a cue_intervention table."""
    return {m: bool((d["check"] == "ok").all()) for m, d in intervention.groupby("model")}


def protocol_gate(
    truth: pd.DataFrame,
    explainers: dict,
    intervention: pd.DataFrame,
    random_entry: str = "random",
    ci: float = 0.95,
    completion: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """analysis.gate.family_gate on the kept-cue-share truth (columns model, explainer, image, value), with
    `passes` = the model's intervention passed and every adjacent pair of members is ordered on the truth
    (pairwise_order: the amended gate; the whole-family order and best-vs-random columns are reported, not
    required), plus `intervention_ok`, `pairs_ordered` ("k of m") and, given the completion truth,
    `completion_pairs_ordered` (reported, not deciding)."""
    from fudbench.meta.gate import family_gate
    from fudbench.meta.families import degraded_explainers

    degraded = degraded_explainers(explainers)
    gate = family_gate(truth, degraded, random_entry, truth_name="kept_cue_share", ci=ci)
    ok = intervention_passes(intervention)
    gate["intervention_ok"] = gate["model"].map(lambda m: ok.get(m, False))
    pairs = pairwise_order(truth, degraded, ci)

    def counts(table, model, family):
        t = table[(table["model"] == model) & (table["family"] == family)] if len(table) else table
        return int(t["ordered"].sum()) if len(t) else 0, len(t)

    k_m = [counts(pairs, r.model, r.family) for r in gate.itertuples()]
    gate["pairs_ordered"] = [f"{k} of {m}" for k, m in k_m]
    gate["passes"] = gate["intervention_ok"] & pd.Series([m > 0 and k == m for k, m in k_m], index=gate.index)
    if completion is not None:
        done = pairwise_order(completion, degraded, ci)
        gate["completion_pairs_ordered"] = [
            ("{} of {}".format(*counts(done, r.model, r.family))) for r in gate.itertuples()
        ]
    return gate


def round4_cells(
    per_image: pd.DataFrame, explainers: dict, gate: pd.DataFrame, comparisons=COMPARISONS, ci: float = 0.95
) -> pd.DataFrame:
    """The cells of every comparison (analysis.endpoint's COLUMNS), Holm within each comparison."""
    from fudbench.meta.endpoint import endpoint_cells

    cells = endpoint_cells(with_avg2(per_image), explainers, curve_scores(), gate, ci, comparisons=comparisons)
    return joint_holm(cells)


def replication_table(
    primary: pd.DataFrame, replication: pd.DataFrame, pairs: dict = REPLICATES, alpha: float = ALPHA
) -> pd.DataFrame:
    """One row per primary cell: its estimate, interval, p_holm and verdict, the replication run's cell of
    the paired model (same comparison and family) and `replication`: "replicates" (decided the same way),
    "fails to replicate" (decided the other way), "not replicated (undecided)", or "no replication cell"."""
    keep = [
        "endpoint",
        "challenger",
        "paper",
        "family",
        "estimate",
        "ci_low",
        "ci_high",
        "p_holm",
        "verdict",
        "n_images",
    ]
    rep = replication.assign(model=replication["model"].map({v: k for k, v in pairs.items()}))
    out = primary.merge(
        rep[["model", *keep]],
        on=["model", "endpoint", "challenger", "paper", "family"],
        how="left",
        suffixes=("", "_rep"),
    )
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


def equivalence_cells(
    per_image: pd.DataFrame,
    explainers: dict,
    gate: pd.DataFrame,
    cheap: str = "fud",
    paper: str = "fud@fud_100",
    margin: float = EQUIVALENCE_MARGIN,
) -> pd.DataFrame:
    """Per cell: the mean of r_i(cheap) - r_i(paper) with its 90% interval (inference.mean_interval) and
    `equivalent` = the interval within [-margin, margin] (two one-sided tests at 5%); the 95% cell
    columns of analysis.endpoint beside."""
    from fudbench.meta.endpoint import endpoint_cells

    scores = curve_scores({cheap: True, paper: True})
    wide95 = endpoint_cells(per_image, explainers, scores, gate, 0.95, comparisons=(("equivalence", cheap, paper),))
    wide90 = endpoint_cells(per_image, explainers, scores, gate, 0.90, comparisons=(("equivalence", cheap, paper),))
    out = wide95.merge(wide90[["model", "family", "ci_low", "ci_high"]], on=["model", "family"], suffixes=("", "_90"))
    out["margin"] = margin
    out["same_macro_order"] = [
        _same_mean_order(per_image, explainers, r.model, r.family, cheap, paper) for r in out.itertuples()
    ]
    out["equivalent"] = (out["ci_low_90"] >= -margin) & (out["ci_high_90"] <= margin) & out["same_macro_order"]
    return out


def _same_mean_order(per_image, explainers, model, family, a, b) -> bool:
    """Whether curves a and b order the family's members alike by their mean scores over the images both
    scored."""
    from fudbench.meta.families import degraded_explainers, family_members

    members = family_members(degraded_explainers(explainers))[family]
    d = per_image[(per_image["model"] == model) & per_image["explainer"].isin(members)]
    w = d.pivot_table(index="image", columns=["curve", "explainer"], values="score")
    if a not in w.columns.get_level_values(0) or b not in w.columns.get_level_values(0):
        return False
    w = w.dropna()
    return list(w[a][members].mean().rank()) == list(w[b][members].mean().rank())


def cell_differences(
    per_image: pd.DataFrame, explainers: dict, model: str, family: str, challenger: str, comparator: str
) -> pd.Series:
    """Per image: r_i(challenger) - r_i(comparator) of one cell (claims.per_image_recovery)."""
    from fudbench.meta.claims import per_image_recovery
    from fudbench.meta.families import degraded_explainers, family_members, family_order

    degraded = degraded_explainers(explainers)
    members = family_members(degraded)[family]
    levels = [degraded[e][1] for e in members]
    p = with_avg2(per_image)
    r = {
        c: per_image_recovery(p, model, c, 1.0 if CURVE_DIRECTIONS[c] else -1.0, members, levels, family_order(family))
        for c in (challenger, comparator)
    }
    return (r[challenger] - r[comparator]).dropna()


def pooled_table(
    primary: pd.DataFrame,
    replication: pd.DataFrame,
    primary_cells: pd.DataFrame,
    explainers: dict,
    pairs: dict = REPLICATES,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Per primary cell: the mean of the per-image differences of both runs (the model and its replication
    twin, 2 x the images) with its interval, and the heterogeneity check: the primary's minus the
    replication's estimate with a normal 95% interval from the two standard errors."""
    from scipy.stats import norm

    rows = []
    for r in primary_cells.itertuples():
        a = cell_differences(primary, explainers, r.model, r.family, r.challenger, r.paper).to_numpy()
        b = cell_differences(replication, explainers, pairs[r.model], r.family, r.challenger, r.paper).to_numpy()
        if len(a) < 2 or len(b) < 2:
            continue
        est, lo, hi, p = mean_interval(np.concatenate([a, b]), (-2.0, 2.0), ci)
        het = a.mean() - b.mean()
        se = float(np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)))
        z = float(norm.ppf(1 - (1 - ci) / 2))
        rows.append(
            {
                "endpoint": r.endpoint,
                "challenger": r.challenger,
                "paper": r.paper,
                "model": r.model,
                "family": r.family,
                "pooled": est,
                "pooled_low": lo,
                "pooled_high": hi,
                "pooled_p": p,
                "n_images": len(a) + len(b),
                "heterogeneity": het,
                "heterogeneity_low": het - z * se,
                "heterogeneity_high": het + z * se,
            }
        )
    return pd.DataFrame(rows)


def score_tie_share(
    per_image: pd.DataFrame, explainers: dict, curves=("fud", AVG2, "fud_bottom", "fud_symmetric")
) -> pd.DataFrame:
    """Per (model, family, curve): the share of (image, adjacent member pair) whose scores are exactly equal
    (a saturated softmax gives equal AUCs; Spearman then gives partial credit: the review's F7)."""
    from fudbench.meta.families import degraded_explainers, family_members

    degraded = degraded_explainers(explainers)
    p = with_avg2(per_image)
    rows = []
    for (model, curve), d in p[p["curve"].isin(curves)].groupby(["model", "curve"]):
        w = d.pivot_table(index="image", columns="explainer", values="score")
        for family, members in family_members(degraded).items():
            present = [e for e in sorted(members, key=lambda e: degraded[e][1]) if e in w.columns]
            if len(present) < 2:
                continue
            v = w[present].dropna().to_numpy()
            rows.append(
                {"model": model, "family": family, "curve": curve, "tie_share": float((np.diff(v, axis=1) == 0).mean())}
            )
    return pd.DataFrame(rows)


def equivalence_verdict(cells: pd.DataFrame, expected_cells: int = 4) -> str:
    """The pre-registered rule: FUD-25L is "paper FUD" only if every cell (all `expected_cells`) is equivalent."""
    if len(cells) < expected_cells:
        return f"not shown: {len(cells)} of {expected_cells} cells passed the gate or ran"
    return (
        "equivalent in every cell"
        if bool(cells["equivalent"].all())
        else f"not shown equivalent ({int((~cells['equivalent']).sum())} of {len(cells)} cells)"
    )
