"""The one input check at the library boundary (explainers, protocols, evaluators).

Every explain and evaluate call goes through `check_inputs` before any work:
images a float (N, C, H, W) tensor in [0, 1] with finite values, one target
class per image, attribution maps of the images' batch size and H x W. Each
error names the argument and says what to pass instead.
"""

from __future__ import annotations

from typing import Optional, Sequence

# tolerance for images that went through float arithmetic (e.g. resizing)
RANGE_SLACK = 1e-4


class InputError(ValueError):
    """A library call got inputs it cannot use; the message names the argument."""


def check_images(x, where: str, name: str = "x") -> None:
    """`name`: the argument as the caller knows it (x for the library's classes,
    images for fudbench.explain / evaluate)."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise InputError(f"{where}: {name} must be a torch.Tensor (N, C, H, W), got {type(x).__name__}")
    if x.dim() != 4:
        raise InputError(f"{where}: {name} must be a batch of images (N, C, H, W), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise InputError(
            f"{where}: {name} must be a float tensor with values in [0, 1], got {x.dtype}; "
            f"for 8-bit images pass {name}.float() / 255"
        )
    if x.numel() == 0:
        raise InputError(f"{where}: {name} is empty (shape {tuple(x.shape)})")
    finite = torch.isfinite(x)
    if not bool(finite.all()):
        bad = (~finite).flatten(1).any(1).nonzero().flatten().tolist()
        raise InputError(f"{where}: {name} has non-finite values (NaN or inf) in image(s) at positions {bad[:10]}")
    lo, hi = float(x.min()), float(x.max())
    if lo < -RANGE_SLACK or hi > 1 + RANGE_SLACK:
        raise InputError(
            f"{where}: {name} must hold images in [0, 1], got values in [{lo:.4g}, {hi:.4g}]; pass "
            f"images before normalisation (the classifier wrapper, fudbench.models.classifiers."
            f"Classifier, normalises them)"
        )


def check_targets(y, n: int, where: str, name: str = "target") -> None:
    import torch

    if not isinstance(y, torch.Tensor) or y.dim() != 1 or len(y) != n:
        shape = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise InputError(f"{where}: {name} must be a 1-D tensor with one class index per image ({n}), got {shape}")
    if y.is_floating_point() or y.dtype == torch.bool:
        raise InputError(f"{where}: {name} must hold integer class indices, got {y.dtype}")


def check_attribution(a, x, where: str, what: str = "attribution") -> None:
    import torch

    if not isinstance(a, torch.Tensor):
        raise InputError(f"{where}: {what} must be a torch.Tensor, got {type(a).__name__}")
    n, c, h, w = x.shape
    ok = (a.dim() == 4 and a.shape[0] == n and a.shape[1] in (1, c) and tuple(a.shape[2:]) == (h, w)) or (
        a.dim() == 3 and tuple(a.shape) == (n, h, w)
    )
    if not ok:
        raise InputError(
            f"{where}: {what} must have the images' batch size and H x W: (N, C, H, W), "
            f"(N, 1, H, W) or (N, H, W) with N={n}, C={c}, H={h}, W={w}; got {tuple(a.shape)}"
        )
    if not a.is_floating_point():
        raise InputError(f"{where}: {what} must be a float tensor, got {a.dtype}")


def check_inputs(
    where: str, x, y=None, attribution=None, image_ids: Optional[Sequence] = None, seeds: Optional[Sequence] = None
) -> None:
    """Raise InputError naming the argument if any input is unusable."""
    check_images(x, where)
    n = x.shape[0]
    if y is not None:
        check_targets(y, n, where)
    if attribution is not None:
        check_attribution(attribution, x, where)
    if image_ids is not None and len(image_ids) != n:
        raise InputError(f"{where}: image_ids must give one id per image ({n}), got {len(image_ids)}")
    if seeds is not None and len(seeds) != n:
        raise InputError(f"{where}: seeds must give one seed per image ({n}), got {len(seeds)}")


def check_masks(masks, x, where: str, name: str = "masks"):
    """Ground-truth object masks of the images, one per image in the images' order:
    (N, H, W) or (N, 1, H, W), any numeric or bool dtype, finite, non-zero = the
    object. Returns them as a float tensor (N, H, W) of 0 / 1 on the images' device."""
    import torch

    if not isinstance(masks, torch.Tensor):
        raise InputError(f"{where}: {name} must be a torch.Tensor (N, H, W), got {type(masks).__name__}")
    n, _, h, w = x.shape
    m = masks[:, 0] if masks.dim() == 4 and masks.shape[1] == 1 else masks
    if m.dim() != 3 or tuple(m.shape) != (n, h, w):
        raise InputError(
            f"{where}: {name} must hold one H x W mask per image, (N, H, W) or (N, 1, H, W) with "
            f"N={n}, H={h}, W={w}; got {tuple(masks.shape)}"
        )
    m = m.float() if m.dtype == torch.bool or not m.is_floating_point() else m
    finite = torch.isfinite(m)
    if not bool(finite.all()):
        bad = (~finite).flatten(1).any(1).nonzero().flatten().tolist()
        raise InputError(f"{where}: {name} has non-finite values in the mask(s) at positions {bad[:10]}")
    return (m != 0).float().to(x.device)
