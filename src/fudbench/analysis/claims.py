"""The headline claims of the meta-evaluation, each decided at the run's size.

A claim is the mean over images of a per-image statistic, with a percentile
bootstrap interval of that mean (the images resampled together, so two
metrics compared are paired by image; a bootstrap of a mean covers at 16
images, tests/test_bootstrap.py). Its verdict: `holds` when the interval
lies above 0, `fails` when below, `undecided at n = N` otherwise.

Per-image statistics (the families and anchors of analysis.meta):
- recovery r_i(M, f): on image i, the recovery statistic of metric M's
  oriented scores of family f's members (order_stats.recovery_rows: the
  Spearman with the known order, the known-pairs concordance for a partial
  order); an image on which M ties every member gets 0 (no information).
  The mean of r_i is the per-image ("micro over images") recovery, not the
  report card's macro recovery of the mean scores: it is a mean, so its
  interval covers, and two metrics' r_i pair by image;
- anchors first a_i(M): M's mean oriented score of the anchors (`random`,
  `background`) minus its mean oriented score of every other explainer on
  image i: above 0 when M scores the maps without information above the
  rest, what a faithful metric must not do.

`images_to_decide`: the images at which a two-sided test of the mean at 5%
would decide the claim (either way) with 80% power, if its per-image mean
and standard deviation were what this run measured
(order_stats.pair_images_needed on the statistic oriented by its mean's
sign; inf when the mean is 0). It says what a larger run would cost to
decide an undecided claim (bench/meta_budget.py turns images into hours).

The claims (headline_claims; each where its curves and families exist, per
model): symmetric FUD beats paper FUD on each family; paper FUD recovers each
family; INFID ranks the anchors first; ROAD MoRF recovers each family; each
FUD variant (an aliased `method: fud` entry) beats paper FUD on each family;
and each of the field's metrics in the run (Quantus' curves, issue 29)
recovers each family, so the metric a researcher already uses is judged
beside FUD by the same families and images.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fudbench.analysis.bootstrap import bootstrap_ci
from fudbench.analysis.meta import _image_matrix, anchor_explainers, degraded_explainers, family_members, family_order
from fudbench.analysis.order_stats import pair_images_needed

COLUMNS = ["claim", "model", "family", "statistic", "metric", "versus", "estimate", "ci_low", "ci_high",
           "n_images", "verdict", "images_to_decide"]


@dataclass(frozen=True)
class Claim:
    """`kind`: recovers (metric's r_i > 0), beats (metric's r_i - versus's r_i > 0)
    or anchors_first (a_i > 0). `text` names it in the table."""

    text: str
    kind: str
    curve: str
    versus: str | None = None


def headline_claims(curves, labels: dict | None = None) -> list[Claim]:
    """The claims that the run's curves allow (FUD variants: curves fud@<entry>;
    the field's metrics: Quantus' curves, named by `labels` where given)."""
    from fudbench.evaluators.quantus import CURVE_PREFIX

    curves, labels = list(curves), labels or {}
    out = []
    if "fud_symmetric" in curves and "fud" in curves:
        out.append(Claim("symmetric FUD beats paper FUD", "beats", "fud_symmetric", "fud"))
    if "fud" in curves:
        out.append(Claim("paper FUD recovers the family", "recovers", "fud"))
    if "infidelity" in curves:
        out.append(Claim("INFID ranks the anchors first", "anchors_first", "infidelity"))
    if "road_morf" in curves:
        out.append(Claim("ROAD MoRF recovers the family", "recovers", "road_morf"))
    for curve in curves:
        if curve.startswith("fud@"):
            out.append(Claim(f"FUD [{curve.partition('@')[2]}] beats paper FUD", "beats", curve, "fud"))
    for curve in curves:
        if curve.startswith(CURVE_PREFIX):
            out.append(Claim(f"{labels.get(curve, curve)} recovers the family", "recovers", curve))
    return out


def verdict(low: float, high: float, n: int, words: tuple[str, str] = ("holds", "fails")) -> str:
    """A statistic decided by its interval: words[0] when it excludes 0 from
    above, words[1] from below, else undecided at n (the cue verdicts say
    recovers / reverses)."""
    if np.isfinite(low) and low > 0:
        return words[0]
    if np.isfinite(high) and high < 0:
        return words[1]
    return f"undecided at n = {n}"


def _scores(per_image: pd.DataFrame, model: str, curve: str, explainers: list[str], sign: float) -> pd.DataFrame:
    """images x explainers of oriented scores (rows every explainer has; empty if one is missing)."""
    d = per_image[(per_image["model"] == model) & (per_image["curve"] == curve)
                  & per_image["explainer"].isin(explainers)]
    return sign * _image_matrix(d, "score", explainers, "image")


def per_image_recovery(per_image, model, curve, sign, members, fractions, order) -> pd.Series:
    """r_i of one metric and family on one model, by image (0 where it ties every member)."""
    from fudbench.analysis.order_stats import recovery_rows

    m = _scores(per_image, model, curve, members, sign)
    if m.empty:
        return pd.Series(dtype=float)
    r = recovery_rows(m.to_numpy(), fractions, order)
    return pd.Series(np.where(np.isfinite(r), r, 0.0), index=m.index)


def per_image_anchor_lead(per_image, model, curve, sign, anchors, others) -> pd.Series:
    """a_i: the anchors' mean oriented score minus the other explainers', by image."""
    m = _scores(per_image, model, curve, [*anchors, *others], sign)
    if m.empty:
        return pd.Series(dtype=float)
    return m[anchors].mean(axis=1) - m[others].mean(axis=1)


def decide_claims(per_image: pd.DataFrame, explainers: dict, curve_scores: dict, claims: list[Claim] | None = None,
                  n_boot: int = 1000, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """One row per (claim, model, family) with COLUMNS. per_image: model,
    explainer, curve, image, score; explainers: the config's section;
    curve_scores: {curve: (label, higher is better, score)} of the run."""
    from fudbench.seeding import derive_seed

    present = [c for c in curve_scores if c in set(per_image["curve"])]
    claims = headline_claims(present, {c: curve_scores[c][0] for c in present}) if claims is None else claims
    degraded = degraded_explainers(explainers)
    families = family_members(degraded)
    anchors = list(anchor_explainers(explainers))
    others = [e for e in explainers if e not in anchors]
    sign = {c: 1.0 if curve_scores[c][1] else -1.0 for c in present}
    label = {c: curve_scores[c][0] for c in present}
    rows = []
    for claim in claims:
        if claim.curve not in sign or (claim.versus and claim.versus not in sign):
            continue
        for model in sorted(per_image["model"].unique()):
            if claim.kind == "anchors_first":
                if not anchors or not others:
                    continue
                targets = [("anchors", per_image_anchor_lead(per_image, model, claim.curve, sign[claim.curve],
                                                             anchors, others), "anchor lead")]
            else:
                targets = []
                for family, members in families.items():
                    fractions = [degraded[e][1] for e in members]
                    order = family_order(family)

                    def r(curve, members=members, fractions=fractions, order=order):
                        return per_image_recovery(per_image, model, curve, sign[curve], members, fractions, order)

                    value = r(claim.curve)
                    if claim.kind == "beats":
                        other = r(claim.versus)
                        value = (value - other).dropna()
                        stat = "recovery difference"
                    else:
                        stat = "recovery"
                    targets.append((family, value, stat))
            for family, value, stat in targets:
                if value.empty:
                    continue
                est, lo, hi = bootstrap_ci(value.to_numpy(), n_boot, ci,
                                           derive_seed(seed, "claims", claim.text, model, family))
                d = value.to_numpy(dtype=float)
                to_decide = pair_images_needed(np.sign(d.mean()) * d)[0]
                rows.append({"claim": claim.text, "model": model, "family": family, "statistic": stat,
                             "metric": label[claim.curve], "versus": label.get(claim.versus, ""),
                             "estimate": est, "ci_low": lo, "ci_high": hi, "n_images": len(value),
                             "verdict": verdict(lo, hi, len(value)), "images_to_decide": to_decide})
    return pd.DataFrame(rows, columns=COLUMNS)
