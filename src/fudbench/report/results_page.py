"""The results page: what a researcher reads first, at the top of report.html.

For every model, every explainer x every scored metric of the run (the
configured evaluators' curves with a per-image score, fudbench.evaluators'
registry; a `reference` curve such as SRG's R-OMS, which does not depend on
the map, is left out, and so are the members of the meta-evaluation's
families of known order, which are instruments, not methods under test):

- the mean over images with a 95% interval (inference.mean_interval: a
  t-interval with two pseudo-observations at the bounds of the score, the
  curve's CurveSpec.value_range where it is finite and holds every score of
  the curve on that model, else the observed range of those scores;
  `bounds_from` says which);
- where the run has a `random` explainer: each explainer's paired difference
  from it, image by image, oriented by the curve's direction
  (CurveSpec.higher_is_better: above 0 = better than random whatever the
  metric), its mean with a 95% interval (the same method, bounds +-(hi - lo)
  as claims.difference_bounds), the raw two-sided p and Holm's adjustment
  over the model's comparisons (explainers x metrics), and `images_to_decide`:
  the images at which this page's interval (mean_interval, its variance floor
  included) would exclude 0 with 80% power, were the per-image mean and SD
  what this run measured (`images_to_decide`; inf where the mean difference
  is 0). claims.py's count, a z-test without the floor
  (order_stats.pair_images_needed), is beside it as `images_to_decide_z` with
  its percentile bootstrap interval: fewer images at small n, where the floor
  weighs most (at n = 5 it can say 4 images for a difference this page's
  interval does not yet separate);
- plain sentences generated from those numbers (`sentences`), one figure of
  the means with their intervals (`overview_figure`), one of the per-image
  differences from random (`vs_random_figure`) and one table (`html_table`;
  the CSV holds every number).

`front_page` assembles the page (reStructuredText with raw HTML, the figures
embedded) that the Snakefile gives Snakemake as the report's front page.
"""

from __future__ import annotations

import base64
import html
import math

import numpy as np
import pandas as pd

from fudbench.evaluators.base import (
    CATEGORIES,
    COMPLEXITY,
    FAITHFULNESS,
    LOCALISATION,
    RANDOMISATION,
    ROBUSTNESS,
)
from fudbench.meta.claims import difference_bounds
from fudbench.meta.inference import PSEUDO_WEIGHT, holm, mean_interval
from fudbench.meta.order_stats import pair_images_needed
from fudbench.report.tables import nonfinite_images, nonfinite_note

COLUMNS = [
    "model",
    "curve",
    "metric",
    "higher_is_better",
    "category",
    "explainer",
    "n_images",
    "mean",
    "ci_low",
    "ci_high",
    "bound_low",
    "bound_high",
    "bounds_from",
    "versus",
    "n_pairs",
    "vs_random",
    "vs_random_low",
    "vs_random_high",
    "p",
    "p_holm",
    "verdict",
    "images_to_decide",
    "images_to_decide_z",
    "images_to_decide_z_low",
    "images_to_decide_z_high",
    "range_low",
    "range_high",
]
BETTER, WORSE = "better than random", "worse than random"
IDENTICAL = "identical to random on every image"
# localisation: the map that is the mask itself (an `oracle` entry) scores the ceiling by construction
CEILING = "the mask itself: the ceiling"
# randomisation: a sanity check per explainer (fudbench.evaluators.base.RANDOMISATION)
PASSES, FAILS = "passes the randomisation check", "fails the randomisation check"
# The line a randomisation score's whole interval must clear: the similarity between the maps of the original
# and of the randomised model (or logit) below it passes, above it fails (a dissimilarity: the other way).
# A line the page states, not a property of the metric: Adebayo et al. (2018) read the similarity by eye.
RANDOMISATION_LINE = 0.5
# the categories compared with the random map image by image; the others are read against their trivial
# winners (robustness, complexity) or as a pass / fail check (randomisation)
COMPARED_WITH_RANDOM = (FAITHFULNESS, LOCALISATION)


# ------------------------------------------------------------------ what is shown


def random_explainer(explainers: dict) -> str | None:
    """The run's chance-level control: the entry named `random` (running method random), else the first
    entry whose method is `random`; None without one."""
    method = lambda name: (explainers[name] or {}).get("method", name)  # noqa: E731
    if "random" in explainers and method("random") == "random":
        return "random"
    return next((name for name in explainers if method(name) == "random"), None)


def shown_explainers(explainers: dict) -> list[str]:
    """The config's explainers in config order, without the members of families of known order."""
    from fudbench.meta.families import degraded_explainers

    members = set(degraded_explainers(explainers))
    return [e for e in explainers if e not in members]


def shown_curves(per_image: pd.DataFrame, evaluators: dict) -> dict:
    """{curve: CurveSpec} of the configured curves (config order) with a finite per-image score in the
    run, reference curves left out."""
    from fudbench.evaluators import configured_curves

    if "score" not in per_image.columns:
        return {}
    # a curve whose every score is NaN from non-finite model outputs is shown, marked (summarise)
    finite = np.isfinite(per_image["score"].to_numpy(dtype=float))
    scored = set(per_image.loc[finite | nonfinite_images(per_image), "curve"])
    return {c: s for c, s in configured_curves(evaluators).items() if c in scored and not s.reference}


def curve_categories(evaluators: dict) -> dict[str, str]:
    """{curve: category} of every curve the config's evaluators write (EvaluatorSpec.category_of the entry's
    resolved settings: a `quantus` entry's is its metric's)."""
    from fudbench.evaluators import entry_curves, spec_of

    out = {}
    for name, settings in evaluators.items():
        s = spec_of(name, settings)
        category = s.category_of(s.resolve(settings))
        out.update({c.name: category for c in entry_curves(name, settings)})
    return out


def mask_explainers(explainers: dict) -> list[str]:
    """The entries whose map is the object's mask itself (method `oracle`): a localisation metric's ceiling."""
    return [e for e, cfg in explainers.items() if (cfg or {}).get("method", e) == "oracle"]


