"""Meta-evaluation outputs: the ground-truth-ranking table and the metric
agreement heatmap (fudbench.meta.families computes the numbers).

matplotlib is imported inside agreement_heatmap only, so the table job runs
in the analysis env, which has no matplotlib.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fudbench.meta.report_card import UNINFORMATIVE_WIDTH
from fudbench.report.latex import booktabs, escape, fmt_ci


def meta_table(correlations: pd.DataFrame, models=None, families=None, digits: int = 2):
    """(CSV frame, LaTeX) of each metric's recovery of the families' known orders.

    Rows: metrics (arrow = the direction the metric scores); columns: model x
    family x {macro, micro}; cells: the family's recovery statistic (the
    Spearman for a total order, the known-pairs concordance for a partial
    one: analysis.order_stats) +- half-width of its interval, "--" where
    undefined.
    """
    d = correlations
    models = list(models) if models is not None else list(dict.fromkeys(d["model"]))
    families = list(families) if families is not None else list(dict.fromkeys(d["family"]))
    metrics = list(dict.fromkeys(d["metric"]))
    arrow = dict(zip(d["metric"], d["higher_is_better"]))
    columns = [(m, f, k) for m in models for f in families for k in ("macro", "micro")]
    lookup = {tuple(r[["model", "family", "metric", "kind"]]): r for _, r in d.iterrows()}
    rows = []
    for metric in metrics:
        cells = [escape(metric) + (r" $\uparrow$" if arrow[metric] else r" $\downarrow$")]
        for m, f, k in columns:
            r = lookup.get((m, f, metric, k))
            cells.append("--" if r is None else fmt_ci(*_finite(r[["recovery", "ci_low", "ci_high"]]), digits))
        rows.append(cells)
    header = ["Metric", *[f"{m} {f} {k}" for m, f, k in columns]]
    tex = booktabs(
        header,
        rows,
        caption="How each metric's ranking of a family recovers its known order (+1 = recovered, "
        "$-1$ = reversed): the Spearman correlation with the fractions for degraded copies "
        "(less noise = better), the concordance over the known pairs (f = 0 before each "
        "f $>$ 0) for model randomisation. Macro: on the mean score over the curve, 95\\% "
        "interval from simultaneous paired t-intervals of the members' differences (the range "
        "over the orders they allow); micro: per step, averaged over steps, 95\\% percentile "
        "bootstrap over images ($\\pm$ half-width).",
        label="tab:meta_ground_truth",
        align="l" + "r" * len(columns),
    )
    order = {"model": models, "family": families, "metric": metrics, "kind": ["macro", "micro"]}
    csv = d.copy()
    for col, cats in order.items():
        csv[col] = pd.Categorical(csv[col], cats, ordered=True)
    csv = csv.sort_values(list(order)).reset_index(drop=True)
    return csv, tex


def _finite(values) -> list[float]:
    return [float(v) if v is not None and not pd.isna(v) else math.nan for v in values]


def agreement_heatmap(matrices: dict, paths=None, plots: dict | None = None, annotate_max: int = 24):
    """One panel per model of Kendall's tau between metric rankings, cells
    annotated with their value up to `annotate_max` metrics (beyond that the
    numbers are unreadable; the CSV has them); saved to `paths` (one or
    several; format from the suffix) when given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fudbench.core.io import save_figure

    if not matrices:
        raise ValueError("no agreement matrix to plot: no model has two metrics scored on every explainer")
    plots = plots or {}
    models = list(matrices)
    k = max(len(m) for m in matrices.values())
    size = 0.55 * k + 1.5
    fig, axes = plt.subplots(1, len(models), figsize=(size * len(models) + 0.8, size), squeeze=False)
    image = None
    for ax, model in zip(axes[0], models):
        m = matrices[model]
        values = m.to_numpy(dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values), vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(m.columns)), m.columns, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(m.index)), m.index, fontsize=7)
        for i in range(values.shape[0] if len(m) <= annotate_max else 0):
            for j in range(values.shape[1]):
                v = values[i, j]
                ax.text(
                    j,
                    i,
                    "--" if not np.isfinite(v) else f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white" if np.isfinite(v) and abs(v) > 0.6 else "black",
                )
        ax.set_title(model)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label=r"Kendall $\tau$")
    if paths is not None:
        plt.rcParams["savefig.dpi"] = plots.get("dpi", 150)
        save_figure(fig, paths)
    return fig


