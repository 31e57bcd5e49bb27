"""The claims of the meta-evaluation, derived from the run's curves and config,
each decided at the run's size with its error rate controlled within the claim.

Which claims (`headline_claims`; every claim where its curves, families,
anchors or scatter pairs exist, per model). A curve is in the claims when it
has a per-image score in the run and its evaluator entry is configured
(curves.configured_curve_scores: the evaluator registry), so a metric added
by the recipe in docs/architecture.md appears here with no edit:
- "<FUD variant> beats paper FUD": each FUD curve other than paper FUD's
  (`fud_symmetric`, `fud_bottom`, and every curve of an aliased `method: fud`
  entry) against `fud`, per family: its per-image recovery minus paper FUD's;
- "<FUD curve> recovers the family (macro)": beside "beats", for every FUD
  curve (paper FUD's too): the macro recovery (the family's statistic of the
  per-member mean scores, as on the report card) with order_stats'
  compatible-orders interval;
- "<metric> recovers the family": every scored curve, per family;
- "<metric> ranks the anchors below the rest": every scored curve, per model
  (INFID's "anchors first" finding is its failure);
- "<metric> is scatter-neutral": every scored curve, per scatter pair
  (analysis.meta.scatter_pairs).

Per-image statistics (the families, anchors and pairs of analysis.meta):
- recovery r_i(M, f), bounds [-1, 1]: on image i, the family's recovery
  statistic of metric M's oriented scores of its members
  (order_stats.recovery_rows: Spearman with the known order, known-pairs
  concordance for a partial order); 0 where M ties every member;
- recovery difference r_i(A) - r_i(B), bounds [-2, 2], paired by image;
- anchor margin: M's mean oriented score of the other explainers minus its
  mean oriented score of the anchors (`random`, `random_smooth`,
  `background`); above 0 when M ranks the maps without information below;
- scatter reaction: M's oriented score of the pair's compact member minus
  its scattered member (random_smooth - random; oracle compact - oracle
  scattered); above 0 = M favours compact maps of the same information.
  Raw-score statistics have bounds +-(hi - lo) from the metric's value range
  (its CurveSpec.value_range) where that range is finite and holds every
  score of the run on that model, else from the observed range of the
  curve's scores on that model (all explainers, all images); `bounds_from`
  says which.

Interval and test of a cell: inference.mean_interval (a t-interval with two
pseudo-observations at the statistic's bounds; simulated at n = 8, 16, 32
with interior true values, tests/test_inference.py: coverage 0.945-1.00,
asserted >= 0.94, widths asserted too) at `ci`,
its two-sided p of mean = 0, and the Holm-adjusted p within the cell's
claim: the Holm family (`holm_family`, `holm_m`) is the claim's cells over
models x families (recovers, beats), models (anchors) or models x scatter
pairs (scatter-neutral), leaving out gated-out cells. `sim_low`/`sim_high`:
the Bonferroni interval at simultaneous_level(ci, holm_m), shown beside the
Holm decision (Holm may reject where it still touches 0; the verdict follows
Holm). Verdict: holds / fails where p_holm < 1 - ci (estimate above / below
0), else `undecided at n = N`.

- Macro claims have no p: the compatible-orders interval at the Bonferroni
  level of the claim's cells (`sim_low`, `sim_high`) decides: holds / fails
  when it excludes 0 from above / below. The macro statistic ranks the mean
  scores (where a metric's noise averages out), the per-image one ranks each
  image's scores (noise on each image lowers it): a metric can recover a
  family on the means and not image by image, and "beats" on the per-image
  statistic rewards less per-image noise as well as a better order; the
  macro row beside it says which.
- Scatter-neutral: "fails (favours compact|scattered)" where p_holm < 1 - ci;
  "holds" where the simultaneous interval lies within +-EQUIVALENCE_SHARE
  (10%) of the metric's information contrast C on that model (`contrast`):
  the smallest of |mean oriented score of the oracle map minus `random`'s|
  (the oracle map: an entry with method oracle, else the best member of the
  family whose base is oracle) and each family's |best minus worst member|;
  NaN without any (never holds). So "neutral" means: its scatter reaction is
  small next to the weakest information signal the run judges. For a score
  that is antisymmetric under reversing the ranking (FUD symmetric), the
  random_smooth - random pair reacts 0 in expectation by construction (a
  uniform map and its reverse have the same distribution): that cell says
  nothing about it. The oracle's compact / scattered pair also changes what
  the top pixels show (the object's centre vs its extent and outline), so
  "favours scattered" there may be information, not only scatter.
- Gate (family_gate.csv, optional): a family whose base does not beat
  `random`, or whose members are not in the family's order, under an
  independent truth on a model (analysis.gate; `passes` false) has no
  known order there: its cells get "gated out (family gate failed)"
  and leave the Holm family. `gate`: passes | fails | not computed (the
  table has no row for it) | no gate (no table given) | n/a (anchor and
  scatter cells).

`images_to_decide`: the images at which a two-sided test of the mean at 5%
(unadjusted) would decide the cell (either way) with 80% power, were its
per-image mean and sd what this run measured (order_stats.pair_images_needed
on the statistic oriented by its mean's sign; inf when the mean is 0);
`images_to_decide_low`/`_high`: a percentile bootstrap interval of it at
`ci` (the images resampled, the count recomputed per replicate). It says
what a larger run would cost to decide an undecided cell
(bench/meta_budget.py turns images into hours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fudbench.meta.inference import decide, holm, mean_interval, simultaneous_level
from fudbench.meta.families import (
    _resample_weights,
    anchor_explainers,
    degraded_explainers,
    family_bases,
    family_members,
    family_order,
    scatter_pairs,
)
from fudbench.meta.order_stats import pair_images_needed, power_factor

COLUMNS = [
    "claim",
    "kind",
    "model",
    "family",
    "statistic",
    "metric",
    "versus",
    "estimate",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "holm_family",
    "holm_m",
    "sim_level",
    "sim_low",
    "sim_high",
    "bound_low",
    "bound_high",
    "bounds_from",
    "contrast",
    "gate",
    "n_images",
    "verdict",
    "images_to_decide",
    "images_to_decide_low",
    "images_to_decide_high",
]
FUD_CURVES = ("fud", "fud_bottom", "fud_symmetric")  # fudbench.evaluators.faithfulness.fud's TOP, BOTTOM, SYMMETRIC
PAPER_FUD = "fud"
EQUIVALENCE_SHARE = 0.1  # scatter-neutral: the reaction within +-10% of the metric's information contrast
UNINFORMATIVE_WIDTH = 1.8  # of a [-1, 1] statistic's 2: an interval this wide says nothing (report card)
GATED_OUT = "gated out (family gate failed)"
KINDS = ("beats", "recovers_macro", "recovers", "anchors_below", "scatter_neutral")
HOLM_FAMILY = {
    "beats": "models x families",
    "recovers_macro": "models x families (Bonferroni)",
    "recovers": "models x families",
    "anchors_below": "models",
    "scatter_neutral": "models x scatter pairs",
}


@dataclass(frozen=True)
class Claim:
    """`kind`: one of KINDS (module docstring). `text` names it in the table;
    `versus`: the curve a `beats` claim compares with."""

    text: str
    kind: str
    curve: str
    versus: str | None = None


def is_fud_curve(curve: str) -> bool:
    """FUD's curves, aliased ones (a `method: fud` entry's) included."""
    return curve.partition("@")[0] in FUD_CURVES


def headline_claims(curves, labels: dict | None = None) -> list[Claim]:
    """Every claim the run's curves allow (module docstring), in KINDS order
    and config order within a kind; `labels` names the curves in the texts."""
    curves, labels = list(curves), labels or {}
    name = lambda c: labels.get(c, c)  # noqa: E731
    out = []
    if PAPER_FUD in curves:
        out += [
            Claim(f"{name(c)} beats paper FUD", "beats", c, PAPER_FUD)
            for c in curves
            if is_fud_curve(c) and c != PAPER_FUD
        ]
    out += [Claim(f"{name(c)} recovers the family (macro)", "recovers_macro", c) for c in curves if is_fud_curve(c)]
    out += [Claim(f"{name(c)} recovers the family", "recovers", c) for c in curves]
    out += [Claim(f"{name(c)} ranks the anchors below the rest", "anchors_below", c) for c in curves]
    out += [Claim(f"{name(c)} is scatter-neutral", "scatter_neutral", c) for c in curves]
    return out


def verdict(low: float, high: float, n: int, words: tuple[str, str] = ("holds", "fails")) -> str:
    """A statistic decided by its interval: words[0] when it excludes 0 from
    above, words[1] from below, else undecided at n (the cue verdicts and the
    macro claims)."""
    if np.isfinite(low) and low > 0:
        return words[0]
    if np.isfinite(high) and high < 0:
        return words[1]
    return f"undecided at n = {n}"


# ------------------------------------------------------------------ per-image statistics


def _wide(per_image: pd.DataFrame, model: str, curve: str) -> pd.DataFrame:
    """images x explainers of one model's and curve's scores (the long per-image
    rows pivoted; a frame without an `explainer` column is taken as pivoted)."""
    if "explainer" not in per_image.columns:
        return per_image
    d = per_image[(per_image["model"] == model) & (per_image["curve"] == curve)]
    return d.pivot_table(index="image", columns="explainer", values="score", aggfunc="mean")


def _scores(per_image: pd.DataFrame, model: str, curve: str, explainers: list[str], sign: float) -> pd.DataFrame:
    """images x explainers of oriented scores (rows every explainer has; empty if one is missing).
    per_image: the long rows, or _wide's frame of the model and curve (decide_claims pivots once)."""
    w = _wide(per_image, model, curve)
    if any(e not in w.columns for e in explainers):
        return pd.DataFrame()
    return sign * w[list(explainers)].dropna()


