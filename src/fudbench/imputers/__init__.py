"""Imputers: how removed pixels are filled.

    Imputer.fill(x, keep_mask, context) -> x_filled

x: (N, C, H, W) in [0, 1]; keep_mask: (N, 1, H, W), 1 = keep. Every imputer
returns kept pixels unchanged (bit for bit) and filled values in [0, 1].
"""
from fudbench.imputers.base import ImputeContext, Imputer  # noqa: F401
from fudbench.imputers.simple import BlurImputer, ZeroImputer  # noqa: F401
from fudbench.imputers.baselines import (  # noqa: F401
    BoxBlurImputer, GaussianNoiseImputer, HistogramImputer, MaxDistanceImputer, MeanImputer, SampleAverageImputer,
    TeleaImputer, TrainSetImputer, UniformNoiseImputer)
from fudbench.imputers.noisy_linear import NoisyLinearImputer  # noqa: F401
# By name (evaluator configs): fudbench.imputers.factory.build_imputer
