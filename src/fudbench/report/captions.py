"""What report.html says about the run it was made from: the run's description,
which of the report's tables and figures apply to it, and their captions, all
generated from the run's config and the evaluator registry (fudbench.evaluators'
CurveSpecs: labels, directions, which tables a curve reaches, whether its
samples are kept), never written for one profile.

- `applies(config)`: {report item: whether this run makes it}. The workflow's
  targets (rules/common.smk, all_targets) leave out what does not apply, so the
  report has no empty section: Table 7 only where a configured curve belongs to
  it; Table 4 (Kendall tau of removal sequences) only where two or more
  evaluators' removal sequences can be compared; Tables 2, 3, 8 only with a
  main evaluator that keeps its intermediate samples; Fig. 2 (radar) only where
  Table 3 has two or more evaluators and three or more quality metrics (a radar
  of one evaluator or of two axes draws a line, not a shape); the confidence
  figure only with a removal sequence; the qualitative figures only with a main
  evaluator's samples.
- `caption(item, config, ...)`: the report's caption (reStructuredText) of each
  item, naming only the evaluators, explainers, models and data that ran; the
  rules pass it to the caption files (report/captions/*.rst) as
  `params.report_captions`.
- `run_description(config)`: one paragraph (data, images, models, explainers,
  evaluators) for the report's front page (fudbench.report.results_page).
"""

from __future__ import annotations

from fudbench.evaluators.base import ALIAS_SEPARATOR, APPENDIX_SAMPLES, MAIN_SAMPLES

# What the paper's main curves measure, where their CurveSpec has no `caption` phrase of its own
# (the direction is added from CurveSpec.higher_is_better, never written here).
CURVE_PHRASES = {
    "fud": "normalised area under the target confidence over the kept fraction rho, the removed pixels filled "
    "by the diffusion model",
    "fud_bottom": "FUD's area with the bottom-ranked pixels kept",
    "insertion": "RISE's area under the confidence as the top-ranked pixels are put back into a blurred copy",
    "deletion": "RISE's area under the confidence as the top-ranked pixels are set to zero",
    "sensitivity_n": "Pearson correlation between the attribution sum and the output drop of random pixel "
    "subsets, averaged over the subset sizes n (Sensitivity-N)",
    "infidelity": "squared error between the attribution's prediction of the output change under random "
    "perturbations and the change itself",
    "road_morf": "area under p(original prediction) as the top-ranked pixels are removed (noisy-linear fill)",
    "road_lerf": "the same with the bottom-ranked pixels removed first",
    "road_morf_accuracy": "area under the accuracy, top-ranked pixels removed first",
    "road_lerf_accuracy": "area under the accuracy, bottom-ranked pixels removed first",
}
# What each evaluator's intermediate samples are (Tables 2, 3, 8, 9, 11), by the curve that keeps them
# (its name up to an imputer suffix `__<fill>`).
SAMPLE_PHRASES = {
    "fud": "diffusion fills at every kept fraction",
    "deletion_ratios": "zero-fill deletion at the removal fractions 1 - rho",
    "sensitivity_n": "its random pixel removals",
    "infidelity": "its perturbations",
    "road_morf": "noisy-linear fills of the removed pixels",
    "idsds": "single grid cells deleted",
    "distill": "deletion with the Distill baselines' fills",
    "gevaert_del": "deletion with the configured fills",
    "irof": "superpixels removed, filled with the image mean",
}

TABLE_NAMES = {  # the report's names of the paper's tables, for the front page's contents
    "table2_ood": "Table 2 (OOD detection of the intermediate samples)",
    "table3_quality": "Table 3 (image quality of the intermediate samples)",
    "table4_kendall": "Table 4 (Kendall tau of the removal sequences)",
    "table7_scores": "Table 7 (attribution scores)",
    "table8_ood": "Table 8 (Table 2 with AUPR-In)",
    "table9_quality": "Table 9 (image quality, appendix protocols)",
    "table11_ood": "Table 11 (OOD detection, appendix protocols)",
    "srg_scores": "SRG / R-OMS scores",
    "road_scores": "ROAD scores",
    "ffidelity_scores": "F-Fidelity scores",
    "appendix_scores": "the appendix protocols' scores",
}


