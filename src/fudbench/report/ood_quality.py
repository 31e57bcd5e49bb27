"""Table 2 (OOD detection of intermediate samples: Energy, Mahalanobis, k-NN, and a
sanity row), Table 3 (their image quality), Fig. 2 (radar).

Table builders return (long-format summary DataFrame for the CSV, LaTeX string),
like fudbench.report.tables. Confidence intervals are percentile bootstrap
intervals over IMAGES: a resampled image brings all of its rows (every model,
explainer, curve and step of the table entry) and, in Table 2, its clean energy.
Bootstrap seeds come from derive_seed(seed, "bootstrap", <table>, ...).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fudbench.analysis.bootstrap import percentile_interval  # noqa: E402
from fudbench.analysis.feature_ood import SANITY_LABEL  # noqa: E402
from fudbench.analysis.quality import HIGHER_IS_BETTER, QUALITY_METRICS  # noqa: E402
from fudbench.report.latex import booktabs, escape, fmt_ci  # noqa: E402
from fudbench.core.seeding import derive_seed  # noqa: E402

# ood_metrics key -> column name, and the direction in which intermediate
# samples look MORE in-distribution (the better evaluator in the paper's reading)
OOD_METRICS = {"auroc": "AUROC", "fpr95": "FPR95", "aupr_in": "AUPR-In", "aupr_out": "AUPR-Out"}
OOD_CLOSER_TO_DATA = {"AUROC": "down", "FPR95": "up", "AUPR-In": "down", "AUPR-Out": "down"}
_ARROW = {"up": r"$\uparrow$", "down": r"$\downarrow$"}
log = logging.getLogger(__name__)


# ----------------------------------------------------------------- bootstrap


def _resample_counts(n_items: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n_items) multiplicities of items drawn with replacement."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_boot, n_items))
    return np.stack([np.bincount(d, minlength=n_items) for d in draws]) if n_boot else np.zeros((0, n_items), int)


def weighted_ood_metrics(score_desc: np.ndarray, is_in: np.ndarray, weights: np.ndarray) -> dict:
    """ood_metrics on data where sample i appears weights[i] (integer) times.

    score_desc: -energy sorted in descending order; is_in: 1 for clean images.
    Equal to ood_metrics(np.repeat(...), np.repeat(...)) (sklearn 1.9's roc_curve
    with drop_intermediate for FPR95, trapezoid AUROC, step-wise AP), but without
    re-sorting, so a bootstrap resample costs O(n). One row of
    weighted_ood_metrics_batch.
    """
    return {k: float(v[0]) for k, v in weighted_ood_metrics_batch(score_desc, is_in, np.asarray(weights)[None]).items()}


def weighted_ood_metrics_batch(score_desc: np.ndarray, is_in: np.ndarray, weights: np.ndarray) -> dict:
    """weighted_ood_metrics for many weightings at once (weights: (B, n) integer
    multiplicities, e.g. B bootstrap resamples): {metric: (B,) array}.

    Cumulative positive / negative weights at
    the end of each distinct score over all n entries. An entry of weight 0
    repeats the previous point of the curve, which adds nothing to the AUROC
    trapezoid or to an average precision; for FPR95, sklearn's dropping of
    equally spaced intermediate points is applied to each row's distinct
    points (the previous and next point with new weight). Rows without an ID
    or without an OOD entry give NaN.
    """
    w = np.asarray(weights, dtype=float)
    inn = np.asarray(is_in, dtype=float)
    last = np.r_[score_desc[1:] != score_desc[:-1], True]
    tps = np.cumsum(w * inn, axis=1)[:, last]
    fps = np.cumsum(w * (1 - inn), axis=1)[:, last]
    P, N = tps[:, -1:], fps[:, -1:]
    valid = (P[:, 0] > 0) & (N[:, 0] > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr, fpr = tps / P, fps / N
        z = np.zeros((len(w), 1))
        auroc = np.sum(np.diff(np.c_[z, fpr], axis=1) * (np.c_[z, tpr][:, 1:] + np.c_[z, tpr][:, :-1]) / 2, axis=1)
        fpr95 = _batch_fpr95(tps, fps, tpr, fpr)
        aupr_in = _batch_ap(tps, fps)
        # OOD = positive: the curve read from the other end (ascending score).
        last_o = np.r_[score_desc[::-1][1:] != score_desc[::-1][:-1], True]
        tps_o = np.cumsum((w * (1 - inn))[:, ::-1], axis=1)[:, last_o]
        fps_o = np.cumsum((w * inn)[:, ::-1], axis=1)[:, last_o]
        aupr_out = _batch_ap(tps_o, fps_o)
    out = {"auroc": auroc, "fpr95": fpr95, "aupr_in": aupr_in, "aupr_out": aupr_out}
    return {k: np.where(valid, v, np.nan) for k, v in out.items()}


def _batch_ap(tps: np.ndarray, fps: np.ndarray) -> np.ndarray:
    """sklearn's average_precision_score per row: sum of (R_k - R_{k-1}) P_k over
    thresholds; repeated points (zero-weight groups) add recall 0."""
    ps = tps + fps
    precision = np.divide(tps, ps, out=np.zeros_like(tps), where=ps != 0)
    recall = tps / tps[:, -1:]
    return np.maximum(0.0, np.sum(np.diff(np.c_[np.zeros(len(tps)), recall], axis=1) * precision, axis=1))


def _batch_fpr95(tps, fps, tpr, fpr) -> np.ndarray:
    """fpr at the first kept point with tpr >= 0.95, per row, where a row's
    points are its distinct ones and sklearn keeps the two ends and every
    point whose second difference (to its distinct neighbours) is non-zero."""
    B, G = tps.shape
    idx = np.arange(G)
    new = np.c_[np.ones((B, 1), bool), (np.diff(tps, axis=1) != 0) | (np.diff(fps, axis=1) != 0)]
    new[:, 0] = (tps[:, 0] != 0) | (fps[:, 0] != 0)  # a leading run of empty groups is no point
    # previous / next distinct point of each column (forward / backward fill of indices)
    prev = np.maximum.accumulate(np.where(new, idx, -1), axis=1)
    prev = np.c_[np.full((B, 1), -1), prev[:, :-1]]
    nxt = np.minimum.accumulate(np.where(new, idx, G)[:, ::-1], axis=1)[:, ::-1]
    nxt = np.c_[nxt[:, 1:], np.full((B, 1), G)]
    n_points = new.sum(axis=1, keepdims=True)
    has_prev, has_next = prev >= 0, nxt < G
    pi, ni = np.clip(prev, 0, G - 1), np.clip(nxt, 0, G - 1)
    rows = np.arange(B)[:, None]
    d2t = (tps[rows, ni] - tps) - (tps - tps[rows, pi])
    d2f = (fps[rows, ni] - fps) - (fps - fps[rows, pi])
    corner = new & ((n_points <= 2) | ~has_prev | ~has_next | (d2t != 0) | (d2f != 0))
    hit = corner & (tpr >= 0.95)
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), G - 1)
    return fpr[np.arange(B), first]


# ------------------------------------------------------------------ Table 2


def _clean_series(values) -> pd.Series:
    """Clean energies indexed by image id: an array (position = image id), a Series or a mapping."""
    if isinstance(values, pd.Series):
        return values.astype(float)
    if isinstance(values, Mapping):
        return pd.Series(values, dtype=float)
    a = np.asarray(values, dtype=float).ravel()
    return pd.Series(a, index=np.arange(len(a)))


def _header_lines(tex: str, lines_new: list[str]) -> str:
    lines = tex.split("\n")
    i = lines.index(r"\toprule")
    lines[i + 1 : i + 2] = lines_new
    return "\n".join(lines)


RUN_KEYS = ("explainer", "curve", "step")  # one "run" of Table 2 with pooling="run"


def _ood_cell(e_in, img_in, outs, counts):
    """Mean over the OOD groups `outs` [(energies, image positions)] of ood_metrics
    against the clean set, at the full data and at each bootstrap resample.

    The point estimate is the batch's first row, every weight 1: equal to
    ood_metrics (sklearn) to 1e-12 (tests/test_quality_ood.py), without
    sklearn's input validation, which cost ~6 ms per call and most of the
    table job's time with pooling="run" (hundreds of runs per cell)."""
    point = {k: [] for k in OOD_METRICS}
    boot = {k: np.full((len(outs), len(counts)), np.nan) for k in OOD_METRICS}
    for j, (e_out, img_out) in enumerate(outs):
        score = -np.r_[e_in, e_out]
        is_in = np.r_[np.ones(len(e_in)), np.zeros(len(e_out))]
        image = np.r_[img_in, img_out]
        order = np.argsort(-score, kind="mergesort")
        score, is_in, image = score[order], is_in[order], image[order]
        # row 0: the data itself; a resample without ID or without OOD rows has no metric (NaN)
        weights = np.r_[np.ones((1, len(score))), counts[:, image]]  # counts is (n_boot, n_images), n_boot >= 0
        for k, v in weighted_ood_metrics_batch(score, is_in, weights).items():
            point[k].append(float(v[0]))
            boot[k][j] = v[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no metric in that resample
        return (
            {k: float(np.mean(v)) if v else float("nan") for k, v in point.items()},
            {k: np.nanmean(v, axis=0) if len(v) else np.zeros(0) for k, v in boot.items()},
        )


# OOD detectors of Table 2: the records' / clean-score frame's column -> label in the .tex
DETECTOR_LABELS = {"energy": "Energy", "mahalanobis": "Mahalanobis", "knn": "k-NN"}
DETECTOR_CAPTION = (
    " Detectors (larger score = more OOD for each): Energy, $-\\log\\sum\\exp$ of the logits; "
    "Mahalanobis, the smallest squared Mahalanobis distance of the penultimate features to a class "
    "mean (tied covariance with a small ridge, fitted on reference training images); k-NN, the "
    "distance of the normalised features to their $k$-th nearest reference feature. Sanity row: "
    "the clean images with 10\\% of their pixels zeroed, a mild but plainly OOD corruption; a "
    "detector that gives it an AUROC at or below 0.5 cannot see such samples."
)


def unchanged_samples_are_clean(rows: pd.DataFrame, cleans: Mapping[str, pd.Series]) -> pd.DataFrame:
    """rows (one model's samples) with every sample that its step left unchanged (`l2`, the float32
    L2 distance of the tensor the classifier saw to its original, exactly 0: IROF's k = 0 point,
    deletion's first, insertion's last, SRG's n = 0, the clean rows of RMA and Quantus) given its
    clean image's scores (cleans: {detector: clean scores by image id}). Such a sample IS its clean
    image, an exact tie with it, but the classifier scores it in another batch than the clean-score
    job, and oneDNN picks its kernels by batch size: the trained ViT moved these energies by up to
    1e-6 (Mahalanobis and k-NN by ~1e-6 relative), so rounding noise broke the ties (each of IROF's
    unchanged runs of pooling="run" read AUROC 0.484 or 0.516 instead of 0.5). Rows without an `l2`
    column are left as they are. A row that removed pixels (kept < 1) yet is unchanged (a fill that
    reproduces the removed pixels) is logged, as it ties too."""
    if "l2" not in rows.columns or not len(rows):
        return rows
    same = rows["l2"].to_numpy(float) == 0.0
    if not same.any():
        return rows
    if "kept" in rows.columns:
        odd = same & (rows["kept"].to_numpy(float) < 1.0)
        if odd.any():
            log.warning(
                "%d samples removed pixels but are bitwise their clean images (curves %s): scored as ties with them",
                int(odd.sum()),
                ", ".join(sorted(map(str, rows.loc[odd, "curve"].unique()))) if "curve" in rows else "?",
            )
    rows = rows.copy()
    for det, clean in cleans.items():
        if det in rows.columns:  # a sample's missing score (NaN: no OOD reference) stays missing
            scored = same & np.isfinite(rows[det].to_numpy(float))
            rows.loc[scored, det] = clean.reindex(rows.loc[scored, "image"].to_numpy()).to_numpy(float)
    return rows


def _clean_scores(clean_energy) -> tuple[dict, dict, list[str], bool]:
    """({detector: {model: clean scores}}, {detector: {model: sanity scores}}, detectors, by_detector).

    clean_energy: {model: energies} (energy only, the layout without a detector
    column) or the clean_energy job's frame (model, image, one column per detector
    and sanity_<detector> for the 10%-zeroed copies): its detectors with a finite
    clean score are used, in DETECTOR_LABELS order."""
    if not isinstance(clean_energy, pd.DataFrame):
        return {"energy": dict(clean_energy)}, {}, ["energy"], False
    frame = clean_energy
    detectors = [d for d in DETECTOR_LABELS if d in frame.columns and np.isfinite(frame[d].to_numpy(float)).any()]
    clean, sanity = {}, {}
    for d in detectors:
        clean[d] = {m: g.set_index("image")[d] for m, g in frame.groupby("model")}
        col = f"sanity_{d}"
        if col in frame.columns and np.isfinite(frame[col].to_numpy(float)).any():
            sanity[d] = {m: g.set_index("image")[col] for m, g in frame.groupby("model")}
    return clean, sanity, detectors, True


def table2_ood(
    records: pd.DataFrame,
    clean_energy,
    evaluators: Mapping[str, str],
    models,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    digits: int = 4,
    model_labels: Mapping[str, str] | None = None,
    pooling: str = "all",
    columns=None,
    caption: str | None = None,
    tex_label: str = "tab:ood",
    sanity_label: str = SANITY_LABEL,
):
    """OOD detection of intermediate samples vs clean images (Table 2 / 8 / 11 of FUD),
    by the Energy score and, given the clean-score frame, the feature-based
    detectors (Mahalanobis, k-NN: fudbench.analysis.feature_ood), plus a sanity row.

    records: rows with model, curve, image and one score column per detector
    (energy, mahalanobis, knn; one row per intermediate sample; a missing column
    counts as non-finite). For every detector, larger = more OOD.
    clean_energy: {model: energies of the clean images} (an array indexed by image
    id (position i = image i) or a Series indexed by image id): Energy only, no
    `detector` column; or the clean_energy job's DataFrame (model, image, energy,
    mahalanobis, knn, sanity_energy, ...): one block of rows per detector that has
    finite clean scores, a `detector` column, and per detector a row
    `sanity_label` whose OOD set is the clean images with 10% of their pixels
    zeroed (sanity_<detector>; one sample per image), i.e. what a mild, plainly
    OOD corruption gets from that detector. The clean images are the universe
    that is resampled. evaluators: {curve: label}; several curves may share a
    label (rows keep first-appearance order).
    A sample its step left unchanged (l2 exactly 0) takes its clean image's scores
    (unchanged_samples_are_clean: an exact tie, whichever batch the classifier saw it in).
    Per (label, model, detector): ID = all clean scores, OOD = scores of all rows whose
    curve maps to the label, pooled over explainers and steps (pooling="all");
    AUROC, FPR95, AUPR-In, AUPR-Out from fudbench.models.energy.ood_metrics
    (ID = positive, score = -energy or -distance). Non-finite scores are dropped (counted in n_nonfinite).
    CI: resample images with replacement; each drawn image adds its clean score
    to ID and all its rows to OOD. Seed derive_seed(seed, "bootstrap", "table2",
    model, label): every detector of a (model, label) uses the same image draws.
    Summary columns: evaluator, [detector,] model, metric, value, ci_low,
    ci_high, n_images, n_id, n_ood, n_runs, n_nonfinite, n_unchanged (of the
    detector's n_ood samples, how many are bitwise their clean images: IROF's k = 0 point;
    an unchanged sample without a finite score of that detector is in its n_nonfinite).

    pooling="all" (default) pools every sample into one OOD set, which is ~99x
    the ID set for 11 explainers x 9 steps, so AUPR-In (ID = positive) is small
    and AUPR-Out near 1 whatever the separation; AUROC and FPR95 do not depend
    on the imbalance. pooling="run" computes the metrics per run (explainer x
    curve x step: ID = all clean images, OOD = that run's samples, balanced)
    and averages them over runs, the bootstrap using the same image draws for
    every run. The paper's AUPR-In ~ AUPR-Out ~ AUROC points to balanced sets.
    The sanity row is one run (one sample per image) under either pooling.

    columns: the metric names shown in the LaTeX table (default: all four; the
    paper's Table 2 leaves out AUPR-In, its extended Table 8 has it); the CSV
    always has all four.
    """
    if pooling not in ("all", "run"):
        raise ValueError(f"pooling must be 'all' or 'run', got {pooling!r}")
    clean_by, sanity_by, detectors, by_detector = _clean_scores(clean_energy)
    labels = list(dict.fromkeys(evaluators.values()))
    model_labels = dict(model_labels or {})
    d = records[records["curve"].isin(list(evaluators)) & records["model"].isin(list(models))]
    d = d.assign(evaluator=d["curve"].map(evaluators))
    rows = []

    def add_rows(label, detector, model, point, boot, n_images, n_id, n_ood, n_runs, n_bad, n_unchanged=0):
        for key, name in OOD_METRICS.items():
            lo, hi = percentile_interval(boot[key], ci) if n_boot else (float("nan"),) * 2
            rows.append(
                {
                    "evaluator": label,
                    "detector": detector,
                    "model": model,
                    "metric": name,
                    "value": point[key],
                    "ci_low": lo,
                    "ci_high": hi,
                    "n_images": n_images,
                    "n_id": n_id,
                    "n_ood": n_ood,
                    "n_runs": n_runs,
                    "n_nonfinite": n_bad,
                    "n_unchanged": n_unchanged,
                }
            )

    for model in models:
        cleans = {}
        for det in detectors:
            if model not in clean_by[det]:
                raise KeyError(f"no clean {det} scores for model {model!r}")
            clean = _clean_series(clean_by[det][model])
            if not clean.index.is_unique:
                raise ValueError(f"clean {det} scores of {model!r} list an image id twice")
            cleans[det] = clean
        ids = cleans[detectors[0]].index.to_numpy()
        if any(not np.array_equal(c.index.to_numpy(), ids) for c in cleans.values()):
            raise ValueError(f"the detectors' clean scores of {model!r} are not of the same images")
        pos = pd.Series(np.arange(len(ids)), index=ids)
        dm = unchanged_samples_are_clean(d[d["model"] == model], cleans)
        for label in labels:
            g = dm[dm["evaluator"] == label]
            if not len(g):
                continue
            missing = set(g["image"].unique()) - set(ids.tolist())
            if missing:
                raise ValueError(f"{label}/{model}: images {sorted(missing)[:5]} have no clean energy")
            keys = [c for c in RUN_KEYS if c in g.columns] if pooling == "run" else []
            groups = [h for _, h in g.groupby(keys, sort=True)] if keys else [g]
            counts = _resample_counts(len(ids), n_boot, derive_seed(seed, "bootstrap", "table2", model, label))
            for det in detectors:
                e_in, img_in = cleans[det].to_numpy(float), np.arange(len(ids))
                fin_in = np.isfinite(e_in)
                e_in, img_in = e_in[fin_in], img_in[fin_in]
                outs, n_bad, n_ood, n_unchanged = [], int((~fin_in).sum()), 0, 0
                for h in groups:
                    e_out = h[det].to_numpy(float) if det in h.columns else np.full(len(h), np.nan)
                    img_out = pos[h["image"].to_numpy()].to_numpy()
                    fin = np.isfinite(e_out)
                    n_bad += int((~fin).sum())
                    n_ood += int(fin.sum())
                    # of this detector's n_ood samples (a sample it has no score for is in n_nonfinite)
                    n_unchanged += int((fin & (h["l2"].to_numpy(float) == 0.0)).sum()) if "l2" in h.columns else 0
                    if fin.any():
                        outs.append((e_out[fin], img_out[fin]))
                point, boot = _ood_cell(e_in, img_in, outs if len(e_in) else [], counts)
                add_rows(label, det, model, point, boot, len(ids), len(e_in), n_ood, len(outs), n_bad, n_unchanged)
        if sanity_by:
            counts = _resample_counts(len(ids), n_boot, derive_seed(seed, "bootstrap", "table2", model, sanity_label))
            for det in detectors:
                if det not in sanity_by:
                    continue
                e_in, e_out = cleans[det].to_numpy(float), _clean_series(sanity_by[det][model]).reindex(ids)
                e_out = e_out.to_numpy(float)
                img = np.arange(len(ids))
                fin_in, fin = np.isfinite(e_in), np.isfinite(e_out)
                outs = [(e_out[fin], img[fin])] if fin.any() and fin_in.any() else []
                point, boot = _ood_cell(e_in[fin_in], img[fin_in], outs, counts)
                add_rows(
                    sanity_label,
                    det,
                    model,
                    point,
                    boot,
                    len(ids),
                    int(fin_in.sum()),
                    int(fin.sum()),
                    len(outs),
                    int((~fin_in).sum() + (~fin).sum()),
                )
    columns_out = [
        "evaluator",
        "detector",
        "model",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "n_images",
        "n_id",
        "n_ood",
        "n_runs",
        "n_nonfinite",
        "n_unchanged",
    ]
    summary = pd.DataFrame(rows, columns=columns_out)
    if not by_detector:
        summary = summary.drop(columns="detector")
    elif sanity_by:
        labels = labels + [sanity_label]
    return summary, ood_table_tex(
        summary,
        labels,
        models,
        digits=digits,
        model_labels=model_labels,
        columns=columns,
        caption=caption,
        tex_label=tex_label,
    )


def ood_table_tex(
    summary: pd.DataFrame,
    labels,
    models,
    digits: int = 4,
    model_labels: Mapping | None = None,
    columns=None,
    caption: str | None = None,
    tex_label: str = "tab:ood",
) -> str:
    """The LaTeX of an OOD table from table2_ood's summary: Tables 2 and 8 show
    different columns of the same summary, so one bootstrap serves both. A
    summary with a `detector` column gets a Detector column and one block of
    rows per detector (Energy, Mahalanobis, k-NN), separated by rules."""
    model_labels = model_labels or {}
    metric_names = list(columns or OOD_METRICS.values())
    by_detector = "detector" in summary.columns
    detectors = [d for d in DETECTOR_LABELS if d in set(summary["detector"])] if by_detector else [None]
    detectors += [d for d in dict.fromkeys(summary["detector"]) if d not in detectors] if by_detector else []
    body, block_ends = [], []
    for det in detectors:
        s = summary[summary["detector"] == det] if by_detector else summary
        for label in labels:
            if by_detector and not (s.evaluator == label).any():
                continue
            cells = []
            for model in models:
                for m in metric_names:
                    r = s[(s.evaluator == label) & (s.model == model) & (s.metric == m)]
                    cells.append(fmt_ci(*r[["value", "ci_low", "ci_high"]].iloc[0], digits=digits) if len(r) else "--")
            first = [escape(label), escape(DETECTOR_LABELS.get(det, det))] if by_detector else [escape(label)]
            body.append([*first, *cells])
        block_ends.append(len(body) - 1)
    ncol = len(metric_names)
    n_lab = 2 if by_detector else 1
    caption = caption or (
        "Energy-score OOD detection of the intermediate samples (OOD) against the clean "
        "images (ID), pooled over explainers and steps ($\\pm$ half-width of the bootstrap "
        "95\\% CI over images). Arrows: the direction in which the intermediate samples "
        "are harder to tell from clean data (Table 2 of FUD)."
    )
    if by_detector:
        caption += DETECTOR_CAPTION
    first_cols = ["Eval", "Detector"] if by_detector else ["Eval"]
    tex = booktabs(
        [*first_cols, *metric_names * len(models)],
        body,
        caption=caption,
        label=tex_label,
        align="l" * n_lab + ("r" * ncol) * len(models),
        midrules_after=block_ends[:-1],
    )
    group = " & ".join(
        [""] * n_lab + [f"\\multicolumn{{{ncol}}}{{c}}{{{escape(model_labels.get(m, m))}}}" for m in models]
    )
    rules = " ".join(f"\\cmidrule(lr){{{1 + n_lab + k * ncol}-{n_lab + (k + 1) * ncol}}}" for k in range(len(models)))
    sub = " & ".join(first_cols + [f"{m} {_ARROW[OOD_CLOSER_TO_DATA[m]]}" for m in metric_names] * len(models))
    return _header_lines(tex, [group + r" \\", rules, sub + r" \\"])


# ------------------------------------------------------------------ Table 3


def table3_quality(
    quality: pd.DataFrame,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    metrics=QUALITY_METRICS,
    evaluators=None,
    models=None,
    bold_best: bool = True,
    digits: Mapping[str, int] | None = None,
    caption: str | None = None,
    tex_label: str = "tab:quality",
    first_column: str = "Eval",
):
    """Image quality of intermediate samples per evaluator (Table 3 / 9 of FUD).

    quality: one row per intermediate sample with columns evaluator (label),
    model, explainer, image, step and one column per metric (fudbench.analysis.
    quality.quality_metrics). Entry = mean over all runs (every finite row of the
    evaluator, pooled over models, explainers, images, steps). CI: resample image
    ids with replacement (one draw per evaluator, shared by its metrics; seed
    derive_seed(seed, "bootstrap", "table3", label)); the resampled statistic is
    the same row mean, i.e. sum of the drawn images' row sums / their row counts.
    `models` restricts the rows; `evaluators` fixes the row order (default: first
    appearance). Summary columns: evaluator, metric, mean, ci_low, ci_high,
    n_images, n_samples, n_nonfinite, higher_is_better.
    """
    q = quality if models is None else quality[quality["model"].isin(list(models))]
    evaluators = list(evaluators) if evaluators is not None else list(dict.fromkeys(q["evaluator"]))
    metrics = [m for m in metrics if m in q.columns]
    digits = {**{m: 3 for m in metrics}, "PSNR": 2, **(digits or {})}
    rows = []
    for label in evaluators:
        g = q[q["evaluator"] == label]
        if not len(g):
            continue
        images = pd.Index(pd.unique(g["image"]))
        pos = images.get_indexer(g["image"])
        counts = _resample_counts(len(images), n_boot, derive_seed(seed, "bootstrap", "table3", label))
        for m in metrics:
            v = g[m].to_numpy(float)
            fin = np.isfinite(v)
            sums = np.bincount(pos[fin], weights=v[fin], minlength=len(images))
            ns = np.bincount(pos[fin], minlength=len(images)).astype(float)
            mean = float(sums.sum() / ns.sum()) if ns.sum() else float("nan")
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = (counts @ sums) / (counts @ ns)
            lo, hi = percentile_interval(boot, ci) if n_boot else (float("nan"),) * 2
            rows.append(
                {
                    "evaluator": label,
                    "metric": m,
                    "mean": mean,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n_images": int((ns > 0).sum()),
                    "n_samples": int(fin.sum()),
                    "n_nonfinite": int((~fin).sum()),
                    "higher_is_better": HIGHER_IS_BETTER[m],
                }
            )
    summary = pd.DataFrame(
        rows,
        columns=[
            "evaluator",
            "metric",
            "mean",
            "ci_low",
            "ci_high",
            "n_images",
            "n_samples",
            "n_nonfinite",
            "higher_is_better",
        ],
    )

    best = {}
    for m in metrics:
        s = summary[summary.metric == m].set_index("evaluator")["mean"].dropna()
        if bold_best and len(s) > 1:
            best[m] = s.idxmax() if HIGHER_IS_BETTER[m] else s.idxmin()
    body = []
    for label in evaluators:
        cells = []
        for m in metrics:
            r = summary[(summary.evaluator == label) & (summary.metric == m)]
            cell = fmt_ci(*r[["mean", "ci_low", "ci_high"]].iloc[0], digits=digits[m]) if len(r) else "--"
            cells.append(f"\\textbf{{{cell}}}" if best.get(m) == label and len(r) else cell)
        body.append([escape(label), *cells])
    caption = caption or (
        "Image quality of the intermediate samples against their originals, mean over all "
        "runs ($\\pm$ half-width of the bootstrap 95\\% CI over images; best in bold). "
        "$\\uparrow$ higher is better, $\\downarrow$ lower is better (Table 3 of FUD)."
    )
    tex = booktabs([first_column, *metrics], body, caption=caption, label=tex_label, align="l" + "r" * len(metrics))
    sub = " & ".join(
        [first_column] + [f"{escape(m)} {_ARROW['up' if HIGHER_IS_BETTER[m] else 'down']}" for m in metrics]
    )
    tex = _header_lines(tex, [sub + r" \\"])
    return summary, tex


# -------------------------------------------------------------------- Fig. 2


def radar_normalise(summary: pd.DataFrame, metrics=QUALITY_METRICS) -> pd.DataFrame:
    """Evaluator x metric table of min-max normalised means, outward (1) = better.

    Higher-better metrics (PSNR, SSIM, MS-SSIM, FSIM, HaarPSI, VSI):
    (v - min) / (max - min) across evaluators; GMSD (lower-better):
    (max - v) / (max - min). PSNR is normalised like the others (its dB scale and
    80 dB cap play no role). A metric on which all evaluators tie gets 0.5; a
    missing value stays NaN. The worst evaluator on a metric sits at the centre
    (0), so the plot shows ranks and relative gaps, not absolute quality.
    Accepts Table 3's long summary (evaluator, metric, mean) or a wide frame
    (index evaluator, one column per metric).
    """
    if {"evaluator", "metric", "mean"} <= set(summary.columns):
        wide = summary.pivot_table(index="evaluator", columns="metric", values="mean", sort=False)
        wide = wide.reindex(list(dict.fromkeys(summary["evaluator"])))
    else:
        wide = summary
    metrics = [m for m in metrics if m in wide.columns]
    out = pd.DataFrame(index=wide.index, columns=metrics, dtype=float)
    for m in metrics:
        v = wide[m].astype(float)
        lo, hi = v.min(), v.max()
        if not np.isfinite(hi - lo) or hi == lo:
            out[m] = np.where(v.notna(), 0.5, np.nan)
        else:
            out[m] = (v - lo) / (hi - lo) if HIGHER_IS_BETTER[m] else (hi - v) / (hi - lo)
    return out


def fig2_radar(summary: pd.DataFrame, metrics=QUALITY_METRICS, title: str | None = None):
    """Radar plot (Fig. 2 of FUD) of radar_normalise(summary): one polygon per
    evaluator, one axis per quality metric, outward = better on every axis
    (GMSD inverted; see radar_normalise for the normalisation)."""
    norm = radar_normalise(summary, metrics)
    names = list(norm.columns)
    angles = np.linspace(0, 2 * np.pi, len(names), endpoint=False)
    closed = np.r_[angles, angles[:1]]
    fig, ax = plt.subplots(figsize=(6.0, 4.8), subplot_kw={"projection": "polar"})
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (label, row) in enumerate(norm.iterrows()):
        v = row.to_numpy(float)
        v = np.r_[v, v[:1]]
        c = colours[k % len(colours)]
        ax.plot(closed, v, color=c, lw=1.6, marker="o", ms=3, label=str(label))
        ax.fill(closed, np.nan_to_num(v), color=c, alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels([f"{m} (inv.)" if not HIGHER_IS_BETTER[m] else m for m in names], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0])
    ax.set_yticklabels(["0.25", "0.5", "0.75", "1"], fontsize=6)
    ax.grid(alpha=0.4)
    ax.legend(loc="upper left", bbox_to_anchor=(1.12, 1.0), fontsize=7, frameon=False)
    ax.set_title(
        title or "Image quality of intermediate samples\n(min-max over evaluators, outward = better)",
        fontsize=9,
        pad=18,
    )
    fig.tight_layout()
    return fig
