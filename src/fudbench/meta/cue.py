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
   Dose-response (`dose_response`): a share 0, 1/4, ..., 1 of each cue's
   pixels removed (nested across doses; random, centre-first or
   border-first), the removed pixels rendered as the background the
   generator drew there; accuracy and the label's probability per dose, and
   whether they fall at every step. It says whether a map that covers more
   of the cue points at more of the evidence, or which part of the cue the
   model reads.
2. cue coverage of each map (`cue_coverage`), per image: `precision` (share
   of the map's top-|cue| pixels inside the cue; ties shared out in
   expectation), `auroc` (chance that a cue pixel outranks a non-cue pixel,
   ties 1/2) and `mass` (share of |attribution| inside the cue). The oracle
   (the cue mask) scores 1 on all three, the background anchor 0, a
   constant or uniformly random map |cue| / HW (precision, mass) or 1/2 (auroc).
3. metric verdicts (`cue_verdict_frames`): per model, metric, truth and
   image, the Spearman correlation between the metric's oriented scores of
   the explainers and their coverage; its mean over images with
   inference.mean_interval's interval and p, `recovers` (interval above 0),
   `reverses` (below) or `undecided at n = N`, beside the macro Spearman
   (of the per-explainer means, percentile bootstrap over images). Computed
   over all explainers and over the explainers without the controls
   (oracle, background, random and the degraded / randomised families),
   whose coverage spread is made by construction and so makes agreement
   easy; each with and without ISA, whose maps miss the cue everywhere (a
   metric that only ranks ISA last scores about +0.23 among 11).
4. the endpoint cells (`endpoint_rows`): the paired per-image difference of
   FUD symmetric's (and FUD bottom's) agreement minus paper FUD's.

Torch-free: the scripts pass in predictions and attribution arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from fudbench.analysis.bootstrap import bootstrap_ci
from fudbench.meta.ranks import average_ranks, spearman_rows

TRUTHS = ("precision", "auroc", "mass")
CONTROL_METHODS = ("oracle", "background", "random", "degrade", "randomise_model")
CONDITIONS = ("clean", "cue_removed", "object_removed", "cue_swapped")
INTERVENTION_COLUMNS = [
    "model",
    "condition",
    "n",
    "accuracy",
    "ci_low",
    "ci_high",
    "chance",
    "unchanged",
    "expected",
    "check",
]
VERDICT_COLUMNS = [
    "model",
    "curve",
    "metric",
    "explainers",
    "truth",
    "with_isa",
    "n_explainers",
    "n_images",
    "spearman",
    "ci_low",
    "ci_high",
    "p",
    "verdict",
    "macro_spearman",
    "macro_ci_low",
    "macro_ci_high",
    "macro_verdict",
    "intervention",
]
PER_IMAGE_COLUMNS = ["model", "curve", "metric", "explainers", "truth", "with_isa", "image", "spearman"]


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


def intervention_rows(
    model: str,
    predictions: dict,
    labels,
    swapped_labels,
    n_classes: int,
    check: CueCheck = CueCheck(),
    ci: float = 0.95,
) -> list[dict]:
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
        rows.append(
            {
                "model": model,
                "condition": condition,
                "n": n,
                "accuracy": acc,
                "ci_low": lo,
                "ci_high": hi,
                "chance": chance,
                "unchanged": unchanged,
                "expected": expected,
                "check": "ok" if ok else f"FAILED: {why}",
            }
        )
    return rows


def intervention_check(
    model: str, predict, data: dict, n_classes: int, check: CueCheck = CueCheck(), ci: float = 0.95
) -> list[dict]:
    """intervention_rows of one classifier; predict: uint8 images (N, 3, H, W) -> predicted
    classes; data: generate_cue_split(..., counterfactuals=True)'s arrays."""
    keys = {"clean": "images", "cue_removed": "no_cue", "object_removed": "no_object", "cue_swapped": "swapped"}
    predictions = {condition: np.asarray(predict(data[key])) for condition, key in keys.items()}
    return intervention_rows(model, predictions, data["labels"], data["swapped_labels"], n_classes, check, ci)


