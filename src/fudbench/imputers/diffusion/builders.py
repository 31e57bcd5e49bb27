"""The two samplers the workflow builds, from flat config dicts.

    fud_sampler(unet, schedule, settings)     FUD: anti-class guidance on (evaluators.fud)
    plain_sampler(unet, schedule, settings)   diffusion_plain: no guidance (SRG / ROAD imputer)

settings: the flat config keys of the builder's settings dataclasses
(settings.FUD_SAMPLER_SETTINGS, PLAIN_SAMPLER_SETTINGS), whose defaults fill
in missing keys; unknown keys are an error.
"""

from __future__ import annotations

import dataclasses

from fudbench.imputers.diffusion.constraints import constraint_part
from fudbench.imputers.diffusion.guidance import AntiClassGuidance, NoGuidance
from fudbench.imputers.diffusion.loop import DiffusionImputer
from fudbench.imputers.diffusion.runtime import ScoreModelRuntime
from fudbench.imputers.diffusion.settings import (
    FUD_SAMPLER_SETTINGS,
    PLAIN_SAMPLER_SETTINGS,
    ConstraintSettings,
    RuntimeSettings,
    settings_defaults,
)
from fudbench.imputers.diffusion.steps import DDIMSteps


def _parse(parts, settings: dict, who: str) -> list:
    """One settings instance per part from the flat dict (defaults for missing keys)."""
    allowed = settings_defaults(parts)
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ValueError(f"{who}: unknown setting(s) {unknown}; allowed: {', '.join(sorted(allowed))}")
    return [
        part(**{f.name: settings[f.name] for f in dataclasses.fields(part) if f.name in settings}) for part in parts
    ]


def fud_sampler(unet, schedule: dict, settings: dict) -> DiffusionImputer:
    """FUD's sampler (settings: evaluators.fud without batch_size)."""
    runtime, steps, guidance, constraint = _parse(FUD_SAMPLER_SETTINGS, settings, "fud_sampler")
    ddim = DDIMSteps(schedule, steps)
    return DiffusionImputer(
        ScoreModelRuntime(unet, runtime),
        ddim,
        AntiClassGuidance(guidance, ddim.T),
        constraint_part(constraint),
        resampling=constraint,
    )


# The plain imputer's fixed precision, eager everywhere: compile: auto (on a GPU) is FUD's default, chosen
# from FUD's measurement; the plain imputer's evaluators (SRG, ROAD) were not measured compiled.
FP32 = RuntimeSettings(amp_dtype=None, channels_last=False, compile=False)


def plain_sampler(unet, schedule: dict, settings: dict) -> DiffusionImputer:
    """The same loop without guidance, hard constraint, fp32: the seeds/002 diffusion imputer."""
    steps, known = _parse(PLAIN_SAMPLER_SETTINGS, settings, "diffusion_plain")
    return DiffusionImputer(
        ScoreModelRuntime(unet, FP32),
        DDIMSteps(schedule, steps),
        NoGuidance(),
        constraint_part(ConstraintSettings(known=known.known, constraint="hard")),
        name="diffusion_plain",
    )