def _rank_cell(r, method: str) -> str:
    """'rank / n', starred where it is not the anchor's expected rank (half a place: ties)."""
    rank, expected = _finite([r[f"{method}_rank"], r[f"{method}_expected_rank"]])
    if not math.isfinite(rank):
        return "--"
    star = "$^\\ast$" if math.isfinite(expected) and abs(rank - expected) > 0.5 else ""
    return f"{rank:g} / {int(r['n_explainers'])}{star}"


def _family_cell(r, family: str, digits: int) -> str:
    """'recovery [lo, hi]', a dagger where the interval misses the target, an
    R where a known pair's mean opposes the known order; "uninformative"
    where the interval spans (almost) the whole range; a G where the family's
    gate fails on the model."""
    rho, lo, hi = _finite(r[[f"{family}_recovery", f"{family}_ci_low", f"{family}_ci_high"]])
    if not math.isfinite(rho):
        return "--"
    gated = "$^{G}$" if r.get(f"{family}_gate") == "fails" else ""
    if bool(r.get(f"{family}_uninformative", False)):
        return "uninformative" + gated
    marks = [
        m
        for m, on in (
            ("\\dagger", not bool(r[f"{family}_powered"])),
            ("R", r.get(f"{family}_needed_status") == "reversed"),
        )
        if on
    ]
    interval = f" [{lo:.{digits}f}, {hi:.{digits}f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    if r.get(f"{family}_gate") == "fails":
        marks.append("G")
    return f"{rho:.{digits}f}{interval}" + (f"$^{{{','.join(marks)}}}$" if marks else "")


def _interval_cell(estimate, lo, hi, digits: int) -> str:
    """'estimate [lo, hi]', '--' where undefined."""
    est, lo, hi = _finite([estimate, lo, hi])
    if not math.isfinite(est):
        return "--"
    interval = f" [{lo:.{digits}f}, {hi:.{digits}f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{est:.{digits}f}{interval}"


def _gate_cell(r, family: str, digits: int) -> str:
    """'passes [lo, hi]' / 'fails [lo, hi]' of the family's gate on the row's model."""
    status = r.get(f"{family}_gate", "")
    lo, hi = _finite([r.get(f"{family}_gate_ci_low"), r.get(f"{family}_gate_ci_high")])
    interval = f" [{lo:.{digits}f}, {hi:.{digits}f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    if status in ("passes", "fails"):
        return status + interval
    return "not computed" if status == "not computed" else "--"


def _has_gate(card: pd.DataFrame, families) -> bool:
    return any(f"{f}_gate" in card and (card[f"{f}_gate"] != "no gate").any() for f in families)


CARD_VS_CLAIMS = (
    "The card's family interval is for the macro statistic (the order of the members' mean scores, "
    "compatible orders at 95\\%); the claims table's is for the mean over images of the per-image "
    "statistic (each image's own order), Holm-adjusted within its claim. They estimate different "
    "things: noise on each image lowers the per-image statistic but averages out of the means, so a "
    "metric can recover a family on the card (macro) and be undecided or fail image by image, and "
    "the card's interval (over orders the paired differences allow) can be wide where the claims' "
    "is narrow. Read a disagreement as: the order is (or is not) visible in the means, not on each "
    "image. "
)


