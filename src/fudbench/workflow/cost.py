"""What a run will cost, before it starts: an estimate per evaluator entry and per explainer.

`./fud run` and `./fud run -n` print it (fudbench.workflow.command) from the config
alone, torch-free: image size, images, models, explainers, kept ratios and each
evaluator's settings (steps, subsets, fills). The work of an entry is counted in
passes per image (`Passes`): classifier forwards per image and explainer,
forwards per image shared by all explainers of a job (Sensitivity-N's subsets,
Infidelity's perturbations, R-OMS's random orders: paired noise), score-model
(U-Net) steps per image and explainer (FUD), explainer calls per image and
explainer (metrics that explain again), seconds of a library's own work per
image and explainer (Quantus' calls, ROAD's fills); a registered evaluator's
counts are `BUILTIN_PASSES`, another metric's its spec's `cost`. An explainer's
work is its forward + backward passes per image (`EXPLAIN_PASSES`). Priced per image:

    evaluator forward   = weight x FORWARD_S[kind] x (side / reference side)^2 + ITEM_S
    explainer pass      = EXPLAIN_PASS_S[kind] x (side / reference side)^2
    explainer call      = EXPLAIN_PASSES[method](settings) x explainer pass  (explain job; Passes.explains)
    U-Net step          = UNET_STEP_S[precision] x (side / 32)^2        (the shipped 32 px score model)
                        = GUIDED_DIFFUSION_STEP_S                      (guided-diffusion 256, FLOP-scaled)

plus a start-up per job (START_UP_S in its own process, PREFORK_START_UP_S under
the job server) and a job's fixed work (EVALUATE_JOB_S, EXPLAIN_JOB_S). Work whose
outputs exist and are newer than their inputs (`done_work`) is left out and shown
apart. The constants are **calibrated on one machine** (CALIBRATED_ON) from
measured runs (bench/cost_accuracy.py prints estimate / measured per evaluator and
explainer; docs/cost_estimate.md has the tables); another CPU, a loaded one or a
GPU is off by its own factor. It is an estimate, printed as one, for deciding
before a long run: which evaluator dominates, and how its cost grows with the
image size.

Not counted: training and fine-tuning (F-Fidelity's surrogate), the piq quality
jobs, tables and figures.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

CALIBRATED_ON = (
    "AMD EPYC (avx2 fma f16c, no avx512: U-Net in fp32), 2 cores shared with other work, one torch thread per job"
)

# The runs measured (bench/cost_accuracy.py; docs/cost_estimate.md has estimate / measured per entry):
#  default: results/synthetic of commit 8f2cdfe, `./fud run --cores 2` (job server), wall seconds of the benchmark
#    files, the 2 cores shared with a test suite (the run got ~65% of them: 1444 CPU s over 2239 job-seconds);
#  smoke: config/smoke.yaml + a Quantus FaithfulnessCorrelation entry (100 runs) at 16 px, FUD_PREFORK=off (each
#    job in its own process), CPU seconds; photos: config/photos.yaml, FUD_PREFORK=off, CPU seconds; both
#    2026-11-29 on the same machine under a load of 5-11.
# Seconds per classifier forward of one image in an evaluator at a reference side (FORWARD_S; ITEM_S is added per
# forward for the item's own work: records, OOD scores, masks, which do not grow with the model).
#  small_cnn / small_vit at 32 px, default run: insdel, srg, distill, gevaert, ffid, sensn, irof spend 3.5-5.7 ms
#    (CNN) and 2.2-3.2 ms (ViT) per forward after each job's fixed part: 3 + 2 and 1 + 2 ms.
#  imagenet (an `import` factory or torchvision at 224 px, as EfficientNet-Lite0, 0.8 GFLOP): PHOTOS_FORWARD
FORWARD_S = {"small_cnn": (32, 3.0e-3), "small_vit": (32, 1.0e-3), "imagenet": (224, 6.0e-2)}
ITEM_S = 2.0e-3
# Seconds per explainer forward + backward pass of one image (EXPLAIN_PASSES counts them per method). Default
# run's explain jobs: 2.6-7.0 ms per pass (CNN), 2.6-7.0 (ViT) over agi, attexplore, big, gig, ig, isa, la, mfaba,
# about 5 and 4.5. imagenet: PHOTOS_PASS
EXPLAIN_PASS_S = {"small_cnn": (32, 5.0e-3), "small_vit": (32, 4.5e-3), "imagenet": (224, 0.2)}
# Seconds per U-Net step of one sample, the shipped 32 px score model (1.11 M parameters, 0.50 GFLOP), the
# guidance and the scoring forward included: fp32 from the default run, 505 s per FUD job for 13 explainers x 8
# images x 9 ratios x 25 steps = 23,400 steps: 21.5 ms; bf16 from the f609455 run on an EPYC with AVX512-BF16
# (docs/performance.md; quiet): (62 - 1.3) / 23,400 = 2.6 ms. Not measured on one machine: a CPU with native bf16
# is also faster at the rest (that run's evaluators ran ~6x faster than this machine's).
UNET_STEP_S = {"bf16": 2.6e-3, "fp32": 21.5e-3}
# guided-diffusion's ADM-256 (2.2397 TFLOP per forward, docs/performance.md) priced by FLOP against the shipped
# model's 0.50 GFLOP: 4479 x the 32 px step. A CPU estimate; on a GPU see docs/performance.md.
GUIDED_DIFFUSION_STEP_S = {k: v * 2.2397e12 / 0.50e9 for k, v in UNET_STEP_S.items()}
# Start-up per job: in its own process (a cluster job, FUD_PREFORK=off), Python, Snakemake's script preamble and
# torch's import: the smoke's explain jobs (48 passes of a tiny model: no work) took 2.8-4.9 CPU s, the evaluate jobs
# 2.3-6.8; under the job server (fudbench.workflow.prefork) the default run's random / oracle explain jobs took
# 1.0-1.3 s of wall time, its rma jobs (104 forwards) 2.9-3.0 s. A job's fixed work beyond: loading the model,
# the OOD reference and the images, writing one records file per explainer (EVALUATE_JOB_S, EXPLAIN_JOB_S).
START_UP_S = 2.5
PREFORK_START_UP_S = 0.8
EVALUATE_JOB_S, EXPLAIN_JOB_S = 1.0, 0.5
# CPU seconds of an explainer library's import in a job's own process (EXPLAIN_LIBRARY): the photos run's explain
# jobs, FUD_PREFORK=off: random 4.3 s, sm 7.8 (captum, 5 passes), Grad-CAM 15.6 (pytorch_grad_cam loads pandas,
# matplotlib and cv2 besides, 5 passes); the job server has them imported already.
# diffusers (FUD's score model, the diffusion fills): 7.0 CPU s to import here; the smoke's FUD jobs took 17.0 and
# 16.9 CPU s in their own process, 8.3 estimated without it.
IMPORT_S = {"captum": 1.0, "pytorch_grad_cam": 6.0, "zennit": 1.0, "diffusers": 7.0}
# The library an evaluator's job imports besides torch, by method (a job's own process only, as EXPLAIN_LIBRARY)
EVALUATOR_LIBRARY = {"fud": "diffusers"}
# ROAD's noisy-linear fill (a sparse solve per image), seconds at 32 px, grown with the side (the solve's
# unknowns grow with the pixels, its band with the side): default run, ROAD's jobs 11 (CNN) and 19 ms (ViT) per
# fill and forward against ~5 and ~3 for a plain forward. PHOTOS_ROAD
NOISY_LINEAR_FILL_S = 10e-3
# IROF's superpixels and per-segment means, per image and explainer, grown with the pixels: the photos run's IROF
# job took 58.4 CPU s for 25 photo-map pairs at 224 px, ~1 s of it the 17 forwards each: ~1.2 s per pair besides.
IROF_PIXEL_S = 1.2 / (224 * 224)
# Quantus: each job imports it (the job server does not preload it): 8.7 CPU s here; its metrics run their
# perturbations one forward of one image at a time (the evaluator calls Quantus once per image and explainer).
# bench/quantus_cost.py, FaithfulnessCorrelation, CPU s per call at 10 and 100 runs: 16 px (small_cnn of width
# 8) 2.1 ms per run, 3 ms per call besides; 224 px (EfficientNet-Lite0) 109 ms per run, nothing besides, under a
# load of ~26 on the 2 cores; the photo profile's Quantus job took 69 s of wall time on 2026-11-27 (25 calls x 51
# runs, ~45 ms per run, wall); the photos run's Quantus job of 2026-11-29 (own process, load ~20) 56 CPU s after
# 12 min, ~1.3 of its 5 maps: ~130 ms per run. A run priced as 1.5 forwards of the model (a batch of one: 90 ms at
# 224 px, between those) + ITEM_S (the 16 px figure). The smoke profile's CNN job: 19.2 CPU s measured.
QUANTUS_WEIGHT = 1.5
QUANTUS_CALL_S, QUANTUS_IMPORT_S = 3e-3, 8.5
# Large batches of large images run slower per image on a CPU (memory-bound): Sensitivity-N at 224 px on
# EfficientNet-Lite0 took 0.126 s per forward at batch 32 (19 MB of input) and 0.269 s at batch 256 (154 MB),
# measured in this project (2026-11-27, the 2 cores shared with other jobs, wall time). A batch of more than
# BATCH_BYTES of input costs 1 + BATCH_SLOPE x log2(its bytes / BATCH_BYTES) times as much per image.
BATCH_BYTES, BATCH_SLOPE = 32 * 2**20, 0.35
# One evaluator is flagged when its share of the evaluators' estimated time is at least this.
DOMINANT_SHARE = 0.5


@dataclass(frozen=True)
class Passes:
    """The work of one evaluator entry per image."""

    forwards: float = 0.0  # classifier forwards per image and explainer
    shared: float = 0.0  # classifier forwards per image, shared by every explainer of the job
    unet_steps: float = 0.0  # score-model steps per image and explainer
    explains: float = 0.0  # explainer calls per image and explainer (metrics that explain again)
    weight: float = 1.0  # cost of one of its forwards in forward-equivalents (fills heavier, batching)
    note: str = ""  # what the counts are, for the printout
    batch: Optional[int] = None  # forwards per batch (default: the entry's batch_size setting)
    overhead: float = 0.0  # seconds per image and explainer besides the passes (a library's per-call set-up)
    per_job: float = 0.0  # seconds per job besides its start-up (a library the job server does not preload)


def batch_penalty(batch: Optional[int], side: int, channels: int = 3) -> float:
    """The per-image cost factor of batches of `batch` images of side x side px (BATCH_BYTES)."""
    if not batch:
        return 1.0
    size = batch * channels * side * side * 4
    return 1.0 + BATCH_SLOPE * max(0.0, math.log2(size / BATCH_BYTES))


def _ratios(evaluation: dict) -> int:
    return len(evaluation.get("ratios") or [])


def _fud(s, ev, shape):
    copies = 2 if s.get("symmetric") else 1
    steps = s["steps"] * max(1, s.get("resamplings", 1))
    r = _ratios(ev) * copies
    return Passes(forwards=r, unet_steps=r * steps, note=f"{r} samples x {steps} U-Net steps per explainer")


def _insdel(s, ev, shape):
    n = 2 * (s["n_steps"] + 1) + _ratios(ev)
    return Passes(forwards=n, note=f"{n} forwards per explainer")


def _sensn(s, ev, shape):
    n = _ratios(ev) * s["n_subsets"] + 1
    return Passes(shared=n, note=f"{n} forwards shared by the explainers")


def _infid(s, ev, shape):
    # paired noise: the perturbed images' forwards are computed once per job (protocols.faithfulness.infidelity)
    n = s["n_perturb"] + 1
    return Passes(forwards=1, shared=n, note=f"{n} forwards shared by the explainers")


def _srg_points(s) -> int:
    segments = s["n_segments"] if s.get("segmentation", "slic") == "slic" else None
    points = s["n_steps"] + 2
    return min(points, segments + 1) if segments else points


STOCHASTIC_FILLS = ("noise", "gaussian", "uniform", "noisy_linear", "histogram", "train_set", "diffusion_plain")


def _srg(s, ev, shape):
    points = _srg_points(s)
    fills = sum(s["n_imputations"] if i in STOCHASTIC_FILLS else 1 for i in s["imputers"])
    own, shared = 2 * points * fills, s["n_random"] * points * fills
    return Passes(forwards=own, shared=shared, note=f"{own} forwards per explainer + {shared} shared (R-OMS)")


def _road(s, ev, shape):
    n = len(s["orders"]) * _ratios(ev)
    noisy = s.get("imputer", "noisy_linear") == "noisy_linear"
    _, h, w = shape
    fill = NOISY_LINEAR_FILL_S * math.sqrt(h * w) / 32 if noisy else 0.0
    return Passes(
        forwards=n,
        overhead=n * fill,
        note=f"{n} fills and forwards per explainer" + (" (noisy-linear)" if noisy else ""),
    )


def _idsds(s, ev, shape):
    # the deletions and their responses are shared by the explainers (protocols.faithfulness.idsds)
    n = s["grid"] ** 2
    return Passes(forwards=1, shared=n, note=f"{n} forwards shared by the explainers")


def _distill(s, ev, shape):
    n = len(s["fills"]) * _ratios(ev)
    return Passes(forwards=n, note=f"{n} forwards per explainer")


def _gevaert(s, ev, shape):
    n = len(s["fills"]) * _ratios(ev) * (2 if s.get("insertion", True) else 1)
    return Passes(forwards=n, note=f"{n} forwards per explainer")


def _ffid(s, ev, shape):
    n = len(s["sparsities"]) * (4 * s["n_samples"] + 2)
    return Passes(forwards=n, note=f"{n} forwards per explainer (+ the surrogate's fine-tuning, not counted)")


def _irof(s, ev, shape):
    n = s["n_segments"] + 1
    _, h, w = shape
    return Passes(forwards=n, overhead=IROF_PIXEL_S * h * w, note=f"~{n} forwards per explainer")


# Quantus 0.6.0's defaults of the keywords that set its forward count (checked against the installed Quantus
# by fudbench.evaluators.quantus' tests for the size keywords)
QUANTUS_DEFAULTS = {
    "nr_runs": 100,
    "features_in_step": 1,
    "nr_samples": 100,
    "patch_size": 8,
    "regions_evaluation": 100,
    "n_perturb_samples": 10,
    "perturb_patch_sizes": [4],
}


def _quantus(s, ev, shape):
    k = {**QUANTUS_DEFAULTS, **(s.get("settings") or {})}
    _, h, w = shape
    pixels, metric = h * w, s["metric"]
    steps = math.ceil(pixels / k["features_in_step"])
    n = {
        "FaithfulnessCorrelation": k["nr_runs"] + 1,
        "FaithfulnessEstimate": steps + 1,
        "MonotonicityCorrelation": k["nr_samples"] * steps + 1,
        "Monotonicity": steps + 1,
        "PixelFlipping": steps + 1,
        "RegionPerturbation": min(k["regions_evaluation"], (h // k["patch_size"]) * (w // k["patch_size"])) + 1,
        "Selectivity": (h // k["patch_size"]) * (w // k["patch_size"]) + 1,
        "Infidelity": k["n_perturb_samples"] * sum((h // p) * (w // p) for p in k["perturb_patch_sizes"]) + 1,
    }.get(metric)
    if n is None:
        return _quantus_explaining(s, metric)
    return Passes(
        forwards=n,
        weight=QUANTUS_WEIGHT,
        overhead=QUANTUS_CALL_S,
        per_job=QUANTUS_IMPORT_S,
        note=f"{n} forwards per explainer (Quantus {metric}, one call per image)",
    )


# Quantus 0.6's nr_samples default of its robustness metrics (explainer calls per image)
QUANTUS_ROBUSTNESS_SAMPLES = 200


def _quantus_explaining(s, metric: str):
    """Quantus metrics of the other categories: explainer calls per image (its explain_func; +1 for our check
    that the explainer reproduces the stored map), one forward each call; None for a metric not priced."""
    from fudbench.evaluators.randomisation.model_parameter import GUESSED_LAYERS

    samples = int((s.get("settings") or {}).get("nr_samples", QUANTUS_ROBUSTNESS_SAMPLES))
    explains = {
        "MaxSensitivity": samples,
        "AvgSensitivity": samples,
        "LocalLipschitzEstimate": samples,
        "MPRT": GUESSED_LAYERS,  # every layer of the cascade (the model is not known here: a guess)
        "RandomLogit": 1,
        "Sparseness": 0,
        "Complexity": 0,
    }.get(metric)
    if explains is None:
        return None
    check = 1 if explains else 0
    return Passes(
        forwards=1,
        explains=explains + check,
        weight=QUANTUS_WEIGHT,
        overhead=QUANTUS_CALL_S,
        per_job=QUANTUS_IMPORT_S,
        note=f"{explains} + {check} explains per explainer (Quantus {metric}, one call per image)",
    )


BUILTIN_PASSES: dict[str, Callable] = {
    "fud": _fud,
    "insdel": _insdel,
    "sensn": _sensn,
    "infid": _infid,
    "srg": _srg,
    "idsds": _idsds,
    "road": _road,
    "distill": _distill,
    "gevaert": _gevaert,
    "ffid": _ffid,
    "irof": _irof,
    "quantus": _quantus,
}


def entry_passes(name: str, settings: Optional[dict], evaluation: dict, shape: tuple) -> Optional[Passes]:
    """The passes per image of a config entry (registered or plug-in); None without a cost model.
    shape: (C, H, W) of the images."""
    from fudbench.evaluators import method_of, spec

    import dataclasses

    method = method_of(name, settings)
    entry = spec(method)
    resolved = entry.resolve(settings)
    if entry.cost is not None:
        passes = entry.cost(resolved, evaluation)
        passes = Passes(**passes) if isinstance(passes, dict) else passes
    else:
        found = BUILTIN_PASSES.get(method)
        passes = None if found is None else found(resolved, evaluation, shape)
    if passes is not None and passes.batch is None and isinstance(resolved.get("batch_size"), int):
        passes = dataclasses.replace(passes, batch=resolved["batch_size"])
    return passes


# --- the explainers ---------------------------------------------------------------------------------------------
# Classifier forward + backward passes per image of each registered explainer method at its settings (resolved over
# fudbench.explainers.settings' defaults; shape (C, H, W)); the controls draw or read a map: none. An explain job
# (and an evaluator that explains again: Passes.explains) pays GRAD_WEIGHT forward-equivalents per pass.
EXPLAIN_PASSES: dict[str, Callable] = {
    "sm": lambda s, shape: 1,
    "fig": lambda s, shape: 1,
    "cam": lambda s, shape: 1,
    "lrp": lambda s, shape: 1,
    "ig": lambda s, shape: s["n_steps"],
    "gig": lambda s, shape: s["n_steps"],
    "mfaba": lambda s, shape: s["num_steps"],  # at most: early_stop ends sooner
    "eg": lambda s, shape: s["k"],
    "big": lambda s, shape: s["num_steps"] + s["ig_steps"],  # the boundary search (early stop), then IG
    "agi": lambda s, shape: s["k"] * s["max_iter"],
    "attexplore": lambda s, shape: s["n_samples"] * s["num_steps"],
    "la": lambda s, shape: s["max_iter"] * s["sampling_times"],
    "isa": lambda s, shape: math.ceil(math.prod(shape) / s["step_size"]) * (s["add_steps"] + s["remove_steps"]),
    # captum: a gradient method's steps or samples (1 if it has none), times the noise tunnel's samples
    "captum": lambda s, shape: (
        max(1, int(s["settings"].get("n_steps") or s["settings"].get("n_samples") or 1))
        * (s["n_baselines"] if s["baseline"] == "references" else 1)
        * (int((s["noise_tunnel"] or {}).get("nt_samples", 5)) if s["noise_tunnel"] is not None else 1)
    ),
    "random": lambda s, shape: 0,
    "oracle": lambda s, shape: 0,
    "background": lambda s, shape: 0,
    "random_smooth": lambda s, shape: 0,
}


# The library an explainer method imports in its job: in a job's own process (no job server, which preloads them)
# its import is part of the job (IMPORT_S).
EXPLAIN_LIBRARY = {
    "sm": "captum",
    "ig": "captum",
    "big": "captum",
    "captum": "captum",
    "cam": "pytorch_grad_cam",
    "lrp": "zennit",
}


def explainer_library(name: str, settings: Optional[dict]) -> Optional[str]:
    from fudbench.explainers import WRAPPERS, method_of

    settings = dict(settings or {})
    method = method_of(name, settings)
    if method in WRAPPERS and "base" in settings:
        return explainer_library(settings["base"], {"method": settings["base"]})
    return EXPLAIN_LIBRARY.get(method)


def explainer_passes(name: str, settings: Optional[dict], shape: tuple) -> Optional[float]:
    """Forward + backward passes per image of an `explainers:` entry; None for a method without a count
    (a plug-in). A wrapper (degrade, randomise_model, reorder, ...) costs its base."""
    from fudbench.core.settings import with_defaults
    from fudbench.explainers import WRAPPERS, method_of
    from fudbench.explainers.settings import SETTINGS

    settings = dict(settings or {})
    method = method_of(name, settings)
    if method in WRAPPERS:
        return explainer_passes(
            settings["base"], {"method": settings["base"], **settings.get("base_settings", {})}, shape
        )
    if method not in EXPLAIN_PASSES or method not in SETTINGS:
        return None
    resolved = with_defaults(SETTINGS[method], settings)
    return float(EXPLAIN_PASSES[method](resolved, shape))


# --- the run's shape ---------------------------------------------------------------------------------------------


def image_side(config: dict) -> int:
    """The evaluated images' side in pixels (square: the synthetic size or the crop)."""
    data = config["data"]
    if data["source"] == "synthetic":
        return int(data["synthetic"]["image_size"])
    return int((data.get(data["source"]) or {}).get("crop", 224))