# ------------------------------------------------------------------ what ran


def _curves(config: dict) -> dict:
    from fudbench.evaluators import configured_curves

    return configured_curves(config["evaluators"])


def _base(curve: str) -> str:
    return curve.partition(ALIAS_SEPARATOR)[0]


def _family(curve: str) -> str:
    """A curve's name without its alias and its imputer suffix (distill__blur -> distill)."""
    return _base(curve).split("__")[0]


def direction(spec) -> str:
    return "higher is better" if spec.higher_is_better else "lower is better"


def curve_phrase(spec) -> str:
    """'<label>: <what it is> (<direction>)' of a CurveSpec: its own caption phrase where it has one
    (which states its direction), else CURVE_PHRASES' with the spec's direction, else its label."""
    if spec.caption:
        return spec.caption
    what = CURVE_PHRASES.get(_base(spec.name))
    return f"{spec.label} = {what} ({direction(spec)})" if what else f"{spec.label} ({direction(spec)})"


def tau_curves(config: dict) -> dict:
    """{curve: evaluator label} of the configured curves whose removal sequence gets a Kendall tau."""
    return {c: s.samples_label or s.label for c, s in _curves(config).items() if s.tau}


def sample_curves(config: dict, group: str) -> dict:
    """{curve: row label} of the configured curves whose intermediate samples the main (Tables 2, 3, 8)
    or appendix (9, 11) sample tables show; a curve in both groups is the appendix tables' reference
    row, listed last (fudbench.analysis.curves)."""
    found = {c: s for c, s in _curves(config).items() if group in s.samples_tables}
    both = {MAIN_SAMPLES, APPENDIX_SAMPLES}
    ordered = sorted(found.items(), key=lambda kv: both <= set(kv[1].samples_tables))
    return {c: s.samples_label for c, s in ordered}


def appendix_reference(config: dict) -> list[str]:
    """Row labels of the appendix sample tables' reference rows (curves in both groups: FUD)."""
    both = {MAIN_SAMPLES, APPENDIX_SAMPLES}
    return [s.samples_label for s in _curves(config).values() if both <= set(s.samples_tables)]


def quality_metrics(config: dict) -> list[str]:
    from fudbench.analysis.quality import QUALITY_METRICS

    metrics = config["evaluation"]["quality"].get("metrics") or QUALITY_METRICS
    return [m for m in QUALITY_METRICS if m in metrics]


def _labels(curves: dict) -> list[str]:
    return list(dict.fromkeys(curves.values()))


def applies(config: dict) -> dict[str, bool]:
    """{report item: whether this run makes it} (module docstring)."""
    from fudbench.report.paper_tables import tables_of

    tables = tables_of(config["evaluators"])
    main = _labels(sample_curves(config, MAIN_SAMPLES))
    return {
        "table7_scores": "table7_scores" in tables,
        "table4_kendall": len(_labels(tau_curves(config))) >= 2,
        "table2_ood": "table2_ood" in tables,
        "table8_ood": "table2_ood" in tables,
        "table3_quality": "table3_quality" in tables,
        "fig2_quality_radar": "table3_quality" in tables and len(main) >= 2 and len(quality_metrics(config)) >= 3,
        "confidence_vs_ratio": bool(tau_curves(config)),
        "qualitative": bool(main) and config["evaluation"]["gallery_images"] > 0,
        **{
            t: t in tables
            for t in (
                "srg_scores",
                "road_scores",
                "ffidelity_scores",
                "appendix_scores",
                "table9_quality",
                "table11_ood",
            )
        },
    }


# ------------------------------------------------------------------ words


def join(words, last: str = "and") -> str:
    words = [str(w) for w in words]
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def _lit(names) -> list[str]:
    return [f"``{n}``" for n in names]


