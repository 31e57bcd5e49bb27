"""The score model at run time: precision, memory layout, torch.compile, the
eps forward and the memory probe (docs/performance.md).

amp_dtype runs the U-Net under torch.autocast (bf16 or fp16) with GroupNorm
computed in fp32 (as guided-diffusion's fp16 mode does; attention softmax
runs inside SDPA, which accumulates in fp32); channels_last and
torch.compile are optional. `auto` precision, layout and compilation are
resolved on the U-Net's device when the runtime is built (fudbench.core.hardware):
on a CUDA GPU bf16 (fp16 before compute capability 8.0), contiguous,
compiled; on a CPU bf16 or fp32 by the CPU, channels_last, eager. Whatever
the settings, eps comes out in fp32, so the sampler state stays fp32.

Compilation (CompiledForward): one static-shape graph per batch shape. A
batch smaller than a shape already compiled is padded up to it (copies of
its last row; every U-Net op is per sample, so the real rows' eps do not
change beyond rounding) when that costs less than eager; a compilation
that fails is logged once and the U-Net runs eager from then on. warm_up()
compiles a shape before the caller starts its clock.
"""

from __future__ import annotations

import contextlib
import logging
import types
from typing import Optional

import torch
import torch.nn.functional as F

from fudbench.imputers.diffusion.settings import AMP_DTYPE_NAMES, RuntimeSettings, check

AMP_DTYPES = {
    name: None if dtype is None else getattr(torch, dtype) for name, dtype in AMP_DTYPE_NAMES.items() if dtype != "auto"
}


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


def _upsample_keeping_layout(self, hidden_states, output_size=None, *args, **kwargs):
    """diffusers' Upsample2D forward (nearest x2 or to output_size, then its conv) for the
    configuration keep_upsampling_layout patches, without its `contiguous()` for batches of 64
    or more: that guard works around a GPU kernel (diffusers issue 984); on a CPU it turned
    every channels_last upsampling at batch >= 64 into NCHW and the next convolution back."""
    scale = 2 if output_size is None else max(f / s for f, s in zip(output_size, hidden_states.shape[-2:]))
    if hidden_states.numel() * scale > 2**31:  # diffusers' other guard (pytorch issue 141831): kept
        hidden_states = hidden_states.contiguous()
    if output_size is None:
        hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
    else:
        hidden_states = F.interpolate(hidden_states, size=output_size, mode="nearest")
    return self.conv(hidden_states)


def keep_upsampling_layout(module: torch.nn.Module) -> int:
    """On a CPU with channels_last: let every diffusers Upsample2D of the usual kind (nearest
    interpolation then a 3x3 conv named `conv`, no norm, no transposed conv) keep the layout at
    any batch size (in place, idempotent). Nearest upsampling copies values and oneDNN converts a
    convolution's NCHW input to NHWC itself, so eps is bit for bit the same
    (tests/test_speed_levers.py); at the default batch of 64 a forward took 7% less CPU in fp32 on
    an (emulated) AVX2 core and 10% less in bf16 (docs/performance.md, "Issue 47"). Returns how many
    modules were patched."""
    try:
        from diffusers.models.upsampling import Upsample2D
    except ImportError:  # another diffusers layout: nothing to patch
        return 0
    patched = 0
    for m in module.modules():
        if (
            isinstance(m, Upsample2D)
            and not getattr(m, "_fud_layout", False)
            and m.interpolate
            and m.use_conv
            and not m.use_conv_transpose
            and m.norm is None
            and getattr(m, "name", None) == "conv"
        ):
            m.forward = types.MethodType(_upsample_keeping_layout, m)
            m._fud_layout = True
            patched += 1
    return patched


# Pad a batch up to a compiled batch size only while that costs less than running it eager: the
# compiled U-Net was measured 2.7x faster than eager (H200, batch 32-64), so up to 2.5x the rows.
PAD_LIMIT = 2.5
log = logging.getLogger(__name__)


