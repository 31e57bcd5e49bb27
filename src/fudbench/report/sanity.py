"""Checks on a finished run's tables directory: what must hold whatever the numbers.

Every check takes a tables directory (results/<run>/tables) and returns a list
of problems (empty = fine), so a test can assert on it and a person can print
it for a run: ``./fud python -m fudbench.report.sanity results/synthetic/tables
config/config.yaml``.
Pure pandas, no torch: it reads only the CSV and .tex files.

Two kinds of checks:
- consistency, which holds for any model and any seed: each .tex shows the
  numbers of its CSV (tex_matches_csv); bold marks the best entry in the
  direction of the metric (bold_marks_best); values in their ranges
  (values_in_range); SRG = MRG + LRG (srg_gains_add_up); tables computed
  from the same data agree (shared_rows_agree, meta_agrees_with_scores);
  a p = 0 degraded copy scores as its base (same_scores). run_consistency
  runs them all for a run's config.
- relations that hold on TRAINED models (beats, family_in_order): the
  ground-truth mask above the random map, the degraded family in its order
  (trained_model_relations).
Table 10 (wall times) has no kind here: nothing in it is checkable.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

# Table kinds: how a table's LaTeX lays out its CSV (see fudbench.report).
KINDS = {
    "table2_ood": "ood",
    "table8_ood": "ood",
    "table11_ood": "ood",
    "table3_quality": "quality",
    "table9_quality": "quality",
    "table5_constraint": "quality",
    "table4_kendall": "kendall",
    "table7_scores": "score",
    "srg_scores": "score",
    "road_scores": "score",
    "ffidelity_scores": "score",
    "appendix_scores": "score",
    "meta_ground_truth": "meta",
}
# CSV column holding each kind's point value
# (meta: the family's recovery statistic, which the .tex shows; tables from before it had only `spearman`)
VALUE_COLUMN = {"ood": "value", "quality": "mean", "kendall": "mean", "score": "mean", "meta": "recovery"}


def _value_column(kind: str, csv: pd.DataFrame) -> str:
    column = VALUE_COLUMN[kind]
    return "spearman" if kind == "meta" and column not in csv.columns else column


_UNESCAPE = {r"\&": "&", r"\%": "%", r"\$": "$", r"\#": "#", r"\_": "_", r"\{": "{", r"\}": "}"}
_ARROWS = {r"$\uparrow$": True, r"$\downarrow$": False}


# ------------------------------------------------------------------ reading LaTeX


@dataclass
class Cell:
    """One number cell of a booktabs table: mean, half-width (None without an
    interval), decimals shown, bold; mean is nan for '--'."""

    mean: float
    half: float | None
    decimals: int
    bold: bool


_CELL = re.compile(r"^(?P<m>-?\d+(?:\.(?P<d>\d+))?)(?:\\,\{\\scriptsize\$\\pm\$(?P<h>-?\d+(?:\.\d+)?)\})?$")


def parse_cell(text: str) -> Cell:
    """'0.1234\\,{\\scriptsize$\\pm$0.0100}' -> Cell(0.1234, 0.01, 4, False); '--' -> nan."""
    s = text.strip()
    bold = s.startswith(r"\textbf{") and s.endswith("}")
    if bold:
        s = s[len(r"\textbf{") : -1]
    if s == "--":
        return Cell(math.nan, None, 0, bold)
    m = _CELL.match(s)
    if not m:
        raise ValueError(f"not a number cell: {text!r}")
    return Cell(float(m["m"]), float(m["h"]) if m["h"] else None, len(m["d"] or ""), bold)


def unescape(text: str) -> str:
    for k, v in _UNESCAPE.items():
        text = text.replace(k, v)
    return text.strip()


def split_arrow(label: str) -> tuple[str, bool | None]:
    """'Deletion $\\downarrow$' -> ('Deletion', False); no arrow -> (label, None)."""
    for arrow, up in _ARROWS.items():
        if label.rstrip().endswith(arrow):
            return unescape(label.rstrip()[: -len(arrow)]), up
    return unescape(label), None


def _row(line: str) -> list[str]:
    return [c.strip() for c in line.rstrip().removesuffix(r"\\").split(" & ")]


def tex_rows(tex: str) -> tuple[list[list[str]], list[list[str]]]:
    """(header rows, body rows) of a booktabs table, split into cells; rules left out."""
    lines = tex.splitlines()
    top, bottom = lines.index(r"\toprule"), lines.index(r"\bottomrule")
    mid = lines.index(r"\midrule", top)
    keep = [i for i in range(top + 1, bottom) if not lines[i].startswith((r"\midrule", r"\cmidrule"))]
    return [_row(lines[i]) for i in keep if i < mid], [_row(lines[i]) for i in keep if i > mid]


def detector_key(label) -> str:
    """An OOD table's detector as the CSV and the .tex both name it: 'k-NN' and 'knn' -> 'knn'."""
    return re.sub(r"[^a-z0-9]", "", unescape(str(label)).lower())