# ------------------------------------------------------------------ dose-response

DOSES = (0.0, 0.25, 0.5, 0.75, 1.0)  # shares of the cue's pixels removed
DOSE_COLUMNS = [
    "model",
    "order",
    "dose",
    "n_removed",
    "n",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "target_prob",
    "target_prob_ci_low",
    "target_prob_ci_high",
    "step",
    "step_ci_low",
    "step_ci_high",
    "step_p",
    "step_verdict",
    "monotone",
]


def dose_response_rows(
    model: str, order: str, probs: np.ndarray, labels, doses=DOSES, k: int | None = None, ci: float = 0.95
) -> list[dict]:
    """Rows (DOSE_COLUMNS) of one classifier and removal order. probs: (D, N, C)
    softmax outputs at each dose (nested removals of the same images); labels:
    the clean labels. Accuracy and the label's probability are means of per-image
    values in [0, 1] with inference.mean_interval; `step` is the paired per-image
    change of the label's probability from the previous dose (bounds (-1, 1)):
    `falls` (interval below 0), `rises` (above) or `flat`. `monotone` (the same on
    every row): `falls at every step`, `non-increasing (flat: ...)` or `not
    monotone (rises: ...)`, over the steps."""
    from fudbench.meta.inference import mean_interval

    probs, labels = np.asarray(probs, dtype=float), np.asarray(labels)
    if probs.shape[0] != len(doses):
        raise ValueError(f"{probs.shape[0]} dose arrays for {len(doses)} doses")
    target = probs[:, np.arange(len(labels)), labels]  # (D, N)
    correct = (probs.argmax(-1) == labels).astype(float)
    rows = []
    for j, dose in enumerate(doses):
        acc = mean_interval(correct[j], (0.0, 1.0), ci)
        prob = mean_interval(target[j], (0.0, 1.0), ci)
        step = (
            mean_interval(target[j] - target[j - 1], (-1.0, 1.0), ci) if j else (math.nan, math.nan, math.nan, math.nan)
        )
        word = "" if not j else "falls" if step[2] < 0 else "rises" if step[1] > 0 else "flat"
        rows.append(
            {
                "model": model,
                "order": order,
                "dose": float(dose),
                "n_removed": math.nan if k is None else int(math.floor(dose * k + 0.5)),
                "n": len(labels),
                "accuracy": acc[0],
                "accuracy_ci_low": acc[1],
                "accuracy_ci_high": acc[2],
                "target_prob": prob[0],
                "target_prob_ci_low": prob[1],
                "target_prob_ci_high": prob[2],
                "step": step[0],
                "step_ci_low": step[1],
                "step_ci_high": step[2],
                "step_p": step[3],
                "step_verdict": word,
            }
        )
    steps = {f"{rows[j - 1]['dose']:g}->{rows[j]['dose']:g}": rows[j]["step_verdict"] for j in range(1, len(rows))}
    rises = [s for s, w in steps.items() if w == "rises"]
    flat = [s for s, w in steps.items() if w == "flat"]
    monotone = (
        f"not monotone (rises: {', '.join(rises)})"
        if rises
        else f"non-increasing (flat: {', '.join(flat)})"
        if flat
        else "falls at every step"
    )
    for r in rows:
        r["monotone"] = monotone
    return rows


def dose_response(
    model: str, predict_proba, images, no_cue, ranks_by_order: dict, labels, doses=DOSES, ci: float = 0.95
) -> list[dict]:
    """dose_response_rows of one classifier for every removal order. predict_proba:
    uint8 images (N, 3, H, W) -> (N, C) probabilities; ranks_by_order: {order:
    data.synthetic.cue_removal_ranks(...)}; the dose images are cue_dose_images."""
    from fudbench.data.synthetic import cue_dose_images

    rows = []
    for order, ranks in ranks_by_order.items():
        k = np.unique((ranks >= 0).sum((1, 2)))
        probs = np.stack([np.asarray(predict_proba(cue_dose_images(images, no_cue, ranks, q))) for q in doses])
        rows += dose_response_rows(model, order, probs, labels, doses, int(k[0]) if len(k) == 1 else None, ci)
    return rows


