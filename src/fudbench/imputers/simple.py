"""Imputers without learned parts: zero (black) and blurred substrate."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fudbench.imputers.base import ImputeContext, Imputer, compose


def gaussian_blur(x: torch.Tensor, kernel_size: int, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur with reflect padding (torchvision's semantics,
    without importing torchvision, whose import costs seconds per job)."""
    half = (kernel_size - 1) / 2
    k = torch.exp(-0.5 * (torch.linspace(-half, half, kernel_size, device=x.device, dtype=x.dtype) / sigma) ** 2)
    k = k / k.sum()
    c = x.shape[1]
    p = kernel_size // 2
    y = F.pad(x, (p, p, p, p), mode="reflect")
    y = F.conv2d(y, k.view(1, 1, 1, -1).expand(c, 1, 1, -1), groups=c)
    return F.conv2d(y, k.view(1, 1, -1, 1).expand(c, 1, -1, 1), groups=c)


class ZeroImputer(Imputer):
    """Removed pixels become black (0 in [0, 1] space): INS/DEL's deletion."""

    name = "zero"

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        return compose(x, keep_mask, torch.zeros_like(x))


class BlurImputer(Imputer):
    """Removed pixels come from a Gaussian-blurred copy (RISE's insertion substrate).

    Reflect padding needs kernel_size < 2 * image side; smaller images get the
    largest odd kernel that fits (sigma unchanged)."""

    name = "blur"

    def __init__(self, kernel_size: int = 11, sigma: float = 5.0):
        if kernel_size % 2 == 0:
            raise ValueError(f"blur kernel size must be odd, got {kernel_size}")
        self.kernel_size, self.sigma = kernel_size, sigma

    def fill(self, x, keep_mask, context: ImputeContext | None = None):
        k = min(self.kernel_size, 2 * (min(x.shape[-2:]) // 2) - 1)
        return compose(x, keep_mask, gaussian_blur(x, k, self.sigma))
