"""`quantus`: a Quantus metric by name (Hedström et al. 2023; quantus 0.6.0): faithfulness,
robustness, randomisation or complexity, scored per image through fudbench.protocols.quantus.

    qt_faithcorr: {method: quantus, metric: FaithfulnessCorrelation, settings: {nr_runs: 100, subset_size: 224}}

`settings` are the metric class's constructor keywords (checked at parse time
against the torch-free table below; tests/test_quantus_evaluator.py checks the
table against the installed Quantus). Each entry writes one curve,
`quantus_<metric>` (`@<entry>` when the entry aliases the method), with one
per-image score in the metric's direction. Metrics whose score is a curve per
image are reduced here: PixelFlipping and Selectivity to the normalised area
under it (lower better), RegionPerturbation to its mean drop, the AOPC.

The entry's category is its metric's (QuantusMetric.category). Robustness and randomisation metrics call
the explainer again: the entry then needs it (needs_explainer), and the adapter hands Quantus the entry's
explainer (explainers.again.ExplainAgain, seeded per image as its explain job) as `explain_func`. A metric
not offered is refused naming why (NOT_SUPPORTED, or the rule for the rest of Quantus: UNCHECKED).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from fudbench.core.auc import mean_of
from fudbench.evaluators.base import (
    COMPLEXITY,
    CORRELATION,
    FAITHFULNESS,
    NON_NEGATIVE,
    PROBABILITY_AREA,
    RANDOMISATION,
    ROBUSTNESS,
    CurveSpec,
    EvaluatorSpec,
)
from fudbench.core.settings import Settings, setting

# keywords every metric takes (Quantus' base class)
COMMON = ("abs", "normalise", "normalise_func", "normalise_func_kwargs", "aggregate_func", "default_plot_func")
PERTURB = ("perturb_func", "perturb_baseline", "perturb_func_kwargs")
# set by the adapter: one score per image, quiet jobs
RESERVED = (
    "return_aggregate",
    "return_auc_per_sample",
    "disable_warnings",
    "display_progressbar",
    # MPRT: one score per image, the mean similarity over the cascade (fixed by FIXED below)
    "return_sample_correlation",
    "return_average_correlation",
    "return_last_correlation",
)


class QuantusMetric(NamedTuple):
    higher_is_better: bool
    value_range: tuple
    reduce: str  # how the metric's per-image output becomes one float: value | auc | mean
    keywords: tuple  # its own constructor keywords, besides COMMON
    why: str = ""  # where our direction or reduction differs from Quantus' own metadata
    category: str = FAITHFULNESS  # what it measures (evaluators.base.CATEGORIES): the entry's category
    explains: bool = False  # it calls the explainer again (Quantus' explain_func): robustness, randomisation


UNBOUNDED = (-np.inf, np.inf)
METRICS = {
    "FaithfulnessCorrelation": QuantusMetric(
        True, CORRELATION, "value", ("similarity_func", "nr_runs", "subset_size", *PERTURB)
    ),
    "FaithfulnessEstimate": QuantusMetric(
        True, CORRELATION, "value", ("similarity_func", "features_in_step", *PERTURB)
    ),
    "MonotonicityCorrelation": QuantusMetric(
        True, CORRELATION, "value", ("similarity_func", "eps", "nr_samples", "features_in_step", *PERTURB)
    ),
    "Monotonicity": QuantusMetric(True, PROBABILITY_AREA, "value", ("features_in_step", *PERTURB)),
    "PixelFlipping": QuantusMetric(
        False,
        UNBOUNDED,
        "auc",
        ("features_in_step", *PERTURB),
        "the area is computed here: Quantus' own return_auc_per_sample calls np.trapz, which NumPy 2 removed",
    ),
    "RegionPerturbation": QuantusMetric(
        True,
        UNBOUNDED,
        "mean",
        ("patch_size", "order", "regions_evaluation", *PERTURB),
        "Quantus 0.6.0 declares it lower-better, but it returns the drops "
        "f(x) - f(x') as regions are removed most relevant first (order morf): "
        "their mean, the AOPC, is higher for a faithful map",
    ),
    "Selectivity": QuantusMetric(False, UNBOUNDED, "auc", ("patch_size", *PERTURB)),
    "Infidelity": QuantusMetric(
        False, NON_NEGATIVE, "value", ("loss_func", "perturb_patch_sizes", "n_perturb_samples", *PERTURB)
    ),
    **{
        name: QuantusMetric(
            False,
            NON_NEGATIVE,
            "value",
            ("similarity_func", "norm_numerator", "norm_denominator", "nr_samples", "perturb_func", *bounds)
            + ("perturb_func_kwargs", "return_nan_when_prediction_changes"),
            category=ROBUSTNESS,
            explains=True,
        )
        for name, bounds in (
            ("MaxSensitivity", ("lower_bound", "upper_bound")),
            ("AvgSensitivity", ("lower_bound", "upper_bound")),
            ("LocalLipschitzEstimate", ("perturb_mean", "perturb_std")),
        )
    },
    "MPRT": QuantusMetric(
        False,
        CORRELATION,
        "value",
        ("similarity_func", "layer_order", "seed", "skip_layers"),
        "one score per image: the adapter sets return_average_correlation (the mean similarity over the layers)",
        category=RANDOMISATION,
        explains=True,
    ),
    "RandomLogit": QuantusMetric(
        False,
        CORRELATION,
        "value",
        ("similarity_func", "num_classes", "seed"),
        "num_classes defaults to the model's number of logits here (Quantus: 1000)",
        category=RANDOMISATION,
        explains=True,
    ),
    "Sparseness": QuantusMetric(True, (0.0, 1.0), "value", (), category=COMPLEXITY),
    "Complexity": QuantusMetric(False, NON_NEGATIVE, "value", (), category=COMPLEXITY),
}
# Constructor keywords the adapter sets for a metric (a per-image score)
FIXED = {"MPRT": {"return_average_correlation": True}}
# Supported metrics that do not prefer the evidence map to its reverse on the project's quadrant task
# (tests/test_quantus_evaluator.py measures both): what the report card should be read with
DOES_NOT_ORDER = {
    "Infidelity": "Quantus' infidelity is not normalised: the squared error grows with the map's scale, so a map "
    "that is 1 on a quarter of the image scores worse than its complement",
    "Monotonicity": "a yes/no per image (is every step's prediction change in order?): both maps are monotonic "
    "on this task, a tie",
}
# Quantus faithfulness metrics not offered, and why
NOT_SUPPORTED = {
    "SensitivityN": "scores a correlation over the whole batch, not one per image",
    "Sufficiency": "scores a batch (an image's neighbours in it), not one image",
    "IROF": "fails in quantus 0.6.0 on these inputs (mask shape assertion); the built-in evaluator `irof` is IROF",
    "ROAD": "fails in quantus 0.6.0 on channel-first images (index error); the built-in evaluator `road` is ROAD",
    "ModelParameterRandomisation": "quantus 0.6.0's old name of MPRT: use metric MPRT",
    "BatchSufficiency": "scores a batch (an image's neighbours in it), not one image",
    "Consistency": "scores agreement of an image's map with the maps of the batch's other images of the same "
    "discretised class, not one image alone",
}
# Quantus 0.6.0's metric classes (tests/test_quantus_evaluator.py checks the list against the installed
# Quantus), so that a name that is none of them is refused as such without importing Quantus
QUANTUS_METRICS = (
    "AUC AttributionLocalisation AvgSensitivity BatchSufficiency Completeness Complexity Consistency Continuity "
    "EffectiveComplexity EfficientMPRT FaithfulnessCorrelation FaithfulnessEstimate Focus IROF Infidelity "
    "InputInvariance LocalLipschitzEstimate MPRT MaxSensitivity ModelParameterRandomisation Monotonicity "
    "MonotonicityCorrelation NonSensitivity PixelFlipping PointingGame ROAD RandomLogit RegionPerturbation "
    "RelativeInputStability RelativeOutputStability RelativeRepresentationStability RelevanceMassAccuracy "
    "RelevanceRankAccuracy Selectivity SensitivityN SmoothMPRT Sparseness Sufficiency TopKIntersection"
).split()
# Why the other Quantus metrics are refused: each offered one is checked against Quantus itself
UNCHECKED = (
    "not offered: the adapter offers a metric once tests/test_quantus_evaluator.py checks its per-image score "
    "against calling Quantus directly, and its direction; this one is not checked (localisation metrics: the "
    "built-in `rma`; the others: ask for it in an issue)"
)


def refusal(metric: str) -> str:
    """Why `metric` is not offered (NOT_SUPPORTED, UNCHECKED, or no such Quantus metric)."""
    if metric in NOT_SUPPORTED:
        return f"quantus.{metric} is not offered: {NOT_SUPPORTED[metric]}"
    if metric in QUANTUS_METRICS:
        return f"quantus.{metric} is {UNCHECKED}"
    return f"{metric!r} is not a metric of quantus 0.6.0 (its names are case-sensitive class names)"


# Values of the metrics' keywords, checked before any job (Quantus fails inside the job with a numpy error
# naming no config key): integers with their minimum (and why), booleans, functions, mappings.
AT_LEAST = {
    "nr_runs": (2, "the correlation of fewer runs is undefined"),
    "subset_size": (1, ""),
    "features_in_step": (1, ""),
    "nr_samples": (1, ""),
    "patch_size": (1, ""),
    "regions_evaluation": (1, ""),
    "n_perturb_samples": (1, ""),
    "num_classes": (2, "a random other class needs two"),
    "seed": (0, ""),
}
BOOLEANS = ("abs", "normalise")
FUNCTIONS = (
    "similarity_func",
    "perturb_func",
    "normalise_func",
    "aggregate_func",
    "default_plot_func",
    "norm_numerator",
    "norm_denominator",
)
MAPPINGS = ("perturb_func_kwargs", "normalise_func_kwargs")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# Quantus 0.6.0's defaults of the keywords checked against the image size (tests/test_quantus_evaluator.py checks
# them against the installed Quantus): a metric left at its default fails on small images too
SIZE_DEFAULTS = {
    "FaithfulnessCorrelation": {"subset_size": 224},
    "RegionPerturbation": {"patch_size": 8},
    "Selectivity": {"patch_size": 8},
    "Infidelity": {"perturb_patch_sizes": [4]},
}


def value_problems(
    kwargs: dict, key: str, side: int | None = None, side_key: str = "", metric: str | None = None
) -> list[str]:
    """Problems with the values of a metric's keywords (`kwargs`, at config key `key`);
    with `side` (the images' height = width, at config key `side_key`), also those that
    depend on the image: subset_size below and features_in_step a divisor of its
    side x side pixels (Quantus' own asserts), patch sizes within it, for the values
    given and `metric`'s defaults (SIZE_DEFAULTS)."""
    out = []
    for name, value in kwargs.items():
        where = f"config key '{key}.{name}'"
        if name in AT_LEAST:
            least, why = AT_LEAST[name]
            if not _is_int(value) or value < least:
                out.append(f"{where}: {value!r} is not an integer >= {least}" + (f" ({why})" if why else ""))
        elif name == "perturb_patch_sizes":
            if not isinstance(value, (list, tuple)) or not value or not all(_is_int(v) and v >= 1 for v in value):
                out.append(f"{where}: {value!r} is not a non-empty list of integers >= 1")
        elif name == "eps" and (not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0):
            out.append(f"{where}: {value!r} is not a number > 0")
        elif name in ("lower_bound", "perturb_std") and (
            not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0
        ):
            out.append(f"{where}: {value!r} is not a number >= 0 (the noise's radius or spread)")
        elif name in BOOLEANS and not isinstance(value, bool):
            out.append(f"{where}: {value!r} is not true or false")
        elif name in FUNCTIONS and not callable(value):
            out.append(
                f"{where}: {value!r} is not a function; Quantus calls it (give a function from the Python "
                f"API, or leave it out for Quantus' default)"
            )
        elif name in MAPPINGS and not isinstance(value, dict):
            out.append(f"{where}: {value!r} is not a mapping of keyword arguments")
    if side is None or out:
        return out
    for problem in _size_problems({**SIZE_DEFAULTS.get(metric, {}), **kwargs}, key, side, side_key):
        name = problem.split("'")[1].rsplit(".", 1)[-1]
        out.append(
            problem if name in kwargs else problem.replace("': ", "': Quantus' default ", 1) + f"; set {key}.{name}"
        )
    return out


def _size_problems(kwargs: dict, key: str, side: int, side_key: str) -> list[str]:
    out = []
    pixels, of = side * side, f"the {side}x{side} = {side * side} pixels of the images ({side_key or 'their size'})"
    if "subset_size" in kwargs and kwargs["subset_size"] >= pixels:
        out.append(f"config key '{key}.subset_size': {kwargs['subset_size']} must be smaller than {of}")
    if "features_in_step" in kwargs and pixels % kwargs["features_in_step"]:
        out.append(
            f"config key '{key}.features_in_step': {kwargs['features_in_step']} does not divide {of}; "
            f"Quantus removes that many pixels per step"
        )
    for name in ("patch_size", "perturb_patch_sizes"):
        sizes = kwargs.get(name)
        sizes = sizes if isinstance(sizes, (list, tuple)) else [] if sizes is None else [sizes]
        if any(v > side for v in sizes):
            out.append(
                f"config key '{key}.{name}': {kwargs[name]!r} is larger than the images' side {side} "
                f"({side_key or 'their size'})"
            )
    return out


@dataclass(frozen=True)
class QuantusSettings(Settings):
    metric: str = setting(
        "FaithfulnessCorrelation",
        description=f"Quantus metric class: one of {', '.join(METRICS)} "
        f"(checked in `problems`, which says why a metric of NOT_SUPPORTED is not offered)",
    )
    settings: dict = setting(default_factory=dict, description="keywords of the metric's constructor")
    order: Literal["morf", "lerf"] = setting(
        "morf", description="RegionPerturbation only: which regions go first (sets its direction)"
    )
    batch_size: int = setting(64, minimum=1, description="perturbed inputs per forward (Quantus' batch_size)")

    def problems(self, key: str) -> list[str]:
        if self.metric not in METRICS:
            return [
                f"config key '{key}.metric': {refusal(self.metric)}; allowed values: {', '.join(map(repr, METRICS))}"
            ]
        allowed = METRICS[self.metric].keywords + COMMON
        reserved = sorted(set(self.settings) & set(RESERVED))
        unknown = sorted(set(self.settings) - set(allowed) - set(RESERVED))
        out = []
        if reserved:
            out.append(
                f"config key '{key}.settings': {reserved} are set by the adapter (one score per image, quiet jobs)"
            )
        if unknown:
            out.append(
                f"config key '{key}.settings': unknown keyword(s) {unknown} of quantus.{self.metric}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )
        if "order" in self.settings:
            out.append(f"config key '{key}.settings.order': give it as '{key}.order' (it sets the direction)")
        return out + value_problems({k: v for k, v in self.settings.items() if k in allowed}, f"{key}.settings")


CURVE_PREFIX = "quantus_"  # every curve of this method (the claims table finds the field's metrics by it)


def curve_name(metric: str) -> str:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in metric).lstrip("_")
    return f"{CURVE_PREFIX}{snake}"


def curves(settings: dict) -> list[CurveSpec]:
    m = METRICS[settings["metric"]]
    higher = m.higher_is_better
    if settings["metric"] == "RegionPerturbation" and settings["order"] == "lerf":
        higher = False  # least relevant first: small drops are the faithful outcome
    return [
        CurveSpec(
            curve_name(settings["metric"]),
            f"Quantus {settings['metric']}",
            higher,
            mean_of("value"),
            table="appendix_scores",
            value_range=m.value_range,
            caption=f"Quantus' {settings['metric']} ({'higher' if higher else 'lower'} better)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.quantus import QuantusCurve

    kwargs = {**settings["settings"], **FIXED.get(settings["metric"], {})}
    if settings["metric"] == "RegionPerturbation":
        kwargs["order"] = settings["order"]
    protocol = QuantusCurve(
        curve_name(settings["metric"]),
        settings["metric"],
        kwargs,
        METRICS[settings["metric"]].reduce,
        reduction=evaluation["reduction"],
        batch_size=settings["batch_size"],
        check=value_problems,
        explains=METRICS[settings["metric"]].explains,
    )
    return Evaluator("quantus", [(protocol, None)])


def category(settings: dict) -> str:
    """The entry's category: its metric's (an unknown metric is refused by the settings' check first)."""
    m = METRICS.get(settings.get("metric"))
    return m.category if m is not None else FAITHFULNESS


def explains(settings: dict) -> bool:
    """Whether the entry's metric calls the explainer again (Quantus' explain_func)."""
    m = METRICS.get(settings.get("metric"))
    return bool(m is not None and m.explains)


SPEC = EvaluatorSpec(
    "quantus",
    "a Quantus metric by name (faithfulness, robustness, randomisation, complexity), one score per image",
    QuantusSettings,
    curves,
    f"{__name__}:build",
    catalogue_variants=lambda: [{"metric": m} for m in METRICS],
    quick={"metric": "FaithfulnessCorrelation", "settings": {"nr_runs": 10, "subset_size": 16}},
    category=category,
    needs_explainer=explains,
)