def data_phrase(config: dict) -> str:
    """The evaluated images in a few words."""
    d = config["data"]
    n = d["n_eval"]
    if d["source"] == "folder":
        f = d["folder"]
        return (
            f"{plural(n, 'image')} of your own folder ``{f['root']}`` (labels ``{f['labels']}``; shorter side "
            f"{f['resize']} px, centre crop {f['crop']} px{'; object masks ``' + f['masks'] + '``' if f.get('masks') else ', no object masks'})"
        )
    if d["source"] == "imagenet":
        return f"{plural(n, 'ImageNet validation image')} (a seeded sample)"
    s = d.get("synthetic") or {}
    return (
        f"{plural(n, 'test image')} of the synthetic benchmark ({s.get('image_size', '?')} px, "
        f"{len(s.get('shapes', [])) * 2} classes: {join(s.get('shapes', []))} x dark / light)"
    )


def model_phrase(config: dict) -> str:
    parts = []
    for name, m in config["models"]["classifiers"].items():
        arch = m.get("arch")
        what = f"factory ``{m['factory']}``" if arch == "import" and m.get("factory") else f"``{arch}``"
        parts.append(f"``{name}`` ({what})")
    return join(parts)


def evaluator_phrase(config: dict) -> str:
    from fudbench.evaluators import entry_curves

    parts = []
    for name, settings in config["evaluators"].items():
        labels = [c.label for c in entry_curves(name, settings) if c.score is not None or c.table]
        parts.append(f"``{name}`` ({join(labels) or 'no scored curve'})")
    return join(parts)


def run_description(config: dict) -> str:
    """One paragraph: the run's data, images, models, explainers and evaluators (rst)."""
    ex = list(config["explainers"])
    ev = list(config["evaluators"])
    return (
        f"Run ``{config['run_name']}``: {data_phrase(config)}; "
        f"{plural(len(config['models']['classifiers']), 'classifier')}: {model_phrase(config)}; "
        f"{plural(len(ex), 'explainer')}: {join(_lit(ex))}; {plural(len(ev), 'evaluator')}: "
        f"{evaluator_phrase(config)}; kept fractions rho = {', '.join(str(r) for r in config['evaluation']['ratios'])}."
    )


def _n_images(config: dict) -> str:
    return f"n = {config['data']['n_eval']} images"


# ------------------------------------------------------------------ captions


def _score_table(config: dict, table: str, title: str) -> str:
    shown = [s for s in _curves(config).values() if s.table == table]
    phrases = list(dict.fromkeys(curve_phrase(s) for s in shown))
    return (
        f"**{title}** Per model and explainer, the mean over images ({_n_images(config)}) with a "
        f"percentile-bootstrap 95% interval over images ({config['analysis']['bootstrap']} resamples): "
        f"{'; '.join(phrases)}."
    )


def table_caption(table: str, config: dict) -> str:
    """The caption of the `table` rule's tables (Tables 4, 7 and the score tables)."""
    if table == "table4_kendall":
        taus = _labels(tau_curves(config))
        return (
            f"**Table 4 (Kendall tau).** Per image, Kendall's tau-b between the removal step and the decrease "
            f"of the target confidence, averaged over images ({_n_images(config)}); 1 = strictly decreasing "
            f"confidence. Removal sequences of {join(taus)}. Constant sequences count as 0 (CSV: n_constant)."
        )
    if table == "table7_scores":
        return _score_table(config, "table7_scores", "Table 7 (scores).")
    if table == "srg_scores":
        entries = [s for n, s in config["evaluators"].items() if (s or {}).get("method", n) == "srg"]
        imputers = list(dict.fromkeys(i for s in entries for i in (s or {}).get("imputers", [])))
        return (
            f"**SRG / R-OMS (seeds/002).** Superpixels ordered by mean attribution are occluded "
            f"most-influential-first (MIF) or least-influential-first (LIF), filled by "
            f"{join(_lit(imputers)) or 'the configured imputers'}; R-OMS is the same for random orderings. "
            f"MRG = R-OMS - MIF, LRG = LIF - R-OMS, SRG = LIF - MIF (areas over the occluded fraction; higher "
            f"is better, 0 for a random explainer); {_n_images(config)}."
        )
    if table == "appendix_scores":
        return _score_table(config, table, "Appendix protocols' scores.")
    title = {"road_scores": "ROAD (Rong et al. 2022).", "ffidelity_scores": "F-Fidelity (seeds/004)."}[table]
    return _score_table(config, table, title)


