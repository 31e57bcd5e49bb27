"""The planted cue's LaTeX tables (intervention check, truth, verdicts, dose-response, endpoint) from the
frames fudbench.meta.cue computes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.meta.cue import TRUTHS
from fudbench.report.latex import booktabs, escape

# The captions name the interval's module by its path before 0.2.0 (fudbench.analysis.inference, an alias of
# fudbench.meta.inference until 0.3.0), so that a study's rerun gives its committed tables byte for byte.


def _interval(lo, hi, digits=2) -> str:
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]" if np.isfinite(lo) and np.isfinite(hi) else "--"


def intervention_table(table: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Condition", "n", "Accuracy", "Interval", "Unchanged", "Expected", "Check"]
    rows = [
        [
            escape(r["model"]),
            escape(r["condition"]),
            str(int(r["n"])),
            f"{r['accuracy']:.3f}",
            _interval(r["ci_low"], r["ci_high"], 3),
            f"{r['unchanged']:.3f}",
            escape(r["expected"]),
            escape(r["check"]),
        ]
        for _, r in table.iterrows()
    ]
    caption = (
        f"Planted cue, intervention check on the test split: accuracy against the class the image's cue "
        f"says (the original label where it is removed) with its {ci:.0%} Wilson interval, and the share "
        "of predictions unchanged from the clean image. Counterfactuals are rendered from the generator's "
        "own draws: cue removed = the background under it, object removed = the background under it, cue "
        "swapped = the cue in another class's colour."
    ).replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_intervention", align="llrrrrll")


def truth_table(summary: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Explainer", "Precision", "AUROC", "Mass", "n"]
    rows = [
        [
            escape(r["model"]),
            escape(r["explainer"]),
            *(f"{r[t]:.2f} {_interval(r[f'{t}_ci_low'], r[f'{t}_ci_high'])}" for t in TRUTHS),
            str(int(r["n_images"])),
        ]
        for _, r in summary.iterrows()
    ]
    caption = (
        f"Planted cue, coverage of the cue by each explainer's map (mean over images, {ci:.0%} bootstrap "
        "interval): precision = share of the map's top-|cue| pixels inside the cue; AUROC = chance that a cue "
        "pixel outranks a non-cue pixel; mass = share of the attribution mass inside the cue. The cue mask "
        "(oracle) scores 1, its complement (background) 0."
    ).replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_truth", align="llllll")


def verdict_table(verdicts: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Metric", "Explainers", "ISA", "Spearman", "Interval", "Verdict", "Macro", "Macro interval", "n"]
    rows = [
        [
            escape(r["model"]) + ("" if r["intervention"] == "ok" else "$^\\dagger$"),
            escape(r["metric"]),
            escape(r["explainers"]),
            "with" if r["with_isa"] else "without",
            f"{r['spearman']:.2f}",
            _interval(r["ci_low"], r["ci_high"]),
            escape(r["verdict"]),
            f"{r['macro_spearman']:.2f}",
            _interval(r["macro_ci_low"], r["macro_ci_high"]),
            str(int(r["n_images"])),
        ]
        for _, r in verdicts.iterrows()
    ]
    truth = verdicts["truth"].iloc[0] if len(verdicts) else "precision"
    caption = (
        f"Planted cue, metric verdicts: mean over images of the Spearman correlation between the metric's "
        f"scores of the explainers (oriented, higher = better) and their cue coverage ({truth}), with its "
        f"{ci:.0%} interval (a t-interval with two pseudo-observations at -1 and +1, "
        "fudbench.analysis.inference); macro = the same correlation on the per-explainer means, with a "
        "percentile bootstrap interval over images. Recovers: interval above 0; reverses: below 0. "
        "no\\_controls leaves out the oracle, background, random and the families of known order; "
        "without ISA leaves out ISA, whose maps miss the cue on every image. $\\dagger$: the model failed "
        "the intervention check, so the cue is not shown to be its evidence. All three truths: the "
        "CSV."
    ).replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_verdict", align="llllrrlrrr")


def dose_table(table: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Order", "Dose", "Accuracy", "Interval", "P(label)", "Interval", "Step", "Monotone"]
    rows = [
        [
            escape(r["model"]),
            escape(r["order"]),
            f"{r['dose']:.2f}",
            f"{r['accuracy']:.3f}",
            _interval(r["accuracy_ci_low"], r["accuracy_ci_high"], 3),
            f"{r['target_prob']:.3f}",
            _interval(r["target_prob_ci_low"], r["target_prob_ci_high"], 3),
            escape(r["step_verdict"] or "--"),
            escape(r["monotone"]),
        ]
        for _, r in table.iterrows()
    ]
    caption = (
        f"Planted cue, dose-response on the test split: a share (dose) of each cue's pixels removed, "
        "nested across doses, in a random order or by distance to the cue's centre; removed pixels take "
        "the background the generator drew under the cue. Accuracy and the label's probability with "
        f"{ci:.0%} intervals (fudbench.analysis.inference, bounds 0 and 1); step: the paired change of the "
        "label's probability from the previous dose (falls / flat / rises by its interval)."
    ).replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_dose", align="llrrrrrll")


def endpoint_table(table: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Comparison", "Truth", "ISA", "Difference", "Interval", "p (raw)", "n"]
    rows = [
        [
            escape(r["model"]),
            escape(r["comparison"]) + (" *" if r["primary"] else ""),
            escape(r["truth"]),
            "with" if r["with_isa"] else "without",
            f"{r['estimate']:+.3f}",
            _interval(r["ci_low"], r["ci_high"]),
            f"{r['p']:.3g}",
            str(int(r["n_images"])),
        ]
        for _, r in table.iterrows()
    ]
    caption = (
        f"Planted cue, endpoint cells: the mean over images of the paired difference of two FUD curves' "
        "per-image Spearman with the cue order of the paper's explainers (symmetric or bottom minus the "
        f"paper's FUD), {ci:.0%} interval (bounds -2 and 2) and raw p; no multiplicity adjustment. "
        "*: the primary truth (precision, ISA included)."
    ).replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_endpoint", align="llllrrrr")
