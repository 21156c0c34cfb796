#!/usr/bin/env bash
# Pulumi for a pipeline job, before scripts/ci/stack.sh, as the runner's user (no root):
#   scripts/ci/install-pulumi.sh STACK...
# NODEFLEET_TOOLCHAIN chooses which Pulumi (docs/gitops.md, "Which Pulumi the pipeline runs"):
#   stock (the default)  as Pulumi documents a manual install: the CLI release of the pinned version
#                        from Pulumi's download site (PULUMI_DOWNLOAD_BASE: a mirror of it), its
#                        sha256 checked against the release's own checksums file, unpacked into
#                        ~/.pulumi/bin; then `pulumi plugin install resource NAME VERSION` for each
#                        provider the stacks use, pinned (PULUMI_PLUGIN_SERVER: a mirror, --server)
#   nodefleet            nodefleet's CLI and command provider (their patches: docs/toolchain.md) from
#                        their prebuilt artifacts in NODEFLEET_PREBUILT, each digest pinned in
#                        lab/toolchain/prebuilt.sha256; never built from source here
# The versions are lab/toolchain/versions.sh's and the ones the lock file's SDKs ask for. The CLI's
# directory goes to GITHUB_PATH when set (the next steps find `pulumi`), and is printed on stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NF_ROOT="$ROOT"
# shellcheck source=scripts/lib/fail.sh
source "$ROOT/scripts/lib/fail.sh" # a failing command stops it with its line, never silently
cd "$ROOT"
say() { printf '[install-pulumi] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
[ "$#" -gt 0 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
for stack in "$@"; do
    [[ "$stack" =~ ^[a-z0-9-]+$ ]] || die "$stack: a stack name is lowercase letters, digits and dashes"
    [ -f "Pulumi.$stack.yaml" ] || die "Pulumi.$stack.yaml does not exist"
done
# shellcheck source=lab/toolchain/versions.sh
source lab/toolchain/versions.sh
PULUMI_VERSION="${PULUMI_VERSION#v}"
# shellcheck source=scripts/setup.sh
NODEFLEET_SETUP=pipeline source scripts/setup.sh # node and the lock file's packages: the stacks' providers are read with them
say() { printf '[install-pulumi] %s\n' "$*" >&2; } # setup.sh brought a say of its own
AWS_VERSION="$(node -p 'require("./package-lock.json").packages["node_modules/@pulumi/aws"].version')"
providers="$(for stack in "$@"; do node scripts/lib/fleet-field.mjs "$stack" providers; done | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')"
export PULUMI_HOME="${PULUMI_HOME:-$HOME/.pulumi}" PULUMI_SKIP_UPDATE_CHECK=1

plugin_install() { # NAME VERSION
    if [ -x "$PULUMI_HOME/plugins/resource-$1-v$2/pulumi-resource-$1" ]; then say "provider $1 $2: installed"; return; fi
    say "provider $1 $2: pulumi plugin install"
    "$BIN/pulumi" plugin install resource "$1" "$2" ${PULUMI_PLUGIN_SERVER:+--server "$PULUMI_PLUGIN_SERVER"} 2>&1 | sed 's/^/[install-pulumi] pulumi: /' >&2
    [ -x "$PULUMI_HOME/plugins/resource-$1-v$2/pulumi-resource-$1" ] || die "pulumi plugin install did not install the $1 provider $2"
}

case "${NODEFLEET_TOOLCHAIN:-stock}" in
stock)
    BIN="$PULUMI_HOME/bin"
    if [ "$("$BIN/pulumi" version 2>/dev/null || true)" != "v$PULUMI_VERSION" ]; then
        base="${PULUMI_DOWNLOAD_BASE:-https://get.pulumi.com/releases/sdk}"
        tarball="pulumi-v$PULUMI_VERSION-linux-x64.tar.gz" sums="pulumi-$PULUMI_VERSION-checksums.txt"
        work="$(mktemp -d)"
        cleanup() { local rc=$?; rm -rf "$work"; nf_exit_report "$rc"; }
        trap cleanup EXIT
        say "the Pulumi CLI $PULUMI_VERSION from ${base%/}/$tarball"
        curl -fsSL --retry 3 -o "$work/$tarball" "${base%/}/$tarball"
        curl -fsSL --retry 3 -o "$work/$sums" "${base%/}/$sums"
        want="$(awk -v f="$tarball" '$2 == f { print $1 }' "$work/$sums")"
        [ -n "$want" ] || die "$sums lists no sha256 for $tarball"
        got="$(sha256sum "$work/$tarball" | cut -d' ' -f1)"
        [ "$got" = "$want" ] || die "$tarball: sha256 $got, but the release's checksums say $want: not installed"
        tar -xzf "$work/$tarball" -C "$work"
        [ -x "$work/pulumi/pulumi" ] || die "$tarball holds no pulumi/pulumi"
        mkdir -p "$BIN"
        cp -f "$work"/pulumi/* "$BIN/"
        [ "$("$BIN/pulumi" version)" = "v$PULUMI_VERSION" ] || die "$BIN/pulumi does not report v$PULUMI_VERSION"
    fi
    say "the Pulumi CLI $("$BIN/pulumi" version) in $BIN"
    plugin_install command "$COMMAND_VERSION"
    ;;
nodefleet)
    [ -n "${NODEFLEET_PREBUILT:-}" ] || die "NODEFLEET_TOOLCHAIN=nodefleet takes nodefleet's CLI from its prebuilt artifacts: set NODEFLEET_PREBUILT to the directory that holds them (../shared/prebuilt/README.md gives each recipe)"
    NODEFLEET_NO_SOURCE_BUILD=1 bash lab/toolchain.sh hcloud
    BIN="$ROOT/.tools/bin"
    bash lab/toolchain.sh home "$PULUMI_HOME"
    ;;
*) die "NODEFLEET_TOOLCHAIN is stock or nodefleet, not '${NODEFLEET_TOOLCHAIN}'" ;;
esac
for p in $providers; do
    case "$p" in
    hcloud) plugin_install hcloud "$HCLOUD_VERSION" ;;
    aws) plugin_install aws "$AWS_VERSION" ;;
    *) die "unreachable: fleet-field.mjs named the provider '$p'" ;;
    esac
done
[ -z "${GITHUB_PATH:-}" ] || echo "$BIN" >>"$GITHUB_PATH"
echo "$BIN"
