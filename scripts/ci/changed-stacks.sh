#!/usr/bin/env bash
# The stacks a change touches, as a JSON array of {"stack", "env"} (a job matrix): a stack whose
# Pulumi.<stack>.yaml or fleet file (nodefleet:fleetFile) changed, or every stack when the program,
# templates, host files or the policy pack changed. A stack's environment is its name up to the first dash (a shard prod-eu is
# of prod: docs/gitops.md, Shards). dev is not listed: it is the lab's (local system containers),
# previewed and brought up by the test command's E2E tier instead; a team's dev-<name> stacks are.
#   scripts/ci/changed-stacks.sh BASE_REF
set -euo pipefail
# shellcheck source=scripts/lib/fail.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/fail.sh" # a failing command stops it with its line, never silently
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
base="${1:?usage: changed-stacks.sh BASE_REF}"
all=$(find . -maxdepth 1 -name 'Pulumi.*.yaml' | sed 's#^\./Pulumi\.\(.*\)\.yaml$#\1#' | grep -vx dev | sort)
changed=$(git diff --name-only "$base"...HEAD)
if grep -qE '^(index\.ts|components/|templates/|hostfiles/|policy/|package(-lock)?\.json|Pulumi\.yaml)' <<<"$changed"; then
    stacks="$all"
else
    stacks=$(
        sed -n 's#^Pulumi\.\([a-z0-9-]*\)\.yaml$#\1#p' <<<"$changed"
        for s in $all; do
            file="$(node scripts/lib/fleet-field.mjs "$s" fleetFile)"
            [ -z "$file" ] || ! grep -qxF "${file#./}" <<<"$changed" || echo "$s"
        done
    )
    stacks=$(grep -vx dev <<<"$stacks" | sort -u || true)
fi
printf '%s\n' "$stacks" | sed '/^$/d' | python3 -c 'import json, sys; print(json.dumps([{"stack": l.strip(), "env": l.strip().split("-")[0]} for l in sys.stdin]))'
