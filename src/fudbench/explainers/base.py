"""The explainer interface: explain(model, x, target, seeds) -> attribution.

model returns logits for x in [0, 1]; x is (N, C, H, W) on any device;
target is (N,) class indices; seeds gives one int per image for methods with
randomness (so batched output equals per-image output). The attribution has
x's shape and lives on x's device.

prepare(references) is called once per job, before explain, with images of
the evaluated set (N_ref, C, H, W) in [0, 1]; methods that draw baselines from
the data (Expected Gradients) keep them, the others ignore them.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from typing import Optional, Sequence

import torch


class Explainer(ABC):
    name: str = "explainer"
    # Whether explain() takes the ground-truth object masks (keyword `masks`; synthetic benchmark only).
    uses_masks: bool = False

    def __init_subclass__(cls, **kwargs):
        """Every explain() checks its inputs and its map (fudbench.core.checks): one place for all methods,
        plug-ins included."""
        super().__init_subclass__(**kwargs)
        explain = cls.__dict__.get("explain")
        if explain is not None and not getattr(explain, "__isabstractmethod__", False):

            @functools.wraps(explain)
            def checked(self, model, x, target, seeds=None, **kwargs):
                from fudbench.core.checks import check_attribution, check_inputs

                where = self.check_where()
                check_inputs(where, x, target, seeds=seeds)
                attribution = explain(self, model, x, target, seeds=seeds, **kwargs)
                check_attribution(attribution, x, where, what="the returned map")
                return attribution

            checked.fudbench_checked = True  # plug-in wrappers call the method inside (__wrapped__)
            cls.explain = checked

    def check_where(self) -> str:
        """How input and output check errors name this explainer."""
        return f"{type(self).__name__}.explain"

    def prepare(self, references: torch.Tensor) -> None:
        """Receive reference images of the evaluated set (default: unused)."""

    @abstractmethod
    def explain(
        self, model: torch.nn.Module, x: torch.Tensor, target: torch.Tensor, seeds: Optional[Sequence[int]] = None
    ) -> torch.Tensor: ...
