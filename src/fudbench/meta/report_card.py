"""The metric report card: for each metric (every curve of every configured
evaluator entry, FUD variants included), on each model,

- per ground-truth family (analysis.meta: degraded copies of a base map, a
  total order; model randomisation, a partial order: f = 0 before each
  f > 0): the family's recovery statistic (+1 = recovered, -1 = reversed;
  the Spearman with the known order, or the concordance over the known
  pairs), its compatible-orders interval (analysis.order_stats: simultaneous
  paired t-intervals of the members' differences; a percentile bootstrap of
  so coarse a statistic under-covers), whether the interval reaches the
  +-`target_half_width` target, and the images the known pairs would need
  at 80% power (`images_needed`, with a status: "reversed" when a pair's
  mean opposes the known order);
- the seed-to-seed spread: classifiers whose config entries are identical
  but for their name are training seeds of one model (their training seeds
  derive from the name; their explain and evaluate noise from the seed
  group, fudbench.core.seeding); per family, max - min of the recovery over the
  seeds of the row's model;
- where the sanity anchors rank (`random`, `background`) among all the run's
  explainers (1 = best) against where a faithful metric ranks them
  (analysis.meta.anchor_expected_ranks), with a note where they differ;
- its agreement with the other metrics: mean Kendall tau-b between its
  ranking of all the run's explainers and each other metric's (NaN with
  fewer than 3 explainers);
- its cost: seconds per image (all steps and draws) of the evaluator entry
  that writes it, from the records' `seconds` (fill + classifier time; one-
  off costs such as F-Fidelity's fine-tuning are not included);
- `f_uninformative`: the family's interval spans UNINFORMATIVE_WIDTH (1.8)
  or more of the statistic's range of 2: the table prints "uninformative"
  instead of a result;
- the family gate (optional family_gate.csv, analysis.claims.read_gate):
  whether the family's base beats `random` on the model under an independent
  truth, with its interval (`f_gate`: passes | fails | not computed | no gate);
- its scatter reaction per scatter pair (analysis.meta.scatter_pairs): the
  per-image mean of its oriented score of the compact member minus the
  scattered one, with inference.mean_interval's interval at `ci` (bounds as
  in analysis.claims: the metric's value range, else the observed one).

The card's family interval is a macro one (the statistic of the per-member
mean scores, compatible orders); the claims' (analysis.claims) is for the
mean of the per-image statistic, Holm-adjusted: the two estimate different
things (noise on each image lowers the per-image statistic, not the macro
one) and may disagree on the same cell; report.meta's caption says so.

Pure numpy / pandas / scipy: the table job runs in the analysis env.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from fudbench.meta.families import (
    _image_matrix,
    anchor_expected_ranks,
    average_ranks,
    family_members,
    family_order,
    ground_truth_correlations,
    metric_agreement,
    score_kind,
)
from fudbench.meta.order_stats import ALPHA, POWER, images_needed  # noqa: F401 (images_needed: re-exported)
from fudbench.core.seeding import seed_groups  # noqa: F401 (re-exported: the card's seed_group column)

TARGET_HALF_WIDTH = 0.2
UNINFORMATIVE_WIDTH = 1.8  # of the recovery statistic's range of 2
STATISTIC = {"total": "spearman", "best_first": "known_pairs"}  # family order -> its recovery statistic


def entry_of_curves(evaluators: dict) -> dict[str, str]:
    """{curve: the config entry that writes it}, in config order."""
    from fudbench.evaluators import entry_curves

    return {c.name: name for name, settings in evaluators.items() for c in entry_curves(name, settings)}


def family_power(
    per_image: pd.DataFrame, degraded: dict, curve_scores: dict, power: float = POWER, alpha: float = ALPHA
) -> pd.DataFrame:
    """(model, family, curve) -> images_needed and its status (order_stats.images_needed)
    of the family's oriented per-image scores, over the pairs of known order."""
    rows = []
    for (model, curve), d in per_image.groupby(["model", "curve"], sort=False):
        if curve not in curve_scores:
            continue
        sign = 1.0 if curve_scores[curve][1] else -1.0
        for family, members in family_members(degraded).items():
            m = _image_matrix(d[d["explainer"].isin(members)], "score", members, "image")
            if not m.empty:
                n, status = images_needed(
                    sign * m.to_numpy(), [degraded[e][1] for e in members], family_order(family), power, alpha
                )
                rows.append(
                    {"model": model, "family": family, "curve": curve, "images_needed": n, "needed_status": status}
                )
    return pd.DataFrame(rows, columns=["model", "family", "curve", "images_needed", "needed_status"])