def _model_groups(header_line: list[str]) -> list[tuple[str, int]]:
    """[(model label, number of columns)] of a '& \\multicolumn{4}{c}{cnn} & ...' header row."""
    found = [re.match(r"\\multicolumn\{(\d+)\}\{c\}\{(.*)\}$", c) for c in header_line[1:]]
    return [(unescape(m[2]), int(m[1])) for m in found if m]


def tex_cells(kind: str, tex: str) -> dict[tuple, tuple[Cell, bool | None]]:
    """{CSV key of the cell: (cell, arrow of its column or row)} for a table of `kind`.

    Keys: score (model, EXPLAINER, metric); kendall (model, evaluator,
    EXPLAINER); ood (evaluator, model label, metric), with a Detector column
    (evaluator, detector_key, model label, metric); quality (evaluator,
    metric); meta (model, family, metric, kind)."""
    header, body = tex_rows(tex)
    out = {}
    if kind == "ood":
        # a Detector column (Energy, Mahalanobis, k-NN) makes the key (evaluator, detector, model, metric)
        n_labels = 2 if len(header[-1]) > 1 and unescape(header[-1][1]) == "Detector" else 1
        groups, cols = _model_groups(header[0]), [split_arrow(c) for c in header[-1][n_labels:]]
        models = [m for m, n in groups for _ in range(n)]
        for row in body:
            labels = (unescape(row[0]),) + ((detector_key(row[1]),) if n_labels == 2 else ())
            for model, (metric, up), text in zip(models, cols, row[n_labels:]):
                out[labels + (model, metric)] = (parse_cell(text), up)
    elif kind == "meta":
        cols = [unescape(c).rsplit(" ", 2) for c in header[-1][1:]]
        for row in body:
            metric, up = split_arrow(row[0])
            for (model, family, k), text in zip(cols, row[1:]):
                out[(model, family, metric, k)] = (parse_cell(text), up)
    else:
        n_labels = 1 if kind == "quality" else 2
        cols = [split_arrow(c) for c in header[-1][n_labels:]]
        for row in body:
            labels = tuple(unescape(c) for c in row[:n_labels])
            for (col, up), text in zip(cols, row[n_labels:]):
                out[labels + (col,)] = (parse_cell(text), up)
    return out


def csv_cells(kind: str, csv: pd.DataFrame) -> dict[tuple, pd.Series]:
    """{key as in tex_cells: CSV row}."""

    def key(r):
        if kind == "score":
            return (str(r["model"]), str(r["explainer"]), str(r["metric"]))
        if kind == "kendall":
            return (str(r["model"]), str(r["evaluator"]), str(r["explainer"]))
        if kind == "ood":
            detector = (detector_key(r["detector"]),) if "detector" in r.index else ()
            return (str(r["evaluator"]), *detector, str(r["model"]), str(r["metric"]))
        if kind == "quality":
            return (str(r["evaluator"]), str(r["metric"]))
        return (str(r["model"]), str(r["family"]), str(r["metric"]), str(r["kind"]))

    return {key(r): r for _, r in csv.iterrows()}


# ------------------------------------------------------------------ checks


def _close(shown: float, decimals: int, value: float) -> bool:
    """Whether `shown` (rounded to `decimals`) displays `value`, which the CSV
    holds to 6 significant digits."""
    return abs(shown - value) <= 0.5 * 10.0**-decimals + 6e-6 * max(1.0, abs(value))


def _cell_problems(name: str, key: tuple, cell: Cell, row: pd.Series | None, value_col: str) -> list[str]:
    where = f"{name} {key}"
    value = math.nan if row is None else float(row[value_col])
    if math.isnan(cell.mean) or not math.isfinite(value):
        return (
            []
            if math.isnan(cell.mean) and not math.isfinite(value)
            else [f"{where}: .tex shows {cell.mean}, CSV has {value}"]
        )
    out = []
    if not _close(cell.mean, cell.decimals, value):
        out.append(f"{where}: .tex shows {cell.mean}, CSV has {value}")
    lo, hi = float(row["ci_low"]), float(row["ci_high"])
    if math.isfinite(lo) and math.isfinite(hi):
        if cell.half is None or not _close(cell.half, cell.decimals, (hi - lo) / 2):
            out.append(f"{where}: .tex half-width {cell.half}, CSV interval [{lo}, {hi}]")
    elif cell.half is not None:
        out.append(f"{where}: .tex shows an interval, the CSV has none")
    return out


