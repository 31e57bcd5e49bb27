"""The explainers' settings, declared once (torch-free: read at parse time).

One frozen dataclass per registered method: its fields are the keyword
arguments of the explainer's constructor, with their defaults and
constraints. The config is validated from these (fudbench.config.validate generates
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

from fudbench.explainers.field_names import (
    CAMS,
    CAMS_EXCLUDED,
    CAPTUM,
    CAPTUM_RESERVED,
    COMPOSITES,
    NOISE_TUNNEL_KEYS,
    NT_TYPES,
    captum_excluded,
    unknown_keys,
)
from fudbench.core.settings import Settings, setting

RIEMANN = Literal["trapezoid", "left", "right", "middle", "gausslegendre"]
BATCH = dict(minimum=1, description="images (or perturbed copies) per forward pass")


def ties_setting():
    """The `ties` option of the map wrappers (degrade, reorder, translate, block_shuffle), one declaration."""
    return setting(
        "compact",
        description="compact: the base map's tied pixels get a strict order before the change "
        "(a tied pixel nearer the higher-valued pixels first; in the top level, "
        "nearer its deepest pixel first; explainers.controlled.break_ties), so no "
        "evaluation breaks ties at random; protocol: ties left to each evaluation's "
        "seeded tie-break (runs before issue 44)",
    )


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
    epsilons: list[float] = setting(
        default_factory=lambda: [36 / 255, 64 / 255, 0.3, 0.5, 0.7, 0.9, 1.1], minItems=1, items={"exclusiveMinimum": 0}
    )
    num_steps: int = setting(50, minimum=1)
    step_size: Optional[float] = setting(None, exclusiveMinimum=0, description="null: step_scale * epsilon / num_steps")
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
    ties: Literal["compact", "protocol"] = ties_setting()


@dataclass(frozen=True)
class RandomiseModelSettings(Settings):
    """`base` run on a copy of the model whose last `fraction` of parameterised
    layers is re-initialised (Adebayo et al. 2018's cascading model-parameter
    randomisation); base_settings are validated as the base's own settings."""

    base: str = setting(description="a registered explainer method (not randomise_model itself)")
    fraction: float = setting(
        minimum=0,
        maximum=1,
        description="fraction of the model's parameterised layers re-initialised, counted "
        "from the output end (rounded half up): 0 = the trained model, "
        "1 = every layer",
    )
    base_settings: dict = setting(default_factory=dict, description="the base explainer's own settings")
    seed: int = setting(0, description="seed of the re-initialised parameters (the same for every image)")


@dataclass(frozen=True)
class RandomSmoothSettings(Settings):
    """The `random` map (its seeds) smoothed and matched back to its own values
    (fudbench.explainers.controlled.RandomSmooth): a scatter control."""

    sigma: float = setting(2.0, exclusiveMinimum=0, description="Gaussian sigma in pixels")


@dataclass(frozen=True)
class ReorderSettings(Settings):
    """`base`'s top set ordered compactly or scattered (a scatter pair)."""

    base: str = setting(description="a registered explainer method whose top set is reordered (e.g. oracle)")
    order: Literal["compact", "scattered"] = setting("compact")
    base_settings: dict = setting(default_factory=dict, description="the base explainer's own settings")
    ties: Literal["compact", "protocol"] = ties_setting()


@dataclass(frozen=True)
class TranslateSettings(Settings):
    """`base`'s map moved by `shift` px in a seeded direction (circular)."""

    base: str = setting(description="a registered explainer method")
    shift: float = setting(minimum=0, description="pixels the map moves (the family's level: less is better)")
    base_settings: dict = setting(default_factory=dict, description="the base explainer's own settings")
    ties: Literal["compact", "protocol"] = ties_setting()


