"""Meta-evaluation outputs: the ground-truth-ranking table and the metric
agreement heatmap (fudbench.analysis.meta computes the numbers).

matplotlib is imported inside agreement_heatmap only, so the table job runs
in the analysis env, which has no matplotlib.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fudbench.report.latex import booktabs, escape, fmt_ci


def meta_table(correlations: pd.DataFrame, models=None, families=None, digits: int = 2):
    """(CSV frame, LaTeX) of the Spearman correlations with the ground-truth ranking.

    Rows: metrics (arrow = the direction the metric scores); columns: model x
    degraded family x {macro, micro}; cells: correlation +- half-width of
    the bootstrap interval, "--" where undefined.
    """
    d = correlations
    models = list(models) if models is not None else list(dict.fromkeys(d["model"]))
    families = list(families) if families is not None else list(dict.fromkeys(d["family"]))
    metrics = list(dict.fromkeys(d["metric"]))
    arrow = dict(zip(d["metric"], d["higher_is_better"]))
    columns = [(m, f, k) for m in models for f in families for k in ("macro", "micro")]
    lookup = {tuple(r[["model", "family", "metric", "kind"]]): r for _, r in d.iterrows()}
    rows = []
    for metric in metrics:
        cells = [escape(metric) + (r" $\uparrow$" if arrow[metric] else r" $\downarrow$")]
        for m, f, k in columns:
            r = lookup.get((m, f, metric, k))
            cells.append("--" if r is None else fmt_ci(*_finite(r[["spearman", "ci_low", "ci_high"]]), digits))
        rows.append(cells)
    header = ["Metric", *[f"{m} {f} {k}" for m, f, k in columns]]
    tex = booktabs(header, rows,
                   caption="Spearman correlation between each metric's ranking of degraded explainers and "
                           "the true ranking (less noise = better; +1 = perfect, $-1$ = reversed). Macro: on "
                           "the mean score over the curve; micro: per step, averaged over steps. Bootstrap "
                           "95\\% CI over images ($\\pm$ half-width).",
                   label="tab:meta_ground_truth", align="l" + "r" * len(columns))
    order = {"model": models, "family": families, "metric": metrics, "kind": ["macro", "micro"]}
    csv = d.copy()
    for col, cats in order.items():
        csv[col] = pd.Categorical(csv[col], cats, ordered=True)
    csv = csv.sort_values(list(order)).reset_index(drop=True)
    return csv, tex


def _finite(values) -> list[float]:
    return [float(v) if v is not None and not pd.isna(v) else math.nan for v in values]


def agreement_heatmap(matrices: dict, paths=None, plots: dict | None = None, annotate_max: int = 24):
    """One panel per model of Kendall's tau between metric rankings, cells
    annotated with their value up to `annotate_max` metrics (beyond that the
    numbers are unreadable; the CSV has them); saved to `paths` (one or
    several; format from the suffix) when given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fudbench.io import save_figure

    if not matrices:
        raise ValueError("no agreement matrix to plot: no model has two metrics scored on every explainer")
    plots = plots or {}
    models = list(matrices)
    k = max(len(m) for m in matrices.values())
    size = 0.55 * k + 1.5
    fig, axes = plt.subplots(1, len(models), figsize=(size * len(models) + 0.8, size), squeeze=False)
    image = None
    for ax, model in zip(axes[0], models):
        m = matrices[model]
        values = m.to_numpy(dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values), vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(m.columns)), m.columns, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(m.index)), m.index, fontsize=7)
        for i in range(values.shape[0] if len(m) <= annotate_max else 0):
            for j in range(values.shape[1]):
                v = values[i, j]
                ax.text(j, i, "--" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if np.isfinite(v) and abs(v) > 0.6 else "black")
        ax.set_title(model)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label=r"Kendall $\tau$")
    if paths is not None:
        plt.rcParams["savefig.dpi"] = plots.get("dpi", 150)
        save_figure(fig, paths)
    return fig