def model_kind(classifier: dict) -> str:
    arch = classifier.get("arch", "import")
    return arch if arch in FORWARD_S else "imagenet"  # import, torchvision_*


def explain_pass_seconds(classifier: dict, side: int) -> float:
    """Seconds of one explainer forward + backward pass of one image (EXPLAIN_PASS_S)."""
    ref_side, seconds = EXPLAIN_PASS_S[model_kind(classifier)]
    return seconds * (side / ref_side) ** 2


def forward_seconds(classifier: dict, side: int) -> tuple[float, str]:
    """(seconds per classifier forward of one image in an evaluator, how it was priced)."""
    arch = classifier.get("arch", "import")
    kind = model_kind(classifier)
    ref_side, seconds = FORWARD_S[kind]
    label = (
        f"as measured at {ref_side} px"
        if kind == arch
        else "priced as an ImageNet-size network, EfficientNet-Lite0 (0.8 GFLOP at 224 px)"
    )
    return seconds * (side / ref_side) ** 2, f"{arch}: {label}"


def native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """The CPU computes bf16 natively (AVX512-BF16 or AMX), as FUD's amp_dtype: auto asks; torch-free."""
    try:
        with open(cpuinfo) as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return False
    return any(flag in flags.split() for flag in ("avx512_bf16", "amx_bf16"))


