"""Imputers by name, for evaluator configs (names in fudbench.imputers.registry).

    build_imputer(name, options, references, assets, device) -> Imputer

options: that imputer's settings (dict, may be empty; unknown keys are an
error). references: (M, C, H, W) reference images (uint8 or float in [0, 1]) or
None; when None and the imputer needs them (train_set, mean without an
explicit mean), they are loaded from assets["reference_images"], an npz with an
"images" uint8 array (M, C, H, W). assets["score_model"]: the score-model
checkpoint for diffusion_plain.
"""

from __future__ import annotations

from typing import Optional

import torch

from fudbench.imputers.registry import IMPUTERS
from fudbench.imputers.diffusion import plain_sampler
from fudbench.imputers.settings import IMPUTER_SETTINGS
from fudbench.core.plugins import is_import_path
from fudbench.core.registry import resolve
from fudbench.core.settings import defaults

# Each imputer's options and defaults: declared in fudbench.imputers.settings.
DEFAULTS = {name: defaults(options) for name, options in IMPUTER_SETTINGS.items()}


def imputer_options(name: str, options: Optional[dict]) -> dict:
    """DEFAULTS[name] updated with options; unknown keys raise naming the allowed ones."""
    defaults = DEFAULTS[name]
    unknown = sorted(set(options or {}) - set(defaults))
    if unknown:
        raise ValueError(f"imputer {name!r}: unknown option(s) {unknown}; allowed: {sorted(defaults) or 'none'}")
    return {**defaults, **(options or {})}


def load_references(assets: Optional[dict], who: str) -> torch.Tensor:
    path = (assets or {}).get("reference_images")
    if not path:
        raise ValueError(
            f"imputer {who!r} needs reference images: set assets['reference_images'] to an npz "
            "with an 'images' uint8 array (M, C, H, W), e.g. the training split"
        )
    from fudbench.core.io import load_npz

    data = load_npz(path)
    if "images" not in data:
        raise ValueError(f"{path}: no 'images' array (found {sorted(data)}); expected uint8 (M, C, H, W)")
    images = torch.from_numpy(data["images"])
    if images.dim() != 4 or images.dtype != torch.uint8:
        raise ValueError(f"{path}: 'images' must be uint8 (M, C, H, W), got {images.dtype} {tuple(images.shape)}")
    return images


def build_imputer(
    name: str,
    options: Optional[dict] = None,
    references=None,
    assets: Optional[dict] = None,
    device="cpu",
    entry: Optional[str] = None,
):
    """A registered imputer, or a plug-in by import path: an Imputer subclass built
    with the options as keyword arguments (fudbench.core.plugins). `entry`: the name the
    config gives it (an alias in imputer_options), for error messages."""
    builder = resolve(IMPUTERS, name, "imputer")
    if is_import_path(name):
        from fudbench.imputers.base import Imputer
        from fudbench.core.plugins import blame, describe

        if not (isinstance(builder, type) and issubclass(builder, Imputer)):
            raise TypeError(
                f"imputer {name!r} is not an Imputer subclass (fudbench.imputers.base.Imputer: "
                f"fill(x, keep_mask, context) -> x with the removed pixels filled)"
            )
        who, plugin = f"imputer {entry or name!r}", describe(name)
        with blame(who, plugin, f"building {builder.__qualname__}(**{options or {}})"):
            imputer = builder(**(options or {}))
        return _named_plugin_fill(imputer, who, plugin, entry or name)
    return builder(imputer_options(name, options), references, assets, device)


def _named_plugin_fill(imputer, who: str, plugin: str, entry: str):
    """The plug-in imputer with its fill re-raising errors as PluginCallError naming it
    (`plugin_who`: build_evaluator adds the config key of the evaluator entry)."""
    from fudbench.core.plugins import blame

    fill = imputer.fill
    imputer.plugin_entry, imputer.plugin_who = entry, who

    def named_fill(*args, **kwargs):
        with blame(imputer.plugin_who, plugin, "fill"):
            return fill(*args, **kwargs)

    imputer.fill = named_fill
    return imputer


# ---------------------------------------------------------------- builders


def zero(o, references, assets, device):
    from fudbench.imputers.simple import ZeroImputer

    return ZeroImputer()


def blur(o, references, assets, device):
    from fudbench.imputers.simple import BlurImputer

    return BlurImputer(int(o["kernel_size"]), float(o["sigma"]))


def mean(o, references, assets, device):
    """Explicit mean > channel mean of the references > the classifier's normalisation mean."""
    from fudbench.imputers.baselines import MeanImputer

    if o["mean"] is not None:
        return MeanImputer(o["mean"])
    if references is None and (assets or {}).get("reference_images"):
        references = load_references(assets, "mean")
    if references is None:
        return MeanImputer(None)
    refs = torch.as_tensor(references)
    scale = 255.0 if refs.dtype == torch.uint8 else 1.0
    return MeanImputer((refs.double().mean(dim=(0, 2, 3)) / scale).tolist())


def classifier_mean(o, references, assets, device):
    """The classifier's normalisation mean, i.e. 0 in its normalised input space
    (the constant of attribench and Hesse et al., whose models see normalised images)."""
    from fudbench.imputers.baselines import MeanImputer

    return MeanImputer(None)


def sample_average(o, references, assets, device):
    from fudbench.imputers.baselines import SampleAverageImputer

    return SampleAverageImputer()


def uniform(o, references, assets, device):
    from fudbench.imputers.baselines import UniformNoiseImputer

    return UniformNoiseImputer(o["low"], o["high"])


def gaussian(o, references, assets, device):
    from fudbench.imputers.baselines import GaussianNoiseImputer

    return GaussianNoiseImputer(o["std"], o["mean"], around_image=o["around_image"], model_space=o["model_space"])


def train_set(o, references, assets, device):
    from fudbench.imputers.baselines import TrainSetImputer

    return TrainSetImputer(references if references is not None else load_references(assets, "train_set"))


def histogram(o, references, assets, device):
    from fudbench.imputers.baselines import HistogramImputer

    return HistogramImputer()


def telea(o, references, assets, device):
    from fudbench.imputers.baselines import TeleaImputer

    return TeleaImputer(o["radius"])


def noisy_linear(o, references, assets, device):
    from fudbench.imputers.noisy_linear import NoisyLinearImputer

    return NoisyLinearImputer(o["noise"])


def box_blur(o, references, assets, device):
    from fudbench.imputers.baselines import BoxBlurImputer

    return BoxBlurImputer(o["fraction"])


def max_distance(o, references, assets, device):
    from fudbench.imputers.baselines import MaxDistanceImputer

    return MaxDistanceImputer()


def diffusion_plain(o, references, assets, device):
    """FUD's sampler with guidance off: the seeds/002 (RePaint-like) diffusion imputer."""
    path = (assets or {}).get("score_model")
    if not path:
        raise ValueError("imputer 'diffusion_plain' needs assets['score_model'] (the score-model checkpoint)")
    from fudbench.models.score import load_score_model

    unet, schedule = load_score_model(path, device)
    return plain_sampler(unet, schedule, o)