def _arrow_problems(name: str, key: tuple, up: bool | None, row: pd.Series | None) -> list[str]:
    if row is None or up is None or "higher_is_better" not in row:
        return []
    higher = str(row["higher_is_better"]).lower() in ("true", "1")
    return [] if up == higher else [f"{name} {key}: arrow {'up' if up else 'down'} but higher_is_better={higher}"]


def table_names(tables_dir) -> list[str]:
    """Tables of the known kinds that have both a .tex and a .csv."""
    d = Path(tables_dir)
    return [n for n in KINDS if (d / f"{n}.tex").exists() and (d / f"{n}.csv").exists()]


def tex_matches_csv(tables_dir, names=None) -> list[str]:
    """Every number cell of each .tex equals its CSV row (mean and half-width
    of the interval, to the digits shown), every CSV row of a shown row and
    column is in the .tex, and the arrows agree with higher_is_better."""
    d = Path(tables_dir)
    problems = []
    for name in names or table_names(d):
        kind = KINDS[name]
        try:
            shown = tex_cells(kind, (d / f"{name}.tex").read_text())
        except ValueError as e:
            problems.append(f"{name}: unreadable .tex ({e})")
            continue
        csv = pd.read_csv(d / f"{name}.csv")
        rows = csv_cells(kind, csv)
        if not shown:
            problems.append(f"{name}: no number cells in the .tex")
        for key, (cell, up) in shown.items():
            row = rows.get(key)
            if row is None and not math.isnan(cell.mean):
                problems.append(f"{name} {key}: in the .tex, not in the CSV")
                continue
            problems += _cell_problems(name, key, cell, row, _value_column(kind, csv))
            problems += _arrow_problems(name, key, up, row)
        # every CSV row is in the .tex, unless the .tex leaves out its whole column (Table 2: AUPR-In)
        column = (lambda k: k[-2:]) if kind == "ood" else (lambda k: k[-1])  # ood: (model group, metric)
        shown_cols = {column(k) for k in shown}
        for key in rows:
            if column(key) in shown_cols and key not in shown:
                problems.append(f"{name} {key}: in the CSV, not in the .tex")
    return problems


def bold_marks_best(tables_dir, names=("table3_quality", "table9_quality", "table5_constraint")) -> list[str]:
    """In the quality tables (and Table 5, hard vs soft constraint) exactly the best entry of each metric column is
    bold: highest mean where higher_is_better, lowest otherwise (ties: any of
    the tied entries)."""
    d = Path(tables_dir)
    problems = []
    for name in names:
        if not (d / f"{name}.tex").exists():
            continue
        csv = pd.read_csv(d / f"{name}.csv")
        try:
            shown = tex_cells("quality", (d / f"{name}.tex").read_text())
        except ValueError:
            continue  # reported by tex_matches_csv
        for metric, g in csv.groupby("metric", sort=False):
            g = g[g["mean"].notna()]
            if len(g) < 2:
                continue
            higher = str(g["higher_is_better"].iloc[0]).lower() in ("true", "1")
            best = g["mean"].max() if higher else g["mean"].min()
            allowed = set(g.loc[(g["mean"] - best).abs() <= 1e-5 * max(1.0, abs(best)), "evaluator"])
            bold = {k[0] for k, (cell, _) in shown.items() if k[1] == metric and cell.bold}
            if len(bold) != 1 or not bold <= allowed:
                problems.append(f"{name} {metric}: bold {sorted(bold)}, best {sorted(allowed)}")
    return problems


@lru_cache(maxsize=None)
def curve_of_label(label: str):
    """The CurveSpec a table column label names (an aliased entry's "<label> [<entry>]"
    by its base label), from the evaluators' catalogue; None if unknown. Cached:
    values_in_range asks once per table row."""
    from fudbench.analysis.curves import CATALOGUE

    base = re.sub(r" \[[^\]]+\]$", "", label)
    return next((c for c in CATALOGUE.values() if c.label == base), None)