def report_card_table(card: pd.DataFrame, target_half_width: float = 0.2, digits: int = 2) -> str:
    """LaTeX of the metric report card (fudbench.meta.report_card). Rows:
    model x metric; per family the recovery statistic and its interval
    (_family_cell's marks); the seed spread (largest over families) when the
    run has seeds of one model; the anchors' ranks among all explainers,
    starred where not as expected; mean agreement; seconds per image."""
    from fudbench.meta.report_card import card_families, card_scatter_pairs

    families = card_families(card)
    pairs = card_scatter_pairs(card)
    gated = _has_gate(card, families)
    seeds = any(card[f"{f}_seed_spread"].notna().any() for f in families)
    header = [
        "Model",
        "Metric",
        *[f + (" (pairs)" if _partial(card, f) else "") for f in families],
        *([f"{f} gate" for f in families] if gated else []),
        *[f"Scatter {p}" for p in pairs],
        *(["Seed spread"] if seeds else []),
        "Random rank",
        "Backgr. rank",
        "Agreement",
        "s / image",
    ]
    rows, breaks = [], []
    for i, (_, r) in enumerate(card.iterrows()):
        cells = [
            escape(r["model"]),
            escape(r["metric"]) + (r" $\uparrow$" if r["higher_is_better"] else r" $\downarrow$"),
        ]
        cells += [_family_cell(r, f, digits) for f in families]
        first = i == 0 or card["model"].iloc[i - 1] != r["model"]  # the gate is the model's: shown once
        cells += [_gate_cell(r, f, digits) if first else "" for f in families] if gated else []
        cells += [
            _interval_cell(r[f"scatter_{p}_reaction"], r[f"scatter_{p}_ci_low"], r[f"scatter_{p}_ci_high"], digits)
            for p in pairs
        ]
        if seeds:
            spread = [v for f in families for v in _finite([r[f"{f}_seed_spread"]]) if math.isfinite(v)]
            cells.append(f"{max(spread):.{digits}f}" if spread else "--")
        cells += [_rank_cell(r, "random"), _rank_cell(r, "background")]
        agree, cost = _finite(r[["agreement_tau", "seconds_per_image"]])
        cells.append(f"{agree:.{digits}f}" if math.isfinite(agree) else "--")
        cells.append(f"{cost:.3g}" if math.isfinite(cost) else "--")
        rows.append(cells)
        if i + 1 < len(card) and card["model"].iloc[i + 1] != r["model"]:
            breaks.append(i)
    n_images = int(card["n_images"].max()) if len(card) else 0
    caption = (
        f"Metric report card ({n_images} images per model). Per ground-truth family: how the metric's "
        "ranking of the family recovers its known order (+1 = recovered, $-1$ = reversed): the Spearman "
        "correlation for degraded copies, the concordance over the known pairs (f = 0 before each f $>$ 0) "
        "for model randomisation (pairs); 95\\% interval from simultaneous paired t-intervals of the "
        "members' differences (the range over the orders they allow); $^\\dagger$: the interval is wider "
        f"than $\\pm${target_half_width:g}; $^R$: a known pair's mean difference opposes the known order "
        "(images\\_needed in the CSV: images for every known pair at 80\\% power, two-sided 0.05); "
        f"uninformative: the interval spans {UNINFORMATIVE_WIDTH:g} or more of the range of 2, so the "
        "images say nothing about the order. "
        + (
            "Gate: whether the family's best member beats random on the model under an independent truth "
            "(mass inside the object mask; paired per-image difference with its 95\\% interval, from "
            "family\\_gate.csv; shown on the model's first row); $^G$: the gate fails, the family's order "
            "is not known on that model and its claims are gated out. "
            if gated
            else "No family gate in this run (family\\_gate.csv not given): every family's order is assumed on "
            "every model. "
        )
        + (
            "Scatter: the metric's reaction to spatial scatter alone, the per-image mean of its oriented "
            "score of a pair's compact member minus the scattered one (same information), 95\\% interval; "
            "0 = scatter-neutral, above 0 = favours compact maps. "
            if pairs
            else ""
        )
        + CARD_VS_CLAIMS
        + (
            "Seed spread: largest difference of a family's statistic between training seeds of the model "
            "(explained and evaluated under the same noise). "
            if seeds
            else ""
        )
        + "Random / background rank: where the anchors rank among all explainers (1 = best); expected: "
        "background last, random last but for background; $^\\ast$: elsewhere (anchor\\_note in the "
        "CSV). Agreement: mean Kendall $\\tau$ with the other metrics' rankings of all explainers (-- "
        "below 3 explainers). s / image: the evaluator entry's fill and classifier time per image."
    )
    return booktabs(
        header,
        rows,
        caption=caption,
        label="tab:report_card",
        align="ll" + "l" * (len(families) * (1 + gated) + len(pairs)) + "r" * (4 + seeds),
        midrules_after=breaks,
    )


