"""Full-reference image quality of intermediate samples vs their originals (Table 3).

piq 0.8.0 metrics with piq's defaults (data_range=1., reduction='none'):
PSNR, SSIM, MS-SSIM, FSIM, GMSD, HaarPSI, VSI. All are higher-is-better
except GMSD (0 = identical). The paper's images are 224 px, where every metric
runs with plain piq defaults. Ours may be much smaller, so each metric is
adapted only where piq would fail, deterministically (s = min(H, W)):

- PSNR: plain piq at any size (3 channels, no greyscale conversion).
- SSIM: plain piq (11-px Gaussian window, sigma 1.5, valid convolution) from
  s >= 11. Below: window k = largest odd <= s, sigma = 1.5 k / 11.
- MS-SSIM: plain piq (5 scales) from s >= 161 = (11 - 1) 2^4 + 1. Below: as
  many scales L as fit, (k - 1) 2^(L-1) + 1 <= s (L = 1 from 11, 2 from 21,
  3 from 41, 4 from 81), with the first (finest) L of piq's weights
  (0.0448, 0.2856, 0.3001, 0.2363, 0.1333) renormalised to sum 1 (piq
  renormalises given weights); window as for SSIM when s < 11. L = 1 is SSIM
  with negative per-channel values clipped at 0 (piq's relu).
- FSIM: plain piq at any size (FFT-based; its log-Gabor wavelengths 6..48 px
  approach the image size below ~48 px, which piq does not guard against).
- GMSD: plain piq at any size (2x average-pool, 3x3 Prewitt, zero padding).
- HaarPSI: plain piq (3 Haar scales, 16-tap filters) from s >= 16. Below:
  both images enlarged by nearest-neighbour pixel replication by the smallest
  integer factor reaching 16 px (piq hard-codes 3 scales, so fewer scales is
  not an option).
- VSI: plain piq at any size (piq computes the SDSP saliency at 256x256
  internally and resizes it back). The saliency map is half of VSI's cost
  and nearly all of the seven metrics' (12.6 of 27.7 ms per pair at 32 px,
  docs/performance.md, "Issue 47"); piq computes it for both images of every
  pair, although a job's originals are a handful of images and some samples
  repeat (a curve's first and last steps do not depend on the map). So it is
  computed once per distinct image (SaliencyMemo, keyed by the image's
  bytes), one image per call of piq's SDSP, so an image's map has the same
  bits whatever batch it came in, on every CPU. VSI is bit for bit piq's VSI
  with SDSP called per image; piq's batched SDSP differs from it in the last
  float32 bits on an Intel Xeon (MKL's FFT by batch size), equal on AMD
  (tests/test_speed_levers.py).

So at 32x32: SSIM, FSIM, GMSD, HaarPSI, VSI, PSNR are plain piq; MS-SSIM uses
2 scales with weights (0.1356, 0.8644). At 16x16: MS-SSIM is 1 scale.
Minimum supported side: 3 px.

Perfect values (identical images): PSNR = 80 dB, the cap set by piq's
EPS = 1e-8 added to the MSE (10 log10(1 / 1e-8)); 1 for SSIM, MS-SSIM, FSIM,
HaarPSI, VSI; 0 for GMSD, up to float32 rounding (HaarPSI can read
1.0000002). Safeguard: a non-finite result for an exactly identical pair is
replaced by the perfect value (piq 0.8.0 already handles flat identical
images through its eps terms). Non-identical degenerate pairs keep whatever
piq returns, NaN included (the tables drop non-finite values and count
them). Inputs are clamped to [0, 1] (piq refuses values outside the range;
diffusion outputs can overshoot by rounding).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch only in annotations here: the table jobs import this module without it
    import torch

# torch and piq are imported where metrics are computed: the table jobs that
# only need the names and directions below do not pay their import. And of piq
# only the seven metrics' modules are loaded (_piq): piq's own __init__ imports
# every metric it has, FID's Inception among them, i.e. torchvision.models and
# through torchvision.ops torch._dynamo (1.5 s of CPU here, 3 s on an AVX2-only
# EPYC: issue 47), which the quality jobs do not use.
_PIQ_MODULES = {
    "PSNR": ("piq.psnr", "psnr"),
    "SSIM": ("piq.ssim", "ssim"),
    "MS-SSIM": ("piq.ms_ssim", "multi_scale_ssim"),
    "FSIM": ("piq.fsim", "fsim"),
    "GMSD": ("piq.gmsd", "gmsd"),
    "HaarPSI": ("piq.haarpsi", "haarpsi"),
    "VSI": ("piq.vsi", "vsi"),
}
QUALITY_METRICS = ("PSNR", "SSIM", "MS-SSIM", "FSIM", "GMSD", "HaarPSI", "VSI")
HIGHER_IS_BETTER = {
    "PSNR": True,
    "SSIM": True,
    "MS-SSIM": True,
    "FSIM": True,
    "GMSD": False,
    "HaarPSI": True,
    "VSI": True,
}
PSNR_CAP = 80.0  # piq: -10 log10(mse + 1e-8) at mse = 0
PERFECT = {"PSNR": PSNR_CAP, "SSIM": 1.0, "MS-SSIM": 1.0, "FSIM": 1.0, "GMSD": 0.0, "HaarPSI": 1.0, "VSI": 1.0}

MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)  # piq's (Wang et al. 2003)
SSIM_KERNEL, SSIM_SIGMA = 11, 1.5
HAARPSI_MIN = 16  # 2 ** (scales + 1) with piq's scales = 3
MIN_SIDE = 3


def ssim_window(side: int) -> tuple[int, float]:
    """(kernel_size, kernel_sigma) for SSIM / MS-SSIM: piq's (11, 1.5) when side >= 11."""
    if side >= SSIM_KERNEL:
        return SSIM_KERNEL, SSIM_SIGMA
    k = side if side % 2 else side - 1
    return k, SSIM_SIGMA * k / SSIM_KERNEL


