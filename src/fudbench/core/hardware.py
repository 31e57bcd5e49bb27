"""What the machine computes natively, the precision FUD's U-Net runs in, and
the run's provenance (CPU model and flags or GPU name, versions, threads).

Why: bf16 autocast is ~2x faster than fp32 on a CPU that computes bf16 in
hardware (AVX512-BF16, AMX) and 7-40x slower on one that does not (AVX2
only: the bf16 convolutions fall back to reference kernels). So `amp_dtype:
auto` picks bf16 only where the device has it (docs/performance.md has both
machines' timings). Torch-free at import: the Snakefile reads the CPU's
model and flags at parse time.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

# CPU flags (as /proc/cpuinfo names them) that decide the speed of the jobs' kernels.
RELEVANT_CPU_FLAGS = (
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_fp16",
    "avx_vnni",
)
# oneDNN's ISA cap (ONEDNN_MAX_CPU_ISA, or its older name DNNL_MAX_CPU_ISA) names that still
# include native bf16; any other cap (e.g. AVX2, AVX512_CORE) makes bf16 convolutions emulated.
_BF16_ISA_CAPS = (
    "ALL",
    "AVX512_CORE_BF16",
    "AVX512_CORE_AMX",
    "AVX512_CORE_AMX_FP16",
    "AVX10_1_512",
    "AVX10_1_512_AMX",
    "AVX10_1_512_AMX_FP16",
    "AVX10_2_512",
    "AVX10_2_512_AMX_2",
)

# amp_dtype name -> torch dtype name. The config takes auto, null, bf16 or fp16; the rest are aliases for
# scripts. "auto" is resolved on the job's device (resolve_precision).
AMP_DTYPE_NAMES = {
    "auto": "auto",
    None: None,
    "none": None,
    "fp32": None,
    "float32": None,
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
}


class PrecisionError(ValueError):
    """A precision the device cannot run (e.g. fp16 autocast on a CPU)."""


@lru_cache(maxsize=1)
def cpu_info() -> dict:
    """{'model': ..., 'flags': [the relevant flags present]} from /proc/cpuinfo
    (platform.processor() elsewhere; flags then empty)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and value.strip():
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {"model": model, "flags": [f for f in RELEVANT_CPU_FLAGS if f in flags]}


def onednn_isa_cap() -> Optional[str]:
    return os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or None


def cpu_has_native_bf16() -> bool:
    """True where torch's CPU kernels compute bf16 in hardware: AVX512-BF16 or
    AMX as torch reports them (its own CPUID check), unless oneDNN is capped
    below them (ONEDNN_MAX_CPU_ISA, which is also how an AVX2 machine is
    emulated on a newer one)."""
    import torch

    cap = onednn_isa_cap()
    if cap is not None and cap.upper() not in _BF16_ISA_CAPS:
        return False
    probes = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    probes = [p for p in probes if p is not None]
    if probes:
        return any(p() for p in probes)
    return bool({"avx512_bf16", "amx_bf16"} & set(cpu_info()["flags"]))  # older torch: the kernel's flags


def cpu_has_native_fp16() -> bool:
    import torch

    probe = getattr(torch.cpu, "_is_amx_fp16_supported", None)
    return bool(probe()) if probe is not None else "amx_fp16" in cpu_info()["flags"]


def cuda_capability(device) -> tuple[int, int]:
    """The GPU's compute capability (major, minor); the one probe the CUDA defaults read."""
    import torch

    return tuple(torch.cuda.get_device_capability(device))


def cuda_has_bf16(device) -> bool:
    """Native bf16 tensor cores: compute capability 8.0 (Ampere) and newer."""
    return cuda_capability(device)[0] >= 8


# torch.compile's GPU backend (Inductor -> Triton) needs compute capability 7.0 (Volta) or newer.
COMPILE_MIN_CAPABILITY = (7, 0)


