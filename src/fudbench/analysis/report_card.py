"""The metric report card: for each metric (every curve of every configured
evaluator entry, FUD variants included), on each model,

- per ground-truth family (analysis.meta: degraded copies of a base map,
  model randomisation): the macro Spearman correlation with the known order
  (+1 = recovered), its percentile bootstrap interval over images, whether
  the interval reaches the +-`target_half_width` power target, and an
  estimate of the images it would need (`images_needed`);
- the seed-to-seed spread: classifiers whose config entries are identical
  but for their name are training seeds of one model (their seeds derive
  from the name, fudbench.seeding); per family, max - min of the macro
  Spearman over the seeds of the row's model;
- where the sanity anchors rank (`random`, `background`) among all the run's
  explainers (1 = best; a faithful metric puts them last);
- its agreement with the other metrics: mean Kendall tau-b between its
  ranking of all the run's explainers and each other metric's;
- its cost: seconds per image (all steps and draws) of the evaluator entry
  that writes it, from the records' `seconds` (fill + classifier time; one-
  off costs such as F-Fidelity's fine-tuning are not included).

Pure numpy / pandas: the table job runs in the analysis env.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from fudbench.analysis.meta import _image_matrix, average_ranks, ground_truth_correlations, metric_agreement

TARGET_HALF_WIDTH = 0.2


def seed_groups(classifiers: dict) -> dict[str, str]:
    """{model: its seed group}: the first-listed model with identical settings."""
    groups, seen = {}, []
    for name, settings in classifiers.items():
        first = next((n for n, s in seen if s == settings), name)
        groups[name] = first
        seen.append((name, settings))
    return groups


def entry_of_curves(evaluators: dict) -> dict[str, str]:
    """{curve: the config entry that writes it}, in config order."""
    from fudbench.evaluators import entry_curves

    return {c.name: name for name, settings in evaluators.items() for c in entry_curves(name, settings)}


def images_needed(matrix: np.ndarray, z: float = 1.96) -> float:
    """Images needed for every adjacent pair of a family (columns in their true
    order, oriented scores per image in rows) to be ordered at the interval's
    level: max over pairs of (z / d)^2, d = mean / sd of the pair's per-image
    differences (a paired z-test's sample size). inf when a pair ties on
    every image (no number of images orders it). A rough guide to power, not
    a bound: the Spearman interval narrows once most pairs are resolved."""
    need = 0.0
    for a, b in zip(matrix.T[:-1], matrix.T[1:]):
        diff = a - b
        mean, sd = abs(diff.mean()), (diff.std(ddof=1) if len(diff) > 1 else 0.0)
        if mean <= 1e-12:
            return math.inf  # no mean difference: no number of images orders the pair
        if sd > 1e-12:
            need = max(need, (z * sd / mean) ** 2)
    return float(math.ceil(need)) if need else float(len(matrix))


def _z(ci: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + ci / 2)


def family_power(per_image: pd.DataFrame, degraded: dict, curve_scores: dict, ci: float) -> pd.DataFrame:
    """(model, family, curve) -> images_needed of the family's oriented per-image scores."""
    families: dict[str, list[str]] = {}
    for name, (family, _) in degraded.items():
        families.setdefault(family, []).append(name)
    rows, z = [], _z(ci)
    for (model, curve), d in per_image.groupby(["model", "curve"], sort=False):
        if curve not in curve_scores:
            continue
        sign = 1.0 if curve_scores[curve][1] else -1.0
        for family, members in families.items():
            members = sorted(members, key=lambda e: degraded[e][1])
            m = _image_matrix(d[d["explainer"].isin(members)], "score", members, "image")
            if not m.empty:
                rows.append({"model": model, "family": family, "curve": curve,
                             "images_needed": images_needed(sign * m.to_numpy(), z)})
    return pd.DataFrame(rows, columns=["model", "family", "curve", "images_needed"])


def anchor_ranks(per_image: pd.DataFrame, anchors: dict, curve_scores: dict) -> pd.DataFrame:
    """(model, curve) -> rank of each anchor among all explainers with scores on
    the same images (1 = best, average ranks for ties) and their number."""
    rows = []
    for (model, curve), d in per_image.groupby(["model", "curve"], sort=False):
        if curve not in curve_scores:
            continue
        m = d.pivot_table(index="image", columns="explainer", values="score", aggfunc="mean").dropna()
        if m.empty:
            continue
        sign = 1.0 if curve_scores[curve][1] else -1.0
        ranks = average_ranks(-sign * m.to_numpy().mean(0))  # 1 = best
        row = {"model": model, "curve": curve, "n_explainers": m.shape[1]}
        for name, method in anchors.items():
            if name in m.columns:
                row[f"{method}_rank"] = float(ranks[list(m.columns).index(name)])
        rows.append(row)
    return pd.DataFrame(rows)


def mean_agreement(per_image: pd.DataFrame, curve_scores: dict) -> pd.DataFrame:
    """(model, curve) -> mean Kendall tau-b of the curve's explainer ranking with
    each other curve's, over all explainers, on the images every curve scored
    (the off-diagonal mean of analysis.meta.metric_agreement's matrix)."""
    matrices, _ = metric_agreement(per_image, sorted(per_image["explainer"].unique()), n_boot=0,
                                   curve_scores=curve_scores)
    curve_of = {label: curve for curve, (label, *_rest) in curve_scores.items()}
    rows = []
    for model, tau in matrices.items():
        off = tau.to_numpy(dtype=float).copy()
        np.fill_diagonal(off, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows (R-OMS ties every explainer)
            means = np.nanmean(off, axis=1)
        rows += [{"model": model, "curve": curve_of[label], "agreement_tau": float(m)}
                 for label, m in zip(tau.index, means)]
    return pd.DataFrame(rows, columns=["model", "curve", "agreement_tau"])


def entry_cost(seconds: pd.DataFrame, entries: dict) -> dict[tuple[str, str], float]:
    """{(model, entry): seconds per image}: an image's `seconds` summed over all
    curves of the entry, averaged over (explainer, image)."""
    d = seconds[seconds["curve"].isin(entries)].assign(entry=lambda f: f["curve"].map(entries))
    per_image = d.groupby(["model", "entry", "explainer", "image"])["seconds"].sum()
    return per_image.groupby(["model", "entry"]).mean().to_dict()


def report_card(per_image: pd.DataFrame, seconds: pd.DataFrame | None, explainers: dict, evaluators: dict,
                classifiers: dict, n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
                target_half_width: float = TARGET_HALF_WIDTH) -> pd.DataFrame:
    """One row per (model, metric). per_image: model, explainer, curve, image,
    score (aggregate_records). seconds: model, explainer, curve, image, seconds
    (the records; None = no cost column). explainers / evaluators /
    classifiers: the config's sections. Columns per family f: f_spearman,
    f_ci_low, f_ci_high, f_ci ("[lo, hi]"), f_powered (half-width <=
    target), f_images_needed, f_seed_spread (NaN without a second seed)."""
    from fudbench.analysis.meta import anchor_explainers, degraded_explainers
    from fudbench.evaluators import configured_curves

    entries = entry_of_curves(evaluators)
    specs = configured_curves(evaluators)
    scored = per_image.dropna(subset=["score"]) if "score" in per_image else per_image.iloc[:0]
    present = set(scored["curve"])
    # curves with a per-image score and derived scores (SRG's gains, FUD symmetric ...)
    curve_scores = {c: (specs[c].label, specs[c].higher_is_better, specs[c].score) for c in entries
                    if c in present}
    if not curve_scores:
        raise ValueError("report card: no scored curve of the configured evaluators in the per-image scores")
    curves = list(curve_scores)
    per_image = scored
    degraded = degraded_explainers(explainers)
    anchors = anchor_explainers(explainers)
    groups = seed_groups(classifiers)
    models = [m for m in classifiers if m in set(per_image["model"])]

    card = pd.DataFrame([{"model": m, "seed_group": groups[m], "metric": curve_scores[c][0], "curve": c,
                          "entry": entries[c], "higher_is_better": curve_scores[c][1]}
                         for m in models for c in curves])
    families = list(dict.fromkeys(f for f, _ in degraded.values()))
    if degraded:
        corr = ground_truth_correlations(per_image, degraded, None, n_boot=n_boot, ci=ci, seed=seed,
                                         curve_scores=curve_scores)
        corr = corr[corr["kind"] == "macro"].set_index(["model", "family", "curve"])
        power = family_power(per_image, degraded, curve_scores, ci).set_index(["model", "family", "curve"])
        for f in families:
            key = list(zip(card["model"], [f] * len(card), card["curve"]))
            rho = corr["spearman"].reindex(key).to_numpy()
            lo, hi = corr["ci_low"].reindex(key).to_numpy(), corr["ci_high"].reindex(key).to_numpy()
            card[f"{f}_spearman"], card[f"{f}_ci_low"], card[f"{f}_ci_high"] = rho, lo, hi
            card[f"{f}_ci"] = [f"[{a:.2f}, {b:.2f}]" if np.isfinite(a) and np.isfinite(b) else ""
                               for a, b in zip(lo, hi)]
            with np.errstate(invalid="ignore"):
                card[f"{f}_powered"] = (hi - lo) / 2 <= target_half_width + 1e-9
            card[f"{f}_images_needed"] = power["images_needed"].reindex(key).to_numpy()
            spread = card.groupby(["seed_group", "curve"])[f"{f}_spearman"].transform(
                lambda v: v.max() - v.min() if v.notna().sum() > 1 else np.nan)
            card[f"{f}_seed_spread"] = spread
    ranks = anchor_ranks(per_image, anchors, curve_scores)
    agree = mean_agreement(per_image, curve_scores)
    card = card.merge(ranks, on=["model", "curve"], how="left").merge(agree, on=["model", "curve"], how="left")
    for method in ("random", "background"):
        if f"{method}_rank" not in card:
            card[f"{method}_rank"] = np.nan
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
    return [c[: -len("_spearman")] for c in card.columns if c.endswith("_spearman")]
