#!/usr/bin/env bash
# Build a wheelhouse of requirements.lock for another Python version and platform, on a machine
# with internet, to install on a node without it (docs/install.md, "Running where there is no internet"):
#
#   tools/wheelhouse.sh --python 3.12 --platform manylinux_2_28_x86_64 [--out DIR]
#   # copy DIR to the node, then there:  tools/install_env.sh --offline DIR   (or FUD_WHEELHOUSE=DIR ./fud ...)
#
#   --python X.Y       the node's Python (default: this machine's python3)
#   --platform TAG     the node's wheel platform (default manylinux_2_28_x86_64, what torch's wheels need).
#                      A manylinux tag also admits the older manylinux tags it includes
#                      (manylinux2014 = manylinux_2_17, manylinux2010 = _2_12, manylinux1 = _2_5);
#                      pure-Python wheels fit every platform.
#   --out DIR          default: wheelhouse-py<X.Y>-<platform>
#   --requirements F   default: requirements.lock (pinned name==version lines, no dependencies resolved
#                      again: the lock is the full resolution)
#   --find-links DIR   take wheels from DIR instead of the package index (e.g. another wheelhouse)
#   --except FILE      skip the lock entries named in FILE (one package name per line, any version): those
#                      the node already has, installed there with FUD_NODE_PACKAGES=1 (a GPU container
#                      that holds most of the lock; studies/performance/README.md, "First try on a GPU")
#   --no-uv            do not fetch uv (the node installs with pip; uv's wheel is ~20 MB)
#
# Only wheels (--only-binary=:all:): nothing is built for the node. Each lock entry is fetched on its
# own, so one without a wheel for that Python / platform does not stop the rest; those are listed in
# DIR/missing.txt (and printed) with the reason, to build on a machine like the node
# (pip wheel NAME==VERSION -w DIR) or to replace. Also fetched: uv, so the node installs with uv.
# DIR/wheelhouse.json records the Python, platforms, the lock's sha256 and the date.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${FUD_PYTHON:-python3}"
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
platform="manylinux_2_28_x86_64"
lock="$repo/requirements.lock"
out=""
links=""
except_file=""
no_uv=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) pyver="$2"; shift 2 ;;
    --platform) platform="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --requirements) lock="$2"; shift 2 ;;
    --find-links) links="$2"; shift 2 ;;
    --except) except_file="$2"; shift 2 ;;
    --no-uv) no_uv=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "wheelhouse.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$pyver" =~ ^[0-9]+\.[0-9]+$ ]] || { echo "wheelhouse.sh: --python takes X.Y, got $pyver" >&2; exit 2; }
[ -f "$lock" ] || { echo "wheelhouse.sh: no requirements file $lock" >&2; exit 2; }
out="${out:-wheelhouse-py$pyver-$platform}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The platform tags pip may take: a manylinux_2_N tag admits every manylinux_2_M (M <= N) and the
# legacy aliases below it (pip's --platform is an exact match otherwise).
platforms=("$platform")
case "$platform" in
  manylinux1_*) glibc=5; arch="${platform#manylinux1_}" ;;
  manylinux2010_*) glibc=12; arch="${platform#manylinux2010_}" ;;
  manylinux2014_*) glibc=17; arch="${platform#manylinux2014_}" ;;
  manylinux_2_*) rest="${platform#manylinux_2_}"; glibc="${rest%%_*}"; arch="${rest#*_}" ;;
  *) glibc="" ;;
esac
if [ -n "$glibc" ]; then
  for ((m = glibc; m >= 5; m--)); do platforms+=("manylinux_2_${m}_$arch"); done
  [ "$glibc" -ge 17 ] && platforms+=("manylinux2014_$arch")
  [ "$glibc" -ge 12 ] && platforms+=("manylinux2010_$arch")
  platforms+=("manylinux1_$arch")
fi
platform_args=()
for p in "${platforms[@]}"; do platform_args+=(--platform "$p"); done
index_args=()
[ -n "$links" ] && index_args=(--no-index --find-links "$links")

# pip of this machine (any recent pip can download for another Python / platform)
pip=("$py" -m pip)
"${pip[@]}" --version >/dev/null 2>&1 || { echo "wheelhouse.sh: $py has no pip" >&2; exit 2; }

entries=$("$py" "$repo/src/fudbench/core/lockfile.py" "$lock")  # the lock's name==version lines, as fudbench reads them
[ -n "$entries" ] || { echo "wheelhouse.sh: no name==version lines in $lock" >&2; exit 2; }
skipped=0
if [ -n "$except_file" ]; then
  [ -f "$except_file" ] || { echo "wheelhouse.sh: --except $except_file is not a file" >&2; exit 2; }
  # names compared as pip does: case-insensitive, '-', '_' and '.' alike
  canon() { tr 'A-Z_.' 'a-z--'; }
  skip=$(canon < "$except_file" | sed 's/[[:space:]]//g; /^$/d; /^#/d')
  kept=""
  for req in $entries; do
    if printf '%s\n' "$skip" | grep -qxF "$(printf '%s' "${req%%==*}" | canon)"; then
      skipped=$((skipped + 1))
    else
      kept="$kept $req"
    fi
  done
  entries="$kept"
  echo "[wheelhouse] $skipped lock entries skipped (named in $except_file: the node has them)" >&2
fi
: > "$out/missing.txt"
n=0; missing=0
tools=uv
[ -z "$no_uv" ] || tools=""
for req in $entries $tools; do
  [ "$req" = uv ] || n=$((n + 1))
  if ! err=$("${pip[@]}" download --disable-pip-version-check --quiet --no-deps --only-binary=:all: \
        --python-version "$pyver" --implementation cp "${platform_args[@]}" "${index_args[@]}" \
        --dest "$out" "$req" 2>&1); then
    reason=$(printf '%s\n' "$err" | grep -E "ERROR|No matching" | head -1)
    if [ "$req" = uv ]; then
      echo "[wheelhouse] note: no uv wheel for this platform; the node installs with pip" >&2
    else
      missing=$((missing + 1))
      printf '%s\t%s\n' "$req" "${reason:-no wheel}" >> "$out/missing.txt"
      echo "[wheelhouse] no wheel: $req (${reason:-no wheel})" >&2
    fi
  fi
done
cp "$lock" "$out/requirements.lock"
lock_sha=$(sha256sum "$lock" | cut -c1-64)
cat > "$out/wheelhouse.json" <<JSON
{"python": "$pyver", "platforms": "${platforms[*]}", "lock_sha256": "$lock_sha", "entries": $n,
 "missing": $missing, "skipped": $skipped, "date_utc": "$(date -u +%Y-%m-%dT%H:%MZ)"}
JSON
echo "[wheelhouse] $out: $(ls "$out"/*.whl 2>/dev/null | wc -l) wheels for Python $pyver on $platform; $missing of $n lock entries have no wheel (missing.txt)" >&2
echo "$out"
