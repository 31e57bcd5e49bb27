"""The offline install (tools/install_env.sh --offline / FUD_WHEELHOUSE) uses only
the wheelhouse and touches nothing but its own environment; FUD_WHEELHOUSE set but empty is an error.

As in test_offline_install: a lock of one small package, wheels made here, a private FUD_CACHE and
an index that does not exist. The machine's pip / uv settings are simulated by a pip.conf
(PIP_CONFIG_FILE) and PIP_FIND_LINKS / UV_FIND_LINKS naming a folder that holds a wheel of the
same version with a build tag (which pip prefers when it sees both): if the install reads them, the
environment gets that wheel (VALUE 99) instead of the wheelhouse's (41)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wheel_support import make_wheel

REPO = Path(__file__).resolve().parents[1]
NO_INDEX = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "UV_INDEX_URL": "http://127.0.0.1:9/simple"}


def install(tmp_path, *args, cwd=REPO, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("FUD_WHEELHOUSE",)}
    return subprocess.run(
        ["bash", str(REPO / "tools/install_env.sh"), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **base,
            **NO_INDEX,
            "FUD_CACHE": str(tmp_path / "cache"),
            "FUD_PYTHON": sys.executable,
            "FUD_REUSE_TORCH": "0",
            "UV_CACHE_DIR": str(tmp_path / "uv"),
            **{k: str(v) for k, v in env.items()},
        },
    )


@pytest.fixture
def wheels(tmp_path):
    """(wheelhouse with fudofflinea 0.1 = 41, the machine's find-links folder with 0.1 build 1 = 99, lock)."""
    make_wheel(tmp_path / "wh", "fudofflinea", "0.1", 41)
    make_wheel(tmp_path / "machine", "fudofflinea", "0.1", 99, build="1")
    lock = tmp_path / "small.lock"
    lock.write_text("fudofflinea==0.1\n")
    return tmp_path / "wh", tmp_path / "machine", lock


def test_offline_install_reads_none_of_the_machines_pip_or_uv_settings(wheels, tmp_path):
    wh, machine, lock = wheels
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nfind-links = {machine}\n")
    # a uv.toml where the install is started (uv reads the working directory's)
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "uv.toml").write_text(f'find-links = ["{machine}"]\n')
    res = install(
        tmp_path,
        "--offline",
        wh,
        cwd=tmp_path / "here",
        FUD_LOCK=lock,
        PIP_CONFIG_FILE=conf,
        PIP_FIND_LINKS=machine,
        UV_FIND_LINKS=machine,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    venv = Path(res.stdout.strip().splitlines()[-1])
    out = subprocess.run(
        [venv / "bin" / "python", "-c", "import fudofflinea; print(fudofflinea.VALUE)"], capture_output=True, text=True
    )
    assert out.stdout.strip() == "41", (out.stdout, out.stderr, res.stderr[-2000:])
    # nothing of the install's own left in the cache: only the environment and the installers' lock
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([venv.name, ".install.lock"])


def test_a_failed_offline_install_leaves_no_requirements_file_in_the_cache(wheels, tmp_path):
    wh, machine, lock = wheels
    lock.write_text("fudofflinea==0.1\nfudofflineb==0.2\n")  # b has no wheel: the install stops before pip
    (wh / "missing.txt").write_text("fudofflineb==0.2\tERROR: No matching distribution found\n")
    res = install(tmp_path, "--offline", wh, FUD_LOCK=lock)
    assert res.returncode != 0 and "fudofflineb==0.2" in res.stderr
    left = [p.name for p in (tmp_path / "cache").iterdir()]
    assert not [n for n in left if "requirements" in n], left


def test_an_empty_wheelhouse_variable_is_an_error_not_an_online_install(wheels, tmp_path):
    wh, machine, lock = wheels
    res = install(tmp_path, FUD_LOCK=lock, FUD_WHEELHOUSE="")
    assert res.returncode == 2
    assert "FUD_WHEELHOUSE is set but empty" in res.stderr and "unset FUD_WHEELHOUSE" in res.stderr
    assert not (tmp_path / "cache").exists() or not [
        p for p in (tmp_path / "cache").iterdir() if p.name.startswith("venv")
    ]


def test_a_relative_cache_gives_an_absolute_environment_path(wheels, tmp_path):
    """./fud puts the printed environment's bin/ on PATH, then changes to the repository: a relative
    FUD_CACHE gave a relative path there, so `python` was whatever else PATH had."""
    wh, machine, lock = wheels
    (tmp_path / "here").mkdir()
    res = install(tmp_path, "--offline", wh, cwd=tmp_path / "here", FUD_LOCK=lock, FUD_CACHE="my cache")
    assert res.returncode == 0, res.stderr[-3000:]
    venv = res.stdout.strip().splitlines()[-1]
    assert os.path.isabs(venv) and venv.startswith(str(tmp_path / "here" / "my cache") + "/"), venv
