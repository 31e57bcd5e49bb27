"""The sampler parts' settings: one frozen dataclass per part, fields named as
the config keys, the one home of their defaults and constraints.

    RuntimeSettings     runtime.py       amp_dtype, channels_last, compile
    StepSettings        steps.py         steps, clip_x0
    GuidanceSettings    guidance.py      guidance_scale, guidance_start, guidance_schedule
    ConstraintSettings  constraints.py   known (KnownSettings), constraint, soft_sigma,
                        loop.py          resamplings, jump_length (ResampleSettings)

A builder takes the flat union of its parts' fields (FUD_SAMPLER_SETTINGS,
PLAIN_SAMPLER_SETTINGS). problems(key) lists what the JSON schema cannot say
(or, for direct use, what it says too); the parts reject such settings when
built (`check`). Torch-free: the evaluator specs import it at parse time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Union

from fudbench.core.settings import Settings, defaults, setting
from fudbench.core.hardware import AMP_DTYPE_NAMES  # noqa: F401  (amp_dtype names, beside the probe that resolves "auto")

CONSTRAINTS = ("hard", "soft")
KNOWN = ("clean", "renoise_ddim", "renoise_fresh", "renoise")
KNOWN_ALIASES = {"renoise": "renoise_ddim"}  # `renoise` means DDIM's rule (before: the fresh rule, renoise_fresh)
GUIDANCE_SCHEDULES = ("threshold", "last_steps")


def _where(key: str, field: str) -> str:
    return f"config key '{key}.{field}': " if key else f"{field}: "


@dataclass(frozen=True)
class RuntimeSettings(Settings):
    amp_dtype: Optional[str] = setting(
        "auto",
        schema={"enum": ["auto", None, "bf16", "fp16"]},
        description="U-Net under torch.autocast in this dtype, GroupNorm in fp32 "
        "(null = fp32; auto = bf16 where the device computes it "
        "natively, else fp32 on a CPU and fp16 on an older GPU)",
    )
    channels_last: Union[bool, str] = setting(
        "auto",
        schema={"enum": ["auto", True, False]},
        description="U-Net in channels_last memory format (auto = on "
        "a CPU, where it was measured faster; off on a GPU, "
        "where it was measured 34% slower)",
    )
    compile: Union[bool, str] = setting(
        "auto",
        schema={"enum": ["auto", True, False]},
        description="torch.compile the U-Net, one graph per batch shape, compiled "
        "before the timed part; falls back to eager with a log line "
        "where compilation fails (auto = on a CUDA GPU of compute "
        "capability >= 7.0, off on a CPU)",
    )

    def problems(self, key: str) -> list[str]:
        out = []
        if self.amp_dtype not in AMP_DTYPE_NAMES:
            out.append(
                f"{_where(key, 'amp_dtype')}must be one of 'auto', None, 'bf16', 'fp16', 'fp32'; got {self.amp_dtype!r}"
            )
        for name in ("channels_last", "compile"):
            if getattr(self, name) not in ("auto", True, False):
                out.append(f"{_where(key, name)}must be auto, true or false; got {getattr(self, name)!r}")
        return out


@dataclass(frozen=True)
class StepSettings(Settings):
    steps: int = setting(100, minimum=1, description="DDIM steps (paper: 100)")
    clip_x0: bool = setting(True, description="clip the predicted x0 to [-1, 1] (guided-diffusion's DDIM)")

    def problems(self, key: str) -> list[str]:
        return [] if self.steps >= 1 else [f"{_where(key, 'steps')}must be >= 1, got {self.steps}"]


@dataclass(frozen=True)
class PlainStepSettings(StepSettings):
    steps: int = setting(50, minimum=1, description="DDIM steps")  # diffusion_plain: half FUD's paper default


@dataclass(frozen=True)
class GuidanceSettings(Settings):
    guidance_scale: float = setting(4.0, minimum=0, description="anti-class guidance scale s (0 = off)")
    guidance_start: float = setting(
        0.05,
        minimum=0,
        maximum=1,
        description="anti-class guidance on for t < guidance_start * T (see guidance_schedule)",
    )
    guidance_schedule: Literal["threshold", "last_steps"] = setting(
        "threshold",
        description="which sampled steps are guided: threshold (paper) = those with t < "
        "guidance_start * T; last_steps = the last ceil(100 * guidance_start) sampled "
        "steps, as many as threshold guides at the paper's 100 steps, whatever the "
        "step count",
    )

    def problems(self, key: str) -> list[str]:
        if self.guidance_schedule not in GUIDANCE_SCHEDULES:
            return [
                f"{_where(key, 'guidance_schedule')}must be one of {GUIDANCE_SCHEDULES}, got {self.guidance_schedule!r}"
            ]
        return []


@dataclass(frozen=True)
class KnownSettings(Settings):
    known: Literal["clean", "renoise_ddim", "renoise_fresh", "renoise"] = setting(
        "clean",
        description="kept pixels from x_T on: clean (paper: the clean image) | renoise_ddim (at the "
        "current noise level on DDIM's eta = 0 path: sqrt(abar_t) x + sqrt(1 - abar_t) eps "
        "with x_T's own eps, one draw per sample) | renoise_fresh (a fresh draw from "
        "q(x_t | x) at every step: the DDPM / RePaint rule) | renoise (= renoise_ddim)",
    )

    def problems(self, key: str) -> list[str]:
        if self.known not in KNOWN:
            return [f"{_where(key, 'known')}must be one of {KNOWN}, got {self.known!r}"]
        return []

    @property
    def known_rule(self) -> str:
        """`known` with its alias resolved."""
        return KNOWN_ALIASES.get(self.known, self.known)


@dataclass(frozen=True)
class ResampleSettings(Settings):
    resamplings: int = setting(
        1,
        minimum=1,
        description="RePaint's resampling r (Lugmayr et al. 2022): at each "
        "jump point the last jump_length steps are redone r - 1 "
        "more times after re-noising x with q; 1 = none (paper)",
    )
    jump_length: int = setting(
        10,
        minimum=1,
        description="RePaint's jump length j: steps gone back per resampling (jump points every j steps from the end)",
    )

    def problems(self, key: str) -> list[str]:
        return [
            f"{_where(key, name)}must be >= 1, got {value!r}"
            for name, value in (("resamplings", self.resamplings), ("jump_length", self.jump_length))
            if not (isinstance(value, int) and value >= 1)
        ]


def jump_problems(steps, resampling: ResampleSettings, key: str) -> list[str]:
    """Resampling needs a jump point: jump_length below the DDIM step count."""
    if resampling.resamplings > 1 and resampling.jump_length >= steps:
        return [
            f"{_where(key, 'jump_length')}must be below steps ({steps}) for resamplings "
            f"({resampling.resamplings}) to resample anything, got {resampling.jump_length}"
        ]
    return []


@dataclass(frozen=True)
class ConstraintSettings(KnownSettings, ResampleSettings):
    constraint: Literal["hard", "soft"] = setting(
        "hard", description="kept pixels - hard overwrite (paper, default) or soft Gaussian likelihood (Table 5)"
    )
    soft_sigma: float = setting(0.1, exclusiveMinimum=0, description="soft constraint's sigma in [-1, 1] pixel units")

    def problems(self, key: str) -> list[str]:
        # Named, not super(): an evaluator's settings class may inherit several parts.
        out = KnownSettings.problems(self, key) + ResampleSettings.problems(self, key)
        if self.constraint not in CONSTRAINTS:
            out.append(f"{_where(key, 'constraint')}must be one of {CONSTRAINTS}, got {self.constraint!r}")
        if self.constraint == "soft" and self.known != "clean":
            out.append(
                f"{_where(key, 'known')}constraint 'soft' observes the clean kept pixels; use known: clean with it"
            )
        if not self.soft_sigma > 0:
            out.append(f"{_where(key, 'soft_sigma')}must be > 0, got {self.soft_sigma!r}")
        return out


FUD_SAMPLER_SETTINGS = (RuntimeSettings, StepSettings, GuidanceSettings, ConstraintSettings)
PLAIN_SAMPLER_SETTINGS = (PlainStepSettings, KnownSettings)


def settings_defaults(parts) -> dict:
    """{flat config key: default} of a builder's settings dataclasses."""
    return {key: value for part in parts for key, value in defaults(part).items()}


def check(settings: Settings) -> Settings:
    """settings, or a ValueError listing its problems."""
    problems = settings.problems("")
    if problems:
        raise ValueError("; ".join(problems))
    return settings
