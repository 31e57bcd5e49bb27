"""The family gate: a degraded family's order assumes its base map beats random.

A family of known order (analysis.meta: degrade, translate, block_shuffle,
randomise_model) says "less degraded is more faithful" only if the base map
(its best member) carries evidence in the first place: translating or
shuffling a map that is no better than chance changes nothing a metric could
recover, and a metric that "reverses" such a family is not wrong. The gate
asks an independent truth, not any evaluation under test: the share of the
map's mass inside the object mask (analysis.localisation.mass_inside; on the
synthetic benchmark the object decides the class). Per model and family, two
conditions, both on that truth (unadjusted 95%: the gate is a licence, and a
stricter gate would only drop more families; the table keeps the intervals
either way):
- the base carries evidence: the paired per-image difference best member
  minus `random` (inference.mean_interval, bounds (-1, 1)) lies above 0;
- the family's order holds on the truth itself (added after the design
  review of issue 38, before any endpoint cell was read): the mean over
  images of the per-image Spearman of the members' truth values with the
  known order (order_stats.recovery_rows) lies above 0. A base only weakly
  better than random can pass the first condition while its translated
  copies are not ordered image by image (Saliency's d = 0 vs 2 pair was
  reversed on 30% of the images in the review's check).
For the oracle mask both hold by construction (mass inside is 1 at d = 0 and
falls with every shift): its gate is a check of the construction, not of a
model.

`scatter_check` (reported beside the gate, not deciding it; issue 44): how
well a metric that sees nothing but the scatter of the protocol's keep-top
sets (keep_top_boundary) recovers each family's order. Where it does (its
interval above 0), the family's members differ in scatter as well as in
evidence, and a metric's win there may be a preference for compact kept sets:
round four's 2x2 block-shuffled cue maps were ordered perfectly by it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.meta.inference import mean_interval

COLUMNS = [
    "model",
    "family",
    "best_member",
    "truth",
    "best_mean",
    "random_mean",
    "estimate",
    "ci_low",
    "ci_high",
    "p",
    "order_estimate",
    "order_low",
    "order_high",
    "order_p",
    "passes",
    "n_images",
]


def family_gate(
    truth: pd.DataFrame, degraded: dict, random_entry: str, truth_name: str = "mass_inside", ci: float = 0.95
) -> pd.DataFrame:
    """truth: columns model, explainer, image, value (the independent truth per
    map and image); degraded: {explainer: (family, level)}
    (meta.degraded_explainers). One row per (model, family) with COLUMNS."""
    from fudbench.meta.families import family_members

    rows = []
    for model, d in truth.groupby("model", sort=True):
        m = d.pivot_table(index="image", columns="explainer", values="value", aggfunc="mean")
        for family, members in family_members(degraded).items():
            best = members[0]
            if best not in m.columns or random_entry not in m.columns:
                continue
            pair = m[[best, random_entry]].dropna()
            diff = (pair[best] - pair[random_entry]).to_numpy()
            est, lo, hi, p = mean_interval(diff, (-1.0, 1.0), ci)
            order = dict(
                zip(
                    ("order_estimate", "order_low", "order_high", "order_p"),
                    order_interval(m, members, degraded, family, ci),
                )
            )
            ordered = bool(np.isfinite(order["order_low"]) and order["order_low"] > 0)
            rows.append(
                {
                    "model": model,
                    "family": family,
                    "best_member": best,
                    "truth": truth_name,
                    "best_mean": float(pair[best].mean()),
                    "random_mean": float(pair[random_entry].mean()),
                    "estimate": est,
                    "ci_low": lo,
                    "ci_high": hi,
                    "p": p,
                    **order,
                    "passes": bool(np.isfinite(lo) and lo > 0 and ordered),
                    "n_images": len(diff),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def order_interval(values: pd.DataFrame, members, degraded: dict, family: str, ci: float = 0.95) -> tuple:
    """(mean, low, high, p) over images of the per-image Spearman of the members' values (columns of
    `values`, one row per image; higher = better) with the family's known order (order_stats.recovery_rows;
    an image whose values tie every member counts 0), inference.mean_interval with bounds (-1, 1); NaNs with
    fewer than two members present."""
    from fudbench.meta.families import family_order
    from fudbench.meta.order_stats import recovery_rows

    present = [e for e in members if e in values.columns]
    if len(present) < 2:
        return (np.nan,) * 4
    r = recovery_rows(values[present].dropna().to_numpy(), [degraded[e][1] for e in present], family_order(family))
    return mean_interval(np.where(np.isfinite(r), r, 0.0), (-1.0, 1.0), ci)


def keep_top_sets(scores: np.ndarray, ratios) -> np.ndarray:
    """(N, R, H, W) bool: per map and ratio the protocol's keep-top set, the top round(rho HW) pixels
    (descending; equal values in index order, as a stable sort leaves them)."""
    from fudbench.core.masks import n_pixels

    n, h, w = scores.shape
    order = np.argsort(-scores.reshape(n, -1), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(h * w), (n, h * w)), axis=1)
    return np.stack([rank < n_pixels(float(rho), h * w) for rho in ratios], 1).reshape(n, len(ratios), h, w)


def keep_top_boundary(scores: np.ndarray, ratios) -> np.ndarray:
    """scores (N, H, W): per image the share of 4-neighbour pixel pairs that straddle the keep-top set's
    edge, averaged over `ratios`. One compact blob gives a small share, the same pixels scattered a
    large one."""
    kept = keep_top_sets(scores, ratios)
    h, w = kept.shape[-2:]
    edges = (kept[..., 1:, :] != kept[..., :-1, :]).sum((-2, -1)) + (kept[..., 1:] != kept[..., :-1]).sum((-2, -1))
    return (edges / (2 * h * w - h - w)).mean(1)


SCATTER_COLUMNS = ["scatter_order_estimate", "scatter_order_low", "scatter_order_high", "scatter_ordered"]


def scatter_check(boundary: pd.DataFrame, degraded: dict, ci: float = 0.95) -> pd.DataFrame:
    """boundary: columns model, explainer, image, value (keep_top_boundary per map and image). Per (model,
    family): the mean per-image recovery of the family's order by the scatter-only metric (minus the
    boundary share: compact kept sets rank first) with its interval, and `scatter_ordered` = the interval
    lies above 0."""
    from fudbench.meta.families import family_members

    rows = []
    for model, d in boundary.groupby("model", sort=True):
        m = -d.pivot_table(index="image", columns="explainer", values="value", aggfunc="mean")
        for family, members in family_members(degraded).items():
            if sum(e in m.columns for e in members) < 2:
                continue
            est, lo, hi, _ = order_interval(m, members, degraded, family, ci)
            rows.append(
                {
                    "model": model,
                    "family": family,
                    "scatter_order_estimate": est,
                    "scatter_order_low": lo,
                    "scatter_order_high": hi,
                    "scatter_ordered": bool(np.isfinite(lo) and lo > 0),
                }
            )
    return pd.DataFrame(rows, columns=["model", "family", *SCATTER_COLUMNS])


def passing(gate: pd.DataFrame | None) -> dict[tuple[str, str], bool]:
    """{(model, family): passes} of a gate table (empty without one)."""
    if gate is None or gate.empty:
        return {}
    return {(r.model, r.family): bool(r.passes) for r in gate.itertuples()}
