"""LaTeX of the pre-registered endpoint's table (fudbench.analysis.endpoint)."""
from __future__ import annotations

import math

import pandas as pd

from fudbench.report.latex import booktabs, escape, fmt_ci


def _p(value: float) -> str:
    return "--" if not math.isfinite(value) else ("<0.001" if value < 1e-3 else f"{value:.3f}")


def endpoint_latex(table: pd.DataFrame, ci: float = 0.95, digits: int = 2) -> str:
    """One row per cell: comparison, model, family, mean per-image recovery
    difference with its interval, raw and Holm-adjusted p, verdict, macro difference."""
    header = ["endpoint", "challenger", "model", "family", "difference", "p", "p (Holm)", "verdict", "macro diff.",
              "n"]
    rows = [[escape(r.endpoint), escape(r.challenger), escape(r.model), escape(r.family),
             fmt_ci(r.estimate, r.ci_low, r.ci_high, digits), _p(r.p), _p(r.p_holm), escape(r.verdict),
             "--" if not math.isfinite(r.macro_difference) else f"{r.macro_difference:+.{digits}f}",
             str(int(r.n_images))] for r in table.itertuples()]
    caption = (f"Pre-registered endpoint: mean over images of the per-image recovery of the challenger minus paper "
               f"FUD's, {ci:.0%} interval; Holm-adjusted p within each endpoint over its cells (models x gated "
               f"scatter-matched families, and the cue's cells where joined); macro diff.: the recovery of the "
               f"per-member means, challenger minus paper (descriptive).")
    return booktabs(header, rows, caption=escape(caption), label="tab:endpoint")