@dataclass(frozen=True)
class DisplaceSettings(Settings):
    """`base`'s top set moved by `shift` px inward (no wrap), then made strict."""

    base: str = setting(description="a registered explainer method whose top set moves (e.g. oracle: the cue)")
    shift: float = setting(minimum=0, description="pixels the set moves (the family's level: less is better)")
    max_shift: float = setting(
        8.0,
        minimum=0,
        description="the family's largest shift: the seeded direction keeps "
        "the set inside the image at it (the same for every "
        "member)",
    )
    base_settings: dict = setting(default_factory=dict, description="the base explainer's own settings")


@dataclass(frozen=True)
class GradedCueSettings(Settings):
    """The graded cue family's member (explainers.graded): `shift` of the cue's pixels swapped out of the
    kept window at the cut."""

    base: str = setting(description="a registered explainer method whose top set is the cue (oracle)")
    shift: int = setting(minimum=0, description="cue pixels swapped for decoy pixels at the cut (less is better)")
    cut: float = setting(0.5, minimum=0, maximum=1, description="the kept fraction at which the members differ")
    module: Literal[16, 24, 32, 48, 64] = setting(32, description="outline of the module's kept pattern: the scatter")
    base_settings: dict = setting(default_factory=dict, description="the base explainer's own settings")


@dataclass(frozen=True)
class BlockShuffleSettings(Settings):
    """A fraction of `base`'s block x block tiles shuffled as whole tiles."""

    base: str = setting(description="a registered explainer method")
    fraction: float = setting(minimum=0, maximum=1, description="share of the tiles moved")
    base_settings: dict = setting(default_factory=dict, description="the base explainer's own settings")
    block: int = setting(4, minimum=1, description="tile side in pixels (must divide the image size)")
    ties: Literal["compact", "protocol"] = ties_setting()


@dataclass(frozen=True)
class CaptumSettings(Settings):
    """Any supported captum.attr class by name (fudbench.explainers.field_names.CAPTUM)."""

    attr: str = setting(description="the captum.attr class: " + ", ".join(sorted(CAPTUM)))
    settings: dict = setting(default_factory=dict, description="keyword arguments of its attribute()")
    init: dict = setting(default_factory=dict, description="keyword arguments of its constructor")
    baseline: Literal["zero", "mean", "references"] = setting(
        "zero",
        description="zero image, the image's channel means, or n_baselines images drawn (per image, "
        "seeded) from the references (DeepLiftShap, GradientShap)",
    )
    n_baselines: int = setting(8, minimum=1, description="references drawn per image (baseline: references)")
    feature_patch: Optional[int] = setting(
        None,
        minimum=1,
        description="features are square patches of this side shared across channels; null: every input element",
    )
    noise_tunnel: Optional[dict] = setting(None, description="wrap in captum's NoiseTunnel with these keywords")

    def problems(self, key: str) -> list[str]:
        if self.attr not in CAPTUM:
            why = captum_excluded(self.attr)
            return [
                f"config key '{key}.attr': {self.attr!r} is not run"
                + (f" ({why})" if why else "")
                + f"; supported: {', '.join(sorted(CAPTUM))}"
            ]
        spec, problems = CAPTUM[self.attr], []
        problems += unknown_keys(
            f"{key}.settings", self.settings, spec.kwargs, f"{self.attr}.attribute() setting", CAPTUM_RESERVED
        )
        problems += [
            f"config key '{key}.settings.{k}': {self.attr} needs it" for k in spec.required if k not in self.settings
        ]
        problems += unknown_keys(f"{key}.init", self.init, spec.init, f"{self.attr} constructor setting")
        if spec.baselines == "none" and self.baseline != "zero":
            problems.append(f"config key '{key}.baseline': {self.attr} takes no baseline")
        if self.baseline == "references" and spec.baselines != "distribution":
            problems.append(
                f"config key '{key}.baseline': references are a baseline distribution, for "
                f"{', '.join(n for n, s in CAPTUM.items() if s.baselines == 'distribution')} only"
            )
        if self.attr == "DeepLiftShap" and self.baseline != "references":
            problems.append(
                f"config key '{key}.baseline': DeepLiftShap averages over a baseline distribution: "
                f"set baseline: references"
            )
        if self.feature_patch is not None and not spec.features:
            problems.append(f"config key '{key}.feature_patch': {self.attr} takes no feature mask")
        if self.noise_tunnel is not None:
            if not spec.gradient:
                problems.append(
                    f"config key '{key}.noise_tunnel': only gradient methods are wrapped "
                    f"({', '.join(n for n, s in CAPTUM.items() if s.gradient)})"
                )
            problems += unknown_keys(f"{key}.noise_tunnel", self.noise_tunnel, NOISE_TUNNEL_KEYS, "NoiseTunnel setting")
            if self.noise_tunnel.get("nt_type", "smoothgrad") not in NT_TYPES:
                problems.append(
                    f"config key '{key}.noise_tunnel.nt_type': {self.noise_tunnel['nt_type']!r}; "
                    f"allowed: {', '.join(NT_TYPES)}"
                )
        return problems


