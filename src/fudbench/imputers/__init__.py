"""Imputers: how removed pixels are filled.

    Imputer.fill(x, keep_mask, context) -> x_filled

x: (N, C, H, W) in [0, 1]; keep_mask: (N, 1, H, W), 1 = keep. Every imputer
returns kept pixels unchanged (bit for bit) and filled values in [0, 1].
By name (evaluator configs): fudbench.imputers.factory.build_imputer.

The classes are imported on first use, so that torch-free code (the
evaluator specs, parse-time config checks) can import the settings modules
of this package without loading torch.

Floor 2: imports fudbench.core, fudbench.data and fudbench.models.
"""

import importlib

_EXPORTS = {
    "ImputeContext": "base",
    "Imputer": "base",
    "BlurImputer": "simple",
    "ZeroImputer": "simple",
    "BoxBlurImputer": "baselines",
    "GaussianNoiseImputer": "baselines",
    "HistogramImputer": "baselines",
    "MaxDistanceImputer": "baselines",
    "MeanImputer": "baselines",
    "SampleAverageImputer": "baselines",
    "TeleaImputer": "baselines",
    "TrainSetImputer": "baselines",
    "UniformNoiseImputer": "baselines",
    "NoisyLinearImputer": "noisy_linear",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