def resolve_compile(compile, device) -> tuple[bool, str]:
    """`compile: auto` -> on for a CUDA GPU Triton supports, off on a CPU; an explicit
    true/false is kept. (on?, why). Why auto is on on a GPU: the first GPU measurement
    (H200, docs/performance.md) ran the compiled U-Net 2.7x faster than eager for ~1 min
    of compilation per job process; on a CPU it measured 1.4x for ~70 s per job, which
    the default run's short jobs do not win back."""
    import torch

    device = torch.device(device)
    if compile != "auto":
        return bool(compile), f"explicit compile: {compile}"
    if device.type != "cuda":
        return False, "auto: off on a CPU (compilation costs more than it saves in short CPU jobs)"
    cap = cuda_capability(device)
    if cap < COMPILE_MIN_CAPABILITY:
        return False, f"auto: off, compute capability {cap[0]}.{cap[1]} < 7.0 (Triton needs Volta or newer)"
    return True, f"auto: on, CUDA compute capability {cap[0]}.{cap[1]}"


@dataclass(frozen=True)
class Precision:
    """The U-Net's resolved precision and layout, and why."""

    amp_dtype: Optional[str]  # None (fp32), "bf16" or "fp16"
    channels_last: bool
    reason: str
    compile: bool = False  # torch.compile'd U-Net (resolve_compile)

    @property
    def label(self) -> str:
        return (
            f"{self.amp_dtype or 'fp32'}{', channels_last' if self.channels_last else ''}"
            f"{', compiled' if self.compile else ''}"
        )


def resolve_precision(amp_dtype, channels_last, device, warn=None, compile=False) -> Precision:
    """`auto` -> what the device computes natively; an explicit choice is kept,
    with a PrecisionError where the device cannot run it and a warning (through
    `warn`, default: stderr) where it runs it slowly.

    amp_dtype: "auto", None/"fp32", "bf16" or "fp16" (aliases as in
    AMP_DTYPE_NAMES); channels_last: "auto" or bool;
    compile: "auto" or bool (resolve_compile).
    auto channels_last: on the CPU (measured faster in fp32 and bf16 on both
    kinds of CPU, docs/performance.md); never on CUDA: on the first GPU
    measured (H200, bf16 autocast) channels_last was 34% slower per U-Net
    forward than contiguous, its layout conversions 45% of the GPU's time.
    """
    import torch

    warn = warn or (lambda msg: print(f"[precision] warning: {msg}", file=sys.stderr, flush=True))
    device = torch.device(device)
    cuda = device.type == "cuda"
    if amp_dtype == "auto":
        if cuda:
            dtype = "bf16" if cuda_has_bf16(device) else "fp16"
            reason = f"auto: {'bf16' if dtype == 'bf16' else 'no bf16 on this GPU, fp16'} on {_gpu_name(device)}"
        elif cpu_has_native_bf16():
            dtype, reason = "bf16", "auto: this CPU computes bf16 natively (AVX512-BF16 or AMX)"
        else:
            dtype, reason = None, "auto: fp32, this CPU has no native bf16 (no AVX512-BF16, no AMX)"
    else:
        name = AMP_DTYPE_NAMES.get(amp_dtype, amp_dtype)
        dtype = {None: None, "bfloat16": "bf16", "float16": "fp16"}.get(name, name)
        reason = f"explicit amp_dtype: {amp_dtype}"
        if cuda and dtype == "bf16" and not cuda_has_bf16(device):
            raise PrecisionError(
                f"amp_dtype: bf16, but {_gpu_name(device)} has no native bf16 (compute "
                f"capability < 8.0); use amp_dtype: auto (fp16 there) or fp16"
            )
        if not cuda and dtype == "fp16" and not cpu_has_native_fp16():
            raise PrecisionError(
                "amp_dtype: fp16 on a CPU without AMX-FP16: CPU autocast in fp16 is emulated "
                "and many times slower than fp32; use amp_dtype: auto (or null for fp32)"
            )
        if not cuda and dtype == "bf16" and not cpu_has_native_bf16():
            warn(
                "amp_dtype: bf16 on a CPU without native bf16 (no AVX512-BF16, no AMX) runs the U-Net "
                "7-40x slower than fp32; amp_dtype: auto picks fp32 here"
            )
    if channels_last == "auto":
        layout = not cuda
    else:
        layout = bool(channels_last)
    compiled, why = resolve_compile(compile, device)
    return Precision(dtype, layout, f"{reason}; compile {why}" if compiled else reason, compiled)


