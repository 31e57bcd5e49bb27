"""GPU nodes without internet: tools/wheelhouse.sh builds a wheelhouse of the lock for
a Python version / platform, tools/install_env.sh --offline (FUD_WHEELHOUSE) installs
from it with no package index, reusing a compatible torch of the node. Tested on a
lock of one or two small packages (FUD_LOCK), wheels made here, a private FUD_CACHE
(the shared environment is never touched) and a package index that does not exist,
so any attempt to reach one fails the install."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import compatible_torch  # noqa: E402
from wheel_support import make_wheel  # noqa: E402

NO_INDEX = {
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "UV_INDEX_URL": "http://127.0.0.1:9/simple",
    "PIP_EXTRA_INDEX_URL": "",
    "UV_EXTRA_INDEX_URL": "",
}


def run(cmd, **env):
    # none of the caller's FUD_* settings (on a node the tests run with FUD_NODE_PACKAGES=1 & co.)
    own = {k: v for k, v in os.environ.items() if not k.startswith("FUD_")}
    return subprocess.run(
        [str(c) for c in cmd],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**own, **NO_INDEX, **{k: str(v) for k, v in env.items()}},
    )


@pytest.fixture
def source(tmp_path):
    """A folder of wheels (fudofflinea 0.1 only) and a lock that also names fudofflineb 0.2."""
    make_wheel(tmp_path / "src", "fudofflinea", "0.1", 41)
    lock = tmp_path / "lock.txt"
    lock.write_text("fudofflinea==0.1\n    # via test\nfudofflineb==0.2\n")
    return tmp_path / "src", lock


def test_wheelhouse_takes_each_entry_and_lists_those_without_a_wheel(source, tmp_path):
    src, lock = source
    res = run(
        [
            "bash",
            "tools/wheelhouse.sh",
            "--python",
            "%d.%d" % sys.version_info[:2],
            "--platform",
            "manylinux2014_x86_64",
            "--requirements",
            lock,
            "--find-links",
            src,
            "--out",
            tmp_path / "wh",
        ],
        FUD_PYTHON=sys.executable,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    wh = tmp_path / "wh"
    assert res.stdout.strip().splitlines()[-1] == str(wh)
    assert (wh / "fudofflinea-0.1-py3-none-any.whl").is_file()
    missing = (wh / "missing.txt").read_text().splitlines()
    assert [m.split("\t")[0] for m in missing] == ["fudofflineb==0.2"]
    assert "1 of 2 lock entries have no wheel" in res.stderr
    assert '"missing": 1' in (wh / "wheelhouse.json").read_text()
    assert (wh / "requirements.lock").read_text() == lock.read_text()


def test_wheelhouse_skips_what_the_node_has(source, tmp_path):
    """--except: lock entries the node already holds (names compared as pip does) are not fetched;
    --no-uv: uv is not tried."""
    src, lock = source
    node = tmp_path / "node.txt"
    node.write_text("# the node's packages\nFudOfflineB\n")
    res = run(
        [
            "bash",
            "tools/wheelhouse.sh",
            "--python",
            "%d.%d" % sys.version_info[:2],
            "--requirements",
            lock,
            "--find-links",
            src,
            "--out",
            tmp_path / "wh",
            "--except",
            node,
            "--no-uv",
        ],
        FUD_PYTHON=sys.executable,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    wh = tmp_path / "wh"
    assert [p.name for p in wh.glob("*.whl")] == ["fudofflinea-0.1-py3-none-any.whl"]
    assert (wh / "missing.txt").read_text() == "" and "no uv wheel" not in res.stderr
    assert "1 lock entries skipped" in res.stderr and '"skipped": 1' in (wh / "wheelhouse.json").read_text()
    assert '"entries": 1' in (wh / "wheelhouse.json").read_text()


def test_offline_install_uses_no_index_and_a_private_cache(source, tmp_path):
    src, lock = source
    small = tmp_path / "small.lock"
    small.write_text("fudofflinea==0.1\n")
    cache = tmp_path / "cache"
    res = run(
        ["bash", "tools/install_env.sh", "--offline", src],
        FUD_LOCK=small,
        FUD_CACHE=cache,
        FUD_PYTHON=sys.executable,
        FUD_REUSE_TORCH="0",
        UV_CACHE_DIR=tmp_path / "uv",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    venv = Path(res.stdout.strip().splitlines()[-1])
    assert venv.parent == cache and (venv / ".complete").is_file()
    out = subprocess.run(
        [venv / "bin" / "python", "-c", "import fudofflinea; print(fudofflinea.VALUE)"], capture_output=True, text=True
    )
    assert out.stdout.strip() == "41", out.stderr
    # FUD_WHEELHOUSE is the same switch (./fud passes its environment on); the finished environment is reused
    again = run(
        ["bash", "tools/install_env.sh"], FUD_LOCK=small, FUD_CACHE=cache, FUD_WHEELHOUSE=src, FUD_PYTHON=sys.executable
    )
    assert again.returncode == 0 and again.stdout.strip() == str(venv) and "building" not in again.stderr


def test_offline_install_names_lock_entries_without_a_wheel(source, tmp_path):
    src, lock = source
    (src / "missing.txt").write_text("fudofflineb==0.2\tERROR: No matching distribution found\n")
    res = run(
        ["bash", "tools/install_env.sh", "--offline", src],
        FUD_LOCK=lock,
        FUD_CACHE=tmp_path / "cache",
        FUD_PYTHON=sys.executable,
        FUD_REUSE_TORCH="0",
    )
    assert res.returncode != 0
    assert "1 lock entry has no wheel" in res.stderr
    assert "fudofflineb==0.2: ERROR: No matching distribution found" in res.stderr
    assert "tools/wheelhouse.sh --python X.Y --platform TAG" in res.stderr


def test_the_nodes_torch_is_reused_only_where_compatible(tmp_path, monkeypatch):
    import torch

    lock = tmp_path / "lock.txt"
    lock.write_text(
        f"numpy==2.0.0\ntorch=={torch.__version__.split('+')[0]}\ntorchvision==0.1\ntriton==3.0\nnvidia-cublas==13.1\n"
    )
    monkeypatch.setenv("FUD_REUSE_TORCH", "auto")
    monkeypatch.delenv("FUD_MIN_TORCH", raising=False)
    ok, why = compatible_torch.reuse_decision(lock)
    assert ok and "reusing the node's torch" in why
    monkeypatch.setenv("FUD_MIN_TORCH", "99.0")
    ok, why = compatible_torch.reuse_decision(lock)
    assert not ok and "older than FUD_MIN_TORCH (99.0)" in why
    lock.write_text("torch==99.0.0\n")
    monkeypatch.delenv("FUD_MIN_TORCH")
    assert "not of the lock's major version" in compatible_torch.reuse_decision(lock)[1]
    monkeypatch.setenv("FUD_REUSE_TORCH", "0")
    assert compatible_torch.reuse_decision(lock)[0] is False


def test_a_reused_torch_leaves_its_stack_out_of_the_install(tmp_path, monkeypatch, capsys):
    lock = tmp_path / "lock.txt"
    lock.write_text("fudofflinea==0.1\ntorch==2.14.1\ntorchvision==0.29.2\ntriton==3.8.0\nnvidia-cublas==13.1.1.3\n")
    make_wheel(tmp_path / "wh", "fudofflinea", "0.1", 1)
    monkeypatch.setenv("LOCK", str(lock))
    monkeypatch.setenv("WHEELHOUSE", str(tmp_path / "wh"))
    monkeypatch.setenv("REUSE", "yes")
    assert compatible_torch.main(["--filter"]) == 0
    assert capsys.readouterr().out.split() == ["fudofflinea==0.1"]
    monkeypatch.setenv("REUSE", "")
    assert compatible_torch.main(["--filter"]) == 1  # the lock's torch is not in this wheelhouse
    assert "4 lock entries have no wheel" in capsys.readouterr().err


def test_a_reused_torch_is_a_view_of_its_stack_even_from_a_virtual_environment(source, tmp_path):
    """The node's interpreter is itself a virtual environment here (as on this project's GPU machine,
    whose torch lives in /opt/torch/.venv): --system-site-packages would not have seen its torch. The new
    environment sees torch's stack and, with FUD_NODE_PACKAGES=1, the lock entries without a wheel,
    and no other package of the node (pytest here, a transformers there)."""
    import torch

    assert sys.prefix != sys.base_prefix, "this test's node must be a virtual environment"
    src, _ = source
    torch_needs = (
        "filelock",
        "typing-extensions",
        "sympy",
        "mpmath",
        "networkx",
        "jinja2",
        "markupsafe",
        "fsspec",
        "setuptools",
        "numpy",
    )
    lines = [
        line for line in (REPO / "requirements.lock").read_text().splitlines() if line.split("==")[0] in torch_needs
    ]
    lock = tmp_path / "node.lock"
    lock.write_text("\n".join(["fudofflinea==0.1", f"torch=={torch.__version__.split('+')[0]}", *lines]) + "\n")
    env = dict(
        FUD_LOCK=lock,
        FUD_CACHE=tmp_path / "cache",
        FUD_PYTHON=sys.executable,
        FUD_REUSE_TORCH="1",
        UV_CACHE_DIR=tmp_path / "uv",
    )
    refused = run(["bash", "tools/install_env.sh", "--offline", src], **env)
    assert refused.returncode != 0 and f"{len(lines)} lock entries have no wheel" in refused.stderr
    assert "FUD_NODE_PACKAGES=1" in refused.stderr
    res = run(["bash", "tools/install_env.sh", "--offline", src], FUD_NODE_PACKAGES="1", **env)
    assert res.returncode == 0, res.stderr[-3000:]
    venv = Path(res.stdout.strip().splitlines()[-1])
    assert "-nodepkgs-nodetorch-" in venv.name
    assert "[install] from the node" in res.stderr and f"torch {torch.__version__}" in res.stderr
    probe = (
        "import importlib.util as u, fudofflinea, numpy, torch; print(fudofflinea.VALUE, torch.__file__, "
        "torch.ones(2).sum().item(), u.find_spec('pytest') is None)"
    )
    out = subprocess.run([venv / "bin" / "python", "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    value, torch_file, total, no_pytest = out.stdout.split()
    assert value == "41" and total == "2.0" and no_pytest == "True"
    assert Path(torch_file).parent.parent == venv / "node-packages"


def test_node_packages_never_bring_a_torch_the_reuse_decision_refused(tmp_path, monkeypatch):
    """FUD_NODE_PACKAGES=1 takes lock entries without a wheel from the node, but not torch's stack:
    with the node's torch refused (FUD_REUSE_TORCH=0, too old), the lock's torch must come from the
    wheelhouse, not be mixed from the node."""
    import torch

    lock = tmp_path / "lock.txt"
    lock.write_text(f"torch=={torch.__version__.split('+')[0]}\nnumpy==0.0.1\n")
    (tmp_path / "wh").mkdir()
    monkeypatch.setenv("FUD_NODE_PACKAGES", "1")
    install, taken, _ = compatible_torch.from_node(lock, tmp_path / "wh", reuse=False)
    assert [n for n, _ in install] == ["torch"] and list(taken) == ["numpy"]
    install, taken, _ = compatible_torch.from_node(lock, tmp_path / "wh", reuse=True)
    assert install == [] and "torch" in taken and "numpy" in taken


def test_the_view_shows_a_shared_namespace_folder_only_in_part(tmp_path, monkeypatch):
    """Two node distributions share the folder fudns/ (a namespace, as google/): taking one links its
    own part of the folder, not the folder with the other's."""
    from importlib.metadata import PathDistribution

    site = tmp_path / "site"
    for name, sub in (("fudtaken", "taken"), ("fudother", "other")):
        (site / "fudns" / sub).mkdir(parents=True)
        (site / "fudns" / sub / "__init__.py").write_text("")
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "RECORD").write_text(
            f"fudns/{sub}/__init__.py,,\n{name}-1.0.dist-info/METADATA,,\n"
            f"{name}-1.0.dist-info/RECORD,,\n../../bin/{name},,\n"
        )
    dists = {c: PathDistribution(site / f"{c}-1.0.dist-info") for c in ("fudtaken", "fudother")}
    monkeypatch.setattr(compatible_torch, "node_distributions", lambda: dists)
    view = tmp_path / "view"
    assert compatible_torch.make_view(view, {"fudtaken": dists["fudtaken"]}) == []
    assert (view / "fudns").is_dir() and not (view / "fudns").is_symlink()
    assert (view / "fudns" / "taken").is_symlink() and not (view / "fudns" / "other").exists()
    assert (view / "fudtaken-1.0.dist-info").is_symlink() and not (view / "fudother-1.0.dist-info").exists()
    assert not (view / ".." / "bin").exists()


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _pypi_reachable(), reason="pypi.org is not reachable from this machine")
def test_wheelhouse_from_pypi_for_another_python(tmp_path):
    """Two lock entries (a pure-Python one and a compiled one) fetched for Python 3.12 on
    manylinux2014 from PyPI: the compiled one is the cp312 manylinux wheel, not this machine's."""
    entries = [
        line
        for line in (REPO / "requirements.lock").read_text().splitlines()
        if line.startswith(("cachetools==", "pyyaml=="))
    ]
    assert len(entries) == 2
    lock = tmp_path / "lock.txt"
    lock.write_text("\n".join(entries) + "\n")
    res = subprocess.run(
        [
            "bash",
            "tools/wheelhouse.sh",
            "--python",
            "3.12",
            "--platform",
            "manylinux2014_x86_64",
            "--requirements",
            str(lock),
            "--out",
            str(tmp_path / "wh"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "FUD_PYTHON": sys.executable},
    )
    assert res.returncode == 0, res.stderr[-3000:]
    names = sorted(p.name for p in (tmp_path / "wh").glob("*.whl"))
    assert any(n.startswith("cachetools-") and n.endswith("py3-none-any.whl") for n in names), names
    assert any(n.lower().startswith("pyyaml-") and "cp312" in n and "manylinux" in n for n in names), names
    assert (tmp_path / "wh" / "missing.txt").read_text() == ""
