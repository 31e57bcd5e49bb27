#!/usr/bin/env bash
# Install Debian's chromium for the browser test (tests/test_report_in_browser.py renders report.html and
# the results page in headless Chromium and checks their layout). A no-op when a Chromium is on PATH.
#   tools/install_browser.sh     exit 0: installed or present; 3: cannot install here (not root, no apt-get,
#                                no package mirror); the test then skips, saying so (CI: .ci/run requires it)
set -euo pipefail
log() { echo "[install_browser] $*" >&2; }
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null; then log "$c is present: $(command -v "$c")"; exit 0; fi
done
cannot_install() { log "cannot install chromium here: $*"; exit 3; }
[ "$(id -u)" = 0 ] || cannot_install "apt-get needs root: run 'sudo apt-get install -y chromium'"
command -v apt-get >/dev/null || cannot_install "no apt-get: install Chromium by hand"
apt_log="${TMPDIR:-/tmp}/fud-browser-apt.log"
get=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium)
# a fresh image has no (or stale) package lists: update when the install fails
rc=0
"${get[@]}" >"$apt_log" 2>&1 || { apt-get update -q >>"$apt_log" 2>&1 && "${get[@]}" >>"$apt_log" 2>&1; } || rc=$?
if [ "$rc" != 0 ]; then
  tail -20 "$apt_log" >&2
  cannot_install "apt-get install chromium failed (log: $apt_log)"
fi
command -v chromium >/dev/null || cannot_install "installed chromium but no 'chromium' command is on PATH"
log "installed $(chromium --version 2>/dev/null || echo chromium)"
