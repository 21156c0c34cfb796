#!/usr/bin/env bash
# The stacks of each environment named, as the workflows' job matrices take them: a JSON array of
# {"stack", "env"}. An environment's stacks are Pulumi.ENV.yaml and, for a fleet split into shards
# (docs/gitops.md, Shards), Pulumi.ENV-<shard>.yaml; each runs as a job of its own, side by side.
# Pulumi.dev.yaml is the lab's stack (local system containers: scripts/dev.sh), never the pipeline's:
# a team's own dev stacks are Pulumi.dev-<name>.yaml.
#   scripts/ci/stacks.sh ENV...
set -euo pipefail
# shellcheck source=scripts/lib/fail.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/fail.sh" # a failing command stops it with its line, never silently
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[ "$#" -gt 0 ] || { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
for env in "$@"; do
    [[ "$env" =~ ^[a-z0-9]+$ ]] || { echo "stacks.sh: $env: an environment is lowercase letters and digits" >&2; exit 2; }
    find . -maxdepth 1 \( -name "Pulumi.$env.yaml" -o -name "Pulumi.$env-*.yaml" \) ! -name Pulumi.dev.yaml | sed "s#^\./Pulumi\.\(.*\)\.yaml\$#\1 $env#"
done | sort | python3 -c 'import json, sys; print(json.dumps([dict(zip(("stack", "env"), l.split())) for l in sys.stdin if l.strip()]))'