def anchor_note(ranks: dict, expected: dict, kind: str) -> str:
    """What is off about the anchors' ranks, '' when each is where expected
    (within half a place: ties get average ranks)."""
    off = {m: ranks[m] - expected[m] for m in ranks if m in expected}
    notes = [
        f"{m} {abs(d):g} place(s) {'above' if d < 0 else 'below'} its expected rank {expected[m]:g}"
        for m, d in off.items()
        if abs(d) > 0.5
    ]
    if {"random", "background"} <= set(ranks) and ranks["background"] < ranks["random"]:
        notes.append("background above random")
    if abs(off.get("background", 0.0)) > 0.5 and kind == "one-sided":
        notes.append("one-sided fill-based score: background last is expected, not guaranteed by construction")
    return "; ".join(notes)


def anchor_ranks(per_image: pd.DataFrame, anchors: dict, curve_scores: dict) -> pd.DataFrame:
    """(model, curve) -> rank of each anchor among all explainers with scores on
    the same images (1 = best, average ranks for ties), their number, the
    ranks a faithful metric gives the anchors and a note where they differ."""
    rows = []
    for (model, curve), d in per_image.groupby(["model", "curve"], sort=False):
        if curve not in curve_scores:
            continue
        m = d.pivot_table(index="image", columns="explainer", values="score", aggfunc="mean").dropna()
        if m.empty:
            continue
        sign = 1.0 if curve_scores[curve][1] else -1.0
        ranks = average_ranks(-sign * m.to_numpy().mean(0))  # 1 = best
        got = {
            method: float(ranks[list(m.columns).index(name)]) for name, method in anchors.items() if name in m.columns
        }
        expected = anchor_expected_ranks(got, m.shape[1])
        row = {
            "model": model,
            "curve": curve,
            "n_explainers": m.shape[1],
            "score_kind": score_kind(curve),
            "anchor_note": anchor_note(got, expected, score_kind(curve)),
        }
        for method, rank in got.items():
            row[f"{method}_rank"], row[f"{method}_expected_rank"] = rank, expected[method]
        rows.append(row)
    return pd.DataFrame(rows)


