"""Meta-evaluation: how well each metric recovers a known order, and how
much the metrics agree with each other.

Ground truth (seeds/004): an explainer degraded with a fraction p of random
noise (`method: degrade` in config, family = its `base`) is worse the larger
p is; a map computed on a model with a fraction f of its layers re-initialised
(`method: randomise_model`) is worse than the trained model's (f = 0), but
how two f > 0 compare is not known (a partial order). Per (model, family,
metric) we report the family's recovery statistic (analysis.order_stats):
the Spearman correlation between the metric's ranking of the members and the
known order for a total order, the concordance over the known pairs for a
partial one; both oriented so that +1 = recovered and -1 = exactly reversed,
whatever the metric's direction (CURVE_SCORES' higher-is-better flag). The
seed paper correlates with the noise level instead, so its ideal "MoRF vs
GT" for FFid+ is -1; ours is +1. The `spearman` column keeps the Spearman
with the fractions for every family (descriptive for partial orders).

- macro: on the per-explainer mean of the per-image score (the AUC over the
  curve's steps); interval: order_stats.compatible_interval (simultaneous
  paired t-intervals of the members' differences -> the range of the
  statistic over the orders they allow; a percentile bootstrap of this
  coarse statistic under-covers).
- micro: per step (sparsity, ratio, n) the statistic of the per-explainer
  mean of the step's value (`STEP_VALUES`, e.g. confidence or fidelity),
  averaged over the steps where it is defined. Steps where the metric ties
  every explainer (e.g. deletion's first point, nothing removed) have no
  defined correlation and are left out of the average (counted in n_steps).
  Metrics with a single value per image (INFID) or no per-step column have
  no micro correlation: NaN ("--" in the table). Its interval is a
  percentile bootstrap over images (paired: each replicate resamples the
  images once for every explainer), which may under-cover as the macro one
  did.

Agreement: per model, Kendall's tau-b between the rankings of all the run's
explainers by each pair of metrics, oriented as above (tau = 1: the two
metrics order the explainers identically); refused (NaN, with a note) with
fewer than MIN_AGREEMENT_EXPLAINERS (3) explainers: with two, tau is +-1
whatever the metrics.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from fudbench.analysis.bootstrap import percentile_interval
from fudbench.meta.ranks import average_ranks, kendall_rows, spearman, spearman_rows  # noqa: F401

log = logging.getLogger(__name__)


def default_curve_scores() -> dict:
    """{curve: (label, higher is better, score)} of every known curve (the evaluator specs)."""
    from fudbench.analysis.curves import CURVE_SCORES

    return dict(CURVE_SCORES)


def select_curves(curve_scores: dict, curves) -> dict:
    """The entries of curve_scores for `curves` (curve or table names, in that
    order; aliased curves <curve>@<entry> too; None = all)."""
    from fudbench.analysis.curves import curve_score

    if curves is None:
        return curve_scores
    out, unknown = {}, []
    for wanted in curves:
        hits = {c: v for c, v in curve_scores.items() if wanted in (c, v[0])}
        if not hits and curve_score(wanted) is not None:
            hits = {wanted: curve_score(wanted)}
        if not hits:
            unknown.append(wanted)
        out.update(hits)
    if unknown:
        raise ValueError(
            f"unknown metric(s) {sorted(unknown)}: use curve names or table names of {sorted(curve_scores)}"
        )
    return out


def default_step_values() -> dict:
    """{curve: the per-step records column whose per-explainer mean a micro correlation ranks}."""
    from fudbench.analysis.curves import STEP_VALUES

    return dict(STEP_VALUES)


# Config methods whose entries form a family with a known order: method ->
# (the family's name given the entry's `base`, which pairs of members are
# ordered: analysis.order_stats, the settings key that holds the level). The
# lowest level is the best member of every family.
KNOWN_ORDER_METHODS = {
    # a fraction p of the base map's pixels shuffled among themselves: less is better, every pair ordered
    "degrade": ("{base}", "total", "fraction"),
    # the base map of a model with a fraction f of its layers re-initialised: only f = 0 before each
    # f > 0 is known (how two randomised models compare is not)
    "randomise_model": ("{base}_randomised", "best_first", "fraction"),
    # scatter-matched families (explainers.controlled): the base map moved by `shift` pixels (the same
    # local structure, less evidence under it), and a fraction of its 4x4 blocks shuffled as whole blocks
    "translate": ("{base}_shifted", "total", "shift"),
    "block_shuffle": ("{base}_blocks", "total", "fraction"),
    # the base map's top set moved inward without wrapping, then made strict (issue 44's round four)
    "displace": ("{base}_displaced", "total", "shift"),
    # round five (issue 59): `shift` cue pixels swapped out of the kept window at one cut, the rest of the
    # ranking identical (explainers.graded); the main arm's scatter is equal by construction, the opposing
    # arm's grows with the evidence
    "graded_cue": ("{base}_graded", "total", "shift"),
    "graded_cue_opposing": ("{base}_graded_opposing", "total", "shift"),
}
# Sanity anchors: a seeded uniform map (chance), its smoothed twin (chance,
# but spatially compact) and the object mask's complement (anti-faithful);
# expected ranks: anchor_expected_ranks.
ANCHOR_METHODS = ("random", "background", "random_smooth")


def family_order(family: str) -> str:
    """The order of a family (total or best_first), from its name's template."""
    for template, order, _ in KNOWN_ORDER_METHODS.values():
        suffix = template.replace("{base}", "")
        if suffix and family.endswith(suffix):
            return order
    return "total"


