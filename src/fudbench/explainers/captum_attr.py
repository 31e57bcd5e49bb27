"""`captum`: any supported captum.attr attribution class by name.

    explainers:
      deeplift: {method: captum, attr: DeepLift}
      occlusion: {method: captum, attr: Occlusion, settings: {sliding_window_shapes: [3, 4, 4], strides: [3, 2, 2]}}
      smoothgrad: {method: captum, attr: Saliency, noise_tunnel: {nt_samples: 16, stdevs: 0.15}}

The supported classes, their keywords and why the others are left out are in
fudbench.explainers.field_names.CAPTUM (torch-free, validated at parse time).
Methods that draw random numbers (GradientShap, DeepLiftShap's baselines,
ShapleyValueSampling, KernelShap, Lime, anything in a NoiseTunnel) run one
image at a time under that image's seed, so a batch gives the per-image maps.
"""

from __future__ import annotations

import torch

from fudbench.explainers.base import Explainer
from fudbench.explainers.field_common import refuse_problems
from fudbench.core.seeding import seeded
from fudbench.explainers.field_names import CAPTUM
from fudbench.explainers.settings import CaptumSettings

_TUPLES = ("sliding_window_shapes", "strides")  # captum wants tuples; YAML gives lists


class CaptumAttribution(Explainer):
    name = "captum"

    def __init__(
        self,
        attr: str,
        settings: dict | None = None,
        init: dict | None = None,
        baseline: str = "zero",
        n_baselines: int = 8,
        feature_patch: int | None = None,
        noise_tunnel: dict | None = None,
    ):
        self.settings_ = CaptumSettings(
            attr,
            dict(settings or {}),
            dict(init or {}),
            baseline,
            n_baselines,
            feature_patch,
            None if noise_tunnel is None else dict(noise_tunnel),
        )
        refuse_problems(self.settings_, "explainers.captum")
        self.spec = CAPTUM[attr]
        self.references = None

    def check_where(self) -> str:
        return f"captum {self.settings_.attr}.explain"

    def prepare(self, references: torch.Tensor) -> None:
        self.references = references

    def _method(self, model):
        import captum.attr

        s = self.settings_
        method = getattr(captum.attr, s.attr)(model, **s.init)
        return captum.attr.NoiseTunnel(method) if s.noise_tunnel is not None else method

    def _feature_mask(self, x):
        """Square patches of side feature_patch, numbered row by row, shared by the channels."""
        p, (h, w) = self.settings_.feature_patch, x.shape[-2:]
        rows = torch.arange(h, device=x.device) // p
        cols = torch.arange(w, device=x.device) // p
        return (rows[:, None] * ((w + p - 1) // p) + cols[None, :]).view(1, 1, h, w)

    def _baselines(self, x, seed):
        s = self.settings_
        if s.baseline == "zero":
            return torch.zeros_like(x)
        if s.baseline == "mean":
            return x.mean(dim=(2, 3), keepdim=True).expand_as(x).contiguous()
        if self.references is None:
            raise ValueError(
                "captum: baseline 'references' needs prepare(references) first (the workflow and "
                "fudbench.explain call it)"
            )
        g = torch.Generator().manual_seed(seed)
        pick = torch.randint(len(self.references), (s.n_baselines,), generator=g)
        return self.references[pick].to(x.device, x.dtype)

    def _attribute(self, model, x, target, seed):
        s, spec = self.settings_, self.spec
        kwargs = {k: tuple(v) if k in _TUPLES and isinstance(v, list) else v for k, v in s.settings.items()}
        if spec.baselines != "none":
            kwargs["baselines"] = self._baselines(x, seed)
        if s.feature_patch is not None:
            kwargs["feature_mask"] = self._feature_mask(x)
        kwargs.update(s.noise_tunnel or {})
        x = x.detach().clone().requires_grad_(spec.gradient)  # captum warns about inputs without grad
        return self._method(model).attribute(x, target=target, **kwargs).detach()

    def explain(self, model, x, target, seeds=None):
        s = self.settings_
        if not (self.spec.random or s.noise_tunnel is not None or s.baseline == "references"):
            return self._attribute(model, x, target, 0).float()
        seeds = list(range(len(x))) if seeds is None else [int(v) for v in seeds]
        maps = []
        for i, seed in enumerate(seeds):
            with seeded(seed, x.device):
                maps.append(self._attribute(model, x[i : i + 1], target[i : i + 1], seed))
        return torch.cat(maps).float()