def failed_checks(table: pd.DataFrame) -> dict[str, list[str]]:
    """{model: its failed conditions} of an intervention table."""
    bad = table[~table["check"].astype(str).str.startswith("ok")]
    return {m: g["condition"].tolist() for m, g in bad.groupby("model")}


# ------------------------------------------------------------------ coverage


def reduce_map(attribution: np.ndarray, reduction: str = "abs_sum") -> np.ndarray:
    """(N, C, H, W) or (N, H, W) -> (N, H, W) per-pixel scores, as fudbench.core.masks.reduce_attribution
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
        return np.sqrt((a**2).sum(1))
    raise ValueError(f"config key 'evaluation.reduction': unknown reduction {reduction!r}")


def _as_ranked(scores: np.ndarray) -> np.ndarray:
    """Non-finite pixel scores rank last (the metrics' rule, fudbench.core.masks)."""
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


def coverage_frame(
    model: str, explainer: str, ids, attribution: np.ndarray, cue: np.ndarray, reduction: str = "abs_sum"
) -> pd.DataFrame:
    """Rows (model, explainer, image, precision, auroc, mass) of one attributions file."""
    cov = cue_coverage(reduce_map(attribution, reduction), cue)
    return pd.DataFrame({"model": model, "explainer": explainer, "image": np.asarray(ids, dtype=np.int64), **cov})


def coverage_summary(coverage: pd.DataFrame, n_boot: int = 1000, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per model and explainer: the mean of each coverage statistic over images with its
    percentile bootstrap interval (the cue_truth table)."""
    from fudbench.core.seeding import derive_seed

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


def isa_explainers(explainers: dict) -> list[str]:
    """Config entries that are ISA: its maps put none of their top pixels on the cue
    (precision 0 on every image), so with it in the set a metric that only ranks
    ISA last already correlates (+0.23 among 11 explainers); verdicts are given
    with and without it."""
    return [name for name, s in explainers.items() if (s or {}).get("method", name) == "isa"]


def _macro_interval(s: np.ndarray, t: np.ndarray, n_boot: int, ci: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap over images (rows) of the Spearman correlation of the
    per-explainer (column) means of s and t."""
    if n_boot <= 0 or len(s) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(s), size=(n_boot, len(s)))
    rho = per_image_spearman(s[idx].mean(1), t[idx].mean(1))
    rho = rho[np.isfinite(rho)]
    if not len(rho):
        return math.nan, math.nan
    return float(np.quantile(rho, (1 - ci) / 2)), float(np.quantile(rho, 1 - (1 - ci) / 2))


def cue_verdict_frames(
    per_image: pd.DataFrame,
    coverage: pd.DataFrame,
    explainers: dict,
    curve_scores: dict,
    truths=TRUTHS,
    with_isa=(True, False),
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    failed: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(verdicts, per-image Spearman). verdicts: one row per (model, metric,
    explainer set, truth, with_isa) with VERDICT_COLUMNS; per-image: the rows
    (model, curve, metric, explainers, truth, with_isa, image, spearman) the
    verdicts average (the endpoint's input, `endpoint_rows`). per_image: model,
    explainer, curve, image, score; coverage: coverage_frame's rows; curve_scores:
    {curve: (label, higher is better, ...)}; failed: {model: failed intervention
    conditions} (flagged in the `intervention` column). The per-image mean has
    inference.mean_interval's interval and p (bounds (-1, 1)), the macro Spearman
    a percentile bootstrap over images."""
    from fudbench.meta.claims import verdict
    from fudbench.meta.inference import mean_interval
    from fudbench.meta.families import _image_matrix
    from fudbench.core.seeding import derive_seed

    for truth in truths:
        if truth not in TRUTHS:
            raise ValueError(f"config key 'analysis.cue.truth': {truth!r}; choose from {', '.join(TRUTHS)}")
    failed = failed or {}
    controls, isa = set(control_explainers(explainers)), set(isa_explainers(explainers))
    sets = {"all": list(explainers), "no_controls": [e for e in explainers if e not in controls]}
    rows, rho_frames = [], []
    for model in sorted(set(per_image["model"]) & set(coverage["model"])):
        cov = coverage[coverage["model"] == model]
        for curve, (label, higher, *_) in curve_scores.items():
            d = per_image[(per_image["model"] == model) & (per_image["curve"] == curve)]
            if d.empty:
                continue
            for set_name, members in sets.items():
                members = [e for e in members if e in set(d["explainer"]) and e in set(cov["explainer"])]
                for keep_isa in with_isa:
                    # without ISA only where it is there to leave out (else the rows would repeat)
                    if not keep_isa and not isa & set(members):
                        continue
                    chosen = [e for e in members if keep_isa or e not in isa]
                    if len(chosen) < 3:  # with two, a Spearman is +-1 whatever the metric
                        continue
                    s = (1.0 if higher else -1.0) * _image_matrix(d, "score", chosen, "image")
                    for truth in truths:
                        t = _image_matrix(cov, truth, chosen, "image")
                        images = s.index.intersection(t.index)
                        if not len(images):
                            continue
                        sm, tm = s.loc[images].to_numpy(), t.loc[images].to_numpy()
                        rho = pd.Series(per_image_spearman(sm, tm), index=images).dropna()
                        est, lo, hi, p = mean_interval(rho.to_numpy(), (-1.0, 1.0), ci)
                        macro = per_image_spearman(sm.mean(0)[None], tm.mean(0)[None])[0]
                        # the same resamples of images for every metric (no curve in the seed): paired
                        mlo, mhi = _macro_interval(
                            sm, tm, n_boot, ci, derive_seed(seed, "cue_macro", model, set_name, truth, str(keep_isa))
                        )
                        bad = failed.get(model)
                        rows.append(
                            {
                                "model": model,
                                "curve": curve,
                                "metric": label,
                                "explainers": set_name,
                                "truth": truth,
                                "with_isa": bool(keep_isa),
                                "n_explainers": len(chosen),
                                "n_images": len(rho),
                                "spearman": est,
                                "ci_low": lo,
                                "ci_high": hi,
                                "p": p,
                                "verdict": verdict(lo, hi, len(rho), ("recovers", "reverses")),
                                "macro_spearman": float(macro),
                                "macro_ci_low": mlo,
                                "macro_ci_high": mhi,
                                "macro_verdict": verdict(mlo, mhi, len(images), ("recovers", "reverses")),
                                "intervention": "ok" if not bad else "FAILED: " + ", ".join(bad),
                            }
                        )
                        rho_frames.append(
                            pd.DataFrame(
                                {
                                    "model": model,
                                    "curve": curve,
                                    "metric": label,
                                    "explainers": set_name,
                                    "truth": truth,
                                    "with_isa": bool(keep_isa),
                                    "image": rho.index.to_numpy(),
                                    "spearman": rho.to_numpy(),
                                }
                            )
                        )
    rho_all = pd.concat(rho_frames, ignore_index=True) if rho_frames else pd.DataFrame(columns=PER_IMAGE_COLUMNS)
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS), rho_all[PER_IMAGE_COLUMNS]


def cue_verdicts(
    per_image: pd.DataFrame,
    coverage: pd.DataFrame,
    explainers: dict,
    curve_scores: dict,
    truth: str = "precision",
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    failed: dict | None = None,
) -> pd.DataFrame:
    """cue_verdict_frames' verdicts under one truth, ISA included."""
    return cue_verdict_frames(
        per_image, coverage, explainers, curve_scores, (truth,), (True,), n_boot, ci, seed, failed
    )[0]


# ------------------------------------------------------------------ endpoint

# The pre-registered comparisons (issue 38): FUD's symmetric score and its keep-bottom curve against
# the paper's keep-top FUD, each as agreement with the cue order (per-image Spearman) of the paper's
# explainers (no_controls); the precision truth with ISA is the primary cell.
ENDPOINT_COMPARISONS = {"symmetric_minus_paper": ("fud_symmetric", "fud"), "bottom_minus_paper": ("fud_bottom", "fud")}
ENDPOINT_COLUMNS = [
    "model",
    "comparison",
    "truth",
    "with_isa",
    "explainers",
    "primary",
    "estimate",
    "ci_low",
    "ci_high",
    "p",
    "n_images",
    "macro_challenger",
    "macro_challenger_low",
    "macro_challenger_high",
    "macro_paper",
    "macro_paper_low",
    "macro_paper_high",
    "macro_difference",
]


def endpoint_rows(
    rho: pd.DataFrame,
    comparisons: dict = ENDPOINT_COMPARISONS,
    explainers: str = "no_controls",
    primary: tuple[str, bool] = ("precision", True),
    ci: float = 0.95,
    verdicts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The cue endpoint: per model, comparison (name: (curve, reference curve)),
    truth and with_isa, the mean over images of the paired difference of the two
    curves' per-image Spearman with the truth (cue_verdict_frames' per-image
    frame), on the images both have, with inference.mean_interval's interval and
    raw p (bounds (-2, 2)). No multiplicity adjustment here: the lead's Holm runs
    across the cells. Comparisons whose curves the run did not write are left out.
    With `verdicts` (cue_verdict_frames' first frame), each cell also carries both
    curves' macro Spearman and its bootstrap interval, and their difference
    (descriptive: unlike the per-image mean it does not reward lower per-image
    noise; the compatible-orders interval of order_stats does not scale to 11
    explainers, so the macro interval is the percentile bootstrap over images)."""
    from fudbench.meta.inference import mean_interval

    macro = {}
    if verdicts is not None:
        for r in verdicts[verdicts["explainers"] == explainers].itertuples():
            macro[(r.model, r.curve, r.truth, bool(r.with_isa))] = (r.macro_spearman, r.macro_ci_low, r.macro_ci_high)
    nan3 = (math.nan, math.nan, math.nan)
    d = rho[rho["explainers"] == explainers]
    rows = []
    for (model, truth, with_isa), g in d.groupby(["model", "truth", "with_isa"], sort=True):
        wide = g.pivot_table(index="image", columns="curve", values="spearman", aggfunc="mean")
        for name, (curve, reference) in comparisons.items():
            if curve not in wide or reference not in wide:
                continue
            diff = (wide[curve] - wide[reference]).dropna().to_numpy()
            est, lo, hi, p = mean_interval(diff, (-2.0, 2.0), ci)
            mc = macro.get((model, curve, truth, bool(with_isa)), nan3)
            mp = macro.get((model, reference, truth, bool(with_isa)), nan3)
            rows.append(
                {
                    "model": model,
                    "comparison": name,
                    "truth": truth,
                    "with_isa": bool(with_isa),
                    "explainers": explainers,
                    "primary": (truth, bool(with_isa)) == tuple(primary),
                    "estimate": est,
                    "ci_low": lo,
                    "ci_high": hi,
                    "p": p,
                    "n_images": len(diff),
                    "macro_challenger": mc[0],
                    "macro_challenger_low": mc[1],
                    "macro_challenger_high": mc[2],
                    "macro_paper": mp[0],
                    "macro_paper_low": mp[1],
                    "macro_paper_high": mp[2],
                    "macro_difference": mc[0] - mp[0],
                }
            )
    out = pd.DataFrame(rows, columns=ENDPOINT_COLUMNS)
    order = {t: i for i, t in enumerate(TRUTHS)}
    return out.sort_values(
        ["model", "comparison", "truth", "with_isa"],
        key=lambda c: c.map(order) if c.name == "truth" else (~c if c.name == "with_isa" else c),
        kind="stable",
    ).reset_index(drop=True)
