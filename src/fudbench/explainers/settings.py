"""The explainers' settings, declared once (torch-free: read at parse time).

One frozen dataclass per registered method: its fields are the keyword
arguments of the explainer's constructor, with their defaults and
constraints. The config is validated from these (fudbench.config generates
the JSON schema of each `explainers:` entry from its method's dataclass), and
tests/test_bad_inputs.py checks that every constructor's defaults equal the
dataclass's, so the declaration here is the one that counts.

IG's integration rule is a constructor argument named `method`, which in
config would read as the entry's method alias: config entries keep the
default rule (trapezoid).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from fudbench.settings import Settings, setting

RIEMANN = Literal["trapezoid", "left", "right", "middle", "gausslegendre"]
BATCH = dict(minimum=1, description="images (or perturbed copies) per forward pass")


@dataclass(frozen=True)
class AGISettings(Settings):
    k: int = setting(20, minimum=1, description="adversarial target classes per image")
    epsilon: float = setting(0.05, exclusiveMinimum=0)
    max_iter: int = setting(20, minimum=1)
    batch_size: int = setting(64, **BATCH)
    use_softmax: bool = setting(True)


@dataclass(frozen=True)
class AttExploreSettings(Settings):
    epsilon: float = setting(16 / 255, exclusiveMinimum=0)
    n_samples: int = setting(20, minimum=1)
    num_steps: int = setting(10, minimum=1)
    rho: float = setting(0.5, minimum=0, maximum=1)
    sigma: float = setting(16 / 255, minimum=0)
    resize_rate: float = setting(1.15, minimum=1)
    diversity_prob: float = setting(0.5, minimum=0, maximum=1)
    ti_kernel: int = setting(7, minimum=1, description="translation-invariance kernel size (odd)")
    ti_nsig: float = setting(3.0, exclusiveMinimum=0)
    momentum: float = setting(1.0, minimum=0)
    direction: Literal["ascent", "descent"] = setting("ascent")
    batch_size: int = setting(64, **BATCH)

    def problems(self, key: str) -> list[str]:
        if self.ti_kernel % 2 == 0:
            return [f"config key '{key}.ti_kernel': {self.ti_kernel} must be odd"]
        return []


@dataclass(frozen=True)
class BIGSettings(Settings):
    epsilons: list[float] = setting(default_factory=lambda: [36 / 255, 64 / 255, 0.3, 0.5, 0.7, 0.9, 1.1],
                                    minItems=1, items={"exclusiveMinimum": 0})
    num_steps: int = setting(50, minimum=1)
    step_size: Optional[float] = setting(None, exclusiveMinimum=0,
                                         description="null: step_scale * epsilon / num_steps")
    step_scale: float = setting(2.0, exclusiveMinimum=0)
    norm: Literal["linf", "l2"] = setting("linf")
    early_stop: bool = setting(True)
    fallback: Literal["strongest", "zero"] = setting("strongest")
    ig_steps: int = setting(50, minimum=1)
    ig_method: RIEMANN = setting("trapezoid")
    batch_size: int = setting(64, **BATCH)


@dataclass(frozen=True)
class EGSettings(Settings):
    k: int = setting(1, minimum=1, description="reference images drawn per image")
    batch_size: int = setting(64, **BATCH)


@dataclass(frozen=True)
class NoSettings(Settings):
    """Methods without settings (FIG, random, oracle, background)."""


@dataclass(frozen=True)
class GIGSettings(Settings):
    n_steps: int = setting(15, minimum=1)
    fraction: float = setting(0.25, minimum=0, maximum=1)
    max_dist: float = setting(0.02, minimum=0, maximum=1)
    baseline: Literal["zero", "mean"] = setting("zero")
    output: Literal["prob", "logit"] = setting("prob")
    batch_size: int = setting(64, **BATCH)


@dataclass(frozen=True)
class IGSettings(Settings):
    n_steps: int = setting(50, minimum=1)
    baseline: Literal["zero", "mean"] = setting("zero")
    batch_size: int = setting(64, **BATCH)


@dataclass(frozen=True)
class ISASettings(Settings):
    step_size: int = setting(5000, minimum=1, description="features added or removed per round")
    add_steps: int = setting(8, minimum=0)
    remove_steps: int = setting(8, minimum=0)
    alpha: float = setting(0.004, exclusiveMinimum=0)
    factor: float = setting(1.3, exclusiveMinimum=0)
    noise: float = setting(0.05, minimum=0)
    lambda_r: float = setting(0.01, minimum=0)

    def problems(self, key: str) -> list[str]:
        if self.add_steps + self.remove_steps == 0:
            return [f"config key '{key}': add_steps + remove_steps must be >= 1"]
        return []


@dataclass(frozen=True)
class LASettings(Settings):
    spatial_range: float = setting(20, exclusiveMinimum=0)
    max_iter: int = setting(20, minimum=1)
    sampling_times: int = setting(20, minimum=1)
    batch_size: int = setting(64, **BATCH)


@dataclass(frozen=True)
class MFABASettings(Settings):
    epsilon: float = setting(0.3, exclusiveMinimum=0)
    num_steps: int = setting(50, minimum=1)
    step_size: float = setting(0.001, exclusiveMinimum=0)
    use_sign: bool = setting(True)
    use_softmax: bool = setting(True)
    early_stop: bool = setting(True)


@dataclass(frozen=True)
class SaliencySettings(Settings):
    abs: bool = setting(True, description="absolute gradient (captum's abs)")


@dataclass(frozen=True)
class DegradeSettings(Settings):
    """`base`'s map with a seeded fraction of its pixel scores shuffled among
    themselves (`shuffle`, unbiased), replaced by uniform noise (`replace`,
    biased towards the top of the ranking: fudbench.explainers.controlled) or
    mixed with it (`mix`); base_settings are validated as the base's own."""

    base: str = setting(description="a registered explainer method (not degrade)")
    fraction: float = setting(minimum=0, maximum=1)
    base_settings: dict = setting(default_factory=dict)
    mode: Literal["shuffle", "replace", "mix"] = setting("shuffle")


@dataclass(frozen=True)
class RandomiseModelSettings(Settings):
    """`base` run on a copy of the model whose last `fraction` of parameterised
    layers is re-initialised (Adebayo et al. 2018's cascading model-parameter
    randomisation); base_settings are validated as the base's own settings."""

    base: str = setting(description="a registered explainer method (not randomise_model itself)")
    fraction: float = setting(minimum=0, maximum=1,
                              description="fraction of the model's parameterised layers re-initialised, counted "
                                          "from the output end (rounded half up): 0 = the trained model, "
                                          "1 = every layer")
    base_settings: dict = setting(default_factory=dict, description="the base explainer's own settings")
    seed: int = setting(0, description="seed of the re-initialised parameters (the same for every image)")


SETTINGS = {
    "agi": AGISettings, "attexplore": AttExploreSettings, "big": BIGSettings, "eg": EGSettings,
    "fig": NoSettings, "gig": GIGSettings, "ig": IGSettings, "isa": ISASettings, "la": LASettings,
    "mfaba": MFABASettings, "sm": SaliencySettings, "random": NoSettings, "oracle": NoSettings,
    "background": NoSettings, "degrade": DegradeSettings, "randomise_model": RandomiseModelSettings,
}
