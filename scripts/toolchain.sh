#!/usr/bin/env bash
# Provides the Pulumi toolchain without any Pulumi download, into a cache outside the clone,
# linked into .tools/bin:
#   pulumi                   the real Pulumi CLI, built from the Go module proxy at the version
#                            pinned in toolchain/go.mod (checksums pinned in go.sum);
#   pulumi-language-nodejs   nodefleet's STAND-IN language host (toolchain/standins/), because
#                            Pulumi's own is not served by the module proxy here;
#   pulumi-resource-command  nodefleet's STAND-IN for the command provider's remote.Command,
#                            for the same reason.
# A real pulumi-language-nodejs or pulumi-resource-command already on PATH (from a Pulumi
# release) is preferred over the stand-in. Idempotent: a second run only checks (< 1 s).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PULUMI_VERSION=v3.248.0
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}/toolchain"
BIN="$ROOT/.tools/bin"
say() { printf '[toolchain] %s\n' "$*" >&2; }
mkdir -p "$BIN" "$CACHE"

stamp="$(cd "$ROOT/toolchain" && find go.mod go.sum standins -type f ! -name '*_test.go' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
dir="$CACHE/$PULUMI_VERSION-$stamp"

if [ ! -x "$dir/pulumi" ]; then
    command -v go >/dev/null || { say "Go 1.25 or newer is needed to build the Pulumi CLI (https://go.dev/doc/install, or the golang-1.25 Debian backport)"; exit 1; }
    say "building the Pulumi CLI $PULUMI_VERSION and the stand-in plugins from the Go module proxy (about 5 minutes on 2 cores, once)"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    cp -r "$ROOT/toolchain/." "$work/"
    # The checksum database is not reachable here; go.sum, committed, pins every module instead.
    (cd "$work" && GOFLAGS=-mod=mod GOSUMDB=off GOPROXY="${GOPROXY:-https://proxy.golang.org}" \
        go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
        -o "$work/out/" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi ./standins/... 2>&1 | sed 's/^/[toolchain] go: /' >&2)
    for f in pulumi pulumi-language-nodejs pulumi-resource-command; do
        [ -x "$work/out/$f" ] || { say "build produced no $f"; exit 1; }
    done
    mkdir -p "$dir.tmp" && mv "$work/out/"* "$dir.tmp/" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
fi

ln -sf "$dir/pulumi" "$BIN/pulumi"
for plugin in pulumi-language-nodejs pulumi-resource-command; do
    real="$(PATH="${PATH//$BIN:/}" command -v "$plugin" || true)"
    if [ -n "$real" ] && [ "$real" != "$BIN/$plugin" ]; then
        say "using $plugin from PATH ($real)"
        ln -sf "$real" "$BIN/$plugin"
    else
        ln -sf "$dir/$plugin" "$BIN/$plugin"
    fi
done
say "pulumi $("$BIN/pulumi" version) with $(readlink "$BIN/pulumi-language-nodejs" | grep -q "$CACHE" && echo "the stand-in" || echo "a real") language host and $(readlink "$BIN/pulumi-resource-command" | grep -q "$CACHE" && echo "the stand-in" || echo "a real") command provider"
