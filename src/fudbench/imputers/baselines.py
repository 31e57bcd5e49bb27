"""Baseline imputers of the appendix protocols (SRG/R-OMS, ROAD, IDSDS,
Distill, Gevaert): constant, noise, reference-image, histogram, inpainting and
blur fills.

Conventions shared with the other imputers: images (N, C, H, W) in [0, 1],
keep_mask (N, 1, H, W) with 1 = keep; kept pixels come back bit for bit
(`compose`), fills are clamped to [0, 1]. Stochastic imputers draw their
randomness from one CPU torch.Generator per sample seeded with
context.seeds[i], so a batched call equals per-sample calls on any device.

Each declares `stochastic` (Imputer's ability: whether repeated fills can
differ), which protocols that average several imputations (SRG) read.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from fudbench.imputers.base import ImputeContext, Imputer, compose

# Fill of images with no kept pixel for the imputers that need context
# (telea, noisy-linear): there is nothing to condition on, so mid-grey.
NOTHING_KEPT_FILL = 0.5


def _seeds(context: Optional[ImputeContext], n: int, who: str) -> list[int]:
    if context is None or context.seeds is None or len(context.seeds) != n:
        raise ValueError(f"{who} is stochastic: it needs one seed per sample in context.seeds ({n} samples)")
    return [int(s) for s in context.seeds]


def per_sample_noise(x: torch.Tensor, seeds: Sequence[int], kind: str) -> torch.Tensor:
    """Noise shaped like x, sample i from its own CPU generator (kind: 'normal' | 'uniform')."""
    draw = torch.randn if kind == "normal" else torch.rand
    out = torch.empty(x.shape, dtype=torch.float32)
    for i, s in enumerate(seeds):
        out[i] = draw(x.shape[1:], generator=torch.Generator().manual_seed(int(s)))
    return out.to(x.device, x.dtype)


def model_normalisation(classifier) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, std), each (1, C, 1, 1), of a fudbench Classifier's input
    normalisation: the 'zero' and 'unit' of the model's own input space."""
    norm = getattr(classifier, "normalize", None)
    if norm is None or not hasattr(norm, "mean") or not hasattr(norm, "std"):
        raise ValueError(
            "this fill is defined in the classifier's normalised input space, but the model "
            f"({type(classifier).__name__}) has no .normalize.mean/.std; pass explicit values instead"
        )
    return norm.mean, norm.std


def _channel_values(values, x: torch.Tensor, what: str) -> torch.Tensor:
    v = torch.as_tensor(values, dtype=x.dtype, device=x.device).flatten()
    if v.numel() == 1:
        v = v.expand(x.shape[1])
    if v.numel() != x.shape[1]:
        raise ValueError(f"{what}: {v.numel()} values for {x.shape[1]} channels")
    return v.view(1, -1, 1, 1)


class MeanImputer(Imputer):
    """Constant channel-wise dataset mean (SRG's 'mean'). mean=None takes the
    classifier's normalisation mean, i.e. 0 in the model's input space (the
    'zero' of Hesse et al. and attribench, whose models see normalised images)."""

    name = "mean"
    stochastic = False

    def __init__(self, mean: Optional[Sequence[float]] = None):
        self.mean = None if mean is None else [float(m) for m in np.ravel(mean)]

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        if self.mean is None:
            if context is None or context.classifier is None:
                raise ValueError("MeanImputer without an explicit mean needs context.classifier")
            mean = model_normalisation(context.classifier)[0].to(x)
        else:
            mean = _channel_values(self.mean, x, "MeanImputer mean")
        return compose(x, keep_mask, mean.expand_as(x))


class SampleAverageImputer(Imputer):
    """Constant channel-wise mean of the image itself (attribench's sample average)."""

    name = "sample_average"
    stochastic = False

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        return compose(x, keep_mask, x.mean(dim=(2, 3), keepdim=True).expand_as(x))


class UniformNoiseImputer(Imputer):
    """Independent U(low, high) per pixel and channel (Distill's uniform baseline)."""

    name = "uniform"
    stochastic = True

    def __init__(self, low: float = 0.0, high: float = 1.0):
        if not high > low:
            raise ValueError(f"uniform noise needs high > low, got [{low}, {high}]")
        self.low, self.high = float(low), float(high)

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        u = per_sample_noise(x, _seeds(context, len(x), "UniformNoiseImputer"), "uniform")
        return compose(x, keep_mask, self.low + (self.high - self.low) * u)


class GaussianNoiseImputer(Imputer):
    """Gaussian noise fill, clamped to [0, 1].

    around_image=True: x + std * z (Distill's Gaussian baseline, centred on the
    image). Otherwise mean + std * z; with model_space=True these numbers live in
    the classifier's normalised input space (attribench's N(0, 1) masker: mean 0,
    std 1 there), mapped back to [0, 1] through its normalisation.
    """

    name = "gaussian"
    stochastic = True

    def __init__(self, std: float = 1.0, mean: float = 0.0, around_image: bool = False, model_space: bool = False):
        if std < 0:
            raise ValueError(f"Gaussian noise std must be >= 0, got {std}")
        if around_image and model_space:
            raise ValueError("around_image and model_space exclude each other")
        self.std, self.mean = float(std), float(mean)
        self.around_image, self.model_space = around_image, model_space

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        z = per_sample_noise(x, _seeds(context, len(x), "GaussianNoiseImputer"), "normal")
        if self.around_image:
            filler = x + self.std * z
        elif self.model_space:
            if context is None or context.classifier is None:
                raise ValueError("GaussianNoiseImputer(model_space=True) needs context.classifier")
            m, s = (t.to(x) for t in model_normalisation(context.classifier))
            filler = m + s * (self.mean + self.std * z)
        else:
            filler = self.mean + self.std * z
        return compose(x, keep_mask, filler)


