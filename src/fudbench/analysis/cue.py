"""The planted-cue ground truth (docs/meta_evaluation.md, "Planted cue").

With `data.synthetic.cue` the label is the colour of a small square (the cue)
and nothing else in the image carries it (fudbench.data.synthetic). Three
steps turn that into a verdict on each metric:

1. intervention check (`intervention_rows`): on the test split, each
   classifier's accuracy on the clean images, with the cue removed, with the
   object removed and with the cue recoloured as another class, each
   counterfactual rendered from the generator's own draws (no inpainting).
   Cue removed ~ chance and object removed ~ clean say the cue is the
   evidence; cue swapped ~ clean says the model reads the cue's colour, not
   only its presence. It licenses "the cue is where the evidence is".
2. cue coverage of each map (`cue_coverage`), per image: `precision` (share
   of the map's top-|cue| pixels inside the cue; ties shared out in
   expectation), `auroc` (chance that a cue pixel outranks a non-cue pixel,
   ties 1/2) and `mass` (share of |attribution| inside the cue). The oracle
   (the cue mask) scores 1 on all three, the background anchor 0, a
   constant or uniformly random map |cue| / HW (precision, mass) or 1/2 (auroc).
3. metric verdicts (`cue_verdicts`): per model, metric and image, the
   Spearman correlation between the metric's oriented scores of the
   explainers and their coverage; its mean over images with a percentile
   bootstrap interval (images resampled), and `recovers` (interval above 0),
   `reverses` (below) or `undecided at n = N`. Computed over all explainers
   and over the explainers without the controls (oracle, background, random
   and the degraded / randomised families), whose coverage spread is made by
   construction and so makes agreement easy.

Torch-free: the scripts pass in predictions and attribution arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from fudbench.analysis.bootstrap import bootstrap_ci
from fudbench.analysis.ranks import average_ranks, spearman_rows
from fudbench.report.latex import booktabs, escape

TRUTHS = ("precision", "auroc", "mass")
CONTROL_METHODS = ("oracle", "background", "random", "degrade", "randomise_model")
CONDITIONS = ("clean", "cue_removed", "object_removed", "cue_swapped")
INTERVENTION_COLUMNS = ["model", "condition", "n", "accuracy", "ci_low", "ci_high", "chance", "unchanged",
                        "expected", "check"]
VERDICT_COLUMNS = ["model", "curve", "metric", "explainers", "truth", "n_explainers", "n_images", "spearman",
                   "ci_low", "ci_high", "macro_spearman", "verdict", "intervention"]


@dataclass(frozen=True)
class CueCheck:
    """analysis.cue of the config (schema defaults repeated here, the one place the code reads them)."""

    truth: str = "precision"
    min_accuracy: float = 0.9
    min_unchanged: float = 0.9
    chance_margin: float = 0.1
    strict: bool = True

    @classmethod
    def from_config(cls, cfg: dict | None) -> "CueCheck":
        cfg = cfg or {}
        return cls(**{f.name: cfg[f.name] for f in fields(cls) if f.name in cfg})


# ------------------------------------------------------------------ intervention

def wilson_interval(k: int, n: int, ci: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion k / n (nan, nan for n = 0)."""
    if n == 0:
        return float("nan"), float("nan")
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + ci / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def intervention_rows(model: str, predictions: dict, labels, swapped_labels, n_classes: int,
                      check: CueCheck = CueCheck(), ci: float = 0.95) -> list[dict]:
    """One row per condition (CONDITIONS) of one classifier. predictions: {condition:
    predicted classes}; labels: the clean labels; swapped_labels: the classes the
    recoloured cues say. Accuracy is against the label the image's cue says (the
    original label where the cue is removed), `unchanged` the share of predictions
    equal to the clean image's; `check` is ok or FAILED with the reason."""
    labels, swapped = np.asarray(labels), np.asarray(swapped_labels)
    clean = np.asarray(predictions["clean"])
    chance = 1.0 / n_classes
    rows = []
    for condition in CONDITIONS:
        pred = np.asarray(predictions[condition])
        truth = swapped if condition == "cue_swapped" else labels
        k, n = int((pred == truth).sum()), len(pred)
        lo, hi = wilson_interval(k, n, ci)
        acc, unchanged = k / n, float((pred == clean).mean())
        if condition == "cue_removed":
            # Nothing in the image says the label any more, so any model is at chance in
            # expectation: above it means the label leaks outside the cue (a generator bug).
            expected = f"~ chance ({chance:.2f})"
            ok, why = lo <= chance + check.chance_margin, f"interval above chance + {check.chance_margin}"
        elif condition == "object_removed":
            expected = f"unchanged >= {check.min_unchanged}"
            ok, why = unchanged >= check.min_unchanged, f"unchanged {unchanged:.3f} < {check.min_unchanged}"
        else:  # clean, and the recoloured cue: the model must follow the colour
            expected = f"accuracy >= {check.min_accuracy}"
            ok, why = acc >= check.min_accuracy, f"accuracy {acc:.3f} < {check.min_accuracy}"
        rows.append({"model": model, "condition": condition, "n": n, "accuracy": acc, "ci_low": lo, "ci_high": hi,
                     "chance": chance, "unchanged": unchanged, "expected": expected,
                     "check": "ok" if ok else f"FAILED: {why}"})
    return rows


