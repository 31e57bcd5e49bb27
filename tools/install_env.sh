#!/usr/bin/env bash
# Create (once) the project's Python environment and print its path.
#
# The environment lives outside the clone, keyed by the hash of
# requirements.lock and the interpreter version, so a fresh clone (CI, a later
# session) reuses it instead of downloading ~5 GB of CUDA wheels again.
#   FUD_CACHE   where environments live (default: ~/.cache/fud-repro)
#   FUD_PYTHON  base interpreter (default: python3)
#   FUD_WHEELHOUSE  install from this wheelhouse (tools/wheelhouse.sh) with no package index; the same
#               as `tools/install_env.sh --offline DIR` (docs/install.md, "Running where there is no internet")
#   FUD_REUSE_TORCH  offline only: auto (default) reuses a torch + torchvision the base interpreter
#               already imports when torch is at least FUD_MIN_TORCH (default 2.4) and of the lock's major
#               version; 1 insists, 0 installs the lock's torch from the wheelhouse
#   FUD_NODE_PACKAGES  offline only: 1 takes the lock entries the wheelhouse lacks from the base
#               interpreter at its versions (each named) instead of stopping; a separate environment
#   FUD_LOCK    the pinned requirements (default: requirements.lock; tests use a small subset)
# Idempotent: a finished environment carries a .complete marker listing the
# finished steps; a half-built one (killed install) is removed and rebuilt, and
# a finished one that misses a later step (bytecode) is completed in place.
# A lock serialises installers.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${FUD_PYTHON:-python3}"
# FUD_WHEELHOUSE set but empty (`FUD_WHEELHOUSE= ./fud run`, or a variable that expanded to nothing) asked
# for an offline install without saying where from: an error, not a silent install from the index.
if [ -n "${FUD_WHEELHOUSE+set}" ] && [ -z "$FUD_WHEELHOUSE" ]; then
  echo "[install] FUD_WHEELHOUSE is set but empty: set it to the wheelhouse directory (tools/wheelhouse.sh) for an" \
       "offline install, or unset it (unset FUD_WHEELHOUSE) to install from the package index" >&2
  exit 2
fi
wheelhouse="${FUD_WHEELHOUSE:-}"
if [ "${1:-}" = "--offline" ]; then
  [ -n "${2:-}" ] || { echo "[install] --offline takes the wheelhouse directory (tools/wheelhouse.sh)" >&2; exit 2; }
  wheelhouse="$2"
fi
lock="${FUD_LOCK:-$repo/requirements.lock}"
# HOME may be unset in stripped CI environments: fall back to the passwd entry.
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export UV_CACHE_DIR="${UV_CACHE_DIR:-$home/.cache/uv}"
cache="${FUD_CACHE:-$home/.cache/fud-repro}"
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
key="$( (cat "$lock"; echo "$pyver") | sha256sum | cut -c1-16)"
mkdir -p "$cache"
# absolute: ./fud puts $venv/bin on PATH and then changes to the repository, where a relative
# FUD_CACHE (FUD_CACHE=cache ./fud run) would name another folder, or none
cache="$(cd "$cache" && pwd)"
lock="$(cd "$(dirname "$lock")" && pwd)/$(basename "$lock")"
venv="$cache/venv-py$pyver-$key"
reuse_torch=""
if [ -n "$wheelhouse" ]; then
  [ -d "$wheelhouse" ] || { echo "[install] wheelhouse $wheelhouse is not a directory (FUD_WHEELHOUSE / --offline)" >&2; exit 2; }
  wheelhouse="$(cd "$wheelhouse" && pwd)"
  # Reuse the node's torch (a cluster's module, built for its driver) where it is compatible: the
  # environment then takes torch's stack from the node and installs the rest of the lock.
  # Decided once, when the environment is built (importing torch takes seconds).
  # What the environment takes from the node depends on the node: its interpreter is part of the name
  # (another FUD_PYTHON, another environment); FUD_NODE_PACKAGES=1 (lock entries without a wheel taken
  # from the node) makes another one. A node whose packages change in place (an upgraded container)
  # needs its environment removed: docs/install.md, "Running where there is no internet".
  node="$("$py" -c 'import sys; print(sys.executable, sys.prefix, sys.version)' | sha256sum | cut -c1-8)"
  own_torch="$venv"   # the environment without the node's torch
  reused="$venv"      # with it
  if [ "${FUD_NODE_PACKAGES:-}" = 1 ]; then own_torch="$venv-nodepkgs-$node"; reused="$venv-nodepkgs"; fi
  reused="$reused-nodetorch-$node"
  if [ "${FUD_REUSE_TORCH:-auto}" != 0 ] && [ -f "$reused/.complete" ]; then
    reuse_torch=yes
  elif [ ! -f "$own_torch/.complete" ]; then
    reuse_torch=$(LOCK="$lock" "$py" "$repo/tools/compatible_torch.py" >&2 && echo yes || true)
  fi
  if [ -n "$reuse_torch" ]; then venv="$reused"; else venv="$own_torch"; fi