def mean_agreement(per_image: pd.DataFrame, curve_scores: dict) -> pd.DataFrame:
    """(model, curve) -> mean Kendall tau-b of the curve's explainer ranking with
    each other curve's, over all explainers, on the images every curve scored
    (the off-diagonal mean of analysis.meta.metric_agreement's matrix; NaN,
    with its note, below MIN_AGREEMENT_EXPLAINERS explainers)."""
    matrices, long = metric_agreement(
        per_image, sorted(per_image["explainer"].unique()), n_boot=0, curve_scores=curve_scores
    )
    notes = long.groupby("model")["note"].first().to_dict() if len(long) else {}
    curve_of = {label: curve for curve, (label, *_rest) in curve_scores.items()}
    rows = []
    for model, tau in matrices.items():
        off = tau.to_numpy(dtype=float).copy()
        np.fill_diagonal(off, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows (R-OMS ties every explainer)
            means = np.nanmean(off, axis=1)
        rows += [
            {
                "model": model,
                "curve": curve_of[label],
                "agreement_tau": float(m),
                "agreement_note": notes.get(model, ""),
            }
            for label, m in zip(tau.index, means)
        ]
    return pd.DataFrame(rows, columns=["model", "curve", "agreement_tau", "agreement_note"])


def entry_cost(seconds: pd.DataFrame, entries: dict) -> dict[tuple[str, str], float]:
    """{(model, entry): seconds per image}: an image's `seconds` summed over all
    curves of the entry, averaged over (explainer, image)."""
    d = seconds[seconds["curve"].isin(entries)].assign(entry=lambda f: f["curve"].map(entries))
    per_image = d.groupby(["model", "entry", "explainer", "image"])["seconds"].sum()
    return per_image.groupby(["model", "entry"]).mean().to_dict()


def _family_columns(
    card: pd.DataFrame, family: str, corr: pd.DataFrame, power: pd.DataFrame, target_half_width: float
) -> None:
    """The family's columns of the card (in place): f_statistic, f_recovery,
    f_ci_low, f_ci_high, f_ci, f_powered, f_uninformative, f_images_needed,
    f_needed_status, f_seed_spread."""
    f = family
    key = list(zip(card["model"], [f] * len(card), card["curve"]))
    rho = corr["recovery"].reindex(key).to_numpy()
    lo, hi = corr["ci_low"].reindex(key).to_numpy(), corr["ci_high"].reindex(key).to_numpy()
    card[f"{f}_statistic"] = STATISTIC[family_order(f)]
    card[f"{f}_recovery"], card[f"{f}_ci_low"], card[f"{f}_ci_high"] = rho, lo, hi
    card[f"{f}_ci"] = [f"[{a:.2f}, {b:.2f}]" if np.isfinite(a) and np.isfinite(b) else "" for a, b in zip(lo, hi)]
    with np.errstate(invalid="ignore"):
        card[f"{f}_powered"] = (hi - lo) / 2 <= target_half_width + 1e-9
        card[f"{f}_uninformative"] = (hi - lo) >= UNINFORMATIVE_WIDTH - 1e-9
    card[f"{f}_images_needed"] = power["images_needed"].reindex(key).to_numpy()
    card[f"{f}_needed_status"] = power["needed_status"].reindex(key).fillna("").to_numpy()
    card[f"{f}_seed_spread"] = card.groupby(["seed_group", "curve"])[f"{f}_recovery"].transform(
        lambda v: v.max() - v.min() if v.notna().sum() > 1 else np.nan
    )


def _gate_columns(card: pd.DataFrame, family: str, gate: dict | None) -> None:
    """f_gate (passes | fails | not computed | no gate), f_gate_estimate,
    f_gate_ci_low, f_gate_ci_high (in place): the family's gate on the row's model."""
    from fudbench.meta.claims import gate_status

    card[f"{family}_gate"] = [gate_status(gate, m, family) for m in card["model"]]
    for column in ("estimate", "ci_low", "ci_high"):
        card[f"{family}_gate_{column}"] = [
            float(gate[(m, family)][column]) if gate and (m, family) in gate and column in gate[(m, family)] else np.nan
            for m in card["model"]
        ]


def scatter_columns(
    per_image: pd.DataFrame, explainers: dict, curve_scores: dict, ci: float = 0.95, value_ranges: dict | None = None
) -> pd.DataFrame:
    """(model, curve) -> per scatter pair p: scatter_p_reaction, scatter_p_ci_low,
    scatter_p_ci_high, scatter_p_n (module docstring)."""
    from fudbench.meta.claims import _interval, curve_value_ranges, difference_bounds, scatter_reaction
    from fudbench.meta.families import scatter_pairs

    pairs = scatter_pairs(explainers)
    ranges = curve_value_ranges(curve_scores) if value_ranges is None else value_ranges
    rows = []
    for (model, curve), d in per_image.groupby(["model", "curve"], sort=False):
        if curve not in curve_scores or not pairs:
            continue
        sign = 1.0 if curve_scores[curve][1] else -1.0
        bounds = difference_bounds(d["score"].to_numpy(float), ranges.get(curve))[:2]
        row = {"model": model, "curve": curve}
        for pair, members in pairs.items():
            v = scatter_reaction(d, model, curve, sign, members).to_numpy(dtype=float)
            est, lo, hi, _ = _interval(v, bounds, ci) if len(v) else (np.nan,) * 4
            row.update(
                {
                    f"scatter_{pair}_reaction": est,
                    f"scatter_{pair}_ci_low": lo,
                    f"scatter_{pair}_ci_high": hi,
                    f"scatter_{pair}_n": len(v),
                }
            )
        rows.append(row)
    return pd.DataFrame(
        rows,
        columns=["model", "curve"]
        + [f"scatter_{p}_{c}" for p in pairs for c in ("reaction", "ci_low", "ci_high", "n")],
    )


def report_card(
    per_image: pd.DataFrame,
    seconds: pd.DataFrame | None,
    explainers: dict,
    evaluators: dict,
    classifiers: dict,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    target_half_width: float = TARGET_HALF_WIDTH,
    gate=None,
    value_ranges: dict | None = None,
) -> pd.DataFrame:
    """One row per (model, metric). per_image: model, explainer, curve, image,
    score (aggregate_records). seconds: model, explainer, curve, image, seconds
    (the records; None = no cost column). explainers / evaluators /
    classifiers: the config's sections. Columns per family f: f_statistic
    (spearman | known_pairs), f_recovery, f_ci_low, f_ci_high, f_ci ("[lo,
    hi]"), f_powered (half-width <= target), f_images_needed (80% power,
    two-sided 0.05; inf when reversed or tied), f_needed_status (ok |
    reversed | tied | undefined), f_seed_spread (NaN without a second seed).
    Anchors: random_rank, random_expected_rank, background_rank,
    background_expected_rank, n_explainers, score_kind, anchor_note. Then
    agreement_tau, agreement_note, seconds_per_image, n_images. Per family
    also f_uninformative and the gate (f_gate, f_gate_estimate, f_gate_ci_low,
    f_gate_ci_high; gate: family_gate.csv, a path or frame, None = no gate);
    per scatter pair p: scatter_p_reaction, scatter_p_ci_low,
    scatter_p_ci_high, scatter_p_n. n_boot: only the micro intervals and
    agreement intervals use it (not on the card)."""
    from fudbench.meta.claims import read_gate
    from fudbench.analysis.curves import configured_curve_scores
    from fudbench.meta.families import anchor_explainers, degraded_explainers

    entries = entry_of_curves(evaluators)
    scored = per_image.dropna(subset=["score"]) if "score" in per_image else per_image.iloc[:0]
    present = set(scored["curve"])
    # curves with a per-image score and derived scores (SRG's gains, FUD symmetric ...)
    curve_scores = {c: v for c, v in configured_curve_scores(evaluators).items() if c in present}
    if not curve_scores:
        raise ValueError("report card: no scored curve of the configured evaluators in the per-image scores")
    curves = list(curve_scores)
    per_image = scored
    degraded = degraded_explainers(explainers)
    anchors = anchor_explainers(explainers)
    groups = seed_groups(classifiers)
    models = [m for m in classifiers if m in set(per_image["model"])]

    card = pd.DataFrame(
        [
            {
                "model": m,
                "seed_group": groups[m],
                "metric": curve_scores[c][0],
                "curve": c,
                "entry": entries[c],
                "higher_is_better": curve_scores[c][1],
            }
            for m in models
            for c in curves
        ]
    )
    if degraded:
        corr = ground_truth_correlations(
            per_image, degraded, None, n_boot=0, ci=ci, seed=seed, curve_scores=curve_scores
        )
        corr = corr[corr["kind"] == "macro"].set_index(["model", "family", "curve"])
        power = family_power(per_image, degraded, curve_scores).set_index(["model", "family", "curve"])
        gates = read_gate(gate)
        for f in family_members(degraded):
            _family_columns(card, f, corr, power, target_half_width)
            _gate_columns(card, f, gates)
    ranks = anchor_ranks(per_image, anchors, curve_scores)
    agree = mean_agreement(per_image, curve_scores)
    card = card.merge(ranks, on=["model", "curve"], how="left").merge(agree, on=["model", "curve"], how="left")
    card = card.merge(
        scatter_columns(per_image, explainers, curve_scores, ci, value_ranges), on=["model", "curve"], how="left"
    )
    for method in ("random", "background"):
        for column in (f"{method}_rank", f"{method}_expected_rank"):
            if column not in card:
                card[column] = np.nan
    for column in ("anchor_note", "agreement_note"):
        card[column] = card[column].fillna("") if column in card else ""
    if seconds is not None and len(seconds):
        cost = entry_cost(seconds, entries)
        card["seconds_per_image"] = [cost.get((m, e), np.nan) for m, e in zip(card["model"], card["entry"])]
    else:
        card["seconds_per_image"] = np.nan
    n_images = per_image.groupby(["model", "curve"])["image"].nunique()
    card["n_images"] = n_images.reindex(list(zip(card["model"], card["curve"]))).to_numpy()
    return card


def card_families(card: pd.DataFrame) -> list[str]:
    """The families of a report card, in its column order."""
    return [c[: -len("_recovery")] for c in card.columns if c.endswith("_recovery")]


def card_scatter_pairs(card: pd.DataFrame) -> list[str]:
    """The scatter pairs of a report card, in its column order."""
    return [
        c[len("scatter_") : -len("_reaction")]
        for c in card.columns
        if c.startswith("scatter_") and c.endswith("_reaction")
    ]