def intervention_check(model: str, predict, data: dict, n_classes: int, check: CueCheck = CueCheck(),
                       ci: float = 0.95) -> list[dict]:
    """intervention_rows of one classifier; predict: uint8 images (N, 3, H, W) -> predicted
    classes; data: generate_cue_split(..., counterfactuals=True)'s arrays."""
    keys = {"clean": "images", "cue_removed": "no_cue", "object_removed": "no_object", "cue_swapped": "swapped"}
    predictions = {condition: np.asarray(predict(data[key])) for condition, key in keys.items()}
    return intervention_rows(model, predictions, data["labels"], data["swapped_labels"], n_classes, check, ci)


def failed_checks(table: pd.DataFrame) -> dict[str, list[str]]:
    """{model: its failed conditions} of an intervention table."""
    bad = table[~table["check"].astype(str).str.startswith("ok")]
    return {m: g["condition"].tolist() for m, g in bad.groupby("model")}


# ------------------------------------------------------------------ coverage

def reduce_map(attribution: np.ndarray, reduction: str = "abs_sum") -> np.ndarray:
    """(N, C, H, W) or (N, H, W) -> (N, H, W) per-pixel scores, as fudbench.masks.reduce_attribution
    (the metrics' reduction; a test checks the two agree)."""
    a = np.asarray(attribution, dtype=np.float64)
    if a.ndim == 3:
        return a
    if reduction == "abs_sum":
        return np.abs(a).sum(1)
    if reduction == "sum":
        return a.sum(1)
    if reduction == "max_abs":
        return np.abs(a).max(1)
    if reduction == "l2":
        return np.sqrt((a ** 2).sum(1))
    raise ValueError(f"config key 'evaluation.reduction': unknown reduction {reduction!r}")


def _as_ranked(scores: np.ndarray) -> np.ndarray:
    """Non-finite pixel scores rank last (the metrics' rule, fudbench.masks)."""
    s = np.asarray(scores, dtype=np.float64)
    bad = ~np.isfinite(s)
    if bad.any():
        low = np.where(bad, np.inf, s).min(-1, keepdims=True)
        low = np.where(np.isfinite(low), low, 0.0)
        s = np.where(bad, low - 1.0, s)
    return s


def cue_coverage(scores: np.ndarray, cue: np.ndarray) -> dict[str, np.ndarray]:
    """Per image (N,) coverage of the cue by per-pixel scores (N, H, W): precision,
    auroc and mass (module docstring). Ties are shared out as a uniformly random
    tie-break would in expectation, so a constant map scores |cue| / HW and 1/2."""
    from scipy.stats import rankdata

    s = _as_ranked(scores).reshape(len(scores), -1)
    m = np.asarray(cue).reshape(len(cue), -1).astype(bool)
    k = m.sum(1)
    if (k == 0).any() or m.all(1).any():
        raise ValueError("every image needs a cue mask with pixels inside and outside it")
    # precision: the k-th largest value is the cut; pixels tied at it count by their share
    kth = -np.sort(-s, axis=1)[np.arange(len(s)), k - 1][:, None]
    above, tied = s > kth, s == kth
    in_above, in_tied = (above & m).sum(1), (tied & m).sum(1)
    precision = (in_above + (k - above.sum(1)) * in_tied / tied.sum(1)) / k
    # auroc: Mann-Whitney U of cue pixels against the rest, from average ranks
    ranks = rankdata(s, axis=1)
    n0 = m.shape[1] - k
    auroc = ((ranks * m).sum(1) - k * (k + 1) / 2) / (k * n0)
    a = np.abs(np.where(np.isfinite(scores), scores, 0.0)).reshape(len(scores), -1)
    total = a.sum(1)
    mass = np.where(total > 0, (a * m).sum(1) / np.where(total > 0, total, 1), k / m.shape[1])
    return {"precision": precision, "auroc": auroc, "mass": mass}