def degraded_explainers(explainers: dict) -> dict[str, tuple[str, float]]:
    """{explainer name: (family, level)} for the config entries with a
    known order (KNOWN_ORDER_METHODS: degrade, randomise_model, translate,
    block_shuffle); a lower level is better within a family."""
    out = {}
    for name, settings in explainers.items():
        method = (settings or {}).get("method")
        if method not in KNOWN_ORDER_METHODS:
            continue
        template, _, level_key = KNOWN_ORDER_METHODS[method]
        for key in ("base", level_key):
            if key not in settings:
                raise ValueError(
                    f"config key 'explainers.{name}.{key}': required for method: {method} "
                    f"(e.g. {{method: {method}, base: ig, {level_key}: 2}})"
                )
        out[name] = (template.format(base=settings["base"]), float(settings[level_key]))
    return out


def family_bases(explainers: dict) -> dict[str, str]:
    """{family: the base explainer method it degrades} (the gate compares the
    family's best member with `random` under an independent truth)."""
    out = {}
    for name, (family, _) in degraded_explainers(explainers).items():
        out.setdefault(family, explainers[name]["base"])
    return out


# Scatter pairs (explainers.controlled): two maps with the same information
# whose top sets differ only in spatial scatter. A metric's scatter reaction
# is its paired per-image oriented score of the compact member minus the
# scattered one; a metric that judges only what a map says about the model
# shows none. random_smooth pairs with random (no information either way);
# `reorder` entries with the same base pair compact with scattered.
def scatter_pairs(explainers: dict) -> dict[str, tuple[str, str]]:
    """{pair name: (compact entry, scattered entry)} of the config's scatter pairs."""
    method = {n: (s or {}).get("method", n) for n, s in explainers.items()}
    out = {}
    smooth = [n for n, m in method.items() if m == "random_smooth"]
    plain = [n for n, m in method.items() if m == "random"]
    if smooth and plain:
        out["random"] = (smooth[0], plain[0])
    reorders: dict[str, dict[str, str]] = {}
    for n, m in method.items():
        if m == "reorder":
            s = explainers[n]
            reorders.setdefault(s["base"], {}).setdefault(s.get("order", "compact"), n)
    for base, members in reorders.items():
        if {"compact", "scattered"} <= set(members):
            out[base] = (members["compact"], members["scattered"])
    return out


def family_members(degraded: dict) -> dict[str, list[str]]:
    """{family: its members, best (lowest fraction) first} of degraded_explainers' output."""
    families: dict[str, list[str]] = {}
    for name, (family, _) in degraded.items():
        families.setdefault(family, []).append(name)
    return {f: sorted(m, key=lambda e: degraded[e][1]) for f, m in families.items()}


def anchor_explainers(explainers: dict) -> dict[str, str]:
    """{explainer name: anchor method} of the entries running `random` or `background`."""
    out = {}
    for name, settings in explainers.items():
        method = (settings or {}).get("method", name)
        if method in ANCHOR_METHODS:
            out[name] = method
    return out


# Scores antisymmetric under reversing a map's ranking (score(reversed) =
# -score, up to ties): FUD's keep-top minus keep-bottom and SRG's LIF - MIF.
# The background map is the oracle mask reversed, so under them it scores
# -oracle and ranks below random (~0) whenever the oracle ranks above it.
# Every other score is one-sided and fill-based: kept or removed background
# pixels meet a fill that may carry class evidence itself (a black fill adds
# evidence for the dark classes) or rebuild the object (a generative fill),
# so "background last" is the faithful expectation, not a construction.
ANTISYMMETRIC_CURVES = ("fud_symmetric", "srg__")


