"""The names the field's explainer libraries offer, as plain data (torch-free:
the config is validated from these tables at parse time).

- CAPTUM: the captum.attr classes the `captum` method runs, each with the
  attribute() keywords a config may set, the constructor keywords, how it
  takes baselines and feature masks, and whether it draws random numbers;
  CAPTUM_EXCLUDED / captum_excluded(): why the others are not run.
- CAMS: pytorch-grad-cam's CAM classes the `cam` method runs, with their
  constructor options; CAMS_EXCLUDED: why the others are not.
- COMPOSITES: zennit's composites the `lrp` method runs, with their options.

tests/test_field_explainers.py checks every table against the installed
libraries (inspect.signature, the exported names), so a library upgrade that
renames a keyword or adds a class fails a test instead of a job.
"""

from __future__ import annotations

from typing import NamedTuple


class CaptumMethod(NamedTuple):
    kwargs: tuple = ()  # attribute() keywords a config may set (`settings:`)
    required: tuple = ()  # of those, the ones attribute() cannot do without
    init: tuple = ()  # constructor keywords beyond the model (`init:`)
    baselines: str = "none"  # none | single (one per image) | distribution (any number per image)
    features: bool = False  # takes a feature_mask (`feature_patch:`)
    random: bool = False  # draws random numbers: run per image under the image's seed
    gradient: bool = False  # needs d output / d input (may be wrapped in NoiseTunnel)


_PERTURB = ("perturbations_per_eval",)
CAPTUM = {
    "Saliency": CaptumMethod(kwargs=("abs",), gradient=True),
    "InputXGradient": CaptumMethod(gradient=True),
    "IntegratedGradients": CaptumMethod(
        kwargs=("n_steps", "method", "internal_batch_size"),
        init=("multiply_by_inputs",),
        baselines="single",
        gradient=True,
    ),
    "DeepLift": CaptumMethod(init=("multiply_by_inputs", "eps"), baselines="single", gradient=True),
    # the baselines are drawn from the references with the image's seed: random
    "DeepLiftShap": CaptumMethod(init=("multiply_by_inputs",), baselines="distribution", random=True, gradient=True),
    "GradientShap": CaptumMethod(
        kwargs=("n_samples", "stdevs"),
        init=("multiply_by_inputs",),
        baselines="distribution",
        random=True,
        gradient=True,
    ),
    "GuidedBackprop": CaptumMethod(gradient=True),
    "Deconvolution": CaptumMethod(gradient=True),
    "Occlusion": CaptumMethod(
        kwargs=("sliding_window_shapes", "strides") + _PERTURB, required=("sliding_window_shapes",), baselines="single"
    ),
    "FeatureAblation": CaptumMethod(kwargs=_PERTURB, baselines="single", features=True),
    "ShapleyValueSampling": CaptumMethod(
        kwargs=("n_samples",) + _PERTURB, baselines="single", features=True, random=True
    ),
    "ShapleyValues": CaptumMethod(kwargs=_PERTURB, baselines="single", features=True),
    "KernelShap": CaptumMethod(kwargs=("n_samples",) + _PERTURB, baselines="single", features=True, random=True),
    "Lime": CaptumMethod(kwargs=("n_samples",) + _PERTURB, baselines="single", features=True, random=True),
}
# attribute() keywords the adapter sets itself (or that return something other than one map)
CAPTUM_RESERVED = {
    "inputs": "the images",
    "target": "the explained class",
    "baselines": "use `baseline:`",
    "feature_mask": "use `feature_patch:`",
    "additional_forward_args": "the model takes the images only",
    "return_convergence_delta": "the method returns one map",
    "show_progress": "progress is logged by the job",
    "custom_attribution_func": "a function cannot be given in config",
    "return_input_shape": "always input-shaped",
}
CAPTUM_EXCLUDED = {
    "LRP": "captum's LRP needs a rule for every layer and has none for the classifiers' normalisation, "
    "attention or GELU; use the `lrp` method (zennit)",
    "GuidedGradCam": "needs a layer; use the `cam` method (pytorch-grad-cam) for CAMs",
    "FeaturePermutation": "permutes features across the images of a batch: an image's map would depend on the "
    "other images (batched != per-image)",
    "LimeBase": "needs interpretable-space transforms written in Python; use Lime",
    "NoiseTunnel": "a wrapper: use `noise_tunnel:` on a gradient method",
    "DataLoaderAttribution": "attributes over a data loader, not one image",
    "InternalInfluence": "attributes to a layer, not to the input pixels",
}
NOISE_TUNNEL_KEYS = ("nt_type", "nt_samples", "nt_samples_batch_size", "stdevs", "draw_baseline_from_distrib")
NT_TYPES = ("smoothgrad", "smoothgrad_sq", "vargrad")


def captum_excluded(name: str) -> str | None:
    """Why captum.attr's class `name` is not run (None: it is run or unknown)."""
    if name in CAPTUM_EXCLUDED:
        return CAPTUM_EXCLUDED[name]
    if name.startswith(("Layer", "Neuron")):
        return "attributes to a layer or a neuron, not to the input pixels"
    if name.startswith(("LLM", "RemoteLLM")):
        return "for text generation models"
    return None


# CAM class -> constructor options a config may set (`options:`)
CAMS = {
    "GradCAM": (),
    "GradCAMPlusPlus": (),
    "XGradCAM": (),
    "HiResCAM": (),
    "GradCAMElementWise": (),
    "LayerCAM": (),
    "EigenCAM": (),
    "EigenGradCAM": (),
    "ScoreCAM": (),
    "ShapleyCAM": (),
    "AblationCAM": ("batch_size", "ratio_channels_to_ablate"),
    "FEM": ("k",),
    "KPCA_CAM": ("kernel", "gamma"),
    "FullGrad": (),
}
CAMS_EXCLUDED = {
    "RandomCAM": "a random control; the workflow has its own (`random`)",
    "FinerCAM": "compares the target with other classes it is given per call; not the one-target interface",
    "RefineCAM": "a wrapper with its own call signature",
    "SESS": "a wrapper with its own call signature",
    "SegEigenCAM": "for segmentation models",
}
# zennit composite class -> options a config may set (`options:`); EpsilonGammaBox's low/high come from the model
COMPOSITES = {
    "EpsilonGammaBox": ("epsilon", "gamma", "stabilizer"),
    "EpsilonPlus": ("epsilon", "stabilizer"),
    "EpsilonAlpha2Beta1": ("epsilon", "stabilizer"),
    "EpsilonPlusFlat": ("epsilon", "stabilizer"),
    "EpsilonAlpha2Beta1Flat": ("epsilon", "stabilizer"),
    "DeconvNet": (),
    "GuidedBackprop": (),
    "ExcitationBackprop": ("stabilizer",),
    "BetaSmooth": ("beta_smooth",),
}


def unknown_keys(key: str, given, allowed, what: str, reserved: dict | None = None) -> list[str]:
    """Messages for keys of `given` not in `allowed`, naming the config key and the allowed ones."""
    problems = []
    for k in sorted(set(given) - set(allowed)):
        why = f" ({reserved[k]})" if reserved and k in reserved else ""
        problems.append(f"config key '{key}.{k}': not a {what}{why}; allowed: {', '.join(allowed) or 'none'}")
    return problems
