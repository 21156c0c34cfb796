#!/usr/bin/env bash
# The pipeline's steps for one stack, the same on a laptop as in GitHub Actions:
#   scripts/ci/stack.sh preview STACK   pulumi preview --diff with the policy pack (diff in .state/ci/)
#   scripts/ci/stack.sh up STACK        pulumi up --refresh with the policy pack: reads the hosts
#                                       first, so the up also puts back what drifted
#   scripts/ci/stack.sh drift STACK     pulumi refresh --preview-only --expect-no-changes: exits
#                                       non-zero, loudly, when a cloud resource (server, volume,
#                                       firewall, IP) differs from the state, or a host from what
#                                       nodefleet last applied there (files, units, firewall table,
#                                       releases: docs/gitops.md, Drift), naming each difference
# The stack's backend comes from PULUMI_BACKEND_URL and its passphrase from
# PULUMI_CONFIG_PASSPHRASE; keys come from NODEFLEET_SECRET_<configKey> variables (the CI secret
# store), set into the stack's config here and never written to the repository; for a fleet with
# a secretsDir (too many keys for the config: docs/configuration.md, "A fleet in a file") each is
# written there, mode 600, instead, unless the stack file already names that key.
# NODEFLEET_TOOLCHAIN: nodefleet (the default: lab/toolchain.sh, nodefleet's patched CLI and command
# provider) or stock (the `pulumi` on PATH at the pinned version, its plugins in PULUMI_HOME, as
# scripts/ci/install-pulumi.sh installs them: the workflows' default; docs/gitops.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NF_ROOT="$ROOT"
# shellcheck source=scripts/lib/fail.sh
source "$ROOT/scripts/lib/fail.sh" # a failing command stops it with its line, never silently
cd "$ROOT"
action="${1:-}" stack="${2:-}"
[[ "$action" =~ ^(preview|up|drift)$ && "$stack" =~ ^[a-z0-9-]+$ ]] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ -f "Pulumi.$stack.yaml" ] || { echo "stack: Pulumi.$stack.yaml does not exist" >&2; exit 2; }
: "${PULUMI_CONFIG_PASSPHRASE:?set PULUMI_CONFIG_PASSPHRASE (a CI secret)}"
# shellcheck source=scripts/setup.sh
NODEFLEET_SETUP=pipeline source scripts/setup.sh
# No plugin is ever downloaded by a run: each is installed, pinned, before it.
export PULUMI_SKIP_UPDATE_CHECK=1 PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=1
case "${NODEFLEET_TOOLCHAIN:-nodefleet}" in
nodefleet)
    bash lab/toolchain.sh hcloud # the hcloud provider too (the prod example has a Hetzner host)
    export PATH="$ROOT/.tools/bin:$PATH"
    bash lab/toolchain.sh home "${PULUMI_HOME:-$HOME/.pulumi}" # the command provider where Pulumi looks for it
    ;;
stock)
    # Where scripts/ci/install-pulumi.sh put the plugins (Pulumi itself reads the user's home from
    # the password database, not HOME).
    export PULUMI_HOME="${PULUMI_HOME:-$HOME/.pulumi}"
    # shellcheck source=lab/toolchain/versions.sh
    source lab/toolchain/versions.sh
    have="$(pulumi version 2>/dev/null || true)"
    [ "$have" = "$PULUMI_VERSION" ] || { echo "stack: NODEFLEET_TOOLCHAIN=stock runs the pulumi on PATH, which must be $PULUMI_VERSION (found: ${have:-none}): scripts/ci/install-pulumi.sh $stack installs it" >&2; exit 1; }
    ;;