def score_kind(curve: str) -> str:
    """antisymmetric or one-sided (see ANTISYMMETRIC_CURVES); aliased curves by their base."""
    base = curve.partition("@")[0]
    return (
        "antisymmetric"
        if any(base == c or (c.endswith("__") and base.startswith(c)) for c in ANTISYMMETRIC_CURVES)
        else "one-sided"
    )


def anchor_expected_ranks(present, n: int) -> dict[str, float]:
    """{anchor method: the rank (1 = best) a faithful metric gives it among n
    explainers}: background (anti-faithful) last; the maps without
    information (random, random_smooth) in the places just above it, which
    they share when both are ranked (the mean of those places: they tie in
    expectation). Other maps without information (a degraded copy at p = 1,
    a fully randomised model's map) may tie with random: expected, not
    guaranteed."""
    present = set(present)
    out = {}
    last = float(n)
    if "background" in present:
        out["background"] = last
        last -= 1
    chance = [m for m in ("random", "random_smooth") if m in present]
    for m in chance:
        out[m] = last - (len(chance) - 1) / 2
    return out


# rank statistics (average_ranks, spearman_rows, spearman, kendall_rows): analysis.ranks


def _finite_mean_rows(a: np.ndarray) -> np.ndarray:
    """Mean of each row's finite entries; NaN for a row without any."""
    ok = np.isfinite(a)
    n = ok.sum(-1)
    total = np.where(ok, a, 0.0).sum(-1)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _resample_weights(n_images: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n_images): how often each image is drawn in each replicate, / n_images.
    weights @ values = the replicates' means, without materialising the
    (replicates x images x ...) resampled array (GBs on the paper config)."""
    idx = np.random.default_rng(seed).integers(0, n_images, size=(n_boot, n_images))
    flat = (np.arange(n_boot)[:, None] * n_images + idx).ravel()
    return np.bincount(flat, minlength=n_boot * n_images).reshape(n_boot, n_images) / n_images


def _boot_means(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(B, n) weights, (n, ...) values -> (B, ...) resampled means."""
    return (weights @ values.reshape(len(values), -1)).reshape(len(weights), *values.shape[1:])


def _image_matrix(frame: pd.DataFrame, value: str, explainers: list[str], index) -> pd.DataFrame:
    """rows = index (image, or image x step), columns = explainers; only rows
    every explainer has (the bootstrap pairs explainers on the same images)."""
    m = frame.pivot_table(index=index, columns="explainer", values=value, aggfunc="mean")
    missing = [e for e in explainers if e not in m.columns]
    if missing:
        return pd.DataFrame()
    return m[explainers].dropna()


# ------------------------------------------------------------ ground-truth ranking