def msssim_levels(side: int) -> int:
    """Number of MS-SSIM scales that fit: largest L <= 5 with (k - 1) 2^(L-1) + 1 <= side."""
    k, _ = ssim_window(side)
    levels = 1
    while levels < len(MSSSIM_WEIGHTS) and (k - 1) * 2**levels + 1 <= side:
        levels += 1
    return levels


def adaptation(height: int, width: int) -> dict[str, str]:
    """What quality_metrics does at this size, per metric ('piq defaults' or the adaptation)."""
    s = min(height, width)
    k, sigma = ssim_window(s)
    levels = msssim_levels(s)
    out = {m: "piq defaults" for m in QUALITY_METRICS}
    if k != SSIM_KERNEL:
        out["SSIM"] = f"kernel {k}, sigma {sigma:.4g}"
    if levels < len(MSSSIM_WEIGHTS) or k != SSIM_KERNEL:
        w = np.asarray(MSSSIM_WEIGHTS[:levels])
        out["MS-SSIM"] = f"{levels} scale(s), weights {tuple(np.round(w / w.sum(), 4).tolist())}" + (
            f", kernel {k}, sigma {sigma:.4g}" if k != SSIM_KERNEL else ""
        )
    if s < HAARPSI_MIN:
        out["HaarPSI"] = f"nearest-neighbour x{math.ceil(HAARPSI_MIN / s)}"
    return out