*) echo "stack: NODEFLEET_TOOLCHAIN is nodefleet or stock, not '$NODEFLEET_TOOLCHAIN'" >&2; exit 2 ;;
esac
# A shard reads the other shards' outputs through stack references: each must exist (a stack never
# brought up has no outputs: nothing runs there), so the ones not made yet are made here, empty.
# Another shard's job on this checkout may be making the same stack at the same moment: its create
# then fails here, and for a moment the stack is not yet found either (seen on an S3 backend): tried
# again for a few seconds before the select's own error stops the job.
ensure_stack() {
    local _
    for _ in 1 2 3 4 5; do
        pulumi stack select "$1" --create --non-interactive >/dev/null 2>&1 && return 0
        pulumi stack select "$1" --non-interactive >/dev/null 2>&1 && return 0
        sleep 1
    done
    pulumi stack select "$1" --non-interactive >/dev/null
}
shards="$(node scripts/lib/fleet-field.mjs "$stack" shards)"
secrets_dir="$(node scripts/lib/fleet-field.mjs "$stack" secretsDir)"
for shard in $shards; do
    [[ "$shard" =~ ^[a-z0-9-]+$ && "$shard" != "$stack" ]] || continue
    ensure_stack "$shard"
done
ensure_stack "$stack"
[ -z "$secrets_dir" ] || (umask 077 && mkdir -p "$secrets_dir")
while IFS='=' read -r name _; do
    key="${name#NODEFLEET_SECRET_}"
    if [ -n "$secrets_dir" ] && ! grep -qE "^ +nodefleet:$key:" "Pulumi.$stack.yaml"; then
        (umask 077 && printenv "$name" >"$secrets_dir/$key")
        echo "secret $key written to the fleet's secretsDir from \$$name"
    else
        printenv "$name" | pulumi config set --secret --stack "$stack" "nodefleet:$key" >/dev/null
        echo "secret nodefleet:$key set from \$$name"
    fi
done < <(env | grep -E '^NODEFLEET_SECRET_[A-Za-z0-9]+=' || true)
# Over the size Pulumi can hand the program, every run would fail cryptically: said here, with the fix.
bash scripts/nodefleet check --stack "$stack"
# The stack's policy config, else its environment's (a shard prod-eu is of prod: docs/gitops.md,
# Shards, so it is held to prod's rules), else the pack's own enforcement.
policy=(--policy-pack "$ROOT/policy")
for config in "policy/config/$stack.json" "policy/config/${stack%%-*}.json"; do
    [ -f "$config" ] || continue
    policy+=(--policy-pack-config "$ROOT/$config")
    break
done
mkdir -p .state/ci
case "$action" in
preview) pulumi preview --stack "$stack" --diff --non-interactive "${policy[@]}" 2>&1 | tee ".state/ci/preview-$stack.txt" ;;
up) pulumi up --stack "$stack" --refresh --yes --non-interactive --skip-preview "${policy[@]}" ;;
drift)
    # The program reads its own previous outputs through a stack reference to itself (where each
    # validator ran): after an up that changed them, a refresh reads the new ones and would report
    # that as a change. It is not drift of anything nodefleet manages: left out of the refresh.
    # Each host's HostDrift resource reads the host on refresh: a difference is a line of its
    # `drift` output, "HOST: ITEM: CHANGE [GROUP]", named here one by one.
    out=".state/ci/drift-$stack.txt"
    if ! pulumi refresh --stack "$stack" --preview-only --expect-no-changes --diff --non-interactive \
        --exclude "urn:pulumi:$stack::*::pulumi:pulumi:StackReference::*" 2>&1 | tee "$out"; then
        found=0
        while IFS= read -r line; do
            echo "::error title=drift on $stack::host $line" >&2
            found=1
        done < <(grep -oE '^ *\+ +\[[0-9]+\]: "[^"]+ \[[A-Za-z0-9._+-]+\]"$' "$out" | sed -E 's/^ *\+ +\[[0-9]+\]: "(.*)"$/\1/')
        [ "$found" = 1 ] || echo "::error title=drift on $stack::a resource of $stack differs from its state: see the refresh preview above" >&2
        echo "drift on $stack: pulumi up --refresh (scripts/ci/stack.sh up $stack) puts the hosts back" >&2
        exit 1
    fi ;;
esac