def unet_step_seconds(config: dict, side: int, bf16: bool) -> float:
    precision = "bf16" if bf16 else "fp32"
    source = ((config.get("models") or {}).get("score_model") or {}).get("source")
    if source == "guided_diffusion":
        return GUIDED_DIFFUSION_STEP_S[precision]
    return UNET_STEP_S[precision] * (side / 32) ** 2


@dataclass
class Row:
    entry: str
    method: str
    passes: Optional[Passes]
    seconds: Optional[float]  # job-seconds of the work left to do, start-up included
    jobs: int  # jobs left to run
    share: float = 0.0
    done: float = 0.0  # job-seconds of the work whose outputs exist and are up to date (left out of `seconds`)
    per_model: dict = field(default_factory=dict)  # model -> job-seconds left (for bench/cost_accuracy.py)


@dataclass
class Done:
    """The work a run already holds, per job output (done_work): (model, explainer, shard) attributions and
    (model, explainer, evaluator entry, shard) records that exist and are newer than what they are made from."""

    attributions: set = field(default_factory=set)
    records: set = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.attributions or self.records)


@dataclass
class Estimate:
    rows: list
    side: int
    n_images: int
    n_explainers: int
    n_ratios: int
    models: list  # [(name, pricing label, seconds per forward)]
    cores: Optional[int]
    bf16: bool
    device: str
    warnings: list = field(default_factory=list)
    explain: list = field(default_factory=list)  # one Row per explainer entry (its explain jobs)
    start_up: float = 0.0  # seconds per job

    @property
    def evaluators_total(self) -> float:
        return sum(r.seconds for r in self.rows if r.seconds is not None)

    @property
    def explain_total(self) -> float:
        return sum(r.seconds for r in self.explain if r.seconds is not None)

    @property
    def total(self) -> float:
        return self.evaluators_total + self.explain_total

    @property
    def done_total(self) -> float:
        return sum(r.done for r in [*self.rows, *self.explain])


