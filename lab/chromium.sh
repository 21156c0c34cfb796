#!/usr/bin/env bash
# Debian's headless Chromium on this machine, for the monitoring scenario's screenshot of
# Prometheus's alerts page (a test artifact). Installed with apt the first time it is asked for
# (the chromium-headless-shell package and its libraries: about 140 MB, 1-2 minutes here); nothing
# else uses it, so the test command does not install it unless that scenario runs.
#
#   lab/chromium.sh shot URL PNG   a screenshot of URL (1400x1000) into PNG; the page's DOM, as
#                                  rendered, on stdout
# Progress goes to stderr, data to stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
BIN=/usr/bin/chromium-headless-shell
say() { printf '[chromium] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

ensure() {
    [ -x "$BIN" ] && return 0
    say "installing Debian's chromium-headless-shell (once: about 140 MB of packages)"
    apt_install chromium-headless-shell
    [ -x "$BIN" ] || die "chromium-headless-shell installed, but $BIN is not there"
}

# Flags: no sandbox (the tests run as root, which Chromium's sandbox refuses), no GPU (none here);
# Chromium's own warnings (no DRM device, ...) go to a log, shown only when it fails.
run() {
    local log rc=0
    log="$(mktemp)"
    timeout 120 "$BIN" --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1000 "$@" 2>"$log" || rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -n 20 "$log" >&2
        rm -f "$log"
        die "chromium-headless-shell exited $rc"
    fi
    rm -f "$log"
}

case "${1:-}" in
shot)
    [ $# -eq 3 ] || die "usage: lab/chromium.sh shot URL PNG"
    ensure
    mkdir -p "$(dirname "$3")"
    run --screenshot="$3" "$2"
    [ -s "$3" ] || die "no screenshot was written to $3"
    run --dump-dom "$2"
    ;;
*) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
