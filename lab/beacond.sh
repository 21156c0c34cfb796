#!/usr/bin/env bash
# The real BeaconKit beacond v1.1.0 (berachain/beacon-kit, the open core of 0G's 0gchaind): the
# pinned prebuilt artifact (lab/lib/prebuilt.sh: ../shared/prebuilt, sha256 checked against
# lab/toolchain/prebuilt.sha256) or, without it, built once from the Go module proxy at the versions
# lab/toolchain/beacond/go.mod + go.sum pin.
#   lab/beacond.sh build   take the artifact or build it if the cache lacks it (the source build: about
#                          40 min wall on 2 cores, ~1,290 packages), progress on stderr:
#                          "[beacond] compiled N/M packages"
#   lab/beacond.sh path    print the binary's path (building it first if needed); data on stdout only
#   lab/beacond.sh kzg     print the path of the KZG trusted setup beacond loads at start (the
#                          module's testing/files/kzg-trusted-setup.json, from the module zip the
#                          go.sum pins; cached)
#   lab/beacond.sh key     print the cache key (go.mod, go.sum, build settings, Go version)
#
# Build settings (those of ../shared/prebuilt/README.md, so that the artifact is what this builds):
# cgo on; tags netgo pebbledb blst bls12381 ckzg cgo (upstream's); -trimpath, -ldflags
# "-checklinkname=0 -s -w". Built so, the binary is the artifact's byte for byte. Two settings are for Go >= 1.24, which upstream's v1.1.0 predates:
# github.com/supranational/blst raised to v0.3.14 in the go.mod (v0.3.13's cgo defines methods on
# a non-local type) and -checklinkname=0 (bytedance/sonic v1.12.6 links to encoding/json
# internals). Every run of the binary prints "WARNING:(ast) sonic only supports go1.17~1.23" on
# stderr: harmless (sonic falls back to encoding/json).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE="$ROOT/lab/toolchain/beacond"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
TAGS="netgo pebbledb blst bls12381 ckzg cgo"
LDFLAGS="-checklinkname=0 -s -w" # in this order: the prebuilt artifact's (the order is in the build id)
PREBUILT="beacond-1.1.0-x86_64-linux-gnu.tar.xz"
say() { printf '[beacond] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lab/lib/go.sh
. "$ROOT/lab/lib/go.sh" # go_build
# shellcheck source=lab/lib/prebuilt.sh
. "$ROOT/lab/lib/prebuilt.sh" # from_cache_or_artifact

# cache_key [GO-VERSION]: what the binary is made of; the artifact's key is this with the Go
# version it was built with (lab/toolchain/prebuilt.sha256, #compiler).
# shellcheck disable=SC2120 # lab/lib/prebuilt.sh passes the artifact's Go version
cache_key() {
    local go_version="${1-}"
    [ -n "$go_version" ] || go_version="$(go env GOVERSION 2>/dev/null || echo none)"
    { cat "$MODULE/go.mod" "$MODULE/go.sum"; printf '%s\n' "CGO_ENABLED=1" "$TAGS" "-trimpath $LDFLAGS" "$go_version"; } |
        sha256sum | cut -c1-16
}

build() {
    local work
    from_cache_or_artifact beacond beacond "$PREBUILT" && return 0
    say "building beacond from the Go module proxy (once: about 40 min on 2 cores)"
    work="$(mktemp -d)"
    cp "$MODULE/go.mod" "$MODULE/go.sum" "$work/"
    CGO_ENABLED=1 go_build "[beacond]" "$work" "$work/beacond" "$LDFLAGS" github.com/berachain/beacon-kit/cmd/beacond "$TAGS" ||
        { rm -rf "$work"; die "the beacond build failed"; }
    mkdir -p "${BIN%/*}" && mv "$work/beacond" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
    rm -rf "$work"
    say "built $BIN"
}

# The trusted setup: one file of the module zip, which `go mod download` checks against go.sum.
kzg() {
    local out="$NODEFLEET_CACHE/beacond/kzg-trusted-setup-v1.1.0.json" dir
    if [ ! -s "$out" ]; then
        command -v go >/dev/null || die "Go is needed to fetch beacon-kit's module (its KZG trusted setup)"
        dir="$(cd "$MODULE" && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json github.com/berachain/beacon-kit |
            sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
        [ -f "$dir/testing/files/kzg-trusted-setup.json" ] || die "beacon-kit's module has no testing/files/kzg-trusted-setup.json (in '$dir')"
        mkdir -p "${out%/*}" && cp "$dir/testing/files/kzg-trusted-setup.json" "$out.tmp" && mv "$out.tmp" "$out"
    fi
    echo "$out"
}

case "${1:-}" in
build) build ;;
path) build && echo "$BIN" ;;
kzg) kzg ;;
key) cache_key "" ;;
*) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
