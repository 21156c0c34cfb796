#!/usr/bin/env bash
# actionlint on the GitHub Actions workflows, built once from the Go module proxy at the version
# pinned in toolchain/actionlint (go.mod, go.sum) into a cache outside the clone. shellcheck,
# when on PATH, checks each workflow's run: scripts too.
#   scripts/actionlint.sh [actionlint flags]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
say() { printf '[actionlint] %s\n' "$*" >&2; }
stamp="$(cat "$ROOT/toolchain/actionlint/go.mod" "$ROOT/toolchain/actionlint/go.sum" | sha256sum | cut -c1-16)"
bin="$CACHE/actionlint/$stamp/actionlint"
if [ ! -x "$bin" ]; then
    command -v go >/dev/null || { say "Go is needed to build actionlint"; exit 1; }
    say "building actionlint from the Go module proxy (once)"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    cp "$ROOT/toolchain/actionlint/go.mod" "$ROOT/toolchain/actionlint/go.sum" "$work/"
    (cd "$work" && GOFLAGS=-mod=mod GOSUMDB=off go build -trimpath -ldflags "-s -w" -o "$work/actionlint" github.com/rhysd/actionlint/cmd/actionlint)
    mkdir -p "$(dirname "$bin")" && mv "$work/actionlint" "$bin"
fi
cd "$ROOT"
exec "$bin" "$@"
