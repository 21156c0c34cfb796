#!/usr/bin/env bash
# The real Aztec CLI (@aztec/aztec from the npm registry, with the forge and solc its
# deploy-l1-contracts runs), installed once into the cache outside the clone, keyed by
# lab/aztec/package-lock.json (and solc.cjs, copied in). Progress goes to stderr, data to stdout.
#
#   lab/aztec.sh install          install (once); prints the install directory
#   lab/aztec.sh path             the install directory (installs first if needed)
#   lab/aztec.sh cli ARGS...      the real CLI (node dest/bin/index.js ARGS) under the node below
#   lab/aztec.sh deploy RPC_URL CHAIN_ID
#                                 deploy-l1-contracts onto that L1 with the key in $DEPLOYER_KEY;
#                                 prints the contract addresses (JSON)
#   lab/aztec.sh l1 fund|flush|status|address RPC_URL ROLLUP [ATTESTER]
#                                 the dev L1's side of a registration (lab/aztec/l1.mjs)
#
# Two things this machine lacks, and what stands in for them (each a real program, not a simulator):
# - Aztec's native modules (world state, bb) need glibc 2.38 and libstdc++ 3.4.32; Debian 12 has
#   2.36. `node` here is this machine's node with its loader and C/C++ runtime taken from Debian 13's
#   packages (patchelf), unpacked into the cache: only the CLI's process uses them.
# - forge wants solc 0.8.30 and would download it; solc.cjs serves solc's command line
#   (--version, --standard-json) from the npm solc package, the same compiler built to wasm. The
#   contracts come precompiled with the package, so forge only checks its cache.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-$HOME/.cache/nodefleet}"
say() { printf '[aztec] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

key="$(cat "$ROOT/lab/aztec/package.json" "$ROOT/lab/aztec/package-lock.json" "$ROOT/lab/aztec/solc.cjs" "$ROOT/lab/aztec.sh" | sha256sum | cut -c1-16)"
DIR="$NODEFLEET_CACHE/aztec/$key"

install_cli() {
    [ -f "$DIR/.complete" ] && return 0
    command -v npm >/dev/null || die "npm is missing (scripts/setup.sh installs it)"
    say "installing @aztec/aztec and its deploy tools into $DIR (once: about 1 GB, a few minutes)"
    rm -rf "$DIR.tmp" && mkdir -p "$DIR.tmp"
    cp "$ROOT/lab/aztec/package.json" "$ROOT/lab/aztec/package-lock.json" "$DIR.tmp/"
    # --ignore-scripts: nothing downloads a binary of its own; the forge binary is the registry package's.
    # npm install with the lockfile, not npm ci: npm ci calls this lockfile out of sync over optional
    # packages of other platforms (a known npm fault); the locked versions are what is installed.
    (cd "$DIR.tmp" && npm install --no-save --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    install_runtime "$DIR.tmp" "$DIR"
    cp "$ROOT/lab/aztec/solc.cjs" "$DIR.tmp/solc" && chmod 0755 "$DIR.tmp/solc"
    touch "$DIR.tmp/.complete"
    rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
    # Older installs (another lockfile or script) are a gigabyte each: only the current one is kept.
    find "$NODEFLEET_CACHE/aztec" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
    "$DIR/bin/node" -e 'process.exit(0)' || { rm -f "$DIR/.complete"; die "the CLI's node does not start"; }
    say "installed: $("$DIR/bin/node" "$DIR/node_modules/@aztec/aztec/dest/bin/index.js" --version 2>/dev/null | tail -1)"
}

# Debian 13's libc6, libstdc++6 and libgcc-s1, downloaded with a private apt configuration (the
# machine's own sources and status are not touched), unpacked, and a copy of node pointed at them:
#   install_runtime INTO FINAL
install_runtime() {
    # INTO is where it is built; FINAL where it will be (the loader's path is written into node).
    local into="$1" apt="$1/.apt" lib="$2/runtime/usr/lib/x86_64-linux-gnu"
    command -v patchelf >/dev/null || die "patchelf is missing (scripts/setup.sh installs it)"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$apt/preferences.d" "$into/runtime" "$into/bin"
    local mirror
    mirror="$(grep -hm1 '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}')"
    [ -n "$mirror" ] || mirror="$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)"
    [ -n "$mirror" ] || die "no Debian mirror configured in /etc/apt"
    echo "deb $mirror trixie main" > "$apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::Etc::PreferencesParts=$apt/preferences.d" -o Dir::Etc::Preferences=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null
        -o APT::Sandbox::User=root -o Debug::NoLocking=1 -qq)
    say "fetching Debian 13's libc6, libstdc++6, libgcc-s1 for the CLI's native modules"
    # Its own lists and cache, but the machine's apt configuration: an image's clean-up hook after
    # an update (docker-clean) would delete the .deb files of an install running beside it.
    with_apt_lock apt-get "${opts[@]}" update >&2
    (cd "$apt/debs" && with_apt_lock apt-get "${opts[@]}" download libc6 libstdc++6 libgcc-s1 >&2)
    for deb in "$apt/debs"/*.deb; do dpkg-deb -x "$deb" "$into/runtime"; done
    rm -rf "$apt"
    cp "$(readlink -f "$(command -v node)")" "$into/bin/node"
    patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --set-rpath "$lib" "$into/bin/node"
}

cli() {
    install_cli
    exec "$DIR/bin/node" --no-warnings "$DIR/node_modules/@aztec/aztec/dest/bin/index.js" "$@"
}

deploy() {
    local url="${1:?RPC URL}" chain="${2:?chain id}"
    [ -n "${DEPLOYER_KEY:-}" ] || die "DEPLOYER_KEY is not set"
    install_cli
    # forge_broadcast.js is started with process.execPath (the node above); forge from the
    # registry package; solc.cjs for forge's solc; no download (FOUNDRY_OFFLINE).
    # The key reaches the CLI as PRIVATE_KEY, not in this script's argv (deploy-l1-contracts
    # itself passes it on to forge's command line: a dev-chain key, worthless elsewhere).
    PATH="$DIR/node_modules/@foundry-rs/forge-linux-amd64/bin:$PATH" \
    FOUNDRY_SOLC="$DIR/solc" FOUNDRY_OFFLINE=true FORGE_BROADCAST_TIMEOUT=300 FORGE_BROADCAST_MAX_RETRIES=1 \
    PRIVATE_KEY="$DEPLOYER_KEY" \
        "$DIR/bin/node" --no-warnings "$DIR/node_modules/@aztec/aztec/dest/bin/index.js" \
        deploy-l1-contracts --l1-rpc-urls "$url" --l1-chain-id "$chain" --json
}

case "${1:-path}" in
    install | path) install_cli; echo "$DIR" ;;
    cli) shift; cli "$@" ;;
    deploy) shift; deploy "$@" ;;
    l1) shift; install_cli; exec node "$ROOT/lab/aztec/l1.mjs" "$DIR" "$@" ;;
    *) die "usage: lab/aztec.sh install | path | cli ARGS... | deploy RPC_URL CHAIN_ID | l1 COMMAND ..." ;;
esac