def per_image_recovery(per_image, model, curve, sign, members, fractions, order) -> pd.Series:
    """r_i of one metric and family on one model, by image (0 where it ties every member)."""
    from fudbench.meta.order_stats import recovery_rows

    m = _scores(per_image, model, curve, members, sign)
    if m.empty:
        return pd.Series(dtype=float)
    r = recovery_rows(m.to_numpy(), fractions, order)
    return pd.Series(np.clip(np.where(np.isfinite(r), r, 0.0), -1.0, 1.0), index=m.index)


def per_image_anchor_margin(per_image, model, curve, sign, anchors, others) -> pd.Series:
    """The other explainers' mean oriented score minus the anchors', by image."""
    m = _scores(per_image, model, curve, [*anchors, *others], sign)
    if m.empty:
        return pd.Series(dtype=float)
    return m[others].mean(axis=1) - m[anchors].mean(axis=1)


def scatter_reaction(per_image, model, curve, sign, pair: tuple[str, str]) -> pd.Series:
    """Oriented score of the pair's compact member minus its scattered member, by image."""
    m = _scores(per_image, model, curve, list(pair), sign)
    if m.empty:
        return pd.Series(dtype=float)
    return m[pair[0]] - m[pair[1]]


def curve_value_ranges(curves) -> dict:
    """{curve: (lo, hi)} of the curves the registry knows (CurveSpec.value_range)."""
    from fudbench.evaluators import find_curve

    out = {}
    for c in curves:
        spec = find_curve(c)
        if spec is not None and spec.value_range is not None:
            out[c] = tuple(float(v) for v in spec.value_range)
    return out


