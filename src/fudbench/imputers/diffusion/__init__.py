"""FUD's diffusion sampler in parts (the algorithm: loop.py).

    settings.py     the parts' settings dataclasses (config keys, defaults, constraints; torch-free)
    runtime.py      ScoreModelRuntime   precision, memory layout, torch.compile, eps forward, memory probe
    steps.py        DDIMSteps           DDIM timesteps and alphas, ddim_step
    guidance.py     AntiClassGuidance   FUD's guidance away from the class (NoGuidance: none)
    constraints.py  HardConstraint      kept pixels: clean overwrite, DDIMRenoiseConstraint,
                                        FreshRenoiseConstraint, SoftConstraint
    loop.py         DiffusionImputer    the inpainting loop over those parts (RePaint resampling included)
    builders.py     fud_sampler, plain_sampler: the samplers from flat config dicts

The names below are imported on first use, so that the torch-free settings
module can be imported without torch.
"""

import importlib

_EXPORTS = {
    "AMP_DTYPE_NAMES": "settings",
    "CONSTRAINTS": "settings",
    "FUD_SAMPLER_SETTINGS": "settings",
    "PLAIN_SAMPLER_SETTINGS": "settings",
    "ConstraintSettings": "settings",
    "GuidanceSettings": "settings",
    "KnownSettings": "settings",
    "PlainStepSettings": "settings",
    "ResampleSettings": "settings",
    "RuntimeSettings": "settings",
    "StepSettings": "settings",
    "settings_defaults": "settings",
    "AMP_DTYPES": "runtime",
    "ScoreModelRuntime": "runtime",
    "group_norm_in_fp32": "runtime",
    "DDIMSteps": "steps",
    "ddim_step": "steps",
    "renoise": "steps",
    "resample_schedule": "steps",
    "AntiClassGuidance": "guidance",
    "NoGuidance": "guidance",
    "HardConstraint": "constraints",
    "DDIMRenoiseConstraint": "constraints",
    "FreshRenoiseConstraint": "constraints",
    "SoftConstraint": "constraints",
    "constraint_part": "constraints",
    "DiffusionImputer": "loop",
    "fud_sampler": "builders",
    "plain_sampler": "builders",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
