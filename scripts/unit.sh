#!/usr/bin/env bash
# Compile and run the unit tier (pure logic and strict Pulumi mocks): seconds, no CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist
npx --no-install tsc -p tsconfig.json
node --test --test-reporter=spec dist/test/unit/
