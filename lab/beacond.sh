#!/usr/bin/env bash
# The real BeaconKit beacond v1.1.0 (berachain/beacon-kit, the open core of 0G's 0gchaind), built
# from the Go module proxy at the versions lab/toolchain/beacond/go.mod + go.sum pin, with the lab's
# patches (lab/toolchain/patches/beacond) applied to the module's source; or, for a build without
# patches, the pinned prebuilt artifact (lab/lib/prebuilt.sh: ../shared/prebuilt, sha256 checked
# against lab/toolchain/prebuilt.sha256: it is that build byte for byte).
#   lab/beacond.sh build   take the cached binary or build it: about 150 s wall, 200 CPU-s on 2 cores
#                          with empty Go caches (~1,290 packages, 1.2 GB of modules); progress on
#                          stderr: "[beacond] compiled N/M packages"
#   lab/beacond.sh path    print the binary's path (building it first if needed); data on stdout only
#   lab/beacond.sh kzg     print the path of the KZG trusted setup beacond loads at start (the
#                          module's testing/files/kzg-trusted-setup.json, from the module zip the
#                          go.sum pins; cached)
#   lab/beacond.sh key     print the cache key (go.mod, go.sum, patches, build settings, Go version)
#   lab/beacond.sh devnet DIR [EL-GENESIS]
#                          a one-validator devnet in DIR: DIR/home (beacond init, its key the one
#                          validator, a premined deposit) and DIR/eth-genesis.json, the execution
#                          genesis geth and reth start from: EL-GENESIS (default: the dev chain's,
#                          lab/sim/release/geth-genesis.json) with chain id 80087 (the devnet chain
#                          spec's, which beacond requires of its execution client), the deposit and
#                          beacon-roots contracts of the module's testing/files/eth-genesis.json, and
#                          the deposit contract's storage for the validator; run with CHAIN_SPEC=devnet
#   lab/beacond.sh dev-genesis [devnet|vmnet]
#                          make a committed network of the lab again (after a change to the dev
#                          genesis or to beacon-kit's contracts): a devnet as above, its genesis.json,
#                          eth-genesis.json and priv_validator_key.json committed in
#                          lab/sim/release/NETWORK/ (lab keys, fixed so that a release can carry the
#                          genesis and a node can name a peer):
#                            devnet  the dev chain's (lab/devchain.sh), with its validator's
#                                    node_key.json
#                            vmnet   the dev validator's network, two validators: validator-1 on
#                                    the VMs (the dev stack's devValidatorKey is its
#                                    priv_validator_key.json; 32 of stake, 40% of the power) and
#                                    the runner's (host_priv_validator_key.json, host_node_key.json;
#                                    48 of stake, 60%): neither has two thirds, so every commit
#                                    needs validator-1's vote and the network halts while it is
#                                    stopped; made again, it keeps the committed keys
#
# Build settings (those of ../shared/prebuilt/README.md): cgo on; tags netgo pebbledb blst bls12381
# ckzg cgo (upstream's); -trimpath, -ldflags "-checklinkname=0 -s -w". Two are for Go >= 1.24, which
# v1.1.0 predates: github.com/supranational/blst raised to v0.3.14 in the go.mod (v0.3.13's cgo
# defines methods on a non-local type) and -checklinkname=0 (bytedance/sonic v1.12.6 links to
# encoding/json internals). Every run of the binary prints "WARNING:(ast) sonic only supports
# go1.17~1.23" on stderr: harmless (sonic falls back to encoding/json).
#
# The patch, and why: 0001 makes `beacond rollback` work. In v1.1.0 it rolls CometBFT back one
# height and then panics (nil pointer: the node's CommitMultiStore is an unset embedded interface),
# leaving the application one height ahead of CometBFT, which the next start refuses ("app block
# height (N) is higher than core (N-1)"). The patch looks the CometBFT service up in the node's
# service registry, as BeaconKit v1.3.0 does, so the application's store rolls back too.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE="$ROOT/lab/toolchain/beacond"
PATCHES="$ROOT/lab/toolchain/patches/beacond"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
TAGS="netgo pebbledb blst bls12381 ckzg cgo"
LDFLAGS="-checklinkname=0 -s -w" # in this order: the prebuilt artifact's (the order is in the build id)
PREBUILT="beacond-1.1.0-lab-x86_64-linux-gnu.tar.xz" # the build with the patch below
say() { printf '[beacond] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lab/lib/go.sh
. "$ROOT/lab/lib/go.sh" # go_build
# shellcheck source=lab/lib/prebuilt.sh
. "$ROOT/lab/lib/prebuilt.sh" # from_cache_or_artifact

patches() { find "$PATCHES" -name '*.patch' 2>/dev/null | sort; }

# cache_key [GO-VERSION]: what the binary is made of; the artifact's key is this with the Go
# version it was built with (lab/toolchain/prebuilt.sha256, #compiler).
# shellcheck disable=SC2120 # lab/lib/prebuilt.sh passes the artifact's Go version
cache_key() {
    local go_version="${1-}"
    [ -n "$go_version" ] || go_version="$(go env GOVERSION 2>/dev/null || echo none)"
    {
        cat "$MODULE/go.mod" "$MODULE/go.sum"
        patches | while IFS= read -r p; do cat "$p"; done
        printf '%s\n' "CGO_ENABLED=1" "$TAGS" "-trimpath $LDFLAGS" "$go_version"
    } | sha256sum | cut -c1-16
}

# The directory of beacon-kit's module in the module cache, downloaded (checked against go.sum).
module_dir() {
    (cd "$MODULE" && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json github.com/berachain/beacon-kit |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

build() {
    local work src p
    from_cache_or_artifact beacond beacond "$PREBUILT" && return 0
    command -v go >/dev/null || die "Go 1.25 or newer is needed to build beacond"
    say "building beacond from the Go module proxy (once: about 150 s on 2 cores)"
    work="$(mktemp -d)"
    cp "$MODULE/go.mod" "$MODULE/go.sum" "$work/"
    if [ -n "$(patches)" ]; then
        src="$(module_dir)"
        [ -d "$src" ] || { rm -rf "$work"; die "could not download beacon-kit's module"; }
        cp -r "$src" "$work/beacon-kit" && chmod -R u+w "$work/beacon-kit"
        while IFS= read -r p; do
            say "patching beacon-kit: ${p##*/}"
            patch -s -p1 -d "$work/beacon-kit" --no-backup-if-mismatch <"$p" || { rm -rf "$work"; die "the patch $p does not apply"; }
        done < <(patches)
        printf '\nreplace github.com/berachain/beacon-kit => ./beacon-kit\n' >>"$work/go.mod"
    fi
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
        dir="$(module_dir)"
        [ -f "$dir/testing/files/kzg-trusted-setup.json" ] || die "beacon-kit's module has no testing/files/kzg-trusted-setup.json (in '$dir')"
        mkdir -p "${out%/*}" && cp "$dir/testing/files/kzg-trusted-setup.json" "$out.tmp" && mv "$out.tmp" "$out"
    fi
    echo "$out"
}

# devnet DIR [EL-GENESIS]: see the header.
devnet() {
    local dir="$1" base="${2:-$ROOT/lab/sim/release/geth-genesis.json}" bin mod
    [ -n "$dir" ] || die "devnet: give a directory"
    [ ! -e "$dir/home" ] || die "devnet: $dir/home exists"
    build
    bin="$BIN" mod="$(module_dir)"
    mkdir -p "$dir"
    eth_genesis "$base" "$mod" "$dir/eth-genesis.json"
    ( # the devnet chain spec for these commands alone
        # shellcheck disable=SC2030
        export CHAIN_SPEC=devnet
        "$bin" init nodefleet-devnet --chain-id beacond-2061 --home "$dir/home"
        "$bin" genesis add-premined-deposit --home "$dir/home" 32000000000 0x20f33ce90a13a4b5e7697e3544c3083b8f8a51d4
        "$bin" genesis collect-premined-deposits --home "$dir/home"
        "$bin" genesis set-deposit-storage "$dir/eth-genesis.json" --home "$dir/home"
        # set-deposit-storage wrote home/eth-genesis.json: the payload header must be of that file.
        "$bin" genesis execution-payload "$dir/home/eth-genesis.json" --home "$dir/home"
    ) >"$dir/devnet.log" 2>&1 || { tail -20 "$dir/devnet.log" >&2; die "devnet: beacond's genesis commands failed"; }
    mv "$dir/home/eth-genesis.json" "$dir/eth-genesis.json"
    say "devnet in $dir: home/ and eth-genesis.json"
}

# The execution genesis of a devnet: EL-GENESIS with chain id 80087 and the module's contracts.
eth_genesis() {
    local base="$1" mod="$2" out="$3"
    python3 - "$base" "$mod/testing/files/eth-genesis.json" "$out" <<'PY'
import json, sys
base, upstream, out = sys.argv[1:]
with open(base) as f:
    g = json.load(f)
with open(upstream) as f:
    contracts = {a.lower(): v for a, v in json.load(f)["alloc"].items() if "code" in v}
g["config"]["chainId"] = 80087
g["alloc"].update(contracts)
with open(out, "w") as f:
    json.dump(g, f, indent=1)
PY
}

# keep_keys DIR: a vmnet made again keeps the committed network's keys (the dev stack's
# devValidatorKey, the node id validator-1 names as its peer); only the genesis changes.
keep_keys() {
    local dir="$1" net="$ROOT/lab/sim/release/vmnet"
    [ -f "$net/priv_validator_key.json" ] || return 0
    cp "$net/priv_validator_key.json" "$dir/vm/config/priv_validator_key.json"
    cp "$net/host_priv_validator_key.json" "$dir/host/config/priv_validator_key.json"
    cp "$net/host_node_key.json" "$dir/host/config/node_key.json"
}

# vmnet DIR: the two-validator network of the header (DIR/vm and DIR/host, the genesis in both).
vmnet() {
    local dir="$1" bin mod
    build
    bin="$BIN" mod="$(module_dir)"
    mkdir -p "$dir"
    eth_genesis "$ROOT/lab/sim/release/geth-genesis.json" "$mod" "$dir/eth-genesis.json"
    ( # the devnet chain spec for these commands alone
        # shellcheck disable=SC2031
        export CHAIN_SPEC=devnet
        "$bin" init nodefleet-vmnet --chain-id beacond-2061 --home "$dir/vm"
        "$bin" init nodefleet-vmnet-host --chain-id beacond-2061 --home "$dir/host"
        keep_keys "$dir"
        "$bin" genesis add-premined-deposit --home "$dir/vm" 32000000000 0x20f33ce90a13a4b5e7697e3544c3083b8f8a51d4
        "$bin" genesis add-premined-deposit --home "$dir/host" 48000000000 0x20f33ce90a13a4b5e7697e3544c3083b8f8a51d4
        cp "$dir/host/config/premined-deposits/"*.json "$dir/vm/config/premined-deposits/"
        "$bin" genesis collect-premined-deposits --home "$dir/vm"
        "$bin" genesis set-deposit-storage "$dir/eth-genesis.json" --home "$dir/vm"
        "$bin" genesis execution-payload "$dir/vm/eth-genesis.json" --home "$dir/vm"
    ) >"$dir/vmnet.log" 2>&1 || { tail -20 "$dir/vmnet.log" >&2; die "vmnet: beacond's genesis commands failed"; }
    mv "$dir/vm/eth-genesis.json" "$dir/eth-genesis.json"
    cp "$dir/vm/config/genesis.json" "$dir/host/config/genesis.json"
}

dev_genesis() {
    local net="${1:-devnet}" work out
    case "$net" in devnet | vmnet) ;; *) die "dev-genesis: the network is devnet or vmnet, not '$net'" ;; esac
    out="$ROOT/lab/sim/release/$net"
    work="$(mktemp -d)"
    mkdir -p "$out"
    if [ "$net" = devnet ]; then
        devnet "$work/net"
        cp "$work/net/home/config/genesis.json" "$work/net/home/config/priv_validator_key.json" "$work/net/home/config/node_key.json" \
            "$work/net/eth-genesis.json" "$out/"
    else
        vmnet "$work/net"
        cp "$work/net/vm/config/genesis.json" "$work/net/vm/config/priv_validator_key.json" "$work/net/eth-genesis.json" "$out/"
        cp "$work/net/host/config/priv_validator_key.json" "$out/host_priv_validator_key.json"
        cp "$work/net/host/config/node_key.json" "$out/host_node_key.json"
    fi
    rm -rf "$work"
    say "wrote the lab's $net to $out"
}

case "${1:-}" in
build) build ;;
dev-genesis) dev_genesis "${2:-}" ;;
devnet) devnet "${2:-}" "${3:-}" ;;
path) build && echo "$BIN" ;;
kzg) kzg ;;
key) cache_key "" ;;
*) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
