#!/usr/bin/env bash
# The test command: installs what is missing, then runs every tier, fastest first.
#   unit  node simulators; pure logic, golden files checked by their real tools, strict Pulumi
#         mocks (under a minute)
#   cli   `pulumi preview` with the real engine on throwaway stacks (toolchain built once, cached)
#   e2e   real geth driven by the simulators (export/trim/import); the main job on local VMs:
#         pulumi up over SSH, releases, firewall probes, no-op re-run, destroy
# NODEFLEET_TIERS="unit cli" runs a subset.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/setup.sh
TIERS="${NODEFLEET_TIERS:-unit cli e2e}"
has_tier() { [[ " $TIERS " == *" $1 "* ]]; }

rm -rf dist
npx --no-install tsc -p tsconfig.json

if has_tier unit; then
    echo "== unit tier: node simulators, host scripts and host tools (python unittest)"
    (cd lab/sim && python3 -m unittest discover -s tests -t .)
    (cd hostfiles && python3 -m unittest discover -s tests -t .)
    echo "== unit tier: trim_export.py against cp and the per-block approach, side by side (gates: same output, CPU; see docs/switch.md, The trim tool)"
    python3 test/bench/bench_trim.py --mb 512 --rounds 5
    echo "== unit tier: pure logic, rendered files, strict Pulumi mocks"
    node --test --test-reporter=spec dist/test/unit/
fi
if has_tier cli; then
    echo "== cli tier: pulumi preview with the real engine"
    bash lab/toolchain.sh
    node --test --test-reporter=spec --test-concurrency=1 dist/test/cli/
fi
if has_tier e2e; then
    echo "== e2e tier: real geth with the simulators (export, trim, import, engine API, JWT)"
    NODEFLEET_GETH="$(bash lab/artifacts.sh geth)" bash -c 'cd lab/sim && python3 -m unittest -v tests_geth.test_geth_chain'
    echo "== e2e tier: the dev stack on local VMs"
    bash lab/toolchain.sh
    node --test --test-reporter=spec --test-concurrency=1 dist/test/e2e/
fi
