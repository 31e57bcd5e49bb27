"""The imputer interface."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional, Sequence

import torch


@dataclass
class ImputeContext:
    """What an imputer may use besides the image and the mask.

    classifier: the evaluated model (logits), for guided imputers.
    target: (N,) class indices the evaluation is about.
    seeds: one int per sample: per-sample randomness, so a batched call gives
           the same result as per-sample calls.
    """

    classifier: Optional[torch.nn.Module] = None
    target: Optional[torch.Tensor] = None
    seeds: Optional[Sequence[int]] = None


class Imputer(ABC):
    name: str = "imputer"
    # Whether two fills of the same input can differ (they differ only through
    # context.seeds): protocols that average several fills (SRG) fill once if not.
    stochastic: bool = False

    @abstractmethod
    def fill(self, x: torch.Tensor, keep_mask: torch.Tensor, context: ImputeContext) -> torch.Tensor:
        """Return x with the removed pixels (keep_mask == 0) filled."""

    def bytes_per_sample(self, sample_shape, device) -> Optional[float]:
        """Estimated GPU memory of one sample of a fill (bytes), for fitting the
        batch size to the free memory (fudbench.core.batching.fit_batch_size); None: no estimate."""
        return None


def compose(x: torch.Tensor, keep_mask: torch.Tensor, filler: torch.Tensor) -> torch.Tensor:
    """Kept pixels from x exactly, removed pixels from filler (clamped to [0, 1])."""
    return torch.where(keep_mask.bool(), x, filler.clamp(0, 1))


def takes_x0_hat(callback) -> bool:
    """Whether a sampler callback accepts the x0 estimate (keyword x0_hat or **kwargs)."""
    try:
        params = inspect.signature(callback).parameters
    except (TypeError, ValueError):
        return False
    return "x0_hat" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
