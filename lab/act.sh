#!/usr/bin/env bash
# act (nektos/act), the runner the e2e tier runs the GitHub workflows with (test/e2e/gitops-act.test.ts):
# prints the path of its binary, taken from its pinned prebuilt artifact or built once from the Go
# module proxy at the versions lab/toolchain/act (go.mod, go.sum) pins, cached outside the clone.
#   lab/act.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { printf '[act] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lab/lib/go.sh
source "$ROOT/lab/lib/go.sh"
# shellcheck source=lab/lib/prebuilt.sh
source "$ROOT/lab/lib/prebuilt.sh"
VERSION=0.2.89
pinned_tool "[act]" "$ROOT/lab/toolchain/act" github.com/nektos/act act "-X main.version=$VERSION" "act-$VERSION-x86_64-linux-gnu.tar.xz"