_QUALITY_RANGES = {
    "PSNR": (0.0, math.inf),
    "SSIM": (-1.0, 1.0),
    "MS-SSIM": (-1.0, 1.0),
    "FSIM": (0.0, 1.0),
    "GMSD": (0.0, math.inf),
    "HaarPSI": (0.0, 1.0),
    "VSI": (0.0, 1.0),
}


def _range(kind: str, label: str) -> tuple[float, float]:
    if kind in ("ood",):
        return 0.0, 1.0
    if kind in ("kendall", "meta"):
        return -1.0, 1.0
    if kind == "quality":
        return _QUALITY_RANGES.get(label, (-math.inf, math.inf))
    spec = curve_of_label(label)  # its spec's value_range (unknown labels are not checked)
    return spec.value_range if spec is not None else (-math.inf, math.inf)


def values_in_range(tables_dir, names=None) -> list[str]:
    """Every value and interval bound within its metric's range (AUCs of a
    probability in [0, 1], correlations and tau in [-1, 1], OOD rates in
    [0, 1], INFID >= 0, ...) and ci_low <= ci_high."""
    d = Path(tables_dir)
    problems = []
    for name in names or table_names(d):
        kind, csv = KINDS[name], pd.read_csv(d / f"{name}.csv")
        for _, r in csv.iterrows():
            lo, hi = _range(kind, str(r.get("metric", "")))
            for col in (_value_column(kind, csv), "ci_low", "ci_high"):
                v = float(r[col])
                if math.isfinite(v) and not lo - 1e-9 <= v <= hi + 1e-9:
                    problems.append(f"{name} {dict(r.iloc[:3])}: {col} = {v} outside [{lo}, {hi}]")
            if float(r["ci_low"]) > float(r["ci_high"]):
                problems.append(f"{name} {dict(r.iloc[:3])}: ci_low > ci_high")
    return problems


def srg_gains_add_up(tables_dir) -> list[str]:
    """SRG = LIF - MIF = (R-OMS - MIF) + (LIF - R-OMS) = MRG + LRG per image, so
    the means over the same images add up too (to the CSV's 6 digits)."""
    path = Path(tables_dir) / "srg_scores.csv"
    if not path.exists():
        return []
    csv = pd.read_csv(path)
    parts = csv["metric"].str.extract(r"^(?P<gain>MRG|LRG|SRG) \((?P<imputer>.+)\)$")
    wide = csv.assign(**parts).pivot_table(
        index=["model", "explainer", "imputer"], columns="gain", values="mean", aggfunc="first"
    )
    problems = []
    for key, r in wide.iterrows():
        if abs(r["SRG"] - (r["MRG"] + r["LRG"])) > 2e-5 * max(1.0, abs(r["SRG"])):
            problems.append(f"srg_scores {key}: SRG {r['SRG']} != MRG {r['MRG']} + LRG {r['LRG']}")
    return problems


# ------------------------------------------------------------------ relations of trained models


def score_means(
    tables_dir, names=("table7_scores", "road_scores", "srg_scores", "appendix_scores", "ffidelity_scores")
) -> pd.DataFrame:
    """One row per (model, explainer, metric) of the score tables present:
    mean and higher_is_better."""
    d = Path(tables_dir)
    frames = [pd.read_csv(d / f"{n}.csv") for n in names if (d / f"{n}.csv").exists()]
    if not frames:
        raise FileNotFoundError(f"no score table in {d}")
    out = pd.concat(frames, ignore_index=True)[["model", "explainer", "metric", "mean", "higher_is_better"]]
    out["higher_is_better"] = out["higher_is_better"].astype(str).str.lower().isin(["true", "1"])
    return out


def _better(a: float, b: float, higher: bool) -> bool:
    return a > b if higher else a < b


def beats(tables_dir, better: str, worse: str, metrics, models) -> list[str]:
    """`better` scores better than `worse` under each of `metrics` (table
    labels, e.g. 'Insertion', 'ROAD MoRF') for each model, in the metric's
    direction."""
    s = score_means(tables_dir).set_index(["model", "explainer", "metric"])
    problems = []
    for model in models:
        for metric in metrics:
            try:
                a, b = s.loc[(model, better, metric)], s.loc[(model, worse, metric)]
            except KeyError:
                problems.append(f"{model} {metric}: no scores for {better} and {worse}")
                continue
            if not _better(float(a["mean"]), float(b["mean"]), bool(a["higher_is_better"])):
                problems.append(f"{model} {metric}: {better} {a['mean']:.4f} not better than {worse} {b['mean']:.4f}")
    return problems