def shard_sizes(n: int, shard_size: int) -> list[int]:
    """Images per shard (fudbench.data.shards: full shards, the last one the rest)."""
    from fudbench.data.shards import n_shards

    return [min(shard_size, n - k * shard_size) for k in range(n_shards(n, shard_size))]


def explainer_seconds(config: dict, shape: tuple) -> dict:
    """{explainer entry: {model: seconds per image of one call}}, None where the method has no count."""
    classifiers = config["models"]["classifiers"]
    out = {}
    for name, settings in config["explainers"].items():
        try:
            passes = explainer_passes(name, settings, shape)
        except (KeyError, TypeError, ValueError):  # a broken entry: the config check reports it
            passes = None
        out[name] = {
            m: None if passes is None else passes * explain_pass_seconds(c, shape[-1]) for m, c in classifiers.items()
        }
    return out


def estimate(
    config: dict,
    cores: Optional[int] = None,
    bf16: Optional[bool] = None,
    done: Optional[Done] = None,
    own_process: bool = True,
) -> Estimate:
    """The estimate of every evaluator entry and explain job of a resolved config
    (fudbench.config.files.resolve_config). `done`: work already there (done_work), left out and shown apart.
    own_process: each job starts its own Python (START_UP_S), else a fork of the job server (PREFORK_START_UP_S)."""
    from fudbench.evaluators import method_of, spec

    side = image_side(config)
    shape = (3, side, side)
    data, evaluation = config["data"], config["evaluation"]
    n, explainers = int(data["n_eval"]), list(config["explainers"])
    shards = shard_sizes(n, int(data["shard_size"]))
    bf16 = native_bf16() if bf16 is None else bf16
    done = done or Done()
    start_up = START_UP_S if own_process else PREFORK_START_UP_S
    models = [(name, *reversed(forward_seconds(c, side))) for name, c in config["models"]["classifiers"].items()]
    unet = unet_step_seconds(config, side, bf16)
    per_call = explainer_seconds(config, shape)
    warnings = []

    explain_rows = []
    for e in explainers:
        row = Row(e, method_of(e, config["explainers"][e] or {}), None, 0.0, 0)
        library = explainer_library(e, config["explainers"][e])
        imports = IMPORT_S.get(library, 0.0) if own_process else 0.0
        for m, _, _ in models:
            price = per_call[e][m]
            for k, size in enumerate(shards):
                seconds = start_up + EXPLAIN_JOB_S + size * (price or 0.0) + imports
                if (m, e, k) in done.attributions:
                    row.done += seconds
                else:
                    row.seconds += seconds
                    row.jobs += 1
                    row.per_model[m] = row.per_model.get(m, 0.0) + seconds
        if any(per_call[e][m] is None for m, _, _ in models):
            row.seconds = None
        explain_rows.append(row)

    rows = []
    for name, settings in config["evaluators"].items():
        method = method_of(name, settings)
        try:
            passes = entry_passes(name, settings, evaluation, shape)
        except (KeyError, TypeError, ValueError):  # a broken entry: the config check reports it
            passes = None
        row = Row(name, method, passes, None, 0)
        imports = IMPORT_S.get(EVALUATOR_LIBRARY.get(method), 0.0) if own_process else 0.0
        if passes is not None:
            row.seconds = 0.0
            starts = 2 if method == "srg" else 1  # srg: + its R-OMS job
            if passes.explains:
                try:
                    explaining = spec(method).explainer_needed(spec(method).resolve(settings))
                except (KeyError, TypeError, ValueError):
                    explaining = True
                if not explaining:
                    warnings.append(f"{name}: its cost counts explainer calls but its spec sets no needs_explainer")
                unknown = [e for e in explainers if any(per_call[e][m] is None for m, _, _ in models)]
                if unknown:
                    warnings.append(f"{name} explains again with {unknown}, which have no cost model: not counted")
            for m, _, forward in models:
                for k, size in enumerate(shards):
                    per_run = size * max(passes.forwards, passes.shared)  # work items of one protocol run
                    weight = passes.weight * batch_penalty(min(passes.batch or 1, max(1, int(per_run))), side)
                    item = weight * forward + ITEM_S  # one forward and the evaluator's own work on its item
                    own = {
                        e: size
                        * (
                            passes.forwards * item
                            + passes.unet_steps * unet
                            + passes.overhead
                            + passes.explains * (per_call[e][m] or 0.0)
                        )
                        for e in explainers
                    }
                    whole = starts * start_up + EVALUATE_JOB_S + passes.per_job + imports + size * passes.shared * item
                    todo = [e for e in explainers if (m, e, name, k) not in done.records]
                    if todo:  # the job reruns: its start-up, the shared work, the explainers not in the work cache
                        seconds = whole + sum(own[e] for e in todo)
                        row.seconds += seconds
                        row.jobs += starts
                        row.per_model[m] = row.per_model.get(m, 0.0) + seconds
                    row.done += sum(own[e] for e in explainers if e not in todo) + (0.0 if todo else whole)
        rows.append(row)
    est = Estimate(
        rows,
        side,
        n,
        len(explainers),
        len(evaluation.get("ratios") or []),
        models,
        cores,
        bf16,
        str(config.get("device", "cpu")),
        warnings,
        explain_rows,
        start_up,
    )
    total = est.evaluators_total
    for row in rows:
        row.share = (row.seconds or 0.0) / total if total else 0.0
    top = max((r for r in rows if r.seconds is not None), key=lambda r: r.seconds, default=None)
    if top is not None and len(rows) > 1 and top.share >= DOMINANT_SHARE:
        grows = (
            f"; its cost grows with the pixels: at {side} x {side} px one image costs "
            f"{(side / 32) ** 2:.0f}x a 32 px one"
            if side > 32
            else ""
        )
        est.warnings.append(
            f"{top.entry} is {top.share:.0%} of the evaluators' estimated time ({duration(top.seconds)} of "
            f"{duration(total)}){grows}. To shorten the run: lower its settings "
            f"({top.passes.note}), lower data.n_eval, or drop it (`{top.entry}: null` under evaluators in an overlay)"
        )
    unknown = [r.entry for r in rows if r.seconds is None]
    if unknown:
        est.warnings.append(f"no cost model for {unknown} (an EvaluatorSpec's `cost`): not in the total")
    unknown = [r.entry for r in explain_rows if r.seconds is None]
    if unknown:
        est.warnings.append(f"no cost model for the explainer(s) {unknown} (fudbench.workflow.cost.EXPLAIN_PASSES)")
    return est


