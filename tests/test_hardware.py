"""amp_dtype / channels_last: auto resolved by the device's capability (mocked
here, so the test says the same on every CPU), explicit choices kept, bad
combinations named; the run's provenance."""

import json
import sys

import pytest
import torch

from fudbench.core import hardware
from fudbench.core.hardware import PrecisionError, resolve_precision, run_info, settings_precision
from fudbench.imputers.diffusion.runtime import ScoreModelRuntime
from fudbench.imputers.diffusion.settings import RuntimeSettings


@pytest.fixture
def cpu(monkeypatch):
    """Set the mocked CPU's native bf16 / fp16 (torch's own CPUID probes)."""

    def set_cpu(bf16: bool, fp16: bool = False, amx: bool = False):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
        monkeypatch.setattr(torch.cpu, "_is_amx_fp16_supported", lambda: fp16)
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
        monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)

    return set_cpu


def test_auto_is_fp32_on_a_cpu_without_native_bf16(cpu):
    cpu(bf16=False)
    p = resolve_precision("auto", "auto", "cpu")
    assert (p.amp_dtype, p.channels_last) == (None, True)
    assert "no native bf16" in p.reason and p.label == "fp32, channels_last"


@pytest.mark.parametrize("flags", [{"bf16": True}, {"bf16": False, "amx": True}])
def test_auto_is_bf16_on_a_cpu_with_avx512_bf16_or_amx(cpu, flags):
    cpu(**flags)
    p = resolve_precision("auto", "auto", "cpu")
    assert (p.amp_dtype, p.channels_last) == ("bf16", True)


def test_a_onednn_isa_cap_below_bf16_means_no_native_bf16(cpu, monkeypatch):
    cpu(bf16=True)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # how an AVX2 machine is emulated on a newer one
    assert resolve_precision("auto", "auto", "cpu").amp_dtype is None
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx512_core_bf16")
    assert resolve_precision("auto", "auto", "cpu").amp_dtype == "bf16"


@pytest.mark.parametrize("bf16", [True, False])
@pytest.mark.parametrize("explicit,expected", [(None, None), ("fp32", None), ("bf16", "bf16"), ("bfloat16", "bf16")])
def test_an_explicit_setting_is_kept(cpu, bf16, explicit, expected):
    cpu(bf16=bf16)
    warnings = []
    p = resolve_precision(explicit, False, "cpu", warn=warnings.append)
    assert (p.amp_dtype, p.channels_last) == (expected, False)
    assert p.reason.startswith("explicit")
    # bf16 asked for on a CPU that emulates it: kept, with a warning that says what auto would do
    assert bool(warnings) == (expected == "bf16" and not bf16)
    if warnings:
        assert "slower than fp32" in warnings[0] and "auto picks fp32" in warnings[0]


def test_fp16_on_a_cpu_is_refused(cpu):
    cpu(bf16=True, fp16=False)
    with pytest.raises(PrecisionError, match="fp16 on a CPU.*amp_dtype: auto"):
        resolve_precision("fp16", "auto", "cpu")
    cpu(bf16=True, fp16=True)
    assert resolve_precision("fp16", "auto", "cpu").amp_dtype == "fp16"


def test_bf16_on_a_gpu_without_it_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    with pytest.raises(PrecisionError, match="Tesla T4 has no native bf16"):
        resolve_precision("bf16", "auto", torch.device("cuda", 0))
    p = resolve_precision("auto", "auto", torch.device("cuda", 0))
    assert (p.amp_dtype, p.channels_last) == ("fp16", False)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert resolve_precision("auto", "auto", torch.device("cuda", 0)).amp_dtype == "bf16"
    assert resolve_precision(None, "auto", torch.device("cuda", 0)).channels_last is False  # fp32 on a GPU


@pytest.fixture
def gpu(monkeypatch):
    """A mocked CUDA GPU of the given compute capability (the only probe the CUDA defaults read)."""

    def set_gpu(capability, name="Mock GPU"):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
        return torch.device("cuda", 0)

    return set_gpu


# The defaults by device kind (issue 41's measurement: on an H200, contiguous bf16 + compile was the fastest
# setting; channels_last under autocast 34% slower; on CPUs channels_last measured faster in both precisions).
@pytest.mark.parametrize(
    "kind,expected",
    [
        (("cuda", (9, 0)), ("bf16", False, True)),  # Hopper (H100 / H200)
        (("cuda", (8, 0)), ("bf16", False, True)),  # Ampere A100: the first with bf16
        (("cuda", (7, 5)), ("fp16", False, True)),  # Turing: no bf16, Triton still compiles
        (("cuda", (7, 0)), ("fp16", False, True)),  # Volta V100
        (("cuda", (6, 1)), ("fp16", False, False)),  # Pascal: no Triton, eager
        (("cpu", True), ("bf16", True, False)),  # AVX512-BF16 / AMX
        (("cpu", False), (None, True, False)),  # AVX2 only
    ],
)
def test_auto_defaults_by_device_kind(cpu, gpu, kind, expected):
    what, probe = kind
    if what == "cuda":
        device = gpu(probe)
    else:
        cpu(bf16=probe)
        device = torch.device("cpu")
    p = resolve_precision("auto", "auto", device, compile="auto")
    assert (p.amp_dtype, p.channels_last, p.compile) == expected
    assert p.label.endswith(", compiled") == expected[2]
    assert hardware.resolve_compile("auto", device)[0] == expected[2]


