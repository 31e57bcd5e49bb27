"""The score model at run time: precision, memory layout, torch.compile, the
eps forward and the memory probe (docs/performance.md).

amp_dtype runs the U-Net under torch.autocast (bf16 or fp16) with GroupNorm
computed in fp32 (as guided-diffusion's fp16 mode does; attention softmax
runs inside SDPA, which accumulates in fp32); channels_last and
torch.compile are optional. `auto` precision and layout are resolved on the
U-Net's device when the runtime is built (fudbench.hardware). Whatever the settings, eps comes out in fp32, so
the sampler state stays fp32.
"""
from __future__ import annotations

import contextlib
import logging
import types
from typing import Optional

import torch
import torch.nn.functional as F

from fudbench.imputers.diffusion.settings import AMP_DTYPE_NAMES, RuntimeSettings, check

AMP_DTYPES = {name: None if dtype is None else getattr(torch, dtype)
              for name, dtype in AMP_DTYPE_NAMES.items() if dtype != "auto"}


def _group_norm_fp32(self, x):
    """GroupNorm in fp32 under autocast, result in the input's dtype (guided-
    diffusion's GroupNorm32). Outside autocast x is fp32 and this is nn.GroupNorm."""
    with torch.autocast(x.device.type, enabled=False):
        w = None if self.weight is None else self.weight.float()
        b = None if self.bias is None else self.bias.float()
        return F.group_norm(x.float(), self.num_groups, w, b, self.eps).to(x.dtype)


def group_norm_in_fp32(module: torch.nn.Module) -> torch.nn.Module:
    """Make every GroupNorm of module compute in fp32 (in place, idempotent).
    Harmless for fp32 use of the same module, so a shared U-Net can be patched."""
    for m in module.modules():
        if isinstance(m, torch.nn.GroupNorm) and not getattr(m, "_fud_fp32", False):
            m.forward = types.MethodType(_group_norm_fp32, m)
            m._fud_fp32 = True
    return module


class ScoreModelRuntime:
    """eps_theta(x_t, t) of a diffusers UNet2DModel in the given precision and layout.
    The U-Net is patched in place (GroupNorm, memory format)."""

    def __init__(self, unet, settings: RuntimeSettings = RuntimeSettings()):
        from fudbench.hardware import resolve_precision

        self.unet = unet
        self.settings = check(settings)
        device = next(iter(unet.parameters()), torch.empty(0)).device
        self.precision = resolve_precision(settings.amp_dtype, settings.channels_last, device)
        self.amp_dtype = AMP_DTYPES[self.precision.amp_dtype]
        self.channels_last = self.precision.channels_last
        logging.getLogger(__name__).info("score model U-Net on %s: %s (%s)", device, self.precision.label,
                                         self.precision.reason)
        if self.amp_dtype is not None:
            group_norm_in_fp32(unet)
        if self.channels_last:
            unet.to(memory_format=torch.channels_last)
        self._forward = torch.compile(unet, dynamic=False) if settings.compile else unet
        self._bytes_per_sample: dict = {}

    def _autocast(self, device: torch.device):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=self.amp_dtype)

    def _eps(self, forward, x_t: torch.Tensor, t_batch: torch.Tensor) -> torch.Tensor:
        inp = x_t.contiguous(memory_format=torch.channels_last) if self.channels_last else x_t
        with self._autocast(x_t.device):
            out = forward(inp, t_batch).sample
        return out[:, :3].float()

    def eps(self, x_t: torch.Tensor, t_batch: torch.Tensor) -> torch.Tensor:
        """eps_theta(x_t, t) in fp32 (the first 3 channels: learn_sigma models emit 6)."""
        return self._eps(self._forward, x_t, t_batch)

    def bytes_per_sample(self, sample_shape, device) -> Optional[float]:
        """Estimated peak CUDA memory per sample of one sampler step (a U-Net
        forward in this precision and layout, x1.25 for the guided step's
        classifier backward and the sampler state). None on a CPU."""
        from fudbench.batching import measure_bytes_per_sample

        device = torch.device(device)
        if device.type != "cuda":
            return None
        key = (tuple(sample_shape), str(device))
        if key not in self._bytes_per_sample:
            def run(b):
                with torch.no_grad():
                    xb = torch.zeros(b, *sample_shape, device=device)
                    # The eager U-Net: probing the compiled one would compile two extra shapes.
                    self._eps(self.unet, xb, torch.zeros(b, dtype=torch.long, device=device))

            measured = measure_bytes_per_sample(run, device)
            self._bytes_per_sample[key] = None if measured is None else 1.25 * measured
        return self._bytes_per_sample[key]
