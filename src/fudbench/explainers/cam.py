"""`cam`: pytorch-grad-cam's class activation maps by name.

    explainers:
      gradcam: {method: cam}                                   # GradCAM, automatic layer
      scorecam: {method: cam, cam: ScoreCAM, target_layer: features.5}

The target layer is a dotted module name of the model (for the workflow's
classifiers also of their network: `features.5` = `net.features.5`), or,
with `target_layer: null`, found by `auto_target_layer`:
- ViTs (torchvision's VisionTransformer, the workflow's SmallViT): the first
  norm of the last block (`encoder.layers.<last>.ln_1`, `blocks.<last>.norm1`),
  whose patch tokens still receive gradient from the class token (the final
  norm's patch tokens do not: the head reads the class token only);
- any other network: the last module, in forward order, that returns a 4-D
  map larger than 1 x 1 and runs once per forward (for torchvision's ResNets
  `layer4`, for SmallCNN `features`: the last convolutional stage's output).
A layer that returns tokens (N, T, D) is reshaped to a grid (N, D, s, s): the
first token is dropped as the class token when T - 1 is a square.

pytorch-grad-cam returns one map per image, scaled to [0, 1] and resized to
the input (bilinear, cv2); it is repeated over the input's channels, so a
channel reduction ranks the pixels as the map does (sum, abs_sum and max
give C x, C x and 1 x the map).
"""

from __future__ import annotations

import math

import torch

from fudbench.explainers.base import Explainer
from fudbench.explainers.field_common import normalisation, refuse_problems
from fudbench.explainers.settings import CAMSettings


def _vit_layer(net: torch.nn.Module):
    """(name, module) of a known ViT's last-block first norm, else None."""
    from torchvision.models import VisionTransformer

    from fudbench.models.classifiers import SmallViT

    if isinstance(net, VisionTransformer):
        return f"encoder.layers.{len(net.encoder.layers) - 1}.ln_1", net.encoder.layers[-1].ln_1
    if isinstance(net, SmallViT):
        return f"blocks.{len(net.blocks) - 1}.norm1", net.blocks[-1].norm1
    return None


def auto_target_layer(model: torch.nn.Module, x: torch.Tensor):
    """(name, module) of the automatic target layer (module docstring); one forward of one image."""
    net, _, _ = normalisation(model)
    vit = _vit_layer(net)
    if vit is not None:
        return vit
    names = {m: n for n, m in model.named_modules()}
    calls, finished = {}, []

    def hook(module, inputs, output):
        calls[module] = calls.get(module, 0) + 1
        finished.append((module, tuple(output.shape) if isinstance(output, torch.Tensor) else None))

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    try:
        with torch.no_grad():
            model(x[:1])
    finally:
        for h in handles:
            h.remove()
    last, tokens_after = None, False
    for module, shape in finished:
        if shape is not None and len(shape) == 4 and shape[-1] * shape[-2] > 1 and calls[module] == 1:
            last, tokens_after = module, False
        elif shape is not None and len(shape) == 3 and last is not None:
            tokens_after = True
    if last is None or tokens_after:
        what = "no module returns a spatial map" if last is None else "tokens follow the last spatial map"
        raise ValueError(
            f"cam: no automatic target layer for {type(net).__name__} ({what}); set target_layer to "
            f"a dotted module name, e.g. one of {', '.join(_some_names(model))}"
        )
    return names[last], last


def _some_names(model, n: int = 8) -> list[str]:
    names = [name for name, _ in model.named_modules() if name]
    return names[-n:]


def named_layer(model: torch.nn.Module, name: str):
    """The module called `name` in the model or, for the workflow's classifiers, in their network."""
    net, _, _ = normalisation(model)
    for root in (model, net):
        modules = dict(root.named_modules())
        if name in modules:
            return modules[name]
    raise ValueError(
        f"cam: target_layer {name!r} is not a module of {type(net).__name__}; its last modules: "
        f"{', '.join(_some_names(net))}"
    )


def tokens_to_grid(t: torch.Tensor) -> torch.Tensor:
    """(N, T, D) tokens -> (N, D, s, s); the first token is dropped as the class token when T - 1 is square."""
    if t.ndim != 3:
        return t
    n, count, d = t.shape
    for drop in (1, 0):
        side = math.isqrt(count - drop)
        if side * side == count - drop:
            return t[:, drop:].reshape(n, side, side, d).permute(0, 3, 1, 2)
    raise ValueError(f"cam: the target layer returns {count} tokens, neither a square grid nor one plus a grid")


class CAM(Explainer):
    name = "cam"

    def __init__(
        self,
        cam: str = "GradCAM",
        target_layer: str | None = None,
        options: dict | None = None,
        aug_smooth: bool = False,
        eigen_smooth: bool = False,
    ):
        self.settings_ = CAMSettings(cam, target_layer, dict(options or {}), aug_smooth, eigen_smooth)
        refuse_problems(self.settings_, "explainers.cam")

    def check_where(self) -> str:
        return f"cam {self.settings_.cam}.explain"

    def layer(self, model, x):
        """(module, reshape_transform) the CAM reads."""
        s = self.settings_
        module = named_layer(model, s.target_layer) if s.target_layer else auto_target_layer(model, x)[1]
        shapes = []
        handle = module.register_forward_hook(lambda m, i, o: shapes.append(o.ndim))
        try:
            with torch.no_grad():
                model(x[:1])
        finally:
            handle.remove()
        return module, (tokens_to_grid if shapes and shapes[0] == 3 else None)

    def explain(self, model, x, target, seeds=None):
        import pytorch_grad_cam
        from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

        s = self.settings_
        module, reshape = self.layer(model, x)
        cam = getattr(pytorch_grad_cam, s.cam)(
            model=model, target_layers=[module], reshape_transform=reshape, **s.options
        )
        try:
            # a frozen model's activations need an input that requires grad to carry gradients
            grey = cam(
                input_tensor=x.detach().clone().requires_grad_(True),
                targets=[ClassifierOutputTarget(int(t)) for t in target],
                aug_smooth=s.aug_smooth,
                eigen_smooth=s.eigen_smooth,
            )
        finally:
            cam.activations_and_grads.release()  # not `with cam`: its __exit__ swallows IndexError
        maps = torch.as_tensor(grey, dtype=torch.float32, device=x.device)
        return maps[:, None].expand(-1, x.shape[1], -1, -1).contiguous()
