#!/usr/bin/env bash
# The test command: installs what is missing (scripts/setup.sh), then runs every tier.
#   unit: pure logic, golden files checked by their real tools, strict Pulumi mocks (seconds)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/setup.sh

echo "== unit tier: pure logic, rendered files, strict Pulumi mocks"
rm -rf dist
npx --no-install tsc -p tsconfig.json
node --test --test-reporter=spec dist/test/unit/