def _samples_list(config: dict, curves: dict) -> str:
    parts = []
    for c, label in curves.items():
        what = SAMPLE_PHRASES.get(_family(c))
        parts.append(f"{label}: {what}" if what else str(label))
    return "; ".join(dict.fromkeys(parts))


def ood_caption(table: str, config: dict) -> str:
    """Tables 2 and 11 (report caption)."""
    detectors = (
        "The same rows by two feature-based detectors on the classifier's penultimate features "
        "(``detector``: Mahalanobis with a tied covariance, k-NN distance; reference fitted on "
        "in-distribution images: NaN where the data has none, e.g. a folder that lists only the "
        "evaluated images), and a sanity row: the clean images with 10% of their pixels zeroed, a "
        "plainly OOD input (AUROC at or below 0.5 there = the detector cannot see it)."
    )
    if table == "table2_ood":
        curves = sample_curves(config, MAIN_SAMPLES)
        return (
            f"**Table 2 (Energy OOD detection).** ID = the clean evaluated images ({_n_images(config)}), "
            f"OOD = the intermediate samples of {join(_labels(curves))} ({_samples_list(config, curves)}), "
            f"scored by the energy -logsumexp(logits) of the evaluated classifier. AUROC, FPR at 95% TPR "
            f"and AUPR-Out per model; values near 0.5 (FPR95 near 1) mean the samples are hard to tell from "
            f"clean data. Pooling: ``analysis.ood_pooling`` = {config['analysis']['ood_pooling']}. " + detectors
        )
    curves = sample_curves(config, APPENDIX_SAMPLES)
    ref = appendix_reference(config)
    protocols = [label for label in _labels(curves) if label not in ref]
    return (
        f"**Table 11 (Energy OOD, appendix protocols).** Table 2's analysis applied to the intermediate "
        f"samples of {join(protocols)} ({_samples_list(config, {c: l for c, l in curves.items() if l in protocols})})"
        + (f", with {join(ref)} as the reference row." if ref else ".")
        + " "
        + detectors
    )


def ood_tex_caption(table: str, config: dict) -> str | None:
    """The LaTeX caption of Table 11 (its default names FUD, which may not have run); None = the default."""
    if table != "table11_ood":
        return None
    from fudbench.report.latex import escape
    from fudbench.report.paper_tables import _OOD_CAPTION

    ref = appendix_reference(config)
    protocols = [label for label in _labels(sample_curves(config, APPENDIX_SAMPLES)) if label not in ref]
    what = f"Appendix protocols ({escape(join(protocols))})" + (f" against {escape(join(ref))}" if ref else "")
    return _OOD_CAPTION.format(what=what + " (Table 11 of FUD).")


def table8_caption(config: dict) -> str:
    return (
        f"**Table 8 (Table 2 extended).** The same Energy OOD detection as Table 2 (intermediate samples of "
        f"{join(_labels(sample_curves(config, MAIN_SAMPLES)))}), with AUPR-In added."
    )


def quality_images(config: dict) -> int:
    """How many images the quality tables (3, 9) measure: the first `evaluation.quality.images_per_shard`
    of each shard (every evaluated image where it is null), as pipeline.sample_quality picks them."""
    n, size = int(config["data"]["n_eval"]), int(config["data"]["shard_size"])
    per_shard = config["evaluation"]["quality"].get("images_per_shard")
    shards = [min(size, n - start) for start in range(0, n, size)]
    return sum(shards) if per_shard is None else sum(min(int(per_shard), k) for k in shards)


