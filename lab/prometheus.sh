#!/usr/bin/env bash
# Debian bookworm's Prometheus 2.42, Alertmanager 0.25 and node_exporter 1.5 binaries on this
# machine, for the contract tests of what nodefleet renders for them (promtool check config,
# promtool check rules, promtool test rules, promtool check metrics, amtool check-config): the
# very packages nodefleet installs on the hosts, unpacked into the cache outside the clone (not
# installed: no service starts on this machine). Kept per package version.
#
#   lab/prometheus.sh path    fetch and unpack (once); prints the directory of the binaries
# Progress goes to stderr, data to stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
say() { printf '[prometheus] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# package, the upstream version nodefleet's rendered files are written for (the Debian revision may move).
PACKAGES=("prometheus 2.42." "prometheus-alertmanager 0.25." "prometheus-node-exporter 1.5.")

candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2 }'; }

versions() {
    local p v out=""
    for entry in "${PACKAGES[@]}"; do
        p="${entry%% *}"
        v="$(candidate "$p")"
        out+="$p=$v "
    done
    echo "$out"
}

install() {
    local want dir p prefix v tmp
    want="$(versions)"
    if [[ "$want" == *"=(none)"* || "$want" == *"= "* ]]; then
        say "refreshing the package lists (apt-get update)"
        with_apt_lock apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
        want="$(versions)"
    fi
    for entry in "${PACKAGES[@]}"; do
        p="${entry%% *}"; prefix="${entry#* }"
        v="$(candidate "$p")"
        [[ "$v" == "$prefix"* ]] || die "$p: this machine's package sources offer ${v:-nothing}, not $prefix* (Debian bookworm's)"
    done
    dir="$NODEFLEET_CACHE/prometheus/$(printf '%s' "$want" | sha256sum | cut -c1-16)"
    if [ ! -f "$dir/.complete" ]; then
        say "fetching ${want}(once: about 34 MB)"
        rm -rf "$dir" && mkdir -p "$dir"
        tmp="$(mktemp -d)"
        # apt-get download as root writes where _apt cannot: it says so, and downloads anyway.
        # shellcheck disable=SC2086 # one word per package=version
        (cd "$tmp" || exit 1; with_apt_lock apt-get -o DPkg::Lock::Timeout=600 download -qq $want 2>&1 | { grep -v "unsandboxed" || true; } >&2) || die "apt-get download failed"
        for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
        rm -rf "$tmp"
        for b in prometheus promtool prometheus-alertmanager amtool prometheus-node-exporter; do
            [ -x "$dir/root/usr/bin/$b" ] || die "$b is not in the unpacked packages"
        done
        touch "$dir/.complete"
    fi
    echo "$dir/root/usr/bin"
}

case "${1:-}" in
path) install ;;
*) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
