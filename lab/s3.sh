#!/usr/bin/env bash
# A real S3-compatible object store on this machine for the pipeline test: moto's server (PyPI
# `moto[s3]`, at the versions pinned in lab/s3/requirements.txt), installed once into a virtualenv
# in the cache outside the clone, keyed by that file. It serves the S3 API on loopback, which the
# Pulumi CLI's DIY backend uses as it would a bucket in the cloud (state, history, locks).
#
#   lab/s3.sh path      install (once); prints the moto_server binary
# Progress goes to stderr, data to stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
say() { printf '[s3] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

key="$(sha256sum < "$ROOT/lab/s3/requirements.txt" | cut -c1-16)"
DIR="$NODEFLEET_CACHE/s3/$key"

install() {
    [ -f "$DIR/.complete" ] && return 0
    command -v python3 >/dev/null || die "python3 is missing (scripts/setup.sh installs it)"
    say "installing moto's S3 server into $DIR (once: about 140 MB, under a minute)"
    # Built where it stays (a virtualenv's scripts name their interpreter by path); .complete
    # marks a whole install, so an interrupted one is made again.
    rm -rf "$DIR" && mkdir -p "$DIR"
    python3 -m venv "$DIR/venv" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$DIR/venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$ROOT/lab/s3/requirements.txt" >&2
    "$DIR/venv/bin/pip" check >&2 || die "the pinned packages do not fit together"
    touch "$DIR/.complete"
}

case "${1:-}" in
path) install; echo "$DIR/venv/bin/moto_server" ;;
*) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