def test_explicit_compile_and_layout_are_kept(cpu, gpu):
    cpu(bf16=False)
    assert resolve_precision("auto", "auto", "cpu", compile=True).compile is True
    device = gpu((9, 0))
    p = resolve_precision("auto", True, device, compile=False)
    assert (p.amp_dtype, p.channels_last, p.compile) == ("bf16", True, False)
    assert "compile" not in p.reason
    assert (
        "compile auto: on, CUDA compute capability 9.0"
        in resolve_precision("auto", "auto", device, compile="auto").reason
    )


def test_settings_precision_keys_the_work_cache_by_compilation(cpu, gpu):
    cpu(bf16=True)
    settings = {"amp_dtype": "auto", "channels_last": "auto", "compile": "auto"}
    assert settings_precision(settings, "cpu") == "bf16, channels_last"  # unchanged on a CPU
    assert settings_precision(settings, gpu((9, 0))) == "bf16, compiled"
    assert settings_precision({**settings, "compile": False}, gpu((9, 0))) == "bf16"


def test_the_runtime_resolves_auto_on_the_unets_device(cpu):
    cpu(bf16=False)
    unet = torch.nn.Conv2d(3, 3, 1)
    runtime = ScoreModelRuntime(unet, RuntimeSettings())  # the dataclass default is auto
    assert runtime.amp_dtype is None and runtime.channels_last
    cpu(bf16=True)
    assert ScoreModelRuntime(torch.nn.Conv2d(3, 3, 1), RuntimeSettings()).amp_dtype == torch.bfloat16
    assert ScoreModelRuntime(torch.nn.Conv2d(3, 3, 1), RuntimeSettings(amp_dtype=None)).amp_dtype is None


def test_settings_with_a_bad_value_are_named():
    assert "channels_last" in RuntimeSettings(channels_last="sometimes").problems("evaluators.fud")[0]
    assert "'evaluators.fud.compile'" in RuntimeSettings(compile="yes").problems("evaluators.fud")[0]
    assert "amp_dtype" in RuntimeSettings(amp_dtype="int8").problems("evaluators.fud")[0]


def test_the_work_cache_key_sees_the_resolved_precision(cpu):
    cpu(bf16=False)
    fp32 = settings_precision({"amp_dtype": "auto", "channels_last": "auto"}, "cpu")
    cpu(bf16=True)
    assert settings_precision({"amp_dtype": "auto", "channels_last": "auto"}, "cpu") != fp32
    assert settings_precision({"n_subsets": 100}, "cpu") is None  # evaluators without a U-Net


def test_run_info_names_machine_versions_threads_and_precision(cpu):
    cpu(bf16=False)
    info = run_info("cpu", {"amp_dtype": "auto", "channels_last": "auto"})
    for key in ("cpu_model", "cpu_flags", "torch", "cuda", "torch_threads", "cores", "fud_precision"):
        assert key in info
    assert info["fud_precision"] == "fp32, channels_last" and info["cpu_native_bf16"] is False
    json.dumps(info)  # written as JSON
    text = hardware.describe_machine("cpu", {"amp_dtype": "auto"})
    assert text.startswith("# machine: CPU") and "FUD U-Net precision: fp32" in text


def test_run_info_names_the_packages_that_are_not_the_locks(tmp_path):
    import numpy

    if "-node" not in sys.prefix:  # not an environment made with a node's packages (README, offline)
        assert hardware.run_info("cpu")["packages_off_lock"] == ""  # this environment is the lock
    lock = tmp_path / "lock.txt"
    lock.write_text(f"numpy=={numpy.__version__}\n    # via x\nnumpy-fud-absent==1.0\nsix==0.0.1\n")
    off = hardware.packages_off_lock(str(lock)).split("; ")
    assert off[0] == "numpy-fud-absent missing (lock 1.0)" and off[1].startswith("six ") and len(off) == 2
    assert hardware.packages_off_lock(str(tmp_path / "none.txt")) == "unknown"


def test_lock_entries_read_pins_only_and_the_cli_prints_them(tmp_path):
    """One reader of requirements.lock for fudbench.core.hardware, tools/compatible_torch.py and
    tools/wheelhouse.sh: pins at the start of a line, without markers, hashes or comments."""
    import subprocess

    from fudbench.core import lockfile
    from fudbench.core.lockfile import lock_entries

    lock = tmp_path / "lock.txt"
    lock.write_text(
        "# comment==1\nA_b.c==1.2.3+cpu ; sys_platform == 'linux'\n    # via x==2\n"
        "torch==2.1 \\\n    --hash=sha256:00\n-e ./pkg\nplain\nx==4#note\n"
    )
    assert lock_entries(lock) == [("A_b.c", "1.2.3+cpu"), ("torch", "2.1"), ("x", "4")]
    printed = subprocess.run(
        [sys.executable, lockfile.__file__, str(lock)],  # run as a script, as tools/wheelhouse.sh does
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert printed == ["A_b.c==1.2.3+cpu", "torch==2.1", "x==4"]


def test_cpu_info_reads_the_model_and_relevant_flags():
    info = hardware.cpu_info()
    assert info["model"] and set(info["flags"]) <= set(hardware.RELEVANT_CPU_FLAGS)