def done_work(config: dict, directory: Union[str, Path] = ".") -> Done:
    """The outputs of the run `config` addresses (results/<run_name>/ under `directory`) that exist and are
    newer than what they are made from: an explainer's attributions newer than its model; an evaluate job's
    records per explainer newer than those attributions (the work cache then copies that explainer's work).
    File times only: a changed setting that Snakemake's params trigger reruns is not seen here."""
    results = Path(directory) / "results" / str(config.get("run_name", "synthetic"))
    done = Done()
    if not results.is_dir():
        return done
    n_shard = len(shard_sizes(int(config["data"]["n_eval"]), int(config["data"]["shard_size"])))

    def mtime(path: Path) -> Optional[float]:
        try:
            return path.stat().st_mtime
        except OSError:
            return None

    for m in config["models"]["classifiers"]:
        model = mtime(results / "models" / f"{m}.pt")
        if model is None:
            continue
        for e in config["explainers"]:
            for k in range(n_shard):
                attr = mtime(results / "attributions" / m / e / f"shard{k}.npz")
                if attr is None or attr < model:
                    continue
                done.attributions.add((m, e, k))
                for entry in config["evaluators"]:
                    rec = mtime(results / "records" / m / e / entry / f"shard{k}.parquet")
                    if rec is not None and rec >= attr:
                        done.records.add((m, e, entry, k))
    return done