def coverage_frame(model: str, explainer: str, ids, attribution: np.ndarray, cue: np.ndarray,
                   reduction: str = "abs_sum") -> pd.DataFrame:
    """Rows (model, explainer, image, precision, auroc, mass) of one attributions file."""
    cov = cue_coverage(reduce_map(attribution, reduction), cue)
    return pd.DataFrame({"model": model, "explainer": explainer, "image": np.asarray(ids, dtype=np.int64), **cov})


def coverage_summary(coverage: pd.DataFrame, n_boot: int = 1000, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per model and explainer: the mean of each coverage statistic over images with its
    percentile bootstrap interval (the cue_truth table)."""
    from fudbench.seeding import derive_seed

    rows = []
    for (model, explainer), g in coverage.groupby(["model", "explainer"], sort=False):
        row = {"model": model, "explainer": explainer, "n_images": len(g)}
        for t in TRUTHS:
            est, lo, hi = bootstrap_ci(g[t].to_numpy(), n_boot, ci, derive_seed(seed, "cue_truth", model, explainer, t))
            row.update({t: est, f"{t}_ci_low": lo, f"{t}_ci_high": hi})
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ verdicts

def control_explainers(explainers: dict) -> list[str]:
    """Config entries that are controls: the anchors, the cue mask and the families of known order."""
    return [name for name, s in explainers.items() if (s or {}).get("method", name) in CONTROL_METHODS]


def per_image_spearman(scores: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Row-wise Spearman (I, E) x (I, E) -> (I,): NaN where the truth ties every
    explainer (the image orders nothing), 0 where the metric does (it sees nothing)."""
    flat = [np.ptp(average_ranks(np.asarray(m, dtype=float)), axis=-1) < 1e-9 for m in (scores, truth)]
    return np.where(flat[1], np.nan, np.where(flat[0], 0.0, spearman_rows(scores, truth)))


def cue_verdicts(per_image: pd.DataFrame, coverage: pd.DataFrame, explainers: dict, curve_scores: dict,
                 truth: str = "precision", n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
                 failed: dict | None = None) -> pd.DataFrame:
    """One row per (model, metric, explainer set) with VERDICT_COLUMNS. per_image:
    model, explainer, curve, image, score; coverage: coverage_frame's rows;
    curve_scores: {curve: (label, higher is better, ...)}; failed: {model: failed
    intervention conditions} (flagged in the `intervention` column)."""
    from fudbench.analysis.claims import verdict
    from fudbench.analysis.meta import _image_matrix
    from fudbench.seeding import derive_seed

    if truth not in TRUTHS:
        raise ValueError(f"config key 'analysis.cue.truth': {truth!r}; choose from {', '.join(TRUTHS)}")
    failed = failed or {}
    controls = set(control_explainers(explainers))
    sets = {"all": list(explainers), "no_controls": [e for e in explainers if e not in controls]}
    rows = []
    for model in sorted(set(per_image["model"]) & set(coverage["model"])):
        cov = coverage[coverage["model"] == model]
        for curve, (label, higher, *_) in curve_scores.items():
            d = per_image[(per_image["model"] == model) & (per_image["curve"] == curve)]
            if d.empty:
                continue
            for set_name, members in sets.items():
                members = [e for e in members if e in set(d["explainer"]) and e in set(cov["explainer"])]
                if len(members) < 3:  # with two, a Spearman is +-1 whatever the metric
                    continue
                s = (1.0 if higher else -1.0) * _image_matrix(d, "score", members, "image")
                t = _image_matrix(cov, truth, members, "image")
                images = s.index.intersection(t.index)
                if not len(images):
                    continue
                s, t = s.loc[images], t.loc[images]
                rho = pd.Series(per_image_spearman(s.to_numpy(), t.to_numpy()), index=images).dropna()
                est, lo, hi = bootstrap_ci(rho.to_numpy(), n_boot, ci,
                                           derive_seed(seed, "cue_verdict", model, curve, set_name, truth))
                macro = per_image_spearman(s.mean().to_numpy()[None], t.mean().to_numpy()[None])[0]
                bad = failed.get(model)
                rows.append({"model": model, "curve": curve, "metric": label, "explainers": set_name, "truth": truth,
                             "n_explainers": len(members), "n_images": len(rho), "spearman": est, "ci_low": lo,
                             "ci_high": hi, "macro_spearman": float(macro),
                             "verdict": verdict(lo, hi, len(rho), ("recovers", "reverses")),
                             "intervention": "ok" if not bad else "FAILED: " + ", ".join(bad)})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


# ------------------------------------------------------------------ LaTeX

def _interval(lo, hi, digits=2) -> str:
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]" if np.isfinite(lo) and np.isfinite(hi) else "--"