def difference_bounds(scores: np.ndarray, value_range=None) -> tuple[float, float, str]:
    """(-R, R, source) for a difference of two scores of one metric on one model:
    R = hi - lo of the metric's value range where finite and holding every
    score, else the observed range of `scores` (module docstring)."""
    s = np.asarray(scores, dtype=float)
    s = s[np.isfinite(s)]
    if value_range is not None:
        lo, hi = value_range
        if (
            math.isfinite(lo)
            and math.isfinite(hi)
            and hi > lo
            and (not len(s) or (s.min() >= lo - 1e-9 and s.max() <= hi + 1e-9))
        ):
            return -(hi - lo), hi - lo, "metric range"
    r = float(s.max() - s.min()) if len(s) else 0.0
    return -r, r, "observed range"


def _interval(values: np.ndarray, bounds, ci: float) -> tuple[float, float, float, float]:
    """mean_interval, with a degenerate range (a metric constant on the model) as no evidence."""
    if not bounds[0] < bounds[1]:
        return float(np.mean(values)) if len(values) else math.nan, math.nan, math.nan, math.nan
    return mean_interval(np.clip(values, *bounds), bounds, ci)


def images_to_decide_interval(values, n_boot: int, ci: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval (order statistics: inf-safe) of
    pair_images_needed's count of the values oriented by their mean's sign."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    n = len(v)
    if n < 2 or not n_boot:
        return math.nan, math.nan
    w = _resample_weights(n, n_boot, seed)  # (B, n) draw counts / n
    mean = w @ v
    var = np.maximum(w @ v**2 - mean**2, 0.0) * n / (n - 1)
    tied = np.abs(mean) <= 1e-12 * (1 + np.abs(v).max())
    with np.errstate(divide="ignore", invalid="ignore"):
        count = np.where(tied, np.inf, np.maximum(2, np.ceil(power_factor() * var / mean**2)))
    count = np.sort(count)
    a = (1 - ci) / 2
    lo = count[max(0, int(math.floor(a * n_boot)))]
    hi = count[min(n_boot - 1, int(math.ceil((1 - a) * n_boot)) - 1)]
    return float(lo), float(hi)


# ------------------------------------------------------------------ gate and contrast


def read_gate(gate) -> dict | None:
    """{(model, family): row} of the family gate (a family_gate.csv path or frame; None = no gate)."""
    if gate is None:
        return None
    frame = pd.read_csv(gate) if not isinstance(gate, pd.DataFrame) else gate
    missing = {"model", "family", "passes"} - set(frame.columns)
    if missing:
        raise ValueError(
            f"family gate table: missing column(s) {sorted(missing)} (expected the family_gate rule's "
            "model, family, best_member, truth, estimate, ci_low, ci_high, p, passes, n_images)"
        )
    return {(r["model"], r["family"]): r for _, r in frame.iterrows()}


def gate_status(gate: dict | None, model: str, family: str) -> str:
    """passes | fails | not computed | no gate (module docstring)."""
    if gate is None:
        return "no gate"
    row = gate.get((model, family))
    if row is None or pd.isna(row["passes"]):
        return "not computed"
    passes = row["passes"]
    if isinstance(passes, str):
        passes = passes.strip().lower() in ("true", "1", "yes", "passes")
    return "passes" if bool(passes) else "fails"


def oracle_explainer(explainers: dict) -> str | None:
    """The oracle map of the run: an entry with method oracle, else the best
    member of the family whose base is oracle."""
    for name, settings in explainers.items():
        if (settings or {}).get("method", name) == "oracle":
            return name
    degraded = degraded_explainers(explainers)
    bases = family_bases(explainers)
    families = family_members(degraded)
    ranked = sorted((f for f, b in bases.items() if b == "oracle"), key=lambda f: (f != "oracle", f))
    return families[ranked[0]][0] if ranked else None


def information_contrast(per_image, model, curve, sign, explainers: dict, base: str | None = None) -> float:
    """C of the scatter-neutral rule (module docstring): the SMALLEST of the
    information contrasts the run has on this model (|oracle - random|, and
    each family's |best - worst member|), so a scatter reaction is called
    negligible only next to the weakest information signal the run judges
    (the largest would make "neutral" easy: issue 38's review). NaN without
    any. `base` is kept for callers that name the pair's base."""
    contrasts = []
    oracle = oracle_explainer(explainers)
    randoms = [n for n, m in anchor_explainers(explainers).items() if m == "random"]
    if oracle and randoms:
        m = _scores(per_image, model, curve, [oracle, randoms[0]], sign)
        if not m.empty:
            contrasts.append(float(abs((m[oracle] - m[randoms[0]]).mean())))
    for f, members in family_members(degraded_explainers(explainers)).items():
        m = _scores(per_image, model, curve, [members[0], members[-1]], sign)
        if not m.empty and len(members) > 1:
            contrasts.append(float(abs((m[members[0]] - m[members[-1]]).mean())))
    return min(contrasts) if contrasts else math.nan


# ------------------------------------------------------------------ deciding


def _cells(claim, frames, model, explainers, sign, ranges) -> list[dict]:
    """The claim's cells on one model: dicts with family, statistic, values
    (per-image Series) or the macro statistic's scores, bounds. frames(model,
    curve): that curve's scores on the model, images x explainers (_wide)."""
    from fudbench.meta.order_stats import recovery_rows

    per_image = frames(model, claim.curve)
    degraded = degraded_explainers(explainers)
    out = []
    if claim.kind in ("recovers", "beats", "recovers_macro"):
        for family, members in family_members(degraded).items():
            fractions = [degraded[e][1] for e in members]
            order = family_order(family)
            if claim.kind == "recovers_macro":
                m = _scores(per_image, model, claim.curve, members, sign[claim.curve])
                if m.empty:
                    continue
                s = m.to_numpy()
                point = float(recovery_rows(s.mean(0)[None], fractions, order)[0])
                out.append(
                    {
                        "family": family,
                        "statistic": "macro recovery",
                        "scores": (s, fractions, order),
                        "estimate": point if np.isfinite(point) else 0.0,
                        "n": len(s),
                        "bounds": (-1.0, 1.0),
                        "bounds_from": "statistic",
                    }
                )
                continue
            value = per_image_recovery(per_image, model, claim.curve, sign[claim.curve], members, fractions, order)
            stat, bounds = "recovery", (-1.0, 1.0)
            if claim.kind == "beats":
                other = per_image_recovery(
                    frames(model, claim.versus), model, claim.versus, sign[claim.versus], members, fractions, order
                )
                value = (value - other).dropna()
                stat, bounds = "recovery difference", (-2.0, 2.0)
            if len(value):
                out.append(
                    {"family": family, "statistic": stat, "values": value, "bounds": bounds, "bounds_from": "statistic"}
                )
        return out
    lo, hi, source = difference_bounds(per_image.to_numpy(float).ravel(), ranges.get(claim.curve))
    if claim.kind == "anchors_below":
        scored = set(per_image.columns)
        anchors = [e for e in anchor_explainers(explainers) if e in scored]
        others = [e for e in explainers if e not in anchor_explainers(explainers) and e in scored]
        if anchors and others:
            value = per_image_anchor_margin(per_image, model, claim.curve, sign[claim.curve], anchors, others)
            if len(value):
                out.append(
                    {
                        "family": "anchors",
                        "statistic": "anchor margin",
                        "values": value,
                        "bounds": (lo, hi),
                        "bounds_from": source,
                    }
                )
        return out
    if claim.kind == "scatter_neutral":
        for pair, members in scatter_pairs(explainers).items():
            value = scatter_reaction(per_image, model, claim.curve, sign[claim.curve], members)
            if len(value):
                base = (explainers.get(members[0]) or {}).get("base", pair)
                out.append(
                    {
                        "family": f"scatter:{pair}",
                        "statistic": "scatter reaction (compact - scattered)",
                        "values": value,
                        "bounds": (lo, hi),
                        "bounds_from": source,
                        "contrast": information_contrast(
                            per_image, model, claim.curve, sign[claim.curve], explainers, base
                        ),
                    }
                )
        return out
    raise ValueError(f"unknown claim kind {claim.kind!r}; one of {KINDS}")


def _scatter_verdict(est, p_adj, sim_low, sim_high, contrast, alpha, n) -> str:
    if np.isfinite(p_adj) and p_adj < alpha and est != 0:
        return "fails (favours compact)" if est > 0 else "fails (favours scattered)"
    margin = EQUIVALENCE_SHARE * contrast
    if np.isfinite(margin) and margin > 0 and np.isfinite(sim_low) and -margin <= sim_low and sim_high <= margin:
        return "holds"
    return f"undecided at n = {n}"


def decide_claims(
    per_image: pd.DataFrame,
    explainers: dict,
    curve_scores: dict,
    claims: list[Claim] | None = None,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    gate=None,
    value_ranges: dict | None = None,
) -> pd.DataFrame:
    """One row per (claim, model, family | anchors | scatter pair) with COLUMNS.
    per_image: model, explainer, curve, image, score; explainers: the config's
    section; curve_scores: {curve: (label, higher is better, score)} of the
    run; gate: family_gate.csv (path or frame; None = no gate); value_ranges:
    {curve: (lo, hi)} (default: the registry's). n_boot: the bootstrap of
    images_to_decide only."""
    from fudbench.meta.order_stats import compatible_interval
    from fudbench.core.seeding import derive_seed

    per_image = per_image.dropna(subset=["score"])
    scored = set(per_image["curve"].unique())
    present = [c for c in curve_scores if c in scored]
    claims = headline_claims(present, {c: curve_scores[c][0] for c in present}) if claims is None else claims
    ranges = curve_value_ranges(present) if value_ranges is None else value_ranges
    gate = read_gate(gate)
    sign = {c: 1.0 if curve_scores[c][1] else -1.0 for c in present}
    label = {c: curve_scores[c][0] for c in present}
    alpha = 1 - ci
    # pivot each (model, curve) once: every cell of every claim reads these
    split = {
        key: d.pivot_table(index="image", columns="explainer", values="score", aggfunc="mean")
        for key, d in per_image.groupby(["model", "curve"], sort=False, observed=True)
    }
    frames = lambda model, curve: split.get((model, curve), pd.DataFrame())  # noqa: E731
    models = sorted(per_image["model"].unique())
    rows = []
    for claim in claims:
        if claim.curve not in sign or (claim.versus and claim.versus not in sign):
            continue
        cells = []
        for model in models:
            for cell in _cells(claim, frames, model, explainers, sign, ranges):
                cell["model"] = model
                is_family = claim.kind in ("recovers", "beats", "recovers_macro")
                cell["gate"] = gate_status(gate, model, cell["family"]) if is_family else "n/a"
                cells.append(cell)
        for c in cells:
            if "values" in c:
                v = c["values"].to_numpy(dtype=float)
                c["n"] = len(v)
                c["estimate"], c["ci_low"], c["ci_high"], c["p"] = _interval(v, c["bounds"], ci)
                c["to_decide"] = pair_images_needed(np.sign(v.mean()) * v)[0]
                c["to_decide_ci"] = images_to_decide_interval(
                    v, n_boot, ci, derive_seed(seed, "claims", claim.text, c["model"], c["family"])
                )
            else:  # macro: the compatible-orders interval, no p
                s, fractions, order = c["scores"]
                c["ci_low"], c["ci_high"] = compatible_interval(s, fractions, order, ci)
                c["p"], c["to_decide"], c["to_decide_ci"] = math.nan, math.nan, (math.nan, math.nan)
        # the claim's family of tests: its cells not gated out (and, for p-based claims, with a p at all)
        tested = [c for c in cells if c["gate"] != "fails" and (claim.kind == "recovers_macro" or np.isfinite(c["p"]))]
        m = len(tested)
        level = simultaneous_level(ci, m)
        for c in cells:
            if "values" in c:
                _, c["sim_low"], c["sim_high"], _ = _interval(c["values"].to_numpy(dtype=float), c["bounds"], level)
            else:
                c["sim_low"], c["sim_high"] = compatible_interval(*c["scores"], level)
        adjusted = holm([c["p"] for c in tested])
        for c, p_adj in zip(tested, adjusted):
            c["p_holm"] = p_adj
        for c in cells:
            n = c["n"]
            p_adj = c.get("p_holm", math.nan)
            if c["gate"] == "fails":
                word = GATED_OUT
            elif claim.kind == "recovers_macro":
                word = verdict(c["sim_low"], c["sim_high"], n)
            elif claim.kind == "scatter_neutral":
                word = _scatter_verdict(c["estimate"], p_adj, c["sim_low"], c["sim_high"], c["contrast"], alpha, n)
            else:
                word = decide(c["estimate"], p_adj, alpha, n=n)
            rows.append(
                {
                    "claim": claim.text,
                    "kind": claim.kind,
                    "model": c["model"],
                    "family": c["family"],
                    "statistic": c["statistic"],
                    "metric": label[claim.curve],
                    "versus": label.get(claim.versus, ""),
                    "estimate": c["estimate"],
                    "ci_low": c["ci_low"],
                    "ci_high": c["ci_high"],
                    "p": c["p"],
                    "p_holm": p_adj,
                    "holm_family": f"{claim.text}: {HOLM_FAMILY[claim.kind]}",
                    "holm_m": m,
                    "sim_level": level,
                    "sim_low": c["sim_low"],
                    "sim_high": c["sim_high"],
                    "bound_low": c["bounds"][0],
                    "bound_high": c["bounds"][1],
                    "bounds_from": c["bounds_from"],
                    "contrast": c.get("contrast", math.nan),
                    "gate": c["gate"],
                    "n_images": n,
                    "verdict": word,
                    "images_to_decide": c["to_decide"],
                    "images_to_decide_low": c["to_decide_ci"][0],
                    "images_to_decide_high": c["to_decide_ci"][1],
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