def _partial(card: pd.DataFrame, family: str) -> bool:
    column = f"{family}_statistic"
    return column in card and (card[column] == "known_pairs").any()


def report_card_figure(card: pd.DataFrame, paths=None, plots: dict | None = None):
    """Forest plot: one panel per family, metrics down, the recovery statistic and
    its interval per model (seeds of one model share a colour, marked apart;
    hollow where the family's gate fails on the model)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fudbench.meta.report_card import card_families
    from fudbench.core.io import save_figure

    families = card_families(card)
    if not families:
        raise ValueError("report card without ground-truth families: nothing to plot")
    plots = plots or {}
    metrics = list(dict.fromkeys(card["metric"]))
    models = list(dict.fromkeys(card["model"]))
    groups = list(dict.fromkeys(card["seed_group"]))
    colours = {g: plt.get_cmap("tab10")(i % 10) for i, g in enumerate(groups)}
    markers = "osD^v<>p"
    height = 0.22 * len(metrics) + 1.2
    fig, axes = plt.subplots(1, len(families), figsize=(2.6 * len(families) + 1.8, height), sharey=True, squeeze=False)
    y = {m: i for i, m in enumerate(metrics)}
    offset = {m: (k - (len(models) - 1) / 2) * 0.8 / max(len(models), 1) for k, m in enumerate(models)}
    for ax, f in zip(axes[0], families):
        for model, d in card.groupby("model", sort=False):
            group = d["seed_group"].iloc[0]
            seed_index = list(card[card["seed_group"] == group]["model"].unique()).index(model)
            ys = np.array([y[m] for m in d["metric"]]) + offset[model]
            rho = d[f"{f}_recovery"].to_numpy(float)
            lo, hi = d[f"{f}_ci_low"].to_numpy(float), d[f"{f}_ci_high"].to_numpy(float)
            err = np.vstack([rho - lo, hi - rho])
            gated = (d[f"{f}_gate"] == "fails").to_numpy() if f"{f}_gate" in d else np.zeros(len(d), bool)
            for hollow in (False, True):  # a family gated out on the model: hollow markers
                ok = np.isfinite(rho) & (gated == hollow)
                if not ok.any():
                    continue
                ax.errorbar(
                    rho[ok],
                    ys[ok],
                    xerr=np.where(np.isfinite(err[:, ok]), err[:, ok], 0.0),
                    fmt=markers[seed_index % 8],
                    ms=3,
                    lw=0.8,
                    color=colours[group],
                    mfc="none" if hollow else colours[group],
                    label=model if not hollow else f"{model} (gate fails)",
                )
        ax.axvline(0, color="grey", lw=0.6)
        ax.axvspan(-1.05, 0, color="0.93", zorder=0)
        ax.set_xlim(-1.05, 1.05)
        ax.set_title(f + (" (known pairs)" if _partial(card, f) else ""), fontsize=9)
        ax.set_xlabel("recovery of the known order", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].set_yticks(range(len(metrics)), metrics)
    axes[0][0].invert_yaxis()
    legend = {}
    for ax in axes[0]:  # every panel's entries once (a "gate fails" entry may be on any panel)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    # room on the right for the legend: about 0.055 in per character at fontsize 7, plus the marker
    right = 1 - (0.45 + 0.055 * max(map(len, legend), default=0)) / fig.get_figwidth()
    fig.legend(
        list(legend.values()), list(legend), loc="upper left", bbox_to_anchor=(right, 1), fontsize=7, frameon=False
    )
    fig.tight_layout(rect=(0, 0, right, 1))
    if paths is not None:
        plt.rcParams["savefig.dpi"] = plots.get("dpi", 150)
        save_figure(fig, paths)
    return fig


def claims_table(claims: pd.DataFrame, ci: float = 0.95, digits: int = 2) -> str:
    """LaTeX of the claims table (fudbench.meta.claims): one row per claim
    and cell (model x family, anchors or scatter pair) with the mean per-image
    statistic (macro: the statistic of the mean scores), its interval, the
    simultaneous (Bonferroni) interval, the raw and Holm-adjusted p, the
    verdict and the images to decide with their bootstrap interval."""
    header = ["Claim", "Model", "Cell", "Estimate", "Interval", "Simult.", "p", "p Holm", "n", "Verdict", "n to decide"]
    rows, breaks = [], []
    for i, (_, r) in enumerate(claims.iterrows()):
        gate = r.get("gate", "")
        verdict = escape(r["verdict"]) + ("$^{G}$" if gate == "passes" else "")
        rows.append(
            [
                escape(r["claim"]),
                escape(r["model"]),
                escape(r["family"]),
                _num(r["estimate"], digits),
                _pair(r["ci_low"], r["ci_high"], digits),
                _pair(r.get("sim_low"), r.get("sim_high"), digits),
                _p(r.get("p")),
                _p(r.get("p_holm")),
                str(int(r["n_images"])),
                verdict,
                _count(r.get("images_to_decide"))
                + _count_interval(r.get("images_to_decide_low"), r.get("images_to_decide_high")),
            ]
        )
        if i + 1 < len(claims) and claims["claim"].iloc[i + 1] != r["claim"]:
            breaks.append(i)
    gates = set(claims["gate"]) if "gate" in claims else set()
    if gates & {"passes", "fails", "not computed"}:
        gate_text = (
            "Gate (family\\_gate.csv): a family counts on a model only where its best member beats "
            "random under an independent truth; $^{G}$: passed; cells whose family fails it are gated "
            "out and left out of the Holm family. "
        )
    else:
        gate_text = "No family gate in this run (family\\_gate.csv not given): every family's order is assumed. "
    level = f"{ci:.0%}"
    caption = (
        f"Claims, each decided at the run's size with the family-wise error rate controlled within the "
        f"claim. Estimate: the mean over images of a per-image statistic with its {level} interval (a "
        "t-interval whose variance includes two pseudo-observations at the statistic's bounds, weight "
        "1/4 each; simulated coverage $\\geq$ 0.95 at 8-32 images) and the two-sided p of mean = 0. "
        "Holm family: the claim's cells over models x families (recovers, beats), models (anchors), "
        "models x scatter pairs (scatter-neutral); p Holm: adjusted within it; Simult.: Bonferroni "
        f"intervals at {level} over the family. Holds / fails: p Holm below {1 - ci:.2g} with the estimate "
        "above / below 0. Recovery: the Spearman of a metric's scores of a family's members on one image "
        "with the known order (known-pairs concordance for model randomisation), 0 where it ties every "
        "member; recovery difference: the first metric's minus paper FUD's on the same image; macro: "
        "the statistic of the mean scores, compatible-orders interval at the simultaneous level deciding "
        "(no p); anchor margin: the other maps' mean oriented score minus the anchors'; scatter reaction: "
        "the oriented score of a pair's compact member minus its scattered one (same information); "
        "scatter-neutral holds where the simultaneous interval lies within $\\pm$10\\% of the metric's "
        "information contrast (oracle minus random), fails where p Holm is below the level (the "
        "direction it favours). "
        + gate_text
        + "n to decide: the images at which a 5\\% two-sided test of the mean would decide the cell with "
        f"80\\% power, were its per-image mean and spread as measured here [its {level} bootstrap "
        "interval]; -- for a mean of 0."
    )
    return booktabs(header, rows, caption=caption, label="tab:claims", align="lllrllrrrlr", midrules_after=breaks)


def _num(v, digits: int) -> str:
    (v,) = _finite([v])
    return f"{v:.{digits}f}" if math.isfinite(v) else "--"


def _pair(lo, hi, digits: int) -> str:
    lo, hi = _finite([lo, hi])
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]" if math.isfinite(lo) and math.isfinite(hi) else "--"


def _p(p) -> str:
    (p,) = _finite([p])
    if not math.isfinite(p):
        return "--"
    return "$<$0.001" if p < 0.001 else f"{p:.3f}"


def _count_interval(lo, hi) -> str:
    lo, hi = _finite([lo, hi])
    if math.isnan(lo) or math.isnan(hi):
        return ""
    upper = _count(hi) if math.isfinite(hi) else "$\\infty$"
    return f" [{_count(lo)}, {upper}]"


def _count(n) -> str:
    """An image count for a table: an integer, "--" for none (inf: a mean of 0; NaN: missing)."""
    return str(int(n)) if n is not None and math.isfinite(n) else "--"