class SaliencyMemo:
    """piq's SDSP saliency (VSI's costly half) computed once per distinct image.

    Called in place of `piq.vsi.sdsp` (VSI looks it up at call time) with a
    batch of images: rows already seen (same bytes, dtype, shape and settings)
    come from the memo, the others are computed by piq's sdsp one image per
    call, so a map is the same bits whatever batch asked for it, on every CPU,
    and kept, least recently used first out beyond max_bytes. Only CPU tensors are
    memoised (hashing a GPU tensor would copy it); other devices call through.
    """

    def __init__(self, max_bytes: int = 64 << 20):
        from collections import OrderedDict

        self.max_bytes = max_bytes
        self.maps: OrderedDict = OrderedDict()
        self.bytes = 0
        self.computed = 0  # images whose saliency was computed (the rest came from the memo)
        self.requested = 0

    @staticmethod
    def _key(row, settings) -> tuple:
        import hashlib

        digest = hashlib.blake2b(row.contiguous().numpy().tobytes(), digest_size=16).digest()
        return digest, str(row.dtype), tuple(row.shape), settings

    def __call__(self, sdsp, x, **kwargs):
        import torch

        self.requested += len(x)
        if x.device.type != "cpu" or x.requires_grad:
            self.computed += len(x)
            return sdsp(x, **kwargs)
        settings = tuple(sorted(kwargs.items()))
        keys = [self._key(row, settings) for row in x]
        found, todo = {}, {}
        for i, k in enumerate(keys):
            if k in self.maps:
                found[k] = self.maps[k]
                self.maps.move_to_end(k)
            elif k not in todo:
                todo[k] = i
        for k, i in todo.items():
            # a batch of one: a map must not depend on which images shared its call (MKL's FFT on Intel
            # CPUs gives the last bits by batch size), or a memo hit would differ from a fresh map
            found[k] = sdsp(x[i : i + 1], **kwargs)[0]
            self.computed += 1
            self._put(k, found[k].clone())
        return torch.stack([found[k] for k in keys])

    def _put(self, key, value) -> None:
        self.maps[key] = value
        self.bytes += value.numel() * value.element_size()
        while self.bytes > self.max_bytes and len(self.maps) > 1:
            _, old = self.maps.popitem(last=False)
            self.bytes -= old.numel() * old.element_size()


SALIENCY = SaliencyMemo()  # one per process: a quality job's calls share their originals' saliency


def _vsi(x, y):
    """piq's VSI with its SDSP saliency taken from SALIENCY (module attribute swapped for the call)."""
    import importlib

    vsi = _piq()["VSI"]
    module = importlib.import_module("piq.vsi")
    sdsp = module.sdsp
    module.sdsp = lambda images, **kwargs: SALIENCY(sdsp, images, **kwargs)
    try:
        return vsi(x, y, data_range=1.0, reduction="none")
    finally:
        module.sdsp = sdsp


def _piq():
    """{metric: piq's function}, loading only those modules of piq (piq.psnr, piq.ssim, ...).

    Where piq is not imported yet, its package is entered into sys.modules without
    running its __init__ (the submodules import only piq.utils and piq.functional),
    with a module __getattr__ that runs that __init__ the first time anything else
    of piq is asked for: a later `import piq; piq.LPIPS` in the same process gets
    the whole package, `piq.vsi` piq's function, as always
    (tests/test_speed_levers.py)."""
    import importlib
    import importlib.util
    import sys

    if "piq" not in sys.modules:
        spec = importlib.util.find_spec("piq")
        if spec is None:
            raise ImportError(
                "piq is not installed: the quality metrics need it (requirements.lock pins piq 0.8.0; "
                "reinstall the environment: rm -rf ~/.cache/fud-repro and run ./fud again)"
            )
        package = importlib.util.module_from_spec(spec)

        def complete(name, package=package, spec=spec):
            del package.__getattr__  # once: piq's own __init__ binds every name
            spec.loader.exec_module(package)
            for full, module in list(sys.modules.items()):  # what a plain import binds too (piq.functional)
                parent, _, sub = full.rpartition(".")
                if parent == "piq" and sub not in vars(package):
                    setattr(package, sub, module)
            if name in vars(package):
                return vars(package)[name]
            raise AttributeError(f"module 'piq' has no attribute {name!r}")

        package.__getattr__ = complete
        sys.modules["piq"] = package
        for module, _ in _PIQ_MODULES.values():
            importlib.import_module(module)
        if "__getattr__" in vars(package):
            # the import system bound the submodules to the package (piq.vsi = the module); piq's __init__
            # binds the functions of the same names: leave them to it
            for sub in {m.split(".")[1] for m, _ in _PIQ_MODULES.values()} | {"utils", "functional"}:
                vars(package).pop(sub, None)
    return {
        metric: getattr(importlib.import_module(module), function)
        for metric, (module, function) in _PIQ_MODULES.items()
    }