def _quality_which(config: dict) -> tuple[str, str]:
    """Which images the quality tables measure and what interval that allows, from the config."""
    n = quality_images(config)
    per_shard = config["evaluation"]["quality"].get("images_per_shard")
    shards = -(-int(config["data"]["n_eval"]) // int(config["data"]["shard_size"]))
    if per_shard is None or n == config["data"]["n_eval"]:
        which = f"every evaluated image, {_n_images(config)}"
    else:
        first = "the first" if int(per_shard) == 1 else f"the first {per_shard}"
        of = "the run's one shard" if shards == 1 else f"each of its {shards} shards"
        which = f"{plural(n, 'image')}, {first} of {of}: ``evaluation.quality.images_per_shard`` = {per_shard}"
    interval = (
        "with a bootstrap 95% interval over images"
        if n >= 2
        else "no interval: one image (ci_low = ci_high = the mean)"
    )
    return which, interval


def quality_caption(table: str, config: dict) -> str:
    metrics = quality_metrics(config)
    which, interval = _quality_which(config)
    inverted = [m for m in metrics if m == "GMSD"]
    small = _quality_adaptation(config, metrics)
    if table == "table3_quality":
        return (
            f"**Table 3 (image quality).** piq's {join(metrics)} of each intermediate sample of "
            f"{join(_labels(sample_curves(config, MAIN_SAMPLES)))} against its original ({which}), averaged "
            f"over models, explainers, images and ratios, {interval}.{small} Higher is better"
            + (" except GMSD." if inverted else ".")
        )
    curves = sample_curves(config, APPENDIX_SAMPLES)
    ref = appendix_reference(config)
    protocols = [label for label in _labels(curves) if label not in ref]
    return (
        f"**Table 9 (image quality, appendix protocols).** Table 3's metrics ({join(metrics)}) for the "
        f"intermediate samples of {join(protocols)} ({which}; {interval})"
        + (f", {join(ref)} for reference." if ref else ".")
        + small
    )


def _quality_adaptation(config: dict, metrics) -> str:
    """A sentence naming the quality metrics adapted to the run's image size (fudbench.analysis.quality:
    fewer MS-SSIM scales, a smaller SSIM window, HaarPSI enlarged), empty where none is."""
    from fudbench.analysis.quality import adaptation

    size = _image_size(config)
    if size is None:
        return ""
    done = adaptation(size, size)
    adapted = [f"{m}: {done[m]}" for m in metrics if done.get(m, "piq defaults") != "piq defaults"]
    return (
        f" At {size} px, adapted to the small image ({'; '.join(adapted)}; fudbench.analysis.quality), the "
        f"others piq's defaults."
        if adapted
        else ""
    )


def _image_size(config: dict) -> int | None:
    """The side of the evaluated images: the synthetic image size, else the centre crop."""
    d = config["data"]
    size = (d.get(d["source"]) or {}).get("image_size" if d["source"] == "synthetic" else "crop")
    return None if size is None else int(size)


def quality_tex_caption(table: str, config: dict) -> str | None:
    """The LaTeX caption of Table 9 (its default names FUD); None = the default."""
    if table != "table9_quality":
        return None
    from fudbench.report.latex import escape

    ref = appendix_reference(config)
    protocols = [label for label in _labels(sample_curves(config, APPENDIX_SAMPLES)) if label not in ref]
    return (
        "Image quality of the appendix protocols' intermediate samples (" + escape(join(protocols)) + ") "
        "against their originals, mean over all runs ($\\pm$ half-width of the bootstrap 95\\% CI over images; "
        "best in bold)" + (f"; {escape(join(ref))} for reference" if ref else "") + " (Table 9 of FUD)."
    )


def radar_caption(config: dict) -> str:
    main = _labels(sample_curves(config, MAIN_SAMPLES))
    return (
        f"**Fig. 2 (quality radar).** Table 3's means of {join(quality_metrics(config))} for "
        f"{join(main)}, min-max normalised across these {len(main)} evaluators"
        + (", GMSD inverted" if "GMSD" in quality_metrics(config) else "")
        + ", so outward = better; the worst evaluator on a metric sits at the centre (ranks and relative "
        "gaps, not absolute quality)."
    )


def confidence_caption(config: dict) -> str:
    taus = tau_curves(config)
    parts = [f"{label} ({SAMPLE_PHRASES.get(_family(c), 'its removal sequence')})" for c, label in taus.items()]
    return (
        f"Mean target confidence (+- one standard error over images, {_n_images(config)}) against the kept "
        f"fraction rho, per model ({join(_lit(config['models']['classifiers']))}) and explainer: "
        f"{join(parts)}."
    )


def qualitative_curves(config: dict) -> dict:
    """{curve: label} of the main evaluators' samples the qualitative figures show."""
    return sample_curves(config, MAIN_SAMPLES)


def _qualitative_explainers(config: dict) -> list[str]:
    return [e for e in config["plots"]["qualitative_explainers"] if e in config["explainers"]]


def fig4_caption(config: dict) -> str:
    shown = _qualitative_explainers(config)
    model = next(iter(config["models"]["classifiers"]))
    return (
        f"**Fig. 4 (qualitative).** Model ``{model}``, explainer ``{shown[0] if shown else '-'}``: for each of "
        f"the first {plural(config['evaluation']['gallery_images'], 'image')} (titled with its class"
        f"{', its object mask outlined' if _has_masks(config) else ''}), the original, the explainer's "
        f"heat-map, and the intermediate samples of {join(_labels(qualitative_curves(config)))} from the "
        f"least to the most removed pixels."
    )


def qualitative_grid_caption(config: dict) -> str:
    return (
        f"The first evaluated image's intermediate samples for every model "
        f"({join(_lit(config['models']['classifiers']))}) x explainer ({join(_lit(_qualitative_explainers(config)))}; "
        f"``plots.qualitative_explainers``) x evaluator ({join(_labels(qualitative_curves(config)))}): the "
        f"original, the heat-map, the samples from the least to the most removed pixels."
    )


def _has_masks(config: dict) -> bool:
    d = config["data"]
    return d["source"] == "synthetic" or (d["source"] == "folder" and bool(d["folder"].get("masks")))


EXAMPLES_PER_CLASS = 2  # images of each class in the examples figure (fudbench.report.figures.dataset_examples)


def dataset_caption(config: dict) -> str:
    from fudbench.data.imagenet import N_EXAMPLES

    d = config["data"]
    n = int(d["n_eval"])
    pool = f"the {plural(n, 'evaluated image')}" if n <= N_EXAMPLES else f"the first {N_EXAMPLES} evaluated images"
    picked = f"Up to {EXAMPLES_PER_CLASS} images of each class among {pool}, in class-index order"
    if d["source"] == "synthetic":
        what = f"Test images of the synthetic benchmark, {EXAMPLES_PER_CLASS} per class, titled with the class name"
    elif d["source"] == "folder":
        what = (
            f"{picked}, titled with the class name from the labels file's ``class`` column and the class "
            f"index (the index alone where the file has no such column)"
        )
    else:
        what = f"{picked}, titled with the class name"
    return what + (", the ground-truth mask (what the ``oracle`` map shows) outlined." if _has_masks(config) else ".")


def caption(item: str, config: dict) -> str:
    """The report caption (rst) of a report item (module docstring)."""
    if item in ("table4_kendall", "table7_scores", "srg_scores", "road_scores", "ffidelity_scores", "appendix_scores"):
        return table_caption(item, config)
    if item in ("table2_ood", "table11_ood"):
        return ood_caption(item, config)
    if item == "table8_ood":
        return table8_caption(config)
    if item in ("table3_quality", "table9_quality"):
        return quality_caption(item, config)
    builders = {
        "fig2_quality_radar": radar_caption,
        "confidence_vs_ratio": confidence_caption,
        "fig4_qualitative": fig4_caption,
        "qualitative_samples": qualitative_grid_caption,
        "dataset_examples": dataset_caption,
    }
    if item not in builders:
        raise KeyError(f"no generated caption for report item {item!r}; known: {sorted([*builders, *TABLE_NAMES])}")
    return builders[item](config)
