"""Lint and format, in the test command: ruff (check and format) for Python, snakefmt for the Snakefile and
rules/. Both are pinned in requirements.lock; their settings are in pyproject.toml. To fix what fails:
`./fud python -m ruff check --fix . && ./fud python -m ruff format .` and
`$(./fud env)/bin/snakefmt Snakefile rules/`."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("command", [("check", "."), ("format", "--check", ".")], ids=["ruff-check", "ruff-format"])
def test_python_passes_ruff(command):
    res = _run(sys.executable, "-m", "ruff", *command)
    assert res.returncode == 0, f"ruff {' '.join(command)}:\n{res.stdout[-4000:]}{res.stderr[-2000:]}"


def test_snakefile_and_rules_pass_snakefmt():
    res = _run(str(BIN / "snakefmt"), "--check", "Snakefile", "rules/")
    assert res.returncode == 0, f"snakefmt --check Snakefile rules/:\n{res.stdout[-3000:]}{res.stderr[-3000:]}"