def report_card_table(card: pd.DataFrame, target_half_width: float = 0.2, digits: int = 2) -> str:
    """LaTeX of the metric report card (fudbench.analysis.report_card). Rows:
    model x metric; per family the macro Spearman and its interval, with a
    dagger where the interval is wider than +-target_half_width; the seed
    spread (largest over families) when the run has seeds of one model; the
    anchors' ranks among all explainers; mean agreement; seconds per image."""
    from fudbench.analysis.report_card import card_families

    families = card_families(card)
    seeds = any(card[f"{f}_seed_spread"].notna().any() for f in families)
    header = ["Model", "Metric", *families, *(["Seed spread"] if seeds else []),
              "Random rank", "Backgr. rank", "Agreement", "s / image"]
    rows, breaks = [], []
    for i, (_, r) in enumerate(card.iterrows()):
        cells = [escape(r["model"]), escape(r["metric"]) + (r" $\uparrow$" if r["higher_is_better"] else
                                                           r" $\downarrow$")]
        for f in families:
            rho, lo, hi = _finite(r[[f"{f}_spearman", f"{f}_ci_low", f"{f}_ci_high"]])
            if not math.isfinite(rho):
                cells.append("--")
                continue
            dagger = "" if bool(r[f"{f}_powered"]) else r"$^\dagger$"
            interval = f" [{lo:.{digits}f}, {hi:.{digits}f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
            cells.append(f"{rho:.{digits}f}{interval}{dagger}")
        if seeds:
            spread = [v for f in families for v in _finite([r[f"{f}_seed_spread"]]) if math.isfinite(v)]
            cells.append(f"{max(spread):.{digits}f}" if spread else "--")
        n = r["n_explainers"]
        for method in ("random", "background"):
            v = _finite([r[f"{method}_rank"]])[0]
            cells.append(f"{v:g} / {int(n)}" if math.isfinite(v) else "--")
        agree, cost = _finite(r[["agreement_tau", "seconds_per_image"]])
        cells.append(f"{agree:.{digits}f}" if math.isfinite(agree) else "--")
        cells.append(f"{cost:.3g}" if math.isfinite(cost) else "--")
        rows.append(cells)
        if i + 1 < len(card) and card["model"].iloc[i + 1] != r["model"]:
            breaks.append(i)
    n_images = int(card["n_images"].max()) if len(card) else 0
    caption = (f"Metric report card ({n_images} images per model). Per ground-truth family: Spearman correlation "
               "of the metric's ranking of the family with its known order (+1 = recovered, $-1$ = reversed), "
               "95\\% bootstrap interval over images; $^\\dagger$: the interval is wider than "
               f"$\\pm${target_half_width:g} (images\\_needed in the CSV estimates how many images would "
               "resolve the order). "
               + ("Seed spread: largest difference of a family's Spearman between training seeds of the model. "
                  if seeds else "")
               + "Random / background rank: where the anchors rank among all explainers (1 = best; faithful = "
               "last). Agreement: mean Kendall $\\tau$ with the other metrics' rankings of all explainers. "
               "s / image: the evaluator entry's fill and classifier time per image.")
    return booktabs(header, rows, caption=caption, label="tab:report_card",
                    align="ll" + "l" * len(families) + "r" * (4 + seeds), midrules_after=breaks)


def report_card_figure(card: pd.DataFrame, paths=None, plots: dict | None = None):
    """Forest plot: one panel per family, metrics down, the macro Spearman and
    its interval per model (seeds of one model share a colour, marked apart)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fudbench.analysis.report_card import card_families
    from fudbench.io import save_figure

    families = card_families(card)
    if not families:
        raise ValueError("report card without ground-truth families: nothing to plot")
    plots = plots or {}
    metrics = list(dict.fromkeys(card["metric"]))
    models = list(dict.fromkeys(card["model"]))
    groups = list(dict.fromkeys(card["seed_group"]))
    colours = {g: plt.get_cmap("tab10")(i % 10) for i, g in enumerate(groups)}
    markers = "osD^v<>p"
    height = 0.22 * len(metrics) + 1.2
    fig, axes = plt.subplots(1, len(families), figsize=(2.6 * len(families) + 1.8, height), sharey=True,
                             squeeze=False)
    y = {m: i for i, m in enumerate(metrics)}
    offset = {m: (k - (len(models) - 1) / 2) * 0.8 / max(len(models), 1) for k, m in enumerate(models)}
    for ax, f in zip(axes[0], families):
        for model, d in card.groupby("model", sort=False):
            group = d["seed_group"].iloc[0]
            seed_index = list(card[card["seed_group"] == group]["model"].unique()).index(model)
            ys = np.array([y[m] for m in d["metric"]]) + offset[model]
            rho = d[f"{f}_spearman"].to_numpy(float)
            lo, hi = d[f"{f}_ci_low"].to_numpy(float), d[f"{f}_ci_high"].to_numpy(float)
            ok = np.isfinite(rho)
            err = np.vstack([rho - lo, hi - rho])[:, ok]
            ax.errorbar(rho[ok], ys[ok], xerr=np.where(np.isfinite(err), err, 0.0), fmt=markers[seed_index % 8],
                        ms=3, lw=0.8, color=colours[group], label=model)
        ax.axvline(0, color="grey", lw=0.6)
        ax.axvspan(-1.05, 0, color="0.93", zorder=0)
        ax.set_xlim(-1.05, 1.05)
        ax.set_title(f, fontsize=9)
        ax.set_xlabel("Spearman with the known order", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].set_yticks(range(len(metrics)), metrics)
    axes[0][0].invert_yaxis()
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 0.93, 1))
    if paths is not None:
        plt.rcParams["savefig.dpi"] = plots.get("dpi", 150)
        save_figure(fig, paths)
    return fig
