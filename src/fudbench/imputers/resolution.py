"""Running a diffusion imputer at its own resolution for images of another size.

The paper profile's classifiers see 224x224 crops; guided-diffusion's U-Net is
a 256x256 model. Choice (../shared/spec/paper.md, Resolution):

    x_256 = upsample(x_224)                  bilinear
    M_256 = nearest(M_224)                   a 256-pixel is kept iff its nearest 224-pixel is
    guidance sees classifier(down(x_t))      down = differentiable antialiased bilinear 256 -> 224
    x_0   = down(sampler(x_256, M_256))
    out   = M_224 * x_224 + (1 - M_224) * x_0     kept pixels restored exactly at 224

When the images already have the model's size the wrapper calls the inner
imputer unchanged, so it can wrap every diffusion imputer.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from fudbench.imputers.base import ImputeContext, Imputer, compose, takes_x0_hat


def resize_images(x: torch.Tensor, size: int) -> torch.Tensor:
    """Bilinear resize; antialiased when shrinking (as torchvision resizes), differentiable."""
    if x.shape[-1] == size and x.shape[-2] == size:
        return x
    shrink = size < x.shape[-1]
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=shrink)


def resize_mask(keep_mask: torch.Tensor, size: int) -> torch.Tensor:
    return F.interpolate(keep_mask.float(), size=(size, size), mode="nearest").to(keep_mask.dtype)


def _resized_callback(callback, size: int):
    """A sampler callback that hands the wrapped one images of the given size."""
    if callback is None:
        return None
    if takes_x0_hat(callback):

        def resized(step, t, x_t, x0_hat=None):
            kwargs = {} if x0_hat is None else {"x0_hat": resize_images(x0_hat, size)}
            callback(step, t, resize_images(x_t, size), **kwargs)
    else:

        def resized(step, t, x_t):
            callback(step, t, resize_images(x_t, size))

    return resized


class ResizedClassifier(nn.Module):
    """A classifier seen through a resize: model-resolution images in, logits out.
    The guidance gradient flows through the resize back to the sampler's x_t."""

    def __init__(self, classifier: nn.Module, size: int):
        super().__init__()
        self.classifier = classifier
        self.size = size

    def forward(self, x):
        return self.classifier(resize_images(x, self.size))


class ResizedDiffusionImputer(Imputer):
    """Wraps a diffusion imputer (a DiffusionImputer) whose U-Net works at `model_size` pixels."""

    def __init__(self, inner, model_size: int):
        self.inner = inner
        self.model_size = int(model_size)
        self.name = inner.name

    @property
    def stochastic(self) -> bool:
        return self.inner.stochastic

    def bytes_per_sample(self, sample_shape, device):
        """The inner sampler's memory estimate (batch fitting), at the model's size."""
        return self.inner.bytes_per_sample((sample_shape[0], self.model_size, self.model_size), device)

    def with_steps(self, steps: int) -> "ResizedDiffusionImputer":
        """The same bridge over the inner sampler at another DDIM step count (the same U-Net
        and compiled forward): Table 10's timing job loads and compiles the U-Net once."""
        return ResizedDiffusionImputer(self.inner.with_steps(steps), self.model_size)

    def warm_up(self, x: torch.Tensor) -> bool:
        """The inner sampler's warm-up for a batch like x, at the shape its U-Net will see."""
        runtime = getattr(self.inner, "runtime", None)
        if runtime is None:
            return False
        shape = x.shape if not self._needs_bridge(x) else (*x.shape[:-2], self.model_size, self.model_size)
        return runtime.warm_up(shape[0], tuple(shape[1:]), x.device)

    def __getattr__(self, attr):
        # Settings of the wrapped sampler (steps, guided_timesteps, ...), but not its
        # methods: a method called on the inner sampler would skip the bridge and run
        # the U-Net at the images' size, so callers only see fill() and sample() here.
        if attr == "inner":  # not set yet (e.g. during unpickling)
            raise AttributeError(attr)
        value = getattr(self.inner, attr)
        if callable(value):
            raise AttributeError(f"{type(self).__name__} does not forward method {attr!r} of the inner sampler")
        return value

    def _needs_bridge(self, x) -> bool:
        h, w = x.shape[-2:]
        if h != w:
            raise ValueError(f"resolution bridging needs square images, got {h}x{w}")
        return h != self.model_size

    def _context(self, context: ImputeContext, size: int) -> ImputeContext:
        classifier = None if context.classifier is None else ResizedClassifier(context.classifier, size)
        return dataclasses.replace(context, classifier=classifier)

    def sample(
        self, x: torch.Tensor, keep_mask: torch.Tensor, context: ImputeContext, trace: bool = False, callback=None
    ):
        """As the inner sampler's sample(), at the images' size: callbacks see x_t (and
        x0_hat) resized to it; traced distances ||x_t - x|| are measured at the model's
        resolution and rescaled by size / model_size (same RMS per pixel, expressed for
        the images' pixel count). With the soft constraint the output is not composed:
        its kept pixels are the sampler's own, as without bridging."""
        if not self._needs_bridge(x):
            return self.inner.sample(x, keep_mask, context, trace=trace, callback=callback)
        size = x.shape[-1]
        up = resize_images(x, self.model_size).clamp(0, 1)
        out, distances = self.inner.sample(
            up,
            resize_mask(keep_mask, self.model_size),
            self._context(context, size),
            trace=trace,
            callback=_resized_callback(callback, size),
        )
        out = resize_images(out, size)
        out = compose(x, keep_mask, out) if self.inner.copies_kept_pixels else out.clamp(0, 1)
        return out, (None if distances is None else distances * (size / self.model_size))

    def fill(self, x: torch.Tensor, keep_mask: torch.Tensor, context: ImputeContext) -> torch.Tensor:
        if not self._needs_bridge(x):
            return self.inner.fill(x, keep_mask, context)
        return self.sample(x, keep_mask, context)[0]


def bridge_resolution(imputer, unet) -> Imputer:
    """The imputer, wrapped when its U-Net has a fixed sample size (images of another
    size are bridged; images of that size pass straight through)."""
    size = getattr(getattr(unet, "config", None), "sample_size", None)
    return imputer if size is None else ResizedDiffusionImputer(imputer, size)
