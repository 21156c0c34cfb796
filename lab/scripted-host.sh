#!/usr/bin/env bash
# Prints the path of the cli tier's scripted SSH host (lab/sim/scripted-host), building it once
# into the cache outside the clone, keyed by its source. Progress goes to stderr.
#   lab/scripted-host.sh            the binary's path
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/lab/lib/go.sh"
src="$ROOT/lab/sim/scripted-host"
stamp="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)"
bin="$NODEFLEET_CACHE/scripted-host/$stamp/scripted-host"
if [ ! -x "$bin" ]; then
    printf '[scripted-host] building (once)\n' >&2
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    cp "$src/go.mod" "$src/go.sum" "$src/main.go" "$work/"
    go_build "[scripted-host]" "$work" "$work/scripted-host" "-s -w" .
    mkdir -p "$(dirname "$bin")" && mv "$work/scripted-host" "$bin.tmp" && mv "$bin.tmp" "$bin"
fi
echo "$bin"
