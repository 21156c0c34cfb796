#!/usr/bin/env bash
# Debian's cloud-init, unpacked (not installed) into the cache, so that the tests validate the
# user-data nodefleet renders for cloud hosts with cloud-init's own schema. Installed on this machine
# it would act on it at its next boot; unpacked, only its Python runs, under Debian's python3 with
# the Python packages it depends on (installed: they are libraries).
#
#   lab/cloud-init.sh              unpack it once (apt-get download; as root the first time)
#   lab/cloud-init.sh schema FILE  `cloud-init schema --config-file FILE` (its exit status and words)
#   lab/cloud-init.sh deb          the path of the .deb it unpacked (the lab's cloud host installs it)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}/cloud-init"
# Debian 12's: what a Debian 12 cloud image boots with.
VERSION=22.4.2-1+deb12u4
PY_DEPS=(python3-configobj python3-jinja2 python3-jsonpatch python3-jsonschema python3-netifaces python3-oauthlib python3-requests python3-serial python3-yaml)
DIR="$CACHE/$VERSION"
say() { printf '[cloud-init] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

ensure() {
    local missing=() p
    for p in "${PY_DEPS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: run as root or apt-get install ${missing[*]}"
        say "installing ${missing[*]} (apt-get)"
        apt_install "${missing[@]}"
    fi
    [ -x "$DIR/root/usr/bin/cloud-init" ] && return 0
    say "unpacking Debian's cloud-init $VERSION into $DIR"
    local tmp
    mkdir -p "$CACHE"
    tmp="$(mktemp -d "$CACHE/.unpack.XXXXXX")"
    # _apt cannot write into a root-only directory: the download runs in a world-writable one.
    chmod 0755 "$tmp"
    (cd "$tmp" && with_apt_lock apt-get download -qq "cloud-init=$VERSION" >/dev/null 2>&1) ||
        { rm -rf "$tmp"; die "apt-get download cloud-init=$VERSION failed (apt-get update first?)"; }
    dpkg-deb -x "$tmp"/cloud-init_*.deb "$tmp/root"
    mv "$tmp"/cloud-init_*.deb "$tmp/cloud-init.deb"
    rm -rf "$DIR"
    mv "$tmp" "$DIR"
}

ensure
case "${1:-}" in
"") ;;
schema)
    [ -n "${2:-}" ] || die "usage: lab/cloud-init.sh schema FILE"
    PYTHONPATH="$DIR/root/usr/lib/python3/dist-packages" exec /usr/bin/python3 "$DIR/root/usr/bin/cloud-init" schema --config-file "$2"
    ;;
deb) printf '%s\n' "$DIR/cloud-init.deb" ;;
*) die "usage: lab/cloud-init.sh [schema FILE | deb]" ;;
esac
