#!/usr/bin/env bash
# Create (once) the project's Python environment and print its path.
#
# The environment lives outside the clone, keyed by the hash of
# requirements.lock and the interpreter version, so a fresh clone (CI, a later
# session) reuses it instead of downloading ~5 GB of CUDA wheels again.
#   FUD_CACHE   where environments live (default: ~/.cache/fud-repro)
#   FUD_PYTHON  base interpreter (default: python3)
# Idempotent: a finished environment carries a .complete marker listing the
# finished steps; a half-built one (killed install) is removed and rebuilt, and
# a finished one that misses a later step (bytecode) is completed in place.
# A lock serialises installers.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${FUD_PYTHON:-python3}"
# HOME may be unset in stripped CI environments: fall back to the passwd entry.
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export UV_CACHE_DIR="${UV_CACHE_DIR:-$home/.cache/uv}"
cache="${FUD_CACHE:-$home/.cache/fud-repro}"
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
key="$( (cat "$repo/requirements.lock"; echo "$pyver") | sha256sum | cut -c1-16)"
venv="$cache/venv-py$pyver-$key"
mkdir -p "$cache"

exec 9>"$cache/.install.lock"
flock 9
marker="$venv/.complete"
if [ ! -f "$marker" ]; then
  echo "[install] building $venv (first time only; torch's CUDA wheels are large)" >&2
  start=$SECONDS
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check uv >&2 \
    || echo "[install] uv unavailable, falling back to pip" >&2
  # The lock is the full resolution: install exactly it (--no-deps), so a
  # dependency overridden away at compile time (requirements-overrides.txt:
  # quantus' opencv-python) is not pulled back in.
  if [ -x "$venv/bin/uv" ]; then
    "$venv/bin/uv" pip install --no-deps --python "$venv/bin/python" -r "$repo/requirements.lock" >&2
  else
    "$venv/bin/python" -m pip install --no-deps --disable-pip-version-check -r "$repo/requirements.lock" >&2
  fi
  # Fail now, not in the middle of a workflow, if torchvision's ops do not load.
  "$venv/bin/python" -c "import torch, torchvision, torchvision.ops; torchvision.ops.nms(torch.zeros(1,4), torch.zeros(1), 0.5)" >&2
  echo "packages" > "$marker"
  echo "[install] packages installed in $((SECONDS - start)) s" >&2
fi
# Compiled bytecode: with PYTHONDONTWRITEBYTECODE=1 (common in containers, and
# on CI here) Python never caches what it compiles, so without .pyc files every
# job recompiles torch & co. from source (6-8x slower imports). uv does not
# compile by default, so compile once here; environments built before this
# step are completed in place.
if ! grep -qx bytecode "$marker"; then
  echo "[install] compiling bytecode of $venv (once)" >&2
  start=$SECONDS
  # A few files of torch's test helpers are Python 3.12-only syntax: their
  # errors are expected, so only the count is reported.
  failed=$("$venv/bin/python" -m compileall -q -j 0 "$venv/lib" 2>&1 | grep -c "^\*\*\* Error" || true)
  echo bytecode >> "$marker"
  echo "[install] bytecode compiled in $((SECONDS - start)) s ($failed file(s) skipped: syntax of newer Pythons)" >&2
fi
echo "$venv"
