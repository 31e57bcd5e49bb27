"""The sampler parts' settings: one frozen dataclass per part, fields named as
the config keys, the one home of their defaults and constraints.

    RuntimeSettings     runtime.py       amp_dtype, channels_last, compile
    StepSettings        steps.py         steps, clip_x0
    GuidanceSettings    guidance.py      guidance_scale, guidance_start, guidance_schedule
    ConstraintSettings  constraints.py   known (KnownSettings), constraint, soft_sigma

A builder takes the flat union of its parts' fields (FUD_SAMPLER_SETTINGS,
PLAIN_SAMPLER_SETTINGS). problems(key) lists what the JSON schema cannot say
(or, for direct use, what it says too); the parts reject such settings when
built (`check`). Torch-free: the evaluator specs import it at parse time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from fudbench.settings import Settings, defaults, setting

# amp_dtype name -> torch dtype name. The config takes null, bf16 or fp16; the rest are aliases for scripts.
AMP_DTYPE_NAMES = {None: None, "none": None, "fp32": None, "float32": None,
                   "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16"}
CONSTRAINTS = ("hard", "soft")
KNOWN = ("clean", "renoise")
GUIDANCE_SCHEDULES = ("threshold", "last_steps")


def _where(key: str, field: str) -> str:
    return f"config key '{key}.{field}': " if key else f"{field}: "


@dataclass(frozen=True)
class RuntimeSettings(Settings):
    amp_dtype: Optional[str] = setting(None, schema={"enum": [None, "bf16", "fp16"]},
                                       description="U-Net under torch.autocast in this dtype, GroupNorm in fp32 "
                                                   "(null = fp32)")
    channels_last: bool = setting(False, description="U-Net in channels_last memory format")
    compile: bool = setting(False, description="torch.compile the U-Net")

    def problems(self, key: str) -> list[str]:
        if self.amp_dtype not in AMP_DTYPE_NAMES:
            return [f"{_where(key, 'amp_dtype')}must be one of None, 'bf16', 'fp16', 'fp32'; got {self.amp_dtype!r}"]
        return []


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
    guidance_start: float = setting(0.05, minimum=0, maximum=1,
                                    description="anti-class guidance on for t < guidance_start * T (see "
                                                "guidance_schedule)")
    guidance_schedule: Literal["threshold", "last_steps"] = setting(
        "threshold", description="which sampled steps are guided: threshold (paper) = those with t < "
                                 "guidance_start * T; last_steps = the last ceil(100 * guidance_start) sampled "
                                 "steps, as many as threshold guides at the paper's 100 steps, whatever the "
                                 "step count")

    def problems(self, key: str) -> list[str]:
        if self.guidance_schedule not in GUIDANCE_SCHEDULES:
            return [f"{_where(key, 'guidance_schedule')}must be one of {GUIDANCE_SCHEDULES}, "
                    f"got {self.guidance_schedule!r}"]
        return []


@dataclass(frozen=True)
class KnownSettings(Settings):
    known: Literal["clean", "renoise"] = setting(
        "clean", description="kept pixels from x_T on: clean (paper) | renoise (RePaint-style: at the current "
                             "noise level, a draw from q(x_t | x))")

    def problems(self, key: str) -> list[str]:
        if self.known not in KNOWN:
            return [f"{_where(key, 'known')}must be 'clean' or 'renoise', got {self.known!r}"]
        return []


@dataclass(frozen=True)
class ConstraintSettings(KnownSettings):
    constraint: Literal["hard", "soft"] = setting(
        "hard", description="kept pixels - hard overwrite (paper, default) or soft Gaussian likelihood (Table 5)")
    soft_sigma: float = setting(0.1, exclusiveMinimum=0, description="soft constraint's sigma in [-1, 1] pixel units")

    def problems(self, key: str) -> list[str]:
        # Named, not super(): an evaluator's settings class may inherit several parts.
        out = KnownSettings.problems(self, key)
        if self.constraint not in CONSTRAINTS:
            out.append(f"{_where(key, 'constraint')}must be one of {CONSTRAINTS}, got {self.constraint!r}")
        if self.constraint == "soft" and self.known != "clean":
            out.append(f"{_where(key, 'known')}constraint 'soft' observes the clean kept pixels; "
                       "use known: clean with it")
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