def metrics_in_order(tables_dir, family: list[str], model: str) -> list[str]:
    """Metrics (table labels) under which the explainers of `family`, listed
    from least to most degraded, score strictly better one after the other."""
    s = score_means(tables_dir)
    s = s[(s["model"] == model) & s["explainer"].isin(family)]
    ordered = []
    for metric, g in s.groupby("metric", sort=True):
        v = g.set_index("explainer")["mean"].reindex(family)
        if v.notna().all() and all(
            _better(v.iloc[i], v.iloc[i + 1], bool(g["higher_is_better"].iloc[0])) for i in range(len(family) - 1)
        ):
            ordered.append(metric)
    return ordered


def family_in_order(tables_dir, family: list[str], models, min_metrics: int = 1) -> list[str]:
    """At least `min_metrics` metrics rank the degraded family in its true
    order (less noise = better) on each model."""
    problems = []
    for model in models:
        found = metrics_in_order(tables_dir, family, model)
        if len(found) < min_metrics:
            problems.append(
                f"{model}: {len(found)} metric(s) order {family} correctly ({found}); expected at least {min_metrics}"
            )
    return problems


# ------------------------------------------------------------------ agreement between tables


def shared_rows_agree(tables_dir) -> list[str]:
    """Rows two tables compute from the same data with the same bootstrap seed
    are equal: Table 8 is Table 2 with AUPR-In shown (same CSV), Table 11's
    FUD rows are Table 2's, Table 9's FUD rows are Table 3's."""
    d = Path(tables_dir)
    pairs = [
        ("table2_ood", "table8_ood", None),
        ("table2_ood", "table11_ood", "FUD"),
        ("table3_quality", "table9_quality", "FUD"),
    ]
    problems = []
    for a, b, evaluator in pairs:
        if not ((d / f"{a}.csv").exists() and (d / f"{b}.csv").exists()):
            continue
        x, y = (pd.read_csv(d / f"{n}.csv") for n in (a, b))
        if evaluator is not None:
            x, y = (t[t["evaluator"] == evaluator].reset_index(drop=True) for t in (x, y))
            if x.empty:
                continue
        if not x.equals(y):
            problems.append(f"{b}: {'rows of ' + evaluator if evaluator else 'CSV'} differ from {a}'s")
    return problems


def same_scores(tables_dir, a: str, b: str, metrics, models, rtol: float = 1e-6) -> list[str]:
    """Explainers `a` and `b` have equal means under `metrics` for each model,
    e.g. an explainer and its degraded copy with p = 0 (the same pixel ranking)
    under evaluators that fill deterministically."""
    s = score_means(tables_dir).set_index(["model", "explainer", "metric"])["mean"]
    problems = []
    for model in models:
        for metric in metrics:
            x, y = s.get((model, a, metric)), s.get((model, b, metric))
            if x is None or y is None:
                problems.append(f"{model} {metric}: no scores for {a} and {b}")
            elif not abs(x - y) <= rtol * max(1.0, abs(x)):
                problems.append(f"{model} {metric}: {a} {x} != {b} {y}")
    return problems