def randomisation_check(low: float, high: float, higher_is_better: bool, n: int) -> str:
    """PASSES / FAILS / undecided of one explainer's randomisation score from its interval against
    RANDOMISATION_LINE (a similarity: below passes; higher_is_better, a dissimilarity: above passes)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"not decided (no interval at n = {n})"
    good, bad = (
        (low > RANDOMISATION_LINE, high < RANDOMISATION_LINE)
        if higher_is_better
        else (
            high < RANDOMISATION_LINE,
            low > RANDOMISATION_LINE,
        )
    )
    return PASSES if good else FAILS if bad else f"not decided at n = {n}"


def score_bounds(scores, value_range=None) -> tuple[float, float, str]:
    """(lo, hi, source) of a mean of one curve's scores on one model: its value range where finite and
    holding every score, else the observed range."""
    s = np.asarray(scores, dtype=float)
    s = s[np.isfinite(s)]
    if value_range is not None:
        lo, hi = (float(v) for v in value_range)
        if (
            math.isfinite(lo)
            and math.isfinite(hi)
            and hi > lo
            and (not len(s) or (s.min() >= lo - 1e-9 and s.max() <= hi + 1e-9))
        ):
            return lo, hi, "metric range"
    return (float(s.min()), float(s.max()), "observed range") if len(s) else (math.nan, math.nan, "no scores")


def _interval(values, lo: float, hi: float, ci: float) -> tuple[float, float, float, float]:
    """mean_interval of the values clipped to [lo, hi]; a degenerate range gives the mean and no interval."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        return (float(v.mean()) if len(v) else math.nan), math.nan, math.nan, math.nan
    return mean_interval(np.clip(v, lo, hi), (lo, hi), ci)


