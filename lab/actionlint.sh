#!/usr/bin/env bash
# actionlint on the GitHub Actions workflows, built once from the Go module proxy at the version
# pinned in lab/toolchain/actionlint (go.mod, go.sum) into a cache outside the clone. shellcheck,
# when on PATH, checks each workflow's run: scripts too.
#   lab/actionlint.sh [actionlint flags]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/lab/lib/go.sh"
bin="$(pinned_tool "[actionlint]" "$ROOT/lab/toolchain/actionlint" github.com/rhysd/actionlint/cmd/actionlint actionlint)"
cd "$ROOT"
exec "$bin" "$@"