@dataclass(frozen=True)
class CAMSettings(Settings):
    """A pytorch-grad-cam CAM by name (fudbench.explainers.field_names.CAMS)."""

    cam: str = setting("GradCAM", description="the pytorch_grad_cam class: " + ", ".join(sorted(CAMS)))
    target_layer: Optional[str] = setting(
        None,
        description="dotted module name (of the model or, for the "
        "workflow's classifiers, of their network `net`); null: automatic",
    )
    options: dict = setting(default_factory=dict, description="constructor keywords of the CAM class")
    aug_smooth: bool = setting(False, description="average over flips and brightness changes (test-time augmentation)")
    eigen_smooth: bool = setting(False, description="first principal component of the weighted activations")

    def problems(self, key: str) -> list[str]:
        if self.cam not in CAMS:
            why = CAMS_EXCLUDED.get(self.cam)
            return [
                f"config key '{key}.cam': {self.cam!r} is not run"
                + (f" ({why})" if why else "")
                + f"; supported: {', '.join(sorted(CAMS))}"
            ]
        return unknown_keys(f"{key}.options", self.options, CAMS[self.cam], f"{self.cam} option")


@dataclass(frozen=True)
class LRPSettings(Settings):
    """zennit's Gradient attributor with a composite (fudbench.explainers.field_names.COMPOSITES)."""

    composite: str = setting("EpsilonPlusFlat", description="the zennit composite: " + ", ".join(sorted(COMPOSITES)))
    canonizer: Literal["auto", "none", "resnet", "merge_batchnorm"] = setting(
        "auto",
        description="auto: ResNetCanonizer for torchvision ResNets, SequentialMergeBatchNorm for other "
        "networks with batch norm, none otherwise",
    )
    options: dict = setting(default_factory=dict, description="keywords of the composite (epsilon, gamma, ...)")

    def problems(self, key: str) -> list[str]:
        if self.composite not in COMPOSITES:
            return [f"config key '{key}.composite': {self.composite!r}; supported: {', '.join(sorted(COMPOSITES))}"]
        return unknown_keys(f"{key}.options", self.options, COMPOSITES[self.composite], f"{self.composite} option")


SETTINGS = {
    "agi": AGISettings,
    "attexplore": AttExploreSettings,
    "big": BIGSettings,
    "eg": EGSettings,
    "fig": NoSettings,
    "gig": GIGSettings,
    "ig": IGSettings,
    "isa": ISASettings,
    "la": LASettings,
    "mfaba": MFABASettings,
    "sm": SaliencySettings,
    "random": NoSettings,
    "oracle": NoSettings,
    "background": NoSettings,
    "degrade": DegradeSettings,
    "randomise_model": RandomiseModelSettings,
    "random_smooth": RandomSmoothSettings,
    "reorder": ReorderSettings,
    "translate": TranslateSettings,
    "block_shuffle": BlockShuffleSettings,
    "displace": DisplaceSettings,
    "graded_cue": GradedCueSettings,
    "graded_cue_opposing": GradedCueSettings,
    "captum": CaptumSettings,
    "cam": CAMSettings,
    "lrp": LRPSettings,
}