def duration(seconds: float) -> str:
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min" if seconds >= 600 else f"{int(seconds // 60)} min {seconds % 60:02.0f} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def format_estimate(est: Estimate) -> str:
    lines = [
        f"fud: cost estimate of the evaluators (an ESTIMATE, not a measurement: calibrated on {CALIBRATED_ON}; "
        f"fudbench.workflow.cost)",
        f"  {est.n_images} image(s) of {est.side} x {est.side} px, {len(est.models)} model(s), "
        f"{est.n_explainers} explainer(s), {est.n_ratios} kept ratio(s); FUD's U-Net in "
        f"{'bf16' if est.bf16 else 'fp32'}",
    ]
    for name, label, seconds in est.models:
        lines.append(
            f"  model {name} ({label}): {seconds * 1e3:.3g} ms per forward in an evaluator (+ {ITEM_S * 1e3:.3g} ms "
            f"per item)"
        )
    width = max([len(r.entry) for r in est.rows] + [9])
    for row in sorted(est.rows, key=lambda r: -(r.seconds or 0)):
        if row.seconds is None:
            lines.append(f"  {row.entry:<{width}}  {'?':>9}        no cost model")
            continue
        done = f" (+ {duration(row.done)} done)" if row.done else ""
        lines.append(f"  {row.entry:<{width}}  {duration(row.seconds):>9}  {row.share:>4.0%}  {row.passes.note}{done}")
    if est.explain:
        priced = [r for r in est.explain if r.seconds is not None]
        top = max(priced, key=lambda r: r.seconds, default=None)
        most = f"; the most: {top.entry} {duration(top.seconds)}" if top is not None and top.seconds else ""
        jobs = sum(r.jobs for r in est.explain)
        lines.append(
            f"  {'explain':<{width}}  {duration(est.explain_total):>9}        {jobs} job(s) of "
            f"{est.n_explainers} explainer(s){most}"
        )
    total = est.total
    wall = f"; about {duration(total / est.cores)} on {est.cores} cores if they stay busy" if est.cores else ""
    lines.append(
        f"  {'total':<{width}}  {duration(total):>9}  of job time (start-up included){wall}; not "
        f"counted: training, quality, tables and figures"
    )
    if est.done_total:
        lines.append(f"  already done (outputs up to date, left out above): {duration(est.done_total)} of job time")
    if est.device != "cpu":
        lines.append(f"  device {est.device}: these are CPU figures; GPU figures: docs/performance.md")
    lines += [f"  warning: {w}" for w in est.warnings]
    return "\n".join(lines)


# --- the command line ----------------------------------------------------------------------------------------------

# Snakemake options that do not run jobs: no estimate before them
NOT_A_RUN = (
    "--lint",
    "--report",
    "--unlock",
    "--list-rules",
    "--list",
    "-l",
    "--list-target-rules",
    "--dag",
    "--rulegraph",
    "--filegraph",
    "--summary",
    "-S",
    "--detailed-summary",
    "-D",
    "--cleanup-metadata",
    "--touch",
    "-t",
    "--version",
    "-v",
    "--help",
    "-h",
    "--delete-all-output",
    "--delete-temp-output",
    "--archive",
    "--containerize",
    "--generate-unit-tests",
    "--export-cwl",
    "--list-changes",
    "--lc",
    "--list-code-changes",
    "--list-input-changes",
    "--list-params-changes",
    "--li",
    "--lp",
)
QUIET_ENV = "FUD_NO_ESTIMATE"


def cores_of(argv: list[str]) -> Optional[int]:
    for i, arg in enumerate(argv):
        value = (
            arg.split("=", 1)[1]
            if arg.startswith(("--cores=", "-c="))
            else (argv[i + 1] if arg in ("--cores", "-c", "-j", "--jobs") and i + 1 < len(argv) else None)
        )
        if value is not None:
            if value == "all":
                return os.cpu_count()
            try:
                return int(value)
            except ValueError:
                return None
    return os.cpu_count()  # profiles/default: cores: all


# Options that rerun outputs that are there: the estimate then prices all the work
FORCED = ("--forceall", "-F", "--forcerun", "-R", "--force", "-f")


def directory_of(argv: list[str]) -> str:
    """The folder the run's results/ is under: Snakemake's --directory, else here."""
    for i, arg in enumerate(argv):
        if arg.startswith("--directory="):
            return arg.split("=", 1)[1]
        if arg in ("--directory", "-d") and i + 1 < len(argv):
            return argv[i + 1]
    return "."


def own_process(argv: list[str]) -> bool:
    """Whether the run's jobs start their own Python (no job server: FUD_PREFORK=off, a cluster executor)."""
    from fudbench.workflow import prefork

    dry = ("-n", "--dry-run", "--dryrun", "-np", "-pn")
    return not prefork.wanted([a for a in argv if a not in dry])


def print_estimate(argv: list[str], config: Callable[[], dict], stream=None) -> bool:
    """Print the estimate of the run `./fud run ARGV` would start, `config()` its resolved config
    (fudbench.workflow.command.main passes run_config of ARGV's files and --config values), unless ARGV does
    not run jobs or FUD_NO_ESTIMATE is set. Never stops the run: a config that does not resolve is the
    Snakefile's to report. Returns whether it printed."""
    import sys

    stream = stream or sys.stderr
    if os.environ.get(QUIET_ENV) or any(a.split("=", 1)[0] in NOT_A_RUN for a in argv):
        return False
    try:
        resolved = config()
        forced = any(a.split("=", 1)[0] in FORCED for a in argv)
        done = None if forced else done_work(resolved, directory_of(argv))
        text = format_estimate(estimate(resolved, cores_of(argv), done=done, own_process=own_process(argv)))
    except Exception as exc:  # noqa: BLE001  (the estimate is advice; the config check reports real problems)
        print(f"fud: no cost estimate ({type(exc).__name__}: {exc})", file=stream)
        return False
    print(text, file=stream, flush=True)
    return True
