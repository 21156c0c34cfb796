#!/usr/bin/env bash
# Benchmarks: reports measured side by side in one run (the test command runs only the trim one,
# gated on its output and CPU ratio). Data to stdout, progress to stderr.
#   scripts/bench.sh scale [sizes…]   evaluate generated fleets (default 10 100 1000 nodes) under the
#                                     strict mocks: seconds, ms per node, resources, peak RSS, with
#                                     the SDK's per-key config lookups and its per-promise stack
#                                     traces side by side (a few minutes)
#   scripts/bench.sh engine [--toolchains nodefleet,stock] [sizes…]
#                                     the real engine on generated fleets (default 10 30 90 nodes;
#                                     each in a fleet file, the policy pack on) against scripted SSH
#                                     hosts, on nodefleet's toolchain and on stock Pulumi side by side
#                                     (their ratios): preview, first up, no-op up, status and destroy in CPU
#                                     seconds, CLI peak RSS, state bytes per node, SSH connections open
#                                     at once per host, growth exponents, and the mocks' figures beside
#                                     them (test/bench/engine.ts; tens of minutes at 1000 nodes)
#   scripts/bench.sh shards [nodes] [k]  one generated fleet (default 1000 nodes) split into k shards
#                                     (default 4), every shard's first up at once as the pipeline
#                                     runs them, then status --shards (test/bench/shards.ts)
#   scripts/bench.sh steady [--toolchains nodefleet,stock] [--shards S,…] [--runners R] [nodes]
#                                     the pipeline at fleet scale (default 1000 nodes): one shard of
#                                     S nodes (stock 50, nodefleet 250) on an S3 backend, its first
#                                     up, then a no-change merge's stack.sh up, drift and preview;
#                                     the fleet's CPU and wall with R runners (test/bench/steady.ts)
#   scripts/bench.sh trim [args…]     test/bench/bench_trim.py: trim_export.py against cp and the
#                                     per-block approach
#   scripts/bench.sh switch [args…]   test/bench/bench_switch.py: both switch modes' downtime on the
#                                     real reth, from a real geth datadir padded to a few GB: export,
#                                     import, backup and the overhead, against cp -a (a few minutes;
#                                     --extend-to 100000 for a long chain)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NF_ROOT="$ROOT"
# shellcheck source=scripts/lib/fail.sh
source "$ROOT/scripts/lib/fail.sh" # a failing command stops it with its line, never silently
cd "$ROOT"
case "${1:-}" in
scale)
    shift
    source scripts/setup.sh
    npx --no-install tsc -p tsconfig.json >&2
    exec node dist/test/bench/scale.js "$@"
    ;;
engine | shards | steady)
    bench="$1"
    shift
    source scripts/setup.sh
    bash lab/toolchain.sh >&2
    bash lab/toolchain.sh stock >&2 # stock Pulumi (no patch), the engine benchmark's other column
    npx --no-install tsc -p tsconfig.json >&2
    exec node "dist/test/bench/$bench.js" "$@"
    ;;
trim)
    shift
    exec python3 test/bench/bench_trim.py "$@"
    ;;
switch)
    shift
    exec python3 test/bench/bench_switch.py "$@"
    ;;
*)
    sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
