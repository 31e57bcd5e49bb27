"""The paper's tables, from per-image scores (fudbench.analysis.curves).

Each builder returns (long-format DataFrame for the CSV with mean, 95% CI and
counts, LaTeX string). Entries are means over images with bootstrap
intervals over images.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.analysis.bootstrap import bootstrap_ci
from fudbench.analysis.curves import CURVE_SCORES, MAIN_CURVE_SCORES, TAU_CURVES
from fudbench.report.latex import booktabs, escape, fmt_ci
from fudbench.core.seeding import derive_seed


def nonfinite_images(per_image: pd.DataFrame) -> np.ndarray:
    """Per per-image row (a bool array): the model's outputs were NaN or inf on some of its perturbed
    inputs (n_nonfinite > 0, fudbench.analysis.curves.per_image_scores; False where the column is absent)."""
    if "n_nonfinite" not in per_image.columns:
        return np.zeros(len(per_image), bool)
    return per_image["n_nonfinite"].fillna(0).to_numpy(dtype=float) > 0


def nonfinite_note(n_nonfinite: int, n_images: int) -> str:
    """How a table cell says that n_nonfinite of its n_images images had NaN or inf model outputs (left out
    of the mean): 'n/a: 20 of 20 non-finite' when none is left, else '3 of 20 non-finite'."""
    note = f"{n_nonfinite} of {n_images} non-finite"
    return f"n/a: {note}" if n_nonfinite >= n_images else note


def score_cell(row) -> str:
    """A summary row as a LaTeX cell: fmt_ci, with nonfinite_note where images were left out."""
    text = fmt_ci(row["mean"], row["ci_low"], row["ci_high"])
    bad = row.get("n_nonfinite", 0)
    if not bad or pd.isna(bad):
        return text
    note = nonfinite_note(int(bad), int(bad) + int(row["n_images"]))
    return note if int(row["n_images"]) == 0 else f"{text} ({note})"


def cell_interval(values, key: tuple, n_boot: int, ci: float, seed: int) -> tuple[float, float, float]:
    """(mean, low, high) of one table cell: the percentile bootstrap over images of the values (in the
    per-image table's row order), its seed derived from the cell's key (model, explainer, metric label).
    The one interval of a cell: the score tables and the results page both take it from here, so a cell
    reads the same in report.html and in the tables."""
    return bootstrap_ci(values, n_boot, ci, derive_seed(seed, "bootstrap", *key))


def _summarise(per_image: pd.DataFrame, value: str, keys: list[str], n_boot: int, ci: float, seed: int):
    """Mean and bootstrap interval per group. Images whose model outputs were non-finite
    (nonfinite_images) are left out of the mean and counted in an n_nonfinite column (absent when
    there are none, so a run without them writes the columns it always wrote), never dropped
    silently: a group with none left keeps its row, mean NaN."""
    flagged = pd.Series(nonfinite_images(per_image), index=per_image.index)
    rows = []
    for key, g in per_image.groupby(keys, sort=False):
        bad = flagged.loc[g.index]
        g = g[~bad] if bad.any() else g
        mean, lo, hi = cell_interval(g[value], key, n_boot, ci, seed)
        row = {**dict(zip(keys, key)), "mean": mean, "ci_low": lo, "ci_high": hi, "n_images": len(g)}
        if bad.any():
            row["n_nonfinite"] = int(bad.sum())
        rows.append(row)
    summary = pd.DataFrame(rows)
    if "n_nonfinite" in summary.columns:
        summary["n_nonfinite"] = summary["n_nonfinite"].fillna(0).astype(int)
    return summary


def _order(df, models, explainers):
    df = df.copy()
    df["model"] = pd.Categorical(df["model"], models, ordered=True)
    df["explainer"] = pd.Categorical(df["explainer"], explainers, ordered=True)
    return df


def table4_kendall(per_image: pd.DataFrame, models, explainers, n_boot: int, ci: float, seed: int):
    """Kendall tau of each evaluator's removal sequence, per model x evaluator x explainer."""
    d = per_image[per_image["curve"].isin(TAU_CURVES)].copy()
    d["evaluator"] = d["curve"].map(TAU_CURVES)
    summary = _summarise(d, "tau", ["model", "evaluator", "explainer"], n_boot, ci, seed)
    counts = d.assign(constant=d["constant"].astype(int)).groupby(["model", "evaluator", "explainer"])["constant"].sum()
    summary["n_constant"] = [int(counts[tuple(k)]) for k in summary[["model", "evaluator", "explainer"]].values]
    evaluators = list(dict.fromkeys(TAU_CURVES.values()))
    summary = _order(summary, models, explainers)
    summary["evaluator"] = pd.Categorical(summary["evaluator"], evaluators, ordered=True)
    summary = summary.sort_values(["model", "evaluator", "explainer"]).reset_index(drop=True)

    rows, breaks = [], []
    for model in models:
        for ev in evaluators:
            cells = []
            for ex in explainers:
                r = summary[(summary.model == model) & (summary.evaluator == ev) & (summary.explainer == ex)]
                cells.append(score_cell(r.iloc[0]) if len(r) else "--")
            rows.append([escape(model), escape(ev), *cells])
        breaks.append(len(rows) - 1)
    tex = booktabs(
        ["Model", "Eval", *explainers],  # header cells are escaped by booktabs
        rows,
        caption="Kendall $\\tau$ between the removal step and the decrease of confidence "
        "(mean over images, $\\pm$ half-width of the bootstrap 95\\% CI); "
        "higher = smoother monotone degradation (Table 4 of FUD).",
        label="tab:kendall",
        align="ll" + "r" * len(explainers),
        midrules_after=breaks,
    )
    return summary, tex


def score_table(
    per_image: pd.DataFrame,
    models,
    explainers,
    curves,
    labels: dict,
    n_boot: int,
    ci: float,
    seed: int,
    caption: str,
    tex_label: str,
):
    """Per-image scores of the given curves, per model x explainer: mean over
    images with a bootstrap CI. labels: {curve: (column name, higher is better)};
    columns follow the order of `curves`, keeping those present."""
    # a NaN score is left out, except where the model's outputs were non-finite: those rows are counted
    # and marked (_summarise), so a metric whose every image is NaN there keeps its column
    d = per_image[
        per_image["curve"].isin(list(curves)) & (per_image["score"].notna() | nonfinite_images(per_image))
    ].copy()
    d["metric"] = d["curve"].map({c: labels[c][0] for c in curves})
    summary = _summarise(d, "score", ["model", "explainer", "metric"], n_boot, ci, seed)
    metrics = [labels[c][0] for c in curves if labels[c][0] in set(summary.get("metric", []))]
    if not len(summary):
        raise ValueError(f"no per-image scores for any of the curves {list(curves)[:6]}...")
    summary = _order(summary, models, explainers)
    summary["metric"] = pd.Categorical(summary["metric"], metrics, ordered=True)
    summary = summary.sort_values(["model", "explainer", "metric"]).reset_index(drop=True)
    higher = {labels[c][0]: labels[c][1] for c in curves}
    summary["higher_is_better"] = summary["metric"].map(higher).astype(bool)

    rows, breaks = [], []
    for model in models:
        for ex in explainers:
            cells = []
            for m in metrics:
                r = summary[(summary.model == model) & (summary.explainer == ex) & (summary.metric == m)]
                cells.append(score_cell(r.iloc[0]) if len(r) else "--")
            rows.append([escape(model), escape(ex), *cells])  # the config entry's name, as written
        breaks.append(len(rows) - 1)
    tex = booktabs(
        ["Model", "Method", *metrics],
        rows,
        caption=caption,
        label=tex_label,
        align="ll" + "r" * len(metrics),
        midrules_after=breaks,
        header_suffix={m: r" $\uparrow$" if h else r" $\downarrow$" for m, h in higher.items()},
    )
    return summary, tex


def table7_scores(per_image: pd.DataFrame, models, explainers, n_boot: int, ci: float, seed: int):
    """The main evaluators' scores per model x explainer (FUD, Insertion, Sen-N
    higher better; Deletion, INFID lower better)."""
    labels = {c: CURVE_SCORES[c][:2] for c in MAIN_CURVE_SCORES}
    return score_table(
        per_image,
        models,
        explainers,
        list(MAIN_CURVE_SCORES),
        labels,
        n_boot,
        ci,
        seed,
        caption="Attribution scores: normalised area under the confidence curve (mean over "
        "images, $\\pm$ half-width of the bootstrap 95\\% CI) (Table 7 of FUD).",
        tex_label="tab:scores",
    )