def _spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rho with average ranks (ties); nan when either side is constant."""
    rx, ry = pd.Series(x).rank(), pd.Series(y).rank()
    if rx.nunique() < 2 or ry.nunique() < 2:
        return math.nan
    return float(rx.corr(ry))


def meta_agrees_with_scores(tables_dir, degraded: dict[str, tuple[str, float]]) -> list[str]:
    """The meta-evaluation's macro Spearman correlations equal those of the
    score tables' means: per (model, family, metric) shown in both, rank the
    family by mean (in the metric's direction) against less noise = better.
    degraded: {explainer: (family, noise fraction)} (analysis.meta.degraded_explainers).
    Families whose means are within the CSV's rounding of each other are skipped."""
    d = Path(tables_dir)
    if not (d / "meta_ground_truth.csv").exists():
        return []
    meta = pd.read_csv(d / "meta_ground_truth.csv")
    meta = meta[(meta["kind"] == "macro") & meta["spearman"].notna()]
    s = score_means(d).set_index(["model", "explainer", "metric"])
    problems, checked = [], 0
    for _, r in meta.iterrows():
        members = sorted((p, e) for e, (f, p) in degraded.items() if f == r["family"])
        keys = [(r["model"], e, r["metric"]) for _, e in members]
        if not all(k in s.index for k in keys):
            continue
        means = [float(s.loc[k, "mean"]) for k in keys]
        if min(abs(u - v) for i, u in enumerate(means) for v in means[i + 1 :]) <= 2e-5 * max(1.0, *map(abs, means)):
            continue
        sign = 1.0 if bool(s.loc[keys[0], "higher_is_better"]) else -1.0
        rho = _spearman([sign * m for m in means], [-p for p, _ in members])
        checked += 1
        if not abs(rho - float(r["spearman"])) <= 1e-5:
            problems.append(
                f"meta_ground_truth {r['model']} {r['family']} {r['metric']}: macro {r['spearman']}, "
                f"score tables give {rho}"
            )
    return problems if checked else ["meta_ground_truth: no macro correlation could be checked"]


def consistency_problems(tables_dir) -> list[str]:
    """The consistency checks that need no knowledge of the run's config (they
    hold for any model and seed)."""
    return (
        tex_matches_csv(tables_dir)
        + bold_marks_best(tables_dir)
        + values_in_range(tables_dir)
        + srg_gains_add_up(tables_dir)
        + shared_rows_agree(tables_dir)
    )


# ------------------------------------------------------------------ per run, from its config


def ranking_only_metrics() -> list[str]:
    """Table labels of the curves whose score sees only the pixel ranking and
    fills deterministically (CurveSpec.ranking_only): an explainer and its
    p = 0 degraded copy (the same ranking, min-max scaled) score the same."""
    from fudbench.analysis.curves import CATALOGUE

    return [c.label for c in CATALOGUE.values() if c.ranking_only]


def _degraded(config: dict) -> dict[str, tuple[str, float]]:
    from fudbench.meta.families import degraded_explainers

    return degraded_explainers(config["explainers"])


def run_consistency(tables_dir, config: dict) -> list[str]:
    """Everything that holds for any model and seed, for a run of `config`:
    consistency_problems, the meta-evaluation's macro correlations against
    the score tables, and each p = 0 degraded copy scoring as its base
    explainer under ranking_only_metrics() (those the run has)."""
    problems = consistency_problems(tables_dir)
    degraded = _degraded(config)
    if degraded:
        problems += meta_agrees_with_scores(tables_dir, degraded)
    models = list(config["models"]["classifiers"])
    present = set(score_means(tables_dir)["metric"])
    metrics = [m for m in ranking_only_metrics() if m in present]
    for name, (base, p) in degraded.items():
        if p == 0 and base in config["explainers"]:
            problems += same_scores(tables_dir, base, name, metrics, models)
    return problems


def trained_model_relations(tables_dir, config: dict, min_metrics: int = 1) -> list[str]:
    """What a TRAINED model's tables must show: the ground-truth mask (an
    `oracle` entry, or the oracle family's p = 0 member) above the random map
    under Insertion and ROAD MoRF on every model, and each degraded family of
    the config in its true order under at least `min_metrics` metrics. A
    config without a mask or without `random` is reported as a problem: a run
    meant for these checks must have them."""
    from fudbench.meta.families import family_members

    models = list(config["models"]["classifiers"])
    degraded = _degraded(config)
    families = family_members(degraded)
    masks = [n for n, e in config["explainers"].items() if (e or {}).get("method", n) == "oracle"]
    masks += [n for n in families.get("oracle", []) if degraded[n][1] == 0]
    problems = []
    if not masks or "random" not in config["explainers"]:
        problems.append("no oracle explainer (or oracle family at p = 0) or no random explainer in the config")
    else:
        # Not ROAD LeRF: removing the least relevant pixels of a random map scatters
        # the removals, which noisy-linear imputation refills almost perfectly,
        # while the mask's removals are one block (the default run: random above
        # the mask on both models). That is a property of the fill, not a broken table.
        problems += beats(tables_dir, masks[0], "random", ["Insertion", "ROAD MoRF"], models)
    for members in families.values():
        problems += family_in_order(tables_dir, members, models, min_metrics)
    return problems


def main(argv: list[str]) -> int:
    """TABLES_DIR [CONFIG]: the consistency checks; with the run's config also
    run_consistency and trained_model_relations. Exit status 1 on any problem."""
    if not argv or len(argv) > 2:
        print("usage: python -m fudbench.report.sanity TABLES_DIR [CONFIG.yaml]", file=sys.stderr)
        return 2
    if len(argv) == 2:
        from fudbench.config.validate import load_yaml

        config = load_yaml(argv[1])
        problems = run_consistency(argv[0], config) + trained_model_relations(argv[0], config)
    else:
        problems = consistency_problems(argv[0])
    print("\n".join(problems) or f"{argv[0]}: no problem ({len(table_names(argv[0]))} tables)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
