"""The imputers' options, declared once (torch-free: read at parse time).

One frozen dataclass per registered imputer: its fields are the options an
evaluator's `imputer_options` may give it, with defaults and constraints.
fudbench.imputers.factory takes its defaults from here, and the config's
`$defs/imputer_options` schema is generated from here (fudbench.config.validate), so
an option is declared in this file only. diffusion_plain's options are the
plain sampler's parts' settings (fudbench.imputers.diffusion.settings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from fudbench.imputers.diffusion.settings import KnownSettings, PlainStepSettings
from fudbench.core.settings import Settings, setting


@dataclass(frozen=True)
class NoOptions(Settings):
    """zero, classifier_mean, sample_average, train_set, histogram, max_distance."""


@dataclass(frozen=True)
class BlurOptions(Settings):
    kernel_size: int = setting(11, minimum=1)
    sigma: float = setting(5.0, exclusiveMinimum=0)


@dataclass(frozen=True)
class MeanOptions(Settings):
    mean: Optional[list[float]] = setting(
        None,
        items={"minimum": 0, "maximum": 1},
        description="channel means in [0, 1]; null = mean of the reference "
        "images, else the classifier's normalisation mean",
    )


@dataclass(frozen=True)
class UniformOptions(Settings):
    low: float = setting(0.0)
    high: float = setting(1.0)


@dataclass(frozen=True)
class GaussianOptions(Settings):
    std: float = setting(1.0, minimum=0)
    mean: float = setting(0.0)
    around_image: bool = setting(False, description="noise added to the image instead of replacing it")
    model_space: bool = setting(False, description="in the classifier's normalised input space")


@dataclass(frozen=True)
class TeleaOptions(Settings):
    radius: float = setting(3.0, exclusiveMinimum=0)


@dataclass(frozen=True)
class NoisyLinearOptions(Settings):
    noise: float = setting(0.01, minimum=0, description="std of the added noise in [0, 1] space (ROAD: 0.01)")


@dataclass(frozen=True)
class BoxBlurOptions(Settings):
    fraction: float = setting(0.5, exclusiveMinimum=0, maximum=1, description="box side / image width")


@dataclass(frozen=True)
class DiffusionPlainOptions(PlainStepSettings, KnownSettings):
    """FUD's sampler without guidance (steps, clip_x0, known)."""


IMPUTER_SETTINGS = {
    "zero": NoOptions,
    "blur": BlurOptions,
    "mean": MeanOptions,
    "dataset_mean": MeanOptions,
    "classifier_mean": NoOptions,
    "sample_average": NoOptions,
    "image_mean": NoOptions,
    "uniform": UniformOptions,
    "gaussian": GaussianOptions,
    "train_set": NoOptions,
    "histogram": NoOptions,
    "telea": TeleaOptions,
    "noisy_linear": NoisyLinearOptions,
    "box_blur": BoxBlurOptions,
    "max_distance": NoOptions,
    "diffusion_plain": DiffusionPlainOptions,
}
