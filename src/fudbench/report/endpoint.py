"""LaTeX of the pre-registered endpoint's table (fudbench.meta.endpoint)."""

from __future__ import annotations

import math

import pandas as pd

from fudbench.report.latex import booktabs, escape, fmt_ci


def _p(value: float) -> str:
    return "--" if not math.isfinite(value) else ("<0.001" if value < 1e-3 else f"{value:.3f}")


def _macro(value: float, low: float, high: float, digits: int) -> str:
    if not math.isfinite(value):
        return "--"
    if math.isfinite(low) and math.isfinite(high):
        return f"{value:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
    return f"{value:+.{digits}f}"


def endpoint_latex(table: pd.DataFrame, ci: float = 0.95, digits: int = 2) -> str:
    """One row per cell: comparison, model, family, mean per-image recovery
    difference with its interval, raw and Holm-adjusted p, verdict, macro difference."""
    header = [
        "endpoint",
        "challenger",
        "model",
        "family",
        "difference",
        "p",
        "p (Holm)",
        "verdict",
        "macro (challenger vs paper)",
        "n",
    ]
    rows = [
        [
            escape(r.endpoint),
            escape(r.challenger),
            escape(r.model),
            escape(r.family),
            fmt_ci(r.estimate, r.ci_low, r.ci_high, digits),
            _p(r.p),
            _p(r.p_holm),
            escape(r.verdict),
            _macro(r.macro_challenger, r.macro_challenger_low, r.macro_challenger_high, digits)
            + " vs "
            + _macro(r.macro_paper, r.macro_paper_low, r.macro_paper_high, digits),
            str(int(r.n_images)),
        ]
        for r in table.itertuples()
    ]
    caption = (
        f"Pre-registered endpoint: mean over images of the per-image recovery of the challenger minus paper "
        f"FUD's, {ci:.0%} interval; Holm-adjusted p within each endpoint over its cells (models x gated "
        f"scatter-matched families; the cue's cells, where joined, a family of their own); macro: the "
        f"recovery of each metric's per-member mean scores with its compatible-orders interval "
        f"(descriptive: whether the order itself differs; the per-image difference also rewards lower "
        f"per-image noise)."
    )
    return booktabs(header, rows, caption=escape(caption), label="tab:endpoint")
