"""Penultimate features of a classifier, taken in the forward pass that gives its logits.

The penultimate features are the INPUT of the classifier's last `torch.nn.Linear`
module in `model.modules()` order: the fc of a ResNet, `heads.head` of
torchvision's ViT, `head` of the small CNN / ViT, whatever wrapper
(normalisation, `Classifier`) sits around them. A `FeatureTap` hooks that module
(and the model itself): every forward of the model attaches the features
(detached, flattened to (N, D)) to the returned logits tensor, so a caller
holding the logits holds their features without a second forward pass. The
hooks return nothing, so the logits are the same tensors as without them.

A model without any nn.Linear has no such features: `last_linear` raises
NoFeatures (a ValueError) naming the model (the reference job then writes an unavailable
reference and the detector columns are NaN; fudbench.analysis.feature_ood).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from torch import nn

FEATURES_ATTR = "_fud_features"  # attribute of a logits tensor: its (N, D) penultimate features
DETECTOR_ATTR = "_fud_detector"  # attribute of a logits tensor: the detector attached to its model


class NoFeatures(ValueError):
    """The classifier has no penultimate features to take (no nn.Linear, or its
    last Linear does not run once per image)."""


def last_linear(model: nn.Module, name: str = "model") -> tuple[str, nn.Linear]:
    """(qualified name, module) of the last nn.Linear in model.modules() order."""
    found = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    if not found:
        raise NoFeatures(
            f"classifier {name!r} ({type(model).__name__}) has no torch.nn.Linear module: the "
            f"feature-based OOD detectors read the input of its last Linear layer (the penultimate "
            f"features) and cannot score it"
        )
    return found[-1]


class FeatureTap:
    """Hooks on `model` that attach to each forward's logits the input of its last
    Linear (see the module docstring). `detector` (optional) is attached too:
    fudbench.protocols.base.sample_response scores the features with it.
    Use as a context manager or call close() to remove the hooks."""

    def __init__(self, model: nn.Module, name: str = "model", detector=None):
        self.layer_name, self.layer = last_linear(model, name)
        self.name, self.detector = name, detector
        self._pending: Optional[torch.Tensor] = None
        self._handles = [
            model.register_forward_pre_hook(self._start),
            self.layer.register_forward_hook(self._grab),
            model.register_forward_hook(self._done),
        ]

    def _start(self, module, args):
        self._pending = None

    def _grab(self, module, args, output):
        self._pending = args[0].detach()  # the last call of the layer in this forward wins

    def _done(self, module, args, output):
        features, self._pending = self._pending, None
        if features is None or not torch.is_tensor(output) or output.dim() < 1:
            return
        if len(features) != len(output):
            return  # not one feature row per logits row (e.g. a batch-first mismatch): no features
        setattr(output, FEATURES_ATTR, features.flatten(1))
        if self.detector is not None:
            setattr(output, DETECTOR_ATTR, self.detector)

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self) -> "FeatureTap":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def features_of(logits: torch.Tensor) -> Optional[torch.Tensor]:
    """The (N, D) penultimate features a FeatureTap attached to these logits, else None."""
    return getattr(logits, FEATURES_ATTR, None)


def _device_of(model: nn.Module):
    t = next(iter(list(model.parameters()) + list(model.buffers())), None)
    return t.device if t is not None else torch.device("cpu")


def penultimate_features(model: nn.Module, images, batch_size: int = 256, name: str = "model"):
    """(logits (N, classes) float32, features (N, D) float64) as numpy arrays, one
    forward pass per batch, no gradients. images: (N, C, H, W) in [0, 1] (float)
    or uint8 in [0, 255] (a tensor or an array, on any device: each batch is
    moved to the model's device)."""
    images = torch.as_tensor(images)
    device = _device_of(model)
    logits, features = [], []
    with FeatureTap(model, name), torch.no_grad():
        for i in range(0, len(images), batch_size):
            batch = images[i : i + batch_size].to(device)
            batch = batch.float() if batch.is_floating_point() else batch.float().div(255)
            out = model(batch)
            f = features_of(out)
            if f is None:
                raise NoFeatures(
                    f"classifier {name!r}: its last Linear layer did not run once per image in "
                    f"the forward pass; no penultimate features"
                )
            logits.append(out.float().cpu().numpy())
            features.append(f.double().cpu().numpy())
    if not logits:
        return np.zeros((0, 0), np.float32), np.zeros((0, 0))
    return np.concatenate(logits), np.concatenate(features)
