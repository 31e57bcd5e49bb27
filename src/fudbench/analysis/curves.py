"""Scores of confidence curves, from the evaluator specs (fudbench.evaluators).

Each evaluator module declares its curves (label, direction, per-image score,
tables); this module gathers them for the analysis jobs:
- FUD score (Table 7): per image the normalised AUC of confidence over the
  kept fractions rho; higher is better.
- Insertion (higher better) / Deletion (lower better): normalised AUC over
  the inserted / removed fraction.
- Sen-N (higher better): the image's Pearson correlation averaged over n.
- INFID (lower better): the image's infidelity.
- appendix protocols and F-Fidelity: their modules' docstrings.
"""

from __future__ import annotations

import pandas as pd

from fudbench.core.auc import normalised_auc  # noqa: F401 (re-exported: the analysis' AUC)
from fudbench.evaluators import curve_catalogue, find_curve
from fudbench.evaluators.base import APPENDIX_SAMPLES, MAIN_SAMPLES

CATALOGUE: dict = {}
CURVE_SCORES: dict = {}  # curve name in the records -> (name in the tables, higher is better, per-image score)
MAIN_CURVE_SCORES: list = []  # the paper's Table 7 columns, in its order
TAU_CURVES: dict = {}  # curves whose removal steps are the intermediate samples (Table 4): -> evaluator label
INTERMEDIATE_CURVES: dict = {}  # intermediate samples of the main tables (2, 3, 8): curve -> row label
APPENDIX_INTERMEDIATE_CURVES: dict = {}  # and of the appendix tables (9, 11)
DERIVED_SCORES: dict = {}  # scores computed from several curves of an image: -> (label, higher is better)
STEP_VALUES: dict = {}  # curve -> the per-step column whose per-explainer mean a micro comparison ranks


def _reference_last(curves):
    """FUD's curve (the one both groups of sample tables show) is the reference row: listed last."""
    return sorted(curves, key=lambda c: {MAIN_SAMPLES, APPENDIX_SAMPLES} <= set(c.samples_tables))


def refresh() -> None:
    """(Re)build the tables above from the curve catalogue, in place (modules that
    imported them see the update): at import, and when plug-in evaluators are
    registered (fudbench.evaluators.use_plugins)."""
    catalogue = curve_catalogue()
    specs = list(catalogue.values())
    tables = {
        "CATALOGUE": catalogue,
        "CURVE_SCORES": {c.name: (c.label, c.higher_is_better, c.score) for c in specs if c.score is not None},
        "TAU_CURVES": {c.name: c.samples_label for c in _reference_last(specs) if c.tau},
        "INTERMEDIATE_CURVES": {
            c.name: c.samples_label for c in _reference_last(specs) if MAIN_SAMPLES in c.samples_tables
        },
        "APPENDIX_INTERMEDIATE_CURVES": {
            c.name: c.samples_label for c in _reference_last(specs) if APPENDIX_SAMPLES in c.samples_tables
        },
        "DERIVED_SCORES": {
            c.name: (c.label, c.higher_is_better) for c in specs if c.score is None and c.table is not None
        },
        "STEP_VALUES": {c.name: c.step_value for c in specs if c.step_value},
    }
    for name, values in tables.items():
        table = globals()[name]
        table.clear()
        table.update(values)
    MAIN_CURVE_SCORES[:] = [c.name for c in specs if c.table == "table7_scores"]


refresh()


def curve_score(curve: str):
    """(label, higher is better, score function) of a records curve, aliased ones
    included; None for curves without a per-image score."""
    c = find_curve(curve, CATALOGUE)
    return None if c is None or c.score is None else (c.label, c.higher_is_better, c.score)


def configured_curve_scores(evaluators: dict) -> dict:
    """{curve: (label, higher is better, score function or None)} of every curve
    (and derived score) a config's evaluators write, in config order."""
    from fudbench.evaluators import configured_curves

    return {c: (s.label, s.higher_is_better, s.score) for c, s in configured_curves(evaluators).items()}


# The model's outputs a protocol records of each perturbed input: NaN or inf there (a model finite on the
# clean images, NaN on a constant one) makes the image's score NaN.
OUTPUT_COLUMNS = ("confidence", "energy")


def nonfinite_outputs(records: pd.DataFrame) -> pd.Series:
    """Per records row: the model's output on that perturbed input (OUTPUT_COLUMNS) is NaN or inf."""
    import numpy as np

    bad = pd.Series(False, index=records.index)
    for column in OUTPUT_COLUMNS:
        if column in records.columns:
            bad |= ~np.isfinite(records[column].to_numpy(dtype=float))
    return bad


def per_image_scores(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, explainer, curve, image): the curve's score,
    n_nonfinite (how many of the image's records have a NaN or inf model output:
    nonfinite_outputs; its score is then not the explainer's and the tables mark
    it) and, for the TAU_CURVES, Kendall's tau of its removal sequence."""
    from fudbench.analysis.kendall import is_constant, removal_tau

    rows = []
    keys = ["model", "explainer", "curve", "image"]
    records = records.assign(_nonfinite=nonfinite_outputs(records))
    for (model, explainer, curve, image), g in records.groupby(keys, sort=True):
        row = {"model": model, "explainer": explainer, "curve": curve, "image": image}
        scored = curve_score(curve)
        if scored is not None:
            row["score"] = scored[2](g)
        spec = find_curve(curve, CATALOGUE)
        if spec is not None and spec.tau:
            row["tau"] = removal_tau(g["removed"].to_numpy(), g["confidence"].to_numpy())
            row["constant"] = is_constant(g["confidence"].to_numpy())
        row["n_nonfinite"] = int(g["_nonfinite"].sum())
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame[[c for c in frame.columns if c != "n_nonfinite"] + ["n_nonfinite"]] if rows else frame


def derived_scores(records: pd.DataFrame, per_image: pd.DataFrame) -> pd.DataFrame:
    """The derived scores of every evaluator that declares them (SRG's relevance
    gains, ROAD's accuracy areas), to be appended to per_image_scores(records)."""
    from fudbench.evaluators import known_methods, spec

    frames = [spec(m).derived(records, per_image) for m in known_methods() if spec(m).derived is not None]
    return pd.concat(frames, ignore_index=True)