class CompiledForward:
    """The U-Net's forward through torch.compile(dynamic=False): one graph per input
    shape, reused for every step and batch of that shape; smaller batches padded to a
    compiled size (PAD_LIMIT); eager from the first compilation that fails."""

    def __init__(self, unet, pad_limit: float = PAD_LIMIT):
        self.unet = unet
        self.compiled = torch.compile(unet, dynamic=False)
        self.pad_limit = pad_limit
        self.shapes: set = set()  # input shapes compiled (batch, C, H, W)
        self.failed: Optional[str] = None

    def target_batch(self, shape) -> Optional[int]:
        """The compiled batch size a batch of `shape` runs at: its own if compiled, the
        smallest compiled one within pad_limit of it, else None (compile it)."""
        b, rest = shape[0], tuple(shape[1:])
        fits = [s[0] for s in self.shapes if s[1:] == rest and b <= s[0] <= self.pad_limit * b]
        return min(fits) if fits else None

    def _compile_call(self, x, t):
        try:
            out = self.compiled(x, t).sample
        except Exception as exc:  # noqa: BLE001 (any compiler error: the U-Net still runs eager)
            from fudbench.core.batching import is_out_of_memory

            if is_out_of_memory(exc):
                raise
            self.failed = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]
            log.warning(
                "torch.compile of the score U-Net failed (%s); running it eager (set "
                "evaluators.fud.compile: false to skip compiling)",
                self.failed,
            )
            return self.unet(x, t).sample
        self.shapes.add(tuple(x.shape))
        return out

    def __call__(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if self.failed is not None:
            return self.unet(x, t).sample
        b = x.shape[0]
        target = self.target_batch(x.shape)
        if target is None:
            return self._compile_call(x, t)
        if target == b:
            return self.compiled(x, t).sample
        pad = target - b  # copies of the last row, cut off again below
        xp = torch.cat([x, x[-1:].expand(pad, *x.shape[1:])])
        tp = torch.cat([t, t[-1:].expand(pad)])
        return self.compiled(xp, tp).sample[:b]


class ScoreModelRuntime:
    """eps_theta(x_t, t) of a diffusers UNet2DModel in the given precision and layout.
    The U-Net is patched in place (GroupNorm, memory format)."""

    def __init__(self, unet, settings: RuntimeSettings = RuntimeSettings()):
        from fudbench.core.hardware import resolve_precision

        self.unet = unet
        self.settings = check(settings)
        device = next(iter(unet.parameters()), torch.empty(0)).device
        self.precision = resolve_precision(settings.amp_dtype, settings.channels_last, device, compile=settings.compile)
        self.amp_dtype = AMP_DTYPES[self.precision.amp_dtype]
        self.channels_last = self.precision.channels_last
        log.info("score model U-Net on %s: %s (%s)", device, self.precision.label, self.precision.reason)
        if self.amp_dtype is not None:
            group_norm_in_fp32(unet)
        if self.channels_last:
            unet.to(memory_format=torch.channels_last)
            if device.type == "cpu":
                keep_upsampling_layout(unet)
        self.compiled = CompiledForward(unet) if self.precision.compile else None
        self._bytes_per_sample: dict = {}

    @property
    def compile_failed(self) -> Optional[str]:
        """Why compilation failed (the U-Net then runs eager), or None."""
        return None if self.compiled is None else self.compiled.failed

    def _autocast(self, device: torch.device):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=self.amp_dtype)

    def _eager(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.unet(x, t).sample

    def _eps(self, forward, x_t: torch.Tensor, t_batch: torch.Tensor) -> torch.Tensor:
        inp = x_t.contiguous(memory_format=torch.channels_last) if self.channels_last else x_t
        with self._autocast(x_t.device):
            out = forward(inp, t_batch)
        return out[:, :3].float()

    def eps(self, x_t: torch.Tensor, t_batch: torch.Tensor) -> torch.Tensor:
        """eps_theta(x_t, t) in fp32 (the first 3 channels: learn_sigma models emit 6)."""
        return self._eps(self.compiled or self._eager, x_t, t_batch)

    def warm_up(self, batch: int, sample_shape, device) -> bool:
        """Compile the graph a batch of `batch` samples of `sample_shape` will run at, if
        it is not compiled yet, so that its compilation is not timed with the first
        batch. True if it compiled something now."""
        if self.compiled is None or self.compiled.failed is not None:
            return False
        shape = (int(batch), *sample_shape)
        if self.compiled.target_batch(shape) is not None:
            return False
        device = torch.device(device)
        with torch.no_grad():
            self.eps(torch.zeros(shape, device=device), torch.zeros(shape[0], dtype=torch.long, device=device))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return self.compiled.failed is None

    def bytes_per_sample(self, sample_shape, device) -> Optional[float]:
        """Estimated peak CUDA memory per sample of one sampler step (a U-Net
        forward in this precision and layout, x1.25 for the guided step's
        classifier backward and the sampler state). None on a CPU."""
        from fudbench.core.batching import measure_bytes_per_sample

        device = torch.device(device)
        if device.type != "cuda":
            return None
        key = (tuple(sample_shape), str(device))
        if key not in self._bytes_per_sample:

            def run(b):
                with torch.no_grad():
                    xb = torch.zeros(b, *sample_shape, device=device)
                    # The eager U-Net: probing the compiled one would compile two extra shapes.
                    self._eps(self._eager, xb, torch.zeros(b, dtype=torch.long, device=device))

            measured = measure_bytes_per_sample(run, device)
            self._bytes_per_sample[key] = None if measured is None else 1.25 * measured
        return self._bytes_per_sample[key]
