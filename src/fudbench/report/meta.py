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