class TrainSetImputer(Imputer):
    """Removed pixels from one random reference image per sample (SRG's 'train
    set': the optimal marginal imputer). references: (M, C, H, W) uint8 or float
    in [0, 1], same C, H, W as the evaluated images."""

    name = "train_set"
    stochastic = True

    def __init__(self, references):
        refs = torch.as_tensor(references)
        if refs.dim() != 4 or len(refs) < 1:
            raise ValueError(f"train-set references must be (M, C, H, W) with M >= 1, got {tuple(refs.shape)}")
        self.references = refs  # kept in their dtype (uint8 = 4x smaller); converted on use

    def _image(self, k: int) -> torch.Tensor:
        r = self.references[k]
        return r.float() / 255 if r.dtype == torch.uint8 else r.float()

    def pick(self, seeds: Sequence[int]) -> list[int]:
        """Index of the reference image each sample draws from."""
        return [
            int(torch.randint(len(self.references), (1,), generator=torch.Generator().manual_seed(int(s))))
            for s in seeds
        ]

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        if tuple(self.references.shape[1:]) != tuple(x.shape[1:]):
            raise ValueError(
                f"train-set references are {tuple(self.references.shape[1:])}, "
                f"images are {tuple(x.shape[1:])}: use reference images of the evaluated size"
            )
        idx = self.pick(_seeds(context, len(x), "TrainSetImputer"))
        filler = torch.stack([self._image(k) for k in idx]).to(x.device, x.dtype)
        return compose(x, keep_mask, filler)


class HistogramImputer(Imputer):
    """One constant colour per sample, drawn uniformly from the image's own
    pixels (Wei et al. 2018; SRG's 'histogram', the conditional analogue of the
    mean). Drawing a pixel gives each colour its histogram frequency."""

    name = "histogram"
    stochastic = True

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        seeds = _seeds(context, len(x), "HistogramImputer")
        n, c, h, w = x.shape
        picks = torch.tensor(
            [int(torch.randint(h * w, (1,), generator=torch.Generator().manual_seed(s))) for s in seeds],
            device=x.device,
        )
        colours = x.flatten(2)[torch.arange(n, device=x.device), :, picks]  # (N, C)
        return compose(x, keep_mask, colours.view(n, c, 1, 1).expand_as(x))


def _to_uint8_hwc(img: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray((img.detach().float().cpu().clamp(0, 1) * 255).round().byte().permute(1, 2, 0).numpy())


class TeleaImputer(Imputer):
    """OpenCV's Telea inpainting (SRG's 'cv2'), radius 3, on the uint8 image.

    The inpainted values are quantised to 1/255 (cv2 works on uint8); kept
    pixels are restored from the float input. An image with nothing kept
    becomes NOTHING_KEPT_FILL (cv2 returns undefined values there)."""

    name = "telea"
    stochastic = False

    def __init__(self, radius: float = 3.0):
        self.radius = float(radius)

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        import cv2  # lazy: only jobs that inpaint pay the import

        removed = (keep_mask[:, 0] < 0.5).cpu().numpy()
        out = torch.empty_like(x)
        for i in range(len(x)):
            if not removed[i].any():
                out[i] = x[i]
            elif removed[i].all():
                out[i] = NOTHING_KEPT_FILL
            else:
                painted = cv2.inpaint(
                    _to_uint8_hwc(x[i]), removed[i].astype(np.uint8) * 255, self.radius, cv2.INPAINT_TELEA
                )
                out[i] = torch.from_numpy(painted.reshape(*painted.shape[:2], -1)).permute(2, 0, 1).to(x) / 255
        return compose(x, keep_mask, out)


class BoxBlurImputer(Imputer):
    """Removed pixels from a box-blurred copy (attribench's blurring masker,
    cv2.blur with reflect-101 borders). Kernel side = round(fraction * width)
    unless `kernel` is given (Gevaert et al.: half the image width)."""

    name = "box_blur"
    stochastic = False

    def __init__(self, fraction: float = 0.5, kernel: Optional[int] = None):
        if kernel is None and not 0 < fraction <= 1:
            raise ValueError(f"box blur fraction must be in (0, 1], got {fraction}")
        if kernel is not None and kernel < 1:
            raise ValueError(f"box blur kernel must be >= 1, got {kernel}")
        self.fraction, self.kernel = float(fraction), kernel

    def kernel_size(self, width: int) -> int:
        return int(self.kernel) if self.kernel is not None else max(1, int(round(self.fraction * width)))

    def blurred(self, x: torch.Tensor) -> torch.Tensor:
        import cv2

        k = self.kernel_size(x.shape[-1])
        imgs = x.detach().float().cpu().permute(0, 2, 3, 1).numpy()
        out = np.stack([cv2.blur(np.ascontiguousarray(im), (k, k)).reshape(im.shape) for im in imgs])
        return torch.from_numpy(out).permute(0, 3, 1, 2).to(x)

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        return compose(x, keep_mask, self.blurred(x))


class MaxDistanceImputer(Imputer):
    """Per pixel and channel the value in [0, 1] farthest from the original
    (Sturmfels et al. 2020's maximum-distance baseline): 1 where x < 0.5, else 0."""

    name = "max_distance"
    stochastic = False

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        return compose(x, keep_mask, (x < 0.5).to(x.dtype))


__all__ = [
    "MeanImputer",
    "SampleAverageImputer",
    "UniformNoiseImputer",
    "GaussianNoiseImputer",
    "TrainSetImputer",
    "HistogramImputer",
    "TeleaImputer",
    "BoxBlurImputer",
    "MaxDistanceImputer",
    "model_normalisation",
    "per_sample_noise",
    "NOTHING_KEPT_FILL",
]