def _compute(name: str, x: "torch.Tensor", y: "torch.Tensor") -> "torch.Tensor":
    import torch

    piq = _piq()

    s = min(x.shape[-2:])
    if name == "PSNR":
        return piq["PSNR"](x, y, data_range=1.0, reduction="none")
    if name == "SSIM":
        k, sigma = ssim_window(s)
        return piq["SSIM"](x, y, kernel_size=k, kernel_sigma=sigma, data_range=1.0, reduction="none")
    if name == "MS-SSIM":
        k, sigma = ssim_window(s)
        levels = msssim_levels(s)
        weights = (
            None
            if levels == len(MSSSIM_WEIGHTS)
            else torch.tensor(MSSSIM_WEIGHTS[:levels], dtype=x.dtype, device=x.device)
        )  # piq renormalises given weights
        return piq["MS-SSIM"](
            x, y, kernel_size=k, kernel_sigma=sigma, data_range=1.0, reduction="none", scale_weights=weights
        )
    if name == "FSIM":
        return piq["FSIM"](x, y, data_range=1.0, reduction="none")
    if name == "GMSD":
        return piq["GMSD"](x, y, data_range=1.0, reduction="none")
    if name == "HaarPSI":
        if s < HAARPSI_MIN:
            f = math.ceil(HAARPSI_MIN / s)
            x = x.repeat_interleave(f, -2).repeat_interleave(f, -1)
            y = y.repeat_interleave(f, -2).repeat_interleave(f, -1)
        return piq["HaarPSI"](x, y, data_range=1.0, reduction="none")
    if name == "VSI":
        return _vsi(x, y)
    raise KeyError(f"unknown quality metric {name!r}; known: {', '.join(QUALITY_METRICS)}")


def _as_tensor(a, device) -> "torch.Tensor":
    import torch

    t = torch.as_tensor(np.asarray(a) if not isinstance(a, torch.Tensor) else a)
    if device is not None:
        t = t.to(device)
    if not t.is_floating_point():
        raise TypeError("quality_metrics expects float images in [0, 1]")
    return t


def quality_metrics(
    samples, originals, metrics=QUALITY_METRICS, batch_size: int = 32, device=None
) -> dict[str, np.ndarray]:
    """Per-pair metrics of samples (N, 3, H, W) against originals (N or 1, 3, H, W), floats in [0, 1].

    Returns {metric: float64 array (N,)} in the order of `metrics`. Runs on the
    inputs' device (or `device`), `batch_size` pairs at a time, in float32
    unless the inputs are float64. See the module docstring for small sizes.
    """
    import torch

    with torch.no_grad():
        return _quality_metrics(samples, originals, metrics, batch_size, device)


def _quality_metrics(samples, originals, metrics, batch_size, device) -> dict[str, np.ndarray]:
    import torch

    x = _as_tensor(samples, device)
    y = _as_tensor(originals, x.device if device is None else device)
    if x.dim() != 4 or y.dim() != 4 or x.shape[1:] != y.shape[1:] or y.shape[0] not in (1, x.shape[0]):
        raise ValueError(
            f"expected samples (N, C, H, W) and originals (N or 1, C, H, W); got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if min(x.shape[-2:]) < MIN_SIDE:
        raise ValueError(f"images must be at least {MIN_SIDE}x{MIN_SIDE}, got {tuple(x.shape[-2:])}")
    unknown = [m for m in metrics if m not in HIGHER_IS_BETTER]
    if unknown:
        raise KeyError(f"unknown quality metric(s) {unknown}; known: {', '.join(QUALITY_METRICS)}")
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    n = x.shape[0]
    out = {m: np.empty(n, dtype=np.float64) for m in metrics}
    for start in range(0, n, batch_size):
        xb = x[start : start + batch_size].to(dtype).clamp(0, 1)
        yb = (y if y.shape[0] == 1 else y[start : start + batch_size]).to(dtype).clamp(0, 1)
        yb = yb.expand_as(xb)
        identical = (xb == yb).flatten(1).all(1).cpu().numpy()
        for m in metrics:
            v = _compute(m, xb, yb).double().cpu().numpy().reshape(len(xb))
            fix = identical & ~np.isfinite(v)
            v[fix] = PERFECT[m]
            out[m][start : start + len(xb)] = v
    return out
