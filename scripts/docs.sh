#!/usr/bin/env bash
# Writes the generated files: docs/configuration.md and docs/fleet.schema.json, from the fleet
# config's zod schema (components/config/schema.ts), and the Grafana dashboard
# (components/monitoring/dashboard.ts). The unit tier fails when they are stale.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NF_ROOT="$ROOT"
# shellcheck source=scripts/lib/fail.sh
source "$ROOT/scripts/lib/fail.sh" # a failing command stops it with its line, never silently
cd "$ROOT"
source scripts/setup.sh
npx --no-install tsc -p tsconfig.json >&2
# shellcheck disable=SC2016 # JavaScript, not shell
node -e '
const fs = require("fs");
const r = require("./dist/components/fleet/reference");
for (const [file, text] of Object.entries(r.generatedDocs())) {
    fs.mkdirSync(require("path").dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    process.stderr.write(`wrote ${file}\n`);
}
'