def intervention_table(table: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Condition", "n", "Accuracy", "Interval", "Unchanged", "Expected", "Check"]
    rows = [[escape(r["model"]), escape(r["condition"]), str(int(r["n"])), f"{r['accuracy']:.3f}",
             _interval(r["ci_low"], r["ci_high"], 3), f"{r['unchanged']:.3f}", escape(r["expected"]),
             escape(r["check"])] for _, r in table.iterrows()]
    caption = (f"Planted cue, intervention check on the test split: accuracy against the class the image's cue "
               f"says (the original label where it is removed) with its {ci:.0%} Wilson interval, and the share "
               "of predictions unchanged from the clean image. Counterfactuals are rendered from the generator's "
               "own draws: cue removed = the background under it, object removed = the background under it, cue "
               "swapped = the cue in another class's colour.").replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_intervention", align="llrrrrll")


def truth_table(summary: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Explainer", "Precision", "AUROC", "Mass", "n"]
    rows = [[escape(r["model"]), escape(r["explainer"]),
             *(f"{r[t]:.2f} {_interval(r[f'{t}_ci_low'], r[f'{t}_ci_high'])}" for t in TRUTHS), str(int(r["n_images"]))]
            for _, r in summary.iterrows()]
    caption = (f"Planted cue, coverage of the cue by each explainer's map (mean over images, {ci:.0%} bootstrap "
               "interval): precision = share of the map's top-|cue| pixels inside the cue; AUROC = chance that a cue "
               "pixel outranks a non-cue pixel; mass = share of the attribution mass inside the cue. The cue mask "
               "(oracle) scores 1, its complement (background) 0.").replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_truth", align="llllll")


def verdict_table(verdicts: pd.DataFrame, ci: float = 0.95) -> str:
    header = ["Model", "Metric", "Explainers", "Spearman", "Interval", "Macro", "n", "Verdict"]
    rows = [[escape(r["model"]) + ("" if r["intervention"] == "ok" else "$^\\dagger$"), escape(r["metric"]),
             escape(r["explainers"]), f"{r['spearman']:.2f}", _interval(r["ci_low"], r["ci_high"]),
             f"{r['macro_spearman']:.2f}", str(int(r["n_images"])), escape(r["verdict"])]
            for _, r in verdicts.iterrows()]
    truth = verdicts["truth"].iloc[0] if len(verdicts) else "precision"
    caption = (f"Planted cue, metric verdicts: mean over images of the Spearman correlation between the metric's "
               f"scores of the explainers (oriented, higher = better) and their cue coverage ({truth}), with its "
               f"{ci:.0%} percentile bootstrap interval over images; macro = the same on the per-explainer means. "
               "Recovers: interval above 0; reverses: below 0. no\\_controls leaves out the oracle, background, "
               "random and the families of known order. $\\dagger$: the model failed the intervention check, so "
               "the cue is not shown to be its evidence.").replace("%", "\\%")
    return booktabs(header, rows, caption=caption, label="tab:cue_verdict", align="lllrrrrl")