def images_to_decide(
    values,
    bounds: tuple[float, float],
    ci: float = 0.95,
    power: float = 0.8,
    pseudo_weight: float = PSEUDO_WEIGHT,
    n_max: int = 10**7,
) -> float:
    """The smallest n at which mean_interval of n values with the mean m and SD s of `values` would exclude
    0 with `power`: |m| >= t_{(1+ci)/2, n-1} sqrt(V_n / n) + z_power s / sqrt(n), V_n the interval's variance
    (the n values' expected spread about the weighted centre plus the two pseudo-observations at `bounds`,
    taken as fixed: the floor steadies it) and s / sqrt(n) the spread of the sample mean. Simulated against
    mean_interval in tests/test_report_pages.py. inf where m is 0 (or above n_max); NaN with fewer than
    two finite values."""
    from statistics import NormalDist

    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return math.nan
    m, s2 = float(v.mean()), float(v.var(ddof=1))
    if abs(m) <= 1e-12 * (1 + float(np.abs(v).max())):
        return math.inf
    lo, hi = (float(b) for b in bounds)
    w = pseudo_weight
    z_power = NormalDist().inv_cdf(power)

    def decides(n: int) -> bool:
        c = (n * m + w * (lo + hi)) / (n + 2 * w)
        var = ((n - 1) * s2 + n * (m - c) ** 2 + w * ((lo - c) ** 2 + (hi - c) ** 2)) / (n + 2 * w - 1)
        return abs(m) >= student_t.ppf((1 + ci) / 2, n - 1) * math.sqrt(var / n) + z_power * math.sqrt(s2 / n)

    n = 2
    while not decides(n):
        if n > n_max:
            return math.inf
        n *= 2
    low = max(2, n // 2)
    while low < n:  # the smallest n that decides, between the last two doublings
        mid = (low + n) // 2
        low, n = (low, mid) if decides(mid) else (mid + 1, n)
    return float(n)


def verdict(diff: np.ndarray, low: float, high: float) -> str:
    n = int(np.isfinite(diff).sum())
    if n and np.all(diff[np.isfinite(diff)] == 0):
        return IDENTICAL
    if n < 2 or not (math.isfinite(low) and math.isfinite(high)):
        return f"not computed (n = {n})"
    if low > 0:
        return BETTER
    if high < 0:
        return WORSE
    return f"not separated from random at n = {n}"


def summarise(
    per_image: pd.DataFrame,
    explainers: dict,
    evaluators: dict,
    models=None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary with COLUMNS, per-image paired differences from random: model, curve, metric, explainer,
    image, difference oriented so that > 0 = better than random). per_image: the analysis' rows
    (model, explainer, curve, image, score); explainers, evaluators: the config's sections. n_boot, seed:
    the percentile bootstrap of each cell's interval (tables.cell_interval: the score tables' own, so the
    page and the tables show one interval per cell; the run's analysis.bootstrap and seed) and of claims.py's
    count (images_to_decide_z_low / _high).

    Each metric is read as its category says (EvaluatorSpec.category): faithfulness and localisation
    against `random`, image by image (under localisation the mask itself, an `oracle` entry, is the
    ceiling, not a comparison); randomisation as a pass / fail check of each explainer's interval
    (randomisation_check); robustness and complexity with no comparison (a trivial map wins them)."""
    from fudbench.meta.claims import images_to_decide_interval
    from fudbench.core.seeding import derive_seed
    from fudbench.report.tables import cell_interval

    curves = shown_curves(per_image, evaluators)
    categories = curve_categories(evaluators)
    masks = set(mask_explainers(explainers))
    shown = shown_explainers(explainers)
    ref = random_explainer(explainers)
    d = per_image[per_image["curve"].isin(list(curves))] if curves else per_image.iloc[:0]
    flagged = d[nonfinite_images(d)] if len(d) else d  # non-finite model outputs: counted, not averaged
    d = d[np.isfinite(d["score"].to_numpy(dtype=float)) & ~nonfinite_images(d)] if len(d) else d
    models = list(models) if models is not None else list(dict.fromkeys(d["model"])) if len(d) else []
    rows, pairs = [], []
    for model in models:
        first = len(rows)
        for curve, spec in curves.items():
            m = d[(d["model"] == model) & (d["curve"] == curve)]
            bad = flagged[(flagged["model"] == model) & (flagged["curve"] == curve)].groupby("explainer").size()
            if not len(m):
                category = categories.get(curve, FAITHFULNESS)
                rows += [
                    _nonfinite_row(model, curve, spec, ex, int(bad[ex]), ref, category) for ex in shown if ex in bad
                ]
                continue
            wide = m.pivot_table(index="image", columns="explainer", values="score", aggfunc="mean")
            lo, hi, source = score_bounds(m["score"], spec.value_range)
            dlo, dhi, _ = difference_bounds(m["score"].to_numpy(dtype=float), spec.value_range)
            sign = 1.0 if spec.higher_is_better else -1.0
            category = categories.get(curve, FAITHFULNESS)
            for ex in shown:
                if ex not in wide.columns or not wide[ex].notna().any():
                    if ex in bad:
                        rows.append(_nonfinite_row(model, curve, spec, ex, int(bad[ex]), ref, category))
                    continue
                # in the per-image table's row order, as the score tables take them (the same bootstrap draw)
                v = m.loc[m["explainer"] == ex, "score"].to_numpy(dtype=float)
                mean, low, high = cell_interval(v, (model, ex, spec.label), n_boot, ci, seed)
                row = {
                    "model": model,
                    "curve": curve,
                    "metric": spec.label,
                    "higher_is_better": spec.higher_is_better,
                    "category": category,
                    "explainer": ex,
                    "n_images": len(v),
                    "mean": mean,
                    "ci_low": low,
                    "ci_high": high,
                    "bound_low": lo,
                    "bound_high": hi,
                    "bounds_from": source,
                    "versus": (ref or "") if category in COMPARED_WITH_RANDOM else "",
                    "n_pairs": 0,
                    "vs_random": math.nan,
                    "vs_random_low": math.nan,
                    "vs_random_high": math.nan,
                    "p": math.nan,
                    "p_holm": math.nan,
                    "verdict": "",
                    "images_to_decide": math.nan,
                    "images_to_decide_z": math.nan,
                    "images_to_decide_z_low": math.nan,
                    "images_to_decide_z_high": math.nan,
                    **({"n_nonfinite": int(bad[ex])} if ex in bad else {}),
                    # the metric's value range as its spec declares it (an end may be infinite)
                    "range_low": float(spec.value_range[0]) if spec.value_range is not None else math.nan,
                    "range_high": float(spec.value_range[1]) if spec.value_range is not None else math.nan,
                }
                if category == RANDOMISATION:
                    row["verdict"] = randomisation_check(low, high, spec.higher_is_better, len(v))
                elif category == LOCALISATION and ex in masks:
                    row["verdict"] = CEILING
                compared = category in COMPARED_WITH_RANDOM and not (category == LOCALISATION and ex in masks)
                if compared and ref is not None and ex != ref and ref in wide.columns:
                    both = wide[[ex, ref]].dropna()
                    diff = sign * (both[ex] - both[ref]).to_numpy(dtype=float)
                    dm, dl, dh, p = _interval(diff, dlo, dhi, ci)
                    row.update(
                        {
                            "n_pairs": len(diff),
                            "vs_random": dm,
                            "vs_random_low": dl,
                            "vs_random_high": dh,
                            "p": p,
                            "verdict": verdict(diff, dl, dh),
                            "images_to_decide": images_to_decide(np.clip(diff, dlo, dhi), (dlo, dhi), ci)
                            if dlo < dhi
                            else math.nan,
                            "images_to_decide_z": (
                                pair_images_needed(np.sign(dm) * diff)[0]
                                if len(diff) >= 2 and math.isfinite(dm)
                                else math.nan
                            ),
                        }
                    )
                    row["images_to_decide_z_low"], row["images_to_decide_z_high"] = images_to_decide_interval(
                        diff, n_boot, ci, derive_seed(seed, "results_page", model, curve, ex)
                    )
                    pairs += [
                        {
                            "model": model,
                            "curve": curve,
                            "metric": spec.label,
                            "explainer": ex,
                            "image": i,
                            "difference": x,
                        }
                        for i, x in zip(both.index, diff)
                    ]
                rows.append(row)
        tested = [r for r in rows[first:] if math.isfinite(r["p"])]
        for r, p_adj in zip(tested, holm([r["p"] for r in tested])):
            r["p_holm"] = float(p_adj)
    # n_nonfinite only where some model output was NaN or inf: a run without any writes the columns it always did
    summary = pd.DataFrame(rows, columns=COLUMNS + (["n_nonfinite"] if len(flagged) else []))
    if len(flagged):
        summary["n_nonfinite"] = summary["n_nonfinite"].fillna(0).astype(int)
    paired = pd.DataFrame(pairs, columns=["model", "curve", "metric", "explainer", "image", "difference"])
    return summary, paired


def _nonfinite_row(model: str, curve: str, spec, explainer: str, n_nonfinite: int, ref, category: str) -> dict:
    """The summary row of an explainer whose every image had non-finite model outputs: kept (n/a), not dropped."""
    row = {c: math.nan for c in COLUMNS}
    row.update(
        model=model,
        curve=curve,
        metric=spec.label,
        higher_is_better=spec.higher_is_better,
        explainer=explainer,
        n_images=0,
        bounds_from="",
        versus=ref or "",
        n_pairs=0,
        verdict="",
        n_nonfinite=n_nonfinite,
        category=category,
    )
    return row


# ------------------------------------------------------------------ words


def fmt(x: float) -> str:
    if not math.isfinite(x):
        return "inf" if x == math.inf else "-inf" if x == -math.inf else "NaN"
    return f"{x:.3g}" if (abs(x) >= 100 or 0 < abs(x) < 0.001) else f"{x:.3f}"


def signed(x: float) -> str:
    return ("+" if math.isfinite(x) and x > 0 else "") + fmt(x)


def _interval_text(mean, low, high, sign_it: bool = False) -> str:
    f = signed if sign_it else fmt
    return f"{f(mean)} [{f(low)}, {f(high)}]" if math.isfinite(low) and math.isfinite(high) else f(mean)


def n_text(counts) -> str:
    """'n = 5', or 'n = 4-5' where the rows' image counts differ (a map without a score on some image)."""
    counts = [int(c) for c in counts]
    if not counts:
        return "n = 0"
    lo, hi = min(counts), max(counts)
    return f"n = {hi}" if lo == hi else f"n = {lo}-{hi}"


def count_text(x: float) -> str:
    """A count estimated from a few images, to two significant figures ('660,000', not '660,435'): its
    digits beyond those are noise (the estimate is itself uncertain at small n)."""
    if not math.isfinite(x):
        return fmt(x)
    n = int(round(x))
    if n < 100:
        return f"{n:,}"
    digits = len(str(n)) - 2
    return f"{int(round(n, -digits)):,}"


def _images(x: float) -> str:
    if x == math.inf:
        return "none (mean difference 0)"
    return f"about {count_text(x)}" if math.isfinite(x) else "not computed"


def _join(words) -> str:
    from fudbench.report.captions import join

    return join(words)


def _lit(name: str) -> str:
    return f"``{name}``"


def rst_text(text: str) -> str:
    """Plain text safe in reStructuredText (a label such as 'MRG (noisy_linear)' or 'FFid+')."""
    return "".join("\\" + ch if ch in "\\*`|_" else ch for ch in str(text))


def _verdict_text(r) -> str:
    return f"{_lit(r.explainer)} {_interval_text(r.vs_random, r.vs_random_low, r.vs_random_high, True)}"


def sentences(summary: pd.DataFrame, model: str, ref: str | None, ci: float = 0.95) -> list[str]:
    """The page's plain sentences for one model, generated from its summary rows (rst): the headline
    (what was compared; per explainer, on which metrics it is better / worse than random; the multiplicity
    of the comparisons), then per metric which explainers it separates from random, which not and how many
    images would decide those, and where it ranks random above an explainer by mean."""
    head, metrics = sentence_parts(summary, model, ref, ci)
    return head + metrics


def sentence_parts(summary: pd.DataFrame, model: str, ref: str | None, ci: float = 0.95) -> tuple[list, list]:
    """(headline sentences, per-metric sentences) of `sentences`."""
    everything = summary[summary["model"] == model]
    if not len(everything):
        return [f"Model {_lit(model)} has no per-image scores of the configured metrics."], []
    if "category" not in everything.columns:
        everything = everything.assign(category=FAITHFULNESS)
    kinds = everything.groupby("category", sort=False)["metric"].nunique()
    n = int(everything["n_images"].max())
    out = [
        f"Model {_lit(model)}: {n} images, {everything['metric'].nunique()} metric"
        f"{'s' if everything['metric'].nunique() != 1 else ''} ("
        + ", ".join(f"{kinds[k]} {k}" for k in CATEGORIES if k in kinds.index)
        + f"), {everything['explainer'].nunique()} explainer{'s' if everything['explainer'].nunique() != 1 else ''} "
        f"({_join(_lit(e) for e in dict.fromkeys(everything['explainer']))})."
    ]
    # the metrics read against random; the other categories have their own sentences (kind_sentences)
    s = everything[everything["category"].isin(COMPARED_WITH_RANDOM)]
    metrics = list(dict.fromkeys(s["metric"]))
    head_kinds, per_kind = kind_sentences(everything, ref, ci)
    if not len(s):
        return out + head_kinds, per_kind
    if ref is None or not s["n_pairs"].any():
        out.append(
            "This run has no ``random`` explainer, so no explainer is compared with chance; add "
            "``random: {}`` under ``explainers`` for the paired comparisons."
        )
        head, out = out, []
        for metric in metrics:
            g = s[s["metric"] == metric]
            if (g["category"] == LOCALISATION).any():
                out.append(ceiling_sentence(g, metric))
                g = g[g["verdict"] != CEILING]  # the mask is the ceiling, not the best map
                if not len(g):
                    continue
            hib = bool(g["higher_is_better"].iloc[0])
            best = g.loc[g["mean"].idxmax() if hib else g["mean"].idxmin()]
            out.append(
                f"{rst_text(metric)} ({'higher' if hib else 'lower'} is better): best mean "
                f"{_lit(best['explainer'])} {_interval_text(best['mean'], best['ci_low'], best['ci_high'])}."
            )
        return head + head_kinds, out + per_kind
    c = s[(s["explainer"] != ref) & (s["n_pairs"] > 0)]
    out.append(
        f"On the {len(metrics)} faithfulness and localisation metrics each map is compared with {_lit(ref)} on the "
        "same images (paired; above 0 = better)"
        + (
            f", except {_join(_lit(e) for e in dict.fromkeys(s.loc[s['verdict'] == CEILING, 'explainer']))}, the "
            "mask itself, which is the ceiling of the localisation metrics"
            if (s["verdict"] == CEILING).any()
            else ""
        )
        + "."
    )
    # per explainer: on how many metrics it is better / worse than random
    undecided_everywhere = []
    for ex in dict.fromkeys(c["explainer"]):
        g = c[c["explainer"] == ex]
        better = [rst_text(m) for m in g[g["verdict"] == BETTER]["metric"]]
        worse = [rst_text(m) for m in g[g["verdict"] == WORSE]["metric"]]
        if not better and not worse:
            undecided_everywhere.append(ex)
            continue
        parts = [
            f"better than random on {len(better)} of {len(g)} metrics compared with it"
            + (f" ({_join(better)})" if better else "")
        ]
        if worse:
            parts.append(f"worse on {len(worse)} ({_join(worse)})")
        rest = len(g) - len(better) - len(worse)
        if rest:
            parts.append(f"not separated from random on the other {rest}")
        out.append(f"{_lit(ex)} is " + "; ".join(parts) + ".")
    if undecided_everywhere:
        many = len(undecided_everywhere) > 1
        n_pairs = n_text(c.loc[c["explainer"].isin(undecided_everywhere) & (c["n_pairs"] > 0), "n_pairs"])
        out.append(
            f"{_join(_lit(e) for e in undecided_everywhere)} {'are' if many else 'is'} not separated from "
            f"random on any metric at {n_pairs}: every {ci:.0%} interval of "
            f"{'their' if many else 'its'} paired difference contains 0."
        )
    open_ = c[c["verdict"].str.startswith("not separated") & np.isfinite(c["images_to_decide"].to_numpy(dtype=float))]
    if len(open_):
        near = open_.sort_values(["images_to_decide", "p"]).head(3)
        out.append(
            "The undecided differences nearest to a decision: "
            + "; ".join(
                f"{_lit(r.explainer)} on {rst_text(r.metric)} ({signed(r.vs_random)}, about {count_text(r.images_to_decide)} "
                f"images would decide it)"
                for r in near.itertuples()
            )
            + "."
        )
    tested = c[np.isfinite(c["p"].to_numpy(dtype=float))]
    if len(tested):
        held = tested[(tested["p_holm"] < 1 - ci) & tested["verdict"].isin([BETTER, WORSE])]
        out.append(
            f"Each interval is a {ci:.0%} interval on its own: of these {len(tested)} comparisons with "
            f"random about {len(tested) * (1 - ci):.1f} would exclude 0 by chance alone were no explainer "
            f"different from random; {len(held)} remain separated after Holm's adjustment over the "
            f"{len(tested)} (``p_holm`` in tables/results.csv)."
        )
    head, out = out, []
    # per metric: which explainers it separates from random, which not, and what would decide them
    for metric in metrics:
        g = c[c["metric"] == metric]
        if (s.loc[s["metric"] == metric, "category"] == LOCALISATION).any():
            out.append(ceiling_sentence(s[s["metric"] == metric], metric))
        if not len(g):
            continue
        hib = bool(g["higher_is_better"].iloc[0])
        better, worse = g[g["verdict"] == BETTER], g[g["verdict"] == WORSE]
        open_ = g[g["verdict"].str.startswith("not separated")]
        same = g[g["verdict"] == IDENTICAL]
        m_n = n_text(open_["n_pairs"])
        parts = []
        if len(better):
            parts.append(
                f"separates {_join(_lit(e) for e in better['explainer'])} from random (better: "
                + "; ".join(_verdict_text(r) for r in better.itertuples())
                + ")"
            )
        if len(worse):
            parts.append(
                f"puts random ahead of {_join(_lit(e) for e in worse['explainer'])} ("
                + "; ".join(_verdict_text(r) for r in worse.itertuples())
                + ")"
            )
        if len(open_):
            who = "any explainer" if len(open_) == len(g) and len(g) > 1 else _join(_lit(e) for e in open_["explainer"])
            decide = ", ".join(f"{_lit(r.explainer)} {_images(r.images_to_decide)}" for r in open_.itertuples())
            parts.append(
                f"does not separate {who} from random at {m_n} (images that would decide "
                f"{'each' if len(open_) > 1 else 'the'} difference: {decide})"
            )
        if len(same):
            parts.append(f"scores {_join(_lit(e) for e in same['explainer'])} exactly as random on every image")
        out.append(f"{rst_text(metric)} ({'higher' if hib else 'lower'} is better) " + "; ".join(parts) + ".")
        # a metric that ranks the map without information above maps with some
        means = s[(s["metric"] == metric) & (s["verdict"] != CEILING)].set_index("explainer")["mean"].dropna()
        if ref in means.index and len(means) > 2:
            behind = [e for e in means.index if e != ref and (means[e] < means[ref] if hib else means[e] > means[ref])]
            ahead = int((means > means[ref]).sum() if hib else (means < means[ref]).sum())
            if behind:
                out.append(
                    f"By mean score {rst_text(metric)} ranks {_lit(ref)} {ahead + 1} of "
                    f"{len(means)}, ahead of {_join(_lit(e) for e in behind)}."
                )
    return head + head_kinds, out + per_kind


def _best_value(g: pd.DataFrame) -> str:
    """The best value a metric can take (its declared range's better end), in words."""
    hib = bool(g["higher_is_better"].iloc[0])
    column = "range_high" if hib else "range_low"
    v = float(g[column].iloc[0]) if column in g.columns else math.nan
    return fmt(v) if math.isfinite(v) else "its best value"


def _listing(g: pd.DataFrame) -> str:
    """'``a`` 0.1 [0.0, 0.2], ``b`` ...' in the metric's order of merit (best mean first)."""
    hib = bool(g["higher_is_better"].iloc[0])
    g = g.sort_values("mean", ascending=not hib)
    return "; ".join(f"{_lit(r.explainer)} {_interval_text(r.mean, r.ci_low, r.ci_high)}" for r in g.itertuples())


def ceiling_sentence(g: pd.DataFrame, metric: str) -> str:
    """A localisation metric read against the mask itself: its ceiling (measured where the run has the mask
    as a map, an `oracle` entry) and the other maps' distance below it."""
    hib = bool(g["higher_is_better"].iloc[0])
    mask = g[g["verdict"] == CEILING]
    rest = g[g["verdict"] != CEILING]
    where = (
        f"the mask as a map ({_join(_lit(e) for e in mask['explainer'])}) scores "
        + "; ".join(_interval_text(r.mean, r.ci_low, r.ci_high) for r in mask.itertuples())
        if len(mask)
        else f"the mask as a map would score {_best_value(g)} (no map of this run is the mask)"
    )
    return (
        f"{rst_text(metric)} (localisation, {'higher' if hib else 'lower'} is better) is read against the mask "
        f"itself, its ceiling: {where}. The other maps, nearest the ceiling first: {_listing(rest)}."
    )


def kind_sentences(s: pd.DataFrame, ref: str | None, ci: float = 0.95) -> tuple[list, list]:
    """(headline, per-metric sentences) of the metrics not compared with random: robustness and complexity,
    read against the trivial maps that win them, and randomisation, a pass / fail check per explainer."""
    head, out = [], []
    for metric in dict.fromkeys(s["metric"]):
        g = s[s["metric"] == metric]
        kind = str(g["category"].iloc[0])
        hib = bool(g["higher_is_better"].iloc[0])
        direction = f"{'higher' if hib else 'lower'} is better"
        if kind == ROBUSTNESS:
            out.append(
                f"{rst_text(metric)} (robustness, {direction}): a constant map, the same whatever the input, scores "
                f"{_best_value(g)}, the best possible value: robustness alone does not make a map good, so no map "
                f"is compared with random here. Least sensitive first: {_listing(g)}."
            )
        elif kind == COMPLEXITY:
            out.append(
                f"{rst_text(metric)} (complexity, {direction}): a map with all its weight on one pixel scores at or "
                f"near {_best_value(g)}, the best possible value, and a constant map the worst: a simple map is not "
                f"for that a faithful one, so no map is compared with random here. Simplest first: {_listing(g)}."
            )
        elif kind == RANDOMISATION:
            groups = {word: g[g["verdict"] == v] for word, v in (("passes", PASSES), ("fails", FAILS))}
            undecided = g[~g["verdict"].isin([PASSES, FAILS])]
            side = "above" if hib else "below"
            parts = [
                f"{word}: "
                + "; ".join(
                    f"{_lit(r.explainer)} {_interval_text(r.mean, r.ci_low, r.ci_high)}" for r in rows.itertuples()
                )
                for word, rows in (*groups.items(), ("not decided", undecided))
                if len(rows)
            ]
            out.append(
                f"{rst_text(metric)} (randomisation, {direction}) is a sanity check: a map passes when the whole "
                f"{ci:.0%} interval of its score lies {side} {RANDOMISATION_LINE:g} (the line this page draws), "
                f"fails when it lies on the other side. " + "; ".join(parts) + ". A map that does not change when "
                "the model or logit is randomised fails it whatever else it gets right; passing says only that "
                "the map depends on what was randomised."
            )
            passed = [e for e in g.loc[g["verdict"] == PASSES, "explainer"]]
            failed = [e for e in g.loc[g["verdict"] == FAILS, "explainer"]]
            head.append(
                f"Randomisation check {rst_text(metric)}: "
                + "; ".join(
                    x
                    for x in (
                        f"passed by {_join(_lit(e) for e in passed)}" if passed else "",
                        f"failed by {_join(_lit(e) for e in failed)}" if failed else "",
                        f"not decided for {_join(_lit(e) for e in undecided['explainer'])}" if len(undecided) else "",
                    )
                    if x
                )
                + "."
            )
    return head, out


# ------------------------------------------------------------------ figures


def _grid(n: int, ncols: int = 4):
    ncols = max(1, min(ncols, n))
    return ncols, max(1, int(math.ceil(n / ncols)))


def _empty(text: str):
    """A figure that says why it has nothing to show (no scored metric, no comparison)."""
    from fudbench.report.figures import plt

    fig, ax = plt.subplots(figsize=(5, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, wrap=True)
    return fig


def overview_figure(summary: pd.DataFrame, models, explainers, ref: str | None = None):
    """Every explainer x metric: the mean with its 95% interval, one panel per metric, one colour per model."""
    from fudbench.report.figures import plt

    metrics = list(dict.fromkeys(summary["metric"]))
    if not metrics:
        return _empty("No explainer has a per-image score of a configured metric in this run.")
    ncols, nrows = _grid(len(metrics))
    explainers = [e for e in explainers if e in set(summary["explainer"])]
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, (0.32 * len(explainers) + 1.0) * nrows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    y = {e: len(explainers) - 1 - i for i, e in enumerate(explainers)}
    offsets = np.linspace(-0.18, 0.18, len(models)) if len(models) > 1 else [0.0]
    for ax, metric in zip(axes.flat, metrics):
        g = summary[summary["metric"] == metric]
        hib = bool(g["higher_is_better"].iloc[0])
        if ref in y:
            ax.axhspan(y[ref] - 0.45, y[ref] + 0.45, color="0.9", zorder=0)
        for k, model in enumerate(models):
            r = g[g["model"] == model]
            ys = np.array([y[e] for e in r["explainer"]]) + offsets[k]
            low = np.where(np.isfinite(r["ci_low"]), r["mean"] - r["ci_low"], 0)
            high = np.where(np.isfinite(r["ci_high"]), r["ci_high"] - r["mean"], 0)
            ax.errorbar(
                r["mean"], ys, xerr=[low, high], fmt="o", ms=4, capsize=2, color=colours[k % len(colours)], label=model
            )
        kind = str(g["category"].iloc[0]) if "category" in g.columns else FAITHFULNESS
        _dress_panel(ax, axes, y, f"{metric}\n({kind}; {'higher' if hib else 'lower'} is better)")
    _dress_grid(axes, len(metrics), len(models))
    n = int(summary["n_images"].max()) if len(summary) else 0
    fig.suptitle(
        f"Mean score per explainer with its 95% interval (n = {n} images)" + (f"; grey row: {ref}" if ref in y else ""),
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def _dress_panel(ax, axes, y: dict, title: str) -> None:
    """One metric's panel: explainer rows (labelled in the first column), title, light x grid."""
    ax.set_yticks(list(y.values()))
    ax.set_yticklabels(list(y) if ax in axes[:, 0] else [], fontsize=7)
    ax.set_ylim(-0.6, len(y) - 0.4)
    ax.set_title(title, fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)


def _dress_grid(axes, n_panels: int, n_models: int) -> None:
    """Unused panels off; a model legend where there are several models."""
    for ax in list(axes.flat)[n_panels:]:
        ax.axis("off")
    if n_models > 1:
        axes.flat[0].legend(fontsize=7, loc="best")


def vs_random_figure(summary: pd.DataFrame, paired: pd.DataFrame, models, explainers, ref: str):
    """Each explainer against random, image by image: the per-image differences of the oriented scores
    (dots; > 0 = better than random) and their mean with its 95% interval (bar), one panel per metric."""
    from fudbench.report.figures import plt

    c = summary[(summary["explainer"] != ref) & (summary["n_pairs"] > 0)]
    metrics = list(dict.fromkeys(c["metric"]))
    if not metrics:
        return _empty(f"No explainer besides {ref} has paired scores with it in this run.")
    explainers = [e for e in explainers if e in set(c["explainer"])]
    ncols, nrows = _grid(len(metrics))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, (0.32 * len(explainers) + 1.0) * nrows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    y = {e: len(explainers) - 1 - i for i, e in enumerate(explainers)}
    offsets = np.linspace(-0.18, 0.18, len(models)) if len(models) > 1 else [0.0]
    rng = np.random.default_rng(0)  # vertical jitter of the dots only
    for ax, metric in zip(axes.flat, metrics):
        ax.axvline(0, color="0.4", lw=0.8)
        for k, model in enumerate(models):
            colour = colours[k % len(colours)]
            d = paired[(paired["metric"] == metric) & (paired["model"] == model)]
            ys = np.array([y[e] for e in d["explainer"]], dtype=float) + offsets[k]
            ax.scatter(
                d["difference"],
                ys + rng.uniform(-0.12, 0.12, len(ys)),
                s=16,
                color=colour,
                alpha=0.75,
                lw=0.4,
                edgecolor="white",
                zorder=3,
            )
            r = c[(c["metric"] == metric) & (c["model"] == model)]
            ys = np.array([y[e] for e in r["explainer"]]) + offsets[k]
            low = np.where(np.isfinite(r["vs_random_low"]), r["vs_random"] - r["vs_random_low"], 0)
            high = np.where(np.isfinite(r["vs_random_high"]), r["vs_random_high"] - r["vs_random"], 0)
            ax.errorbar(
                r["vs_random"],
                ys + 0.28,
                xerr=[low, high],
                fmt="D",
                ms=4,
                capsize=3,
                color="0.25",
                mfc=colour,
                mec="black",
                mew=0.6,
                label=model,
                zorder=4,
            )
        _dress_panel(ax, axes, y, f"{metric}: difference from {ref}")
    _dress_grid(axes, len(metrics), len(models))
    fig.suptitle(
        f"Each explainer minus {ref}, image by image (dots), oriented so that > 0 = better than {ref}; "
        f"diamond above them: their mean with its 95% interval",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def page_png(fig, saved) -> bytes:
    """The figure's PNG for the page: the .png among the files `saved` (save_figure just wrote it, at
    the run's dpi) where there is one, a rendering otherwise. Reading it back costs nothing; rendering
    again was a third of the results page job (issue 47: its 40-panel figures take ~1.7 s per draw,
    and a tight bounding box draws twice)."""
    from pathlib import Path

    paths = [Path(saved)] if isinstance(saved, (str, Path)) else [Path(p) for p in saved]
    png = next((p for p in paths if p.suffix == ".png" and p.exists()), None)
    return png.read_bytes() if png is not None else png_bytes(fig)


def png_bytes(fig, dpi: int = 110) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


# ------------------------------------------------------------------ page


_COLOUR = {BETTER: "#1a7f37", WORSE: "#b42318"}


_KIND = {
    FAITHFULNESS: "faithfulness: each map against random, image by image (the paired interval, wider than a cell's "
    "by design; green: better, red: worse, grey: not separated)",
    LOCALISATION: "localisation: against the mask itself, the ceiling; random the floor",
    ROBUSTNESS: "robustness: a constant map scores the best value, so no map is compared with random; robustness "
    "alone does not make a map good",
    COMPLEXITY: "complexity: a one-pixel map scores (near) the best value, a constant map the worst; no map is "
    "compared with random",
    RANDOMISATION: f"randomisation: a sanity check per map (passes: its whole interval on the good side of "
    f"{RANDOMISATION_LINE:g})",
}


def _cell(r, best: bool) -> str:
    """One table cell: the mean with its interval (the tables' own), then what the metric's category reads."""
    esc = html.escape
    text = esc(fmt(r["mean"]))
    if math.isfinite(r["ci_low"]) and math.isfinite(r["ci_high"]):
        text += f"<br><span class='fud-ci'>[{esc(fmt(r['ci_low']))}, {esc(fmt(r['ci_high']))}]</span>"
    bad = int(r.get("n_nonfinite", 0) or 0)  # images whose model outputs were NaN or inf
    if bad:
        note = esc(nonfinite_note(bad, bad + int(r["n_images"])))
        text = note if not r["n_images"] else f"{text}<br>({note})"
    text = f"<b>{text}</b>" if best else text
    verdict = str(r["verdict"])
    if r["n_pairs"]:
        colour = _COLOUR.get(verdict, "#667085")
        decide = (
            ""
            if verdict in (BETTER, WORSE) or not math.isfinite(r["images_to_decide"])
            else f"<br>~{count_text(r['images_to_decide'])} images to decide"
        )
        text += (
            f"<br><span class='fud-vs' style='color:{colour}'>vs random "
            f"{esc(_interval_text(r['vs_random'], r['vs_random_low'], r['vs_random_high'], True))}{decide}</span>"
        )
    elif verdict == CEILING:
        text += "<br><span class='fud-vs'>the mask: ceiling</span>"
    elif verdict in (PASSES, FAILS) or verdict.startswith("not decided"):
        colour = {PASSES: "#1a7f37", FAILS: "#b42318"}.get(verdict, "#667085")
        word = {PASSES: "passes", FAILS: "fails"}.get(verdict, "undecided")
        text += f"<br><span class='fud-vs' style='color:{colour}'>{word}</span>"
    return f"<td>{text}</td>"


def html_table(summary: pd.DataFrame, model: str, explainers) -> str:
    """One model's table: metrics grouped by category (a header row says how the category is read), a row
    per metric (with its direction), a column per explainer; each cell the mean with its 95% interval (the
    tables' own; best mean in bold) and, below, what the category reads: the paired difference from random
    (faithfulness, localisation), the ceiling (the mask under localisation), passes / fails
    (randomisation); nothing under robustness and complexity, which a trivial map wins. In a panel that
    scrolls sideways rather than pushing the page wider than the window."""
    s = summary[summary["model"] == model]
    explainers = [e for e in explainers if e in set(s["explainer"])]
    esc = html.escape
    head = "".join(f"<th>{esc(e)}</th>" for e in explainers)
    body = []
    categories = s["category"] if "category" in s.columns else pd.Series([FAITHFULNESS] * len(s), index=s.index)
    for category in [c for c in CATEGORIES if c in set(categories)]:
        kind = _KIND[category]
        if category in COMPARED_WITH_RANDOM and not s.loc[categories == category, "n_pairs"].any():
            kind = f"{category}: this run has no random map, so no map is compared with chance" + (
                "; the mask itself is the ceiling" if category == LOCALISATION else ""
            )
        body.append(f"<tr class='fud-kind'><th colspan='{len(explainers) + 1}'>{esc(kind)}</th></tr>")
        for metric in dict.fromkeys(s.loc[categories == category, "metric"]):
            g = s[s["metric"] == metric].set_index("explainer")
            hib = bool(g["higher_is_better"].iloc[0])
            means = g["mean"].dropna()
            best = (means.idxmax() if hib else means.idxmin()) if len(means) else None
            if category in (ROBUSTNESS, COMPLEXITY):
                best = None  # a trivial map wins these: the best mean is no distinction
            cells = [_cell(g.loc[e], e == best) if e in g.index else "<td>--</td>" for e in explainers]
            arrow = "&uarr; higher is better" if hib else "&darr; lower is better"
            body.append(
                f"<tr><th class='fud-metric'>{esc(metric)}<br><span class='fud-dir'>{arrow}</span></th>"
                f"{''.join(cells)}</tr>"
            )
    return "\n".join(
        [
            "<div class='fud-panel fud-table'>",
            f"<table border='1'><thead><tr><th>metric</th>{head}</tr></thead><tbody>",
            *body,
            "</tbody></table>",
            "</div>",
        ]
    )


def _raw(html_text: str) -> str:
    """A raw HTML block; docutils refuses lines over 10,000 characters, so callers keep lines short."""
    return ".. raw:: html\n\n" + "\n".join("   " + line for line in html_text.splitlines()) + "\n"


def _img(png: bytes, alt: str, width: int = 2000) -> str:
    """An embedded PNG, its base64 over lines of `width` characters (a URL's newlines are ignored)."""
    data = base64.b64encode(png).decode()
    lines = [data[i : i + width] for i in range(0, len(data), width)]
    return "\n".join(
        [
            f"<div class='fud-panel fud-figure'><img alt='{html.escape(alt)}' src='data:image/png;base64,",
            *lines,
            "'/></div>",
        ]
    )


# Snakemake's landing page puts the description in a narrow column (max-w-lg) inside a vertically centred
# flex box, which cuts the top of a tall page off, beside the workflow graph (#rulegraph). This page widens
# its column and starts at the top; the column may shrink below its content's width (min-width:0: a flex
# item otherwise grows to its widest child, and the table then ran under the graph at 1800-2400 px), and the
# graph wraps below the page where both do not fit (1280 px). The table scrolls sideways inside its own
# panel; figures shrink to the column. Browsers without CSS :has() show the narrow page. Checked in headless
# Chromium at 1280-2400 px (tests/test_report_in_browser.py).
PAGE_STYLE = (
    "<style>"
    "div.flex:has(> div > .prose #fud-results-page){flex-wrap:wrap;flex:1 1 0;min-width:0}"
    "div.py-2:has(#fud-results-page){flex:1 1 56rem;min-width:0}"
    ".prose:has(#fud-results-page){max-width:80rem;min-width:0}"
    "div.items-center:has(#fud-results-page){align-items:flex-start;justify-content:flex-start}"
    ".fud-panel{max-width:100%;overflow-x:auto;margin:0.8em 0}"
    ".fud-figure img{max-width:100%;height:auto;margin:0}"
    ".fud-table table{border-collapse:collapse;font-size:78%;line-height:1.25;margin:0}"
    ".fud-table th,.fud-table td{padding:2px 5px;vertical-align:top;text-align:left}"
    ".fud-table td{min-width:7em}"
    ".fud-table tr.fud-kind th{background:#f1f5f9;font-weight:600}"
    ".fud-table .fud-ci{color:#475467}.fud-table .fud-vs{font-size:92%;color:#667085}"
    ".fud-table .fud-dir{font-weight:normal;font-size:88%}"
    "</style>"
    "<div id='fud-results-page'></div>"
)


def front_page(
    description: str,
    summary: pd.DataFrame,
    models,
    explainers,
    ref: str | None,
    overview_png: bytes | None,
    vs_random_png: bytes | None,
    ci: float = 0.95,
    bootstrap: int = 1000,
) -> str:
    """The report's front page (rst; wrapped in Jinja's raw block: Snakemake renders it as a template):
    the run in one paragraph; per model the headline sentences and the table; the two figures; the
    sentences metric by metric; how the numbers were computed."""
    n_most = int(summary["n_images"].max()) if len(summary) else 0
    lines = ["{% raw %}", "Results of this run", "===================", "", _raw(PAGE_STYLE), "", description, ""]
    if not len(summary):
        lines += ["No explainer has a per-image score of a configured metric in this run: nothing to compare.", ""]
    details = []
    for model in models:
        head, per_metric = sentence_parts(summary, model, ref, ci)
        if len(models) > 1:
            lines += [f"Model ``{model}``", "-" * (len(model) + 10), ""]
        lines += [f"- {x}" for x in head] + [""]
        if len(summary[summary["model"] == model]):
            lines += [_raw(html_table(summary, model, explainers)), ""]
        if per_metric:
            details += (
                ([f"**Model** ``{model}``", ""] if len(models) > 1 else []) + [f"- {x}" for x in per_metric] + [""]
            )
    if overview_png is not None:
        lines += [_raw(_img(overview_png, "mean score per explainer and metric with 95% intervals")), ""]
    if vs_random_png is not None:
        lines += [_raw(_img(vs_random_png, "each explainer minus random, image by image")), ""]
    if details:
        lines += ["Metric by metric", "----------------", "", *details]
    lines += [
        "How these numbers were computed",
        "-------------------------------",
        "",
        f"Per model, metric and explainer: the mean over images of the per-image score with a percentile-bootstrap "
        f"{ci:.0%} interval over images ({bootstrap} resamples; fudbench.report.tables.cell_interval): the very "
        "interval of that cell in the tables (menu: Tables), which show it as +- half its width. At small n a "
        f"percentile bootstrap covers less than {ci:.0%} (n = {n_most} images here).",
        "",
        "Each metric is read as its kind asks (its evaluator's category). **Faithfulness**: ``vs random`` is the "
        "mean of the per-image difference from the ``random`` map, oriented by the metric's direction (above 0 = "
        f"better than random whatever the metric), with a {ci:.0%} interval from fudbench.meta.inference."
        "mean_interval (a t-interval with two pseudo-observations at the difference's bounds, +-(hi - lo) of the "
        "score's value range or, where that is unbounded, of its observed range); 'about N images would decide' is "
        "the smallest number of images at which that interval would exclude 0 with 80% power, were the per-image "
        "mean and SD what this run measured, given to two significant figures (an estimate, itself uncertain at "
        "small n; ``images_to_decide_z`` in the CSV is claims.py's z-test count with a bootstrap interval). "
        "**Localisation**: read against the mask itself, the ceiling (the ``oracle`` map is the mask and scores "
        "it by construction; it is not compared), the other maps against random as the floor. **Robustness**: a "
        "constant map scores the best value, so a low sensitivity alone says nothing good; no map is compared "
        "with random. **Complexity**: a map on one pixel is the simplest, a constant map the least simple; no map "
        "is compared with random. **Randomisation**: a sanity check per map, passed when the whole interval of "
        f"its similarity (maps of the original against the randomised model or logit) lies below "
        f"{RANDOMISATION_LINE:g}, failed when above, undecided otherwise.",
        "",
        "Every number is in tables/results.csv (column ``category``); the per-image differences are in "
        "tables/results_paired.csv. Metrics whose score does not depend on the map (e.g. SRG's R-OMS) and the "
        "members of the meta-evaluation's families of known order are not on this page. Each caption names what "
        "ran in this run; a table or figure that does not apply to it is left out.",
        "",
        "{% endraw %}",
        "",
    ]
    return "\n".join(lines)