fi

exec 9>"$cache/.install.lock"
flock 9
marker="$venv/.complete"
if [ ! -f "$marker" ]; then
  echo "[install] building $venv (first time only; torch's CUDA wheels are large)" >&2
  start=$SECONDS
  rm -rf "$venv"
  reqs="$lock"
  offline=()
  isolate=()
  if [ -n "$wheelhouse" ]; then
    # No index at all: every package from the wheelhouse. Its missing.txt (entries without a wheel for
    # this Python / platform) and entries absent from it are named before anything is installed.
    offline=(--no-index --find-links "$wheelhouse")
    # Only the wheelhouse: none of the machine's pip / uv settings (find-links, index URLs, in the
    # PIP_* / UV_* variables or in pip.conf / uv.toml files) is read. pip: PIP_CONFIG_FILE=/dev/null
    # loads no config file, --isolated ignores the variables; uv: --no-config, and the variables unset
    # (UV_CACHE_DIR kept: it is the cache, not a source).
    isolate=(env)
    for var in $(env | sed -n 's/^\(\(PIP\|UV\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
      [ "$var" = UV_CACHE_DIR ] || isolate+=(-u "$var")
    done
    isolate+=(PIP_CONFIG_FILE=/dev/null)
    # The filtered lock is the install's own file, outside the cache, removed however the install ends.
    reqs_dir="$(mktemp -d "${TMPDIR:-/tmp}/fud-offline.XXXXXX")"
    trap 'rm -rf "$reqs_dir"' EXIT
    reqs="$reqs_dir/requirements.txt"
    LOCK="$lock" WHEELHOUSE="$wheelhouse" REUSE="$reuse_torch" "$py" "$repo/tools/compatible_torch.py" --filter > "$reqs"
    "$py" -m venv "$venv"
    if [ -n "$reuse_torch" ] || [ "${FUD_NODE_PACKAGES:-}" = 1 ]; then
      # What comes from the node (its torch stack; with FUD_NODE_PACKAGES=1 the entries without a wheel)
      # is a folder of links, added after the environment's own packages (compatible_torch.py says why
      # not --system-site-packages).
      LOCK="$lock" WHEELHOUSE="$wheelhouse" REUSE="$reuse_torch" "$py" "$repo/tools/compatible_torch.py" \
        --view "$venv/node-packages" \
        --pth "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_fud_node_packages.pth"
    fi
  else
    "$py" -m venv "$venv"
  fi
  ${isolate[@]+"${isolate[@]}"} "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    ${offline[@]+--isolated "${offline[@]}"} uv >&2 || echo "[install] uv unavailable, falling back to pip" >&2
  # The lock is the full resolution: install exactly it (--no-deps), so a
  # dependency overridden away at compile time (requirements-overrides.txt:
  # quantus' opencv-python) is not pulled back in.
  if [ -x "$venv/bin/uv" ]; then
    ${isolate[@]+"${isolate[@]}"} "$venv/bin/uv" pip install --no-deps ${offline[@]+--offline --no-config "${offline[@]}"} \
      --python "$venv/bin/python" -r "$reqs" >&2
  else
    ${isolate[@]+"${isolate[@]}"} "$venv/bin/python" -m pip install --no-deps --disable-pip-version-check \
      ${offline[@]+--isolated "${offline[@]}"} -r "$reqs" >&2
  fi
  # Fail now, not in the middle of a workflow, if torchvision's ops (or a reused torch) do not load.
  if grep -q '^torchvision==' "$lock"; then
    "$venv/bin/python" -c "import torch, torchvision, torchvision.ops; torchvision.ops.nms(torch.zeros(1,4), torch.zeros(1), 0.5)" >&2
  elif [ -n "$reuse_torch" ]; then
    "$venv/bin/python" -c "import torch; torch.ones(1)" >&2
  fi
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