def settings_precision(settings: dict, device) -> Optional[str]:
    """The resolved U-Net precision of an evaluator's settings (their amp_dtype
    and channels_last), e.g. 'bf16, channels_last'; None for evaluators without."""
    if "amp_dtype" not in settings and "channels_last" not in settings:
        return None
    return resolve_precision(
        settings.get("amp_dtype", "auto"),
        settings.get("channels_last", "auto"),
        device,
        warn=lambda msg: None,
        compile=settings.get("compile", "auto"),
    ).label


def _gpu_name(device) -> str:
    import torch

    return torch.cuda.get_device_name(device)


def packages_off_lock(lock: Optional[str] = None) -> str:
    """The installed packages whose version is not the lock's ("name version (lock X)", "; "-joined;
    "" when every entry matches): a node's reused torch or packages (FUD_NODE_PACKAGES=1), a hand-made
    environment. "unknown" where the lock is not there (an installed copy of fudbench)."""
    from importlib import metadata
    from pathlib import Path

    from fudbench.core.lockfile import lock_entries

    path = Path(lock or os.environ.get("FUD_LOCK") or Path(__file__).resolve().parents[3] / "requirements.lock")
    if not path.is_file():
        return "unknown"
    off = []
    for name, pinned in lock_entries(path):
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "missing"
        if have.split("+")[0] != pinned.split("+")[0]:
            off.append(f"{name} {have} (lock {pinned})")
    return "; ".join(off)


def run_info(device="cpu", fud_settings: Optional[dict] = None) -> dict:
    """Provenance of a run or a benchmark: machine, versions, threads and,
    given FUD's settings, the precision its U-Net resolves to on `device`."""
    import torch

    device = torch.device(device)
    cpu = cpu_info()
    info = {
        "cpu_model": cpu["model"],
        "cpu_flags": " ".join(cpu["flags"]) or "unknown",
        "cpu_native_bf16": cpu_has_native_bf16(),
        "onednn_max_cpu_isa": onednn_isa_cap() or "",
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages_off_lock": packages_off_lock(),
    }
    if fud_settings is not None:
        p = resolve_precision(
            fud_settings.get("amp_dtype", "auto"),
            fud_settings.get("channels_last", "auto"),
            device,
            warn=lambda msg: None,
            compile=fud_settings.get("compile", "auto"),
        )
        info.update(fud_precision=p.label, fud_precision_reason=p.reason)
    return info


def describe_machine(device="cpu", fud_settings: Optional[dict] = None) -> str:
    """run_info in a few lines, for benchmark outputs."""
    i = run_info(device, fud_settings)
    where = i["gpu"] or f"CPU {i['cpu_model']} ({i['torch_threads']} threads of {i['cores']} cores)"
    lines = [
        f"# machine: {where}",
        f"# cpu flags: {i['cpu_flags']}; native bf16: {i['cpu_native_bf16']}; aten capability: "
        f"{i['aten_cpu_capability']}"
        + (f"; ONEDNN_MAX_CPU_ISA={i['onednn_max_cpu_isa']}" if i["onednn_max_cpu_isa"] else ""),
        f"# torch {i['torch']}, cuda {i['cuda'] or 'none'}, python {i['python']}",
    ]
    if "fud_precision" in i:
        lines.append(f"# FUD U-Net precision: {i['fud_precision']} ({i['fud_precision_reason']})")
    return "\n".join(lines)


def describe_results(results) -> str:
    """The machine that made a finished run (its run_info.json), for scripts
    that report on a run's timings rather than measure themselves."""
    import json
    from pathlib import Path

    path = Path(results) / "run_info.json"
    if not path.is_file():
        return f"# machine of {results}: unknown (no run_info.json; runs before rule run_info)"
    i = json.loads(path.read_text())
    where = i.get("gpu") or f"CPU {i.get('cpu_model')} ({i.get('torch_threads')} threads of {i.get('cores')} cores)"
    return (
        f"# machine of {results}: {where}; cpu flags: {i.get('cpu_flags')}; torch {i.get('torch')}, "
        f"cuda {i.get('cuda') or 'none'}; FUD U-Net: {i.get('fud_precision', 'n/a')}"
    )
