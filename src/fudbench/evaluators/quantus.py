"""`quantus`: a Quantus faithfulness metric by name (Hedström et al. 2023; quantus
0.6.0), scored per image through fudbench.protocols.quantus.

    qt_faithcorr: {method: quantus, metric: FaithfulnessCorrelation, settings: {nr_runs: 100, subset_size: 224}}

`settings` are the metric class's constructor keywords (checked at parse time
against the torch-free table below; tests/test_quantus_evaluator.py checks the
table against the installed Quantus). Each entry writes one curve,
`quantus_<metric>` (`@<entry>` when the entry aliases the method), with one
per-image score in the metric's direction. Metrics whose score is a curve per
image are reduced here: PixelFlipping and Selectivity to the normalised area
under it (lower better), RegionPerturbation to its mean drop, the AOPC.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from fudbench.analysis.auc import mean_of
from fudbench.evaluators.base import CORRELATION, NON_NEGATIVE, PROBABILITY_AREA, CurveSpec, EvaluatorSpec
from fudbench.settings import Settings, setting

# keywords every metric takes (Quantus' base class)
COMMON = ("abs", "normalise", "normalise_func", "normalise_func_kwargs", "aggregate_func", "default_plot_func")
PERTURB = ("perturb_func", "perturb_baseline", "perturb_func_kwargs")
# set by the adapter: one score per image, quiet jobs
RESERVED = ("return_aggregate", "return_auc_per_sample", "disable_warnings", "display_progressbar")


class QuantusMetric(NamedTuple):
    higher_is_better: bool
    value_range: tuple
    reduce: str          # how the metric's per-image output becomes one float: value | auc | mean
    keywords: tuple      # its own constructor keywords, besides COMMON
    why: str = ""        # where our direction or reduction differs from Quantus' own metadata


UNBOUNDED = (-np.inf, np.inf)
METRICS = {
    "FaithfulnessCorrelation": QuantusMetric(True, CORRELATION, "value",
                                             ("similarity_func", "nr_runs", "subset_size", *PERTURB)),
    "FaithfulnessEstimate": QuantusMetric(True, CORRELATION, "value",
                                          ("similarity_func", "features_in_step", *PERTURB)),
    "MonotonicityCorrelation": QuantusMetric(True, CORRELATION, "value",
                                             ("similarity_func", "eps", "nr_samples", "features_in_step", *PERTURB)),
    "Monotonicity": QuantusMetric(True, PROBABILITY_AREA, "value", ("features_in_step", *PERTURB)),
    "PixelFlipping": QuantusMetric(False, UNBOUNDED, "auc", ("features_in_step", *PERTURB),
                                   "the area is computed here: Quantus' own return_auc_per_sample calls np.trapz, "
                                   "which NumPy 2 removed"),
    "RegionPerturbation": QuantusMetric(True, UNBOUNDED, "mean", ("patch_size", "order", "regions_evaluation",
                                                                  *PERTURB),
                                        "Quantus 0.6.0 declares it lower-better, but it returns the drops "
                                        "f(x) - f(x') as regions are removed most relevant first (order morf): "
                                        "their mean, the AOPC, is higher for a faithful map"),
    "Selectivity": QuantusMetric(False, UNBOUNDED, "auc", ("patch_size", *PERTURB)),
    "Infidelity": QuantusMetric(False, NON_NEGATIVE, "value",
                                ("loss_func", "perturb_patch_sizes", "n_perturb_samples", *PERTURB)),
}
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
}


@dataclass(frozen=True)
class QuantusSettings(Settings):
    metric: Literal[tuple(METRICS)] = setting("FaithfulnessCorrelation", description="Quantus metric class")
    settings: dict = setting(default_factory=dict, description="keywords of the metric's constructor")
    order: Literal["morf", "lerf"] = setting(
        "morf", description="RegionPerturbation only: which regions go first (sets its direction)")
    batch_size: int = setting(64, minimum=1, description="perturbed inputs per forward (Quantus' batch_size)")

    def problems(self, key: str) -> list[str]:
        allowed = METRICS[self.metric].keywords + COMMON
        reserved = sorted(set(self.settings) & set(RESERVED))
        unknown = sorted(set(self.settings) - set(allowed) - set(RESERVED))
        out = []
        if reserved:
            out.append(f"config key '{key}.settings': {reserved} are set by the adapter (one score per image, "
                       f"quiet jobs)")
        if unknown:
            out.append(f"config key '{key}.settings': unknown keyword(s) {unknown} of quantus.{self.metric}; "
                       f"allowed: {', '.join(sorted(allowed))}")
        if "order" in self.settings:
            out.append(f"config key '{key}.settings.order': give it as '{key}.order' (it sets the direction)")
        return out


CURVE_PREFIX = "quantus_"  # every curve of this method (the claims table finds the field's metrics by it)


def curve_name(metric: str) -> str:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in metric).lstrip("_")
    return f"{CURVE_PREFIX}{snake}"


def curves(settings: dict) -> list[CurveSpec]:
    m = METRICS[settings["metric"]]
    higher = m.higher_is_better
    if settings["metric"] == "RegionPerturbation" and settings["order"] == "lerf":
        higher = False  # least relevant first: small drops are the faithful outcome
    return [CurveSpec(curve_name(settings["metric"]), f"Quantus {settings['metric']}", higher, mean_of("value"),
                      table="appendix_scores", value_range=m.value_range,
                      caption=f"Quantus' {settings['metric']} ({'higher' if higher else 'lower'} better)")]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.quantus import QuantusCurve

    kwargs = dict(settings["settings"])
    if settings["metric"] == "RegionPerturbation":
        kwargs["order"] = settings["order"]
    protocol = QuantusCurve(curve_name(settings["metric"]), settings["metric"], kwargs,
                            METRICS[settings["metric"]].reduce, reduction=evaluation["reduction"],
                            batch_size=settings["batch_size"])
    return Evaluator("quantus", [(protocol, None)])


SPEC = EvaluatorSpec("quantus", "a Quantus faithfulness metric by name, one score per image", QuantusSettings, curves,
                     f"{__name__}:build", catalogue_variants=lambda: [{"metric": m} for m in METRICS],
                     quick={"metric": "FaithfulnessCorrelation", "settings": {"nr_runs": 10, "subset_size": 16}})