def ground_truth_correlations(
    per_image: pd.DataFrame,
    degraded: dict,
    records: pd.DataFrame | None = None,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    curve_scores: dict | None = None,
    step_values: dict | None = None,
    curves=None,
    orders: dict | None = None,
) -> pd.DataFrame:
    """How well each metric's ranking of each family recovers its known order.

    per_image: columns model, explainer, curve, image, score (per_image_scores).
    degraded: {explainer: (family, p)} (degraded_explainers). records: the
    per-step records (model, explainer, curve, image, step and the STEP_VALUES
    columns), needed for micro; without them micro is NaN. orders: {family:
    total | best_first} (default: family_order of its name).
    Returns one row per (model, family, metric, kind in {macro, micro}):
    spearman (with the fractions, every family), recovery (the family's
    statistic, analysis.order_stats: the Spearman for a total order, the
    known-pairs concordance for best_first), ci_low, ci_high (of recovery:
    macro the compatible-orders interval, micro a percentile bootstrap over
    images), order, n_images, n_explainers, n_steps (steps with a defined
    statistic, micro only), higher_is_better, curve. `curves` restricts the
    metrics (curve or table names; None = every scored curve).
    """
    from fudbench.meta.order_stats import compatible_interval, recovery_rows
    from fudbench.core.seeding import derive_seed

    if not degraded:
        raise ValueError(
            "no degraded explainers: add config entries with `method: degrade` (e.g. "
            "ig_d00..ig_d50: {method: degrade, base: ig, fraction: 0.0 .. 0.5})"
        )
    curve_scores = select_curves(curve_scores or default_curve_scores(), curves)
    step_values = step_values or default_step_values()
    families: dict[str, list[str]] = {}
    for name, (family, _) in degraded.items():
        families.setdefault(family, []).append(name)
    orders = {f: (orders or {}).get(f) or family_order(f) for f in families}
    # split once: the paper config has millions of record rows
    scored = dict(tuple(per_image.groupby(["model", "curve"], sort=False)))
    stepped = {} if records is None else dict(tuple(records.groupby(["model", "curve"], sort=False)))
    rows = []
    for model in sorted(per_image["model"].unique()):
        for family, members in families.items():
            members = sorted(members, key=lambda e: degraded[e][1])
            fractions = np.array([degraded[e][1] for e in members])
            order = orders[family]
            stat = lambda v: recovery_rows(v, fractions, order)  # noqa: E731 (rows -> the family's statistic)
            for curve, (metric, higher, _) in curve_scores.items():
                sign = 1.0 if higher else -1.0
                key = (model, family, metric)
                base = {
                    "model": model,
                    "family": family,
                    "metric": metric,
                    "curve": curve,
                    "order": order,
                    "higher_is_better": higher,
                    "n_explainers": len(members),
                }
                d = scored.get((model, curve))
                d = None if d is None else d[d["explainer"].isin(members)]
                if d is None or d.empty:
                    continue
                m = _image_matrix(d, "score", members, "image")
                if m.empty:
                    log.warning(
                        "%s/%s/%s: some explainers of the family have no scores; skipped", model, family, metric
                    )
                    continue
                s = sign * m.to_numpy()
                lo, hi = compatible_interval(s, fractions, order, ci)
                rows.append(
                    {
                        **base,
                        "kind": "macro",
                        "spearman": spearman(s.mean(0), -fractions),
                        "recovery": float(stat(s.mean(0)[None])[0]),
                        "ci_low": lo,
                        "ci_high": hi,
                        "n_images": len(s),
                        "n_steps": np.nan,
                    }
                )
                rows.append(
                    {
                        **base,
                        "kind": "micro",
                        **_micro(
                            stepped.get((model, curve)),
                            members,
                            fractions,
                            stat,
                            sign,
                            step_values.get(curve),
                            n_boot,
                            ci,
                            derive_seed(seed, "meta", *key),
                        ),
                    }
                )
    cols = [
        "model",
        "family",
        "metric",
        "kind",
        "spearman",
        "recovery",
        "ci_low",
        "ci_high",
        "order",
        "n_images",
        "n_explainers",
        "n_steps",
        "higher_is_better",
        "curve",
    ]
    return pd.DataFrame(rows, columns=cols)


def _ci_cols(boot: np.ndarray, ci: float) -> dict:
    lo, hi = percentile_interval(boot, ci)
    return {"ci_low": lo, "ci_high": hi}


def _micro(records, members, fractions, stat, sign, column, n_boot, ci, seed) -> dict:
    """records: one model's rows of one curve (or None); stat: rows -> the family's statistic."""
    nan = {
        "spearman": np.nan,
        "recovery": np.nan,
        "ci_low": np.nan,
        "ci_high": np.nan,
        "n_images": np.nan,
        "n_steps": np.nan,
    }
    if records is None or column is None or column not in records.columns:
        return nan
    d = records[records["explainer"].isin(members)]
    if d.empty or d["step"].nunique() < 2:
        return nan
    m = _image_matrix(d, column, members, ["image", "step"])
    if m.empty:
        return nan
    steps = sorted(m.index.get_level_values("step").unique())
    images = sorted(set.intersection(*[set(m.xs(j, level="step").index) for j in steps]))
    # (steps, images, explainers), oriented
    cube = sign * np.stack([m.xs(j, level="step").loc[images].to_numpy() for j in steps])
    per_step = stat(cube.mean(1))
    out = {
        "spearman": float(_finite_mean_rows(spearman_rows(cube.mean(1), -fractions)[None])[0]),
        "recovery": float(_finite_mean_rows(per_step[None])[0]),
        "n_images": len(images),
        "n_steps": int(np.isfinite(per_step).sum()),
    }
    if n_boot:
        w = _resample_weights(len(images), n_boot, seed)
        boot = stat(_boot_means(w, cube.transpose(1, 0, 2)))  # (B, steps)
        out.update(_ci_cols(_finite_mean_rows(boot), ci))
    else:
        out.update({"ci_low": np.nan, "ci_high": np.nan})
    return out


# ------------------------------------------------------------ agreement between metrics

MIN_AGREEMENT_EXPLAINERS = 3
TOO_FEW_EXPLAINERS = (
    f"fewer than {MIN_AGREEMENT_EXPLAINERS} explainers: Kendall's tau between two rankings of "
    f"two is +-1 whatever the metrics; not computed"
)


def agreement_metrics(evaluators: dict, metrics=None) -> list[str]:
    """The curves a config's evaluators write that metric_agreement would compare (the known, scored
    curves, restricted to `metrics` as analysis.meta_metrics does): fewer than two, no agreement to
    draw (rules/common.smk's meta_targets leave the figure out; a variant entry's aliased curve, e.g. fud@fud_100, is
    not among them)."""
    from fudbench.analysis.curves import configured_curve_scores

    known = select_curves(default_curve_scores(), metrics)
    return [c for c, v in configured_curve_scores(evaluators).items() if c in known and v[2] is not None]


def metric_agreement(
    per_image: pd.DataFrame,
    explainers: list[str],
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    curve_scores: dict | None = None,
    curves=None,
):
    """Kendall tau-b between the explainer rankings of every pair of metrics, per model.

    Returns ({model: square DataFrame metric x metric of tau (symmetric, 1 on
    the diagonal)}, long DataFrame model, metric_a, metric_b, tau, ci_low,
    ci_high, n_images, n_explainers, note). Only images scored by every metric
    for every explainer are used, so all pairs see the same images. `curves`
    restricts the metrics (curve or table names; None = every scored curve).
    With fewer than MIN_AGREEMENT_EXPLAINERS explainers every off-diagonal tau
    is NaN and `note` says why (TOO_FEW_EXPLAINERS).
    """
    from fudbench.core.seeding import derive_seed

    refused = len(explainers) < MIN_AGREEMENT_EXPLAINERS
    if refused:
        log.warning("metric agreement: %s (%s)", TOO_FEW_EXPLAINERS, ", ".join(explainers))
    curve_scores = select_curves(curve_scores or default_curve_scores(), curves)
    matrices, rows = {}, []
    for model in sorted(per_image["model"].unique()):
        d = per_image[(per_image["model"] == model) & per_image["explainer"].isin(explainers)]
        present = [c for c in curve_scores if c in set(d["curve"])]
        mats, names = [], []
        for curve in present:
            m = _image_matrix(d[d["curve"] == curve], "score", list(explainers), "image")
            if m.empty:
                log.warning("%s/%s: not every explainer has scores; left out of the agreement", model, curve)
                continue
            mats.append((1.0 if curve_scores[curve][1] else -1.0) * m)
            names.append(curve_scores[curve][0])
        if len(mats) < 2:
            log.warning("%s: fewer than two metrics with complete scores; no agreement matrix", model)
            continue
        images = sorted(set.intersection(*[set(m.index) for m in mats]))
        cube = np.stack([m.loc[images].to_numpy() for m in mats], axis=-1)  # (images, explainers, metrics)
        means = cube.mean(0)
        k = len(names)
        tau = np.full((k, k), np.nan)
        boot_means = (
            _boot_means(_resample_weights(len(images), n_boot, derive_seed(seed, "agreement", model)), cube)
            if n_boot and not refused
            else None
        )  # (B, explainers, metrics)
        for a in range(k):
            for b in range(a, k):
                t = np.nan if refused and a != b else float(kendall_rows(means[:, a], means[:, b]))
                tau[a, b] = tau[b, a] = t
                lo, hi = (
                    percentile_interval(kendall_rows(boot_means[..., a], boot_means[..., b]), ci)
                    if boot_means is not None
                    else (np.nan, np.nan)
                )
                for x, y in {(a, b), (b, a)}:
                    rows.append(
                        {
                            "model": model,
                            "metric_a": names[x],
                            "metric_b": names[y],
                            "tau": t,
                            "ci_low": lo,
                            "ci_high": hi,
                            "n_images": len(images),
                            "n_explainers": len(explainers),
                            "note": TOO_FEW_EXPLAINERS if refused else "",
                        }
                    )
        matrices[model] = pd.DataFrame(tau, index=names, columns=names)
    return matrices, pd.DataFrame(
        rows, columns=["model", "metric_a", "metric_b", "tau", "ci_low", "ci_high", "n_images", "n_explainers", "note"]
    )
