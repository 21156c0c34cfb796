#!/usr/bin/env bash
# The main job on the local dev stack: install what is missing, boot the dev hosts, `pulumi up`.
#
#   scripts/dev.sh up          setup + toolchain + artifact server + dev chain (with Aztec's L1
#                              contracts; the sequencer's account funded) + hosts + `pulumi up --yes`
#                              on stack dev
#   scripts/dev.sh preview     the same, but `pulumi preview` (the hosts are not needed)
#   scripts/dev.sh destroy     `pulumi destroy --yes`, then shut the hosts down
#   scripts/dev.sh status ...  `nodefleet status` on the dev stack: every node's health now
#   scripts/dev.sh drift       the pipeline's drift check on the dev stack (scripts/ci/stack.sh
#                              drift dev): the hosts against what nodefleet last applied there;
#                              `scripts/dev.sh up --refresh` puts back what drifted
#   scripts/dev.sh pulumi ...  any pulumi command with the dev stack's environment
#
# State lives in .state/ of this checkout (file backend, Pulumi home); nothing is written to
# ~/.pulumi. The dev stack's secrets are encrypted with the dev-only passphrase below; staging
# and prod stacks take theirs from the CI secret store (docs/gitops.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NF_ROOT="$ROOT"
# shellcheck source=scripts/lib/fail.sh
source "$ROOT/scripts/lib/fail.sh" # a failing command stops it with its line, never silently
cd "$ROOT"

dev_env() {
    export PATH="$ROOT/.tools/bin:$ROOT/.tools/node/bin:$PATH"
    # NODEFLEET_STATE: where the stack's state, the hosts' disks and the dev chain live (.state; the
    # test command's e2e tier uses its own, .state/e2e, and never touches these).
    local state="${NODEFLEET_STATE:-$ROOT/.state}"
    # NODEFLEET_PULUMI_DIR: where the stack's file backend and Pulumi home are (default: the state
    # directory); the e2e tier's first-boot file keeps a stack of its own there, beside the dev
    # stack's scenarios on the same hosts' network (test/support/lab.ts, aStackOfItsOwn).
    local pulumi_dir="${NODEFLEET_PULUMI_DIR:-$state}"
    export PULUMI_HOME="$pulumi_dir/pulumi-home"
    export PULUMI_BACKEND_URL="file://$pulumi_dir/backend"
    export PULUMI_CONFIG_PASSPHRASE="${PULUMI_CONFIG_PASSPHRASE:-nodefleet-dev}"
    export PULUMI_SKIP_UPDATE_CHECK=1 PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=1
    export PULUMI_NODEJS_TRANSPILE_ONLY=true # tsc type-checks in the test command
    # shellcheck source=scripts/pulumi-env.sh
    source "$ROOT/scripts/pulumi-env.sh"
    mkdir -p "$pulumi_dir/backend" "$PULUMI_HOME"
    # The plugins where Pulumi looks for them, not on PATH (no "using … from $PATH" warnings).
    if [ -d "$ROOT/.tools/pulumi/plugins" ]; then bash "$ROOT/lab/toolchain.sh" home "$PULUMI_HOME"; fi
}

dev_stack() { # the dev stack selected in the dev environment (the toolchain installed)
    dev_env
    pulumi stack select dev >/dev/null 2>&1 || pulumi stack init dev >/dev/null
}

prepare() {
    bash "$ROOT/scripts/setup.sh"
    bash "$ROOT/lab/toolchain.sh"
    dev_stack
}

case "${1:-}" in
up)
    shift
    # On a cold machine the slow parts run side by side, each saying what it does on stderr,
    # prefixed: the toolchain (the Pulumi CLI is built from source when its prebuilt artifact is
    # missing or stale: minutes), the hosts' root filesystem (debootstrap: mostly downloads) and the
    # release archives (geth, reth, beacond and zgs_node from their pinned prebuilt artifacts; the
    # Aztec release packed) in the background, while the dev chain is made (it takes the Aztec CLI
    # the release is packed from, as the e2e tier's lane does) and the hosts start: none of it
    # needs the Pulumi CLI. On a warm machine each returns at once.
    bash "$ROOT/scripts/setup.sh"
    # Each in a process group of its own (setsid), so that a step that fails, or Ctrl-C, stops it
    # with everything it started rather than leaving a build running.
    setsid bash "$ROOT/lab/toolchain.sh" & toolchain=$!
    setsid bash "$ROOT/lab/vm.sh" image >/dev/null & image=$!
    setsid bash "$ROOT/lab/artifacts.sh" build >/dev/null & artifacts=$!
    stop_background() {
        local rc=$? group
        for group in $artifacts $image $toolchain; do kill -- "-$group" 2>/dev/null || true; done
        nf_exit_report "$rc"
    }
    trap stop_background EXIT
    chain_stamp="${NODEFLEET_STATE:-$ROOT/.state}/devchain/stamp"
    made_for="$(cat "$chain_stamp" 2>/dev/null || true)"
    bash "$ROOT/lab/devchain.sh" start
    chain_remade=0
    if [ -n "$made_for" ] && [ "$made_for" != "$(cat "$chain_stamp")" ]; then
        # The dev chain was made afresh (its devnet, beacond or script changed): the hosts' chain
        # data (storage-1's miner id, validator-1's chain, the sequencer's L1 state) and the stack's
        # record of what it did there belong to the chain that is gone. The dev stack is made anew.
        echo "[dev] the dev chain was made afresh: the dev hosts' data belongs to the old one; wiping the hosts and the dev stack's state (its config file kept)" >&2
        chain_remade=1
    fi
    wait "$artifacts" || { echo "[dev] the release archives could not be built (lines above)" >&2; exit 1; }
    artifacts=""
    bash "$ROOT/lab/artifacts.sh" serve
    wait "$image" || { echo "[dev] the hosts' root filesystem could not be built (lines above)" >&2; exit 1; }
    image=""
    [ "$chain_remade" = 0 ] || bash "$ROOT/lab/vm.sh" wipe
    bash "$ROOT/lab/vm.sh" up 2
    wait "$toolchain" || { echo "[dev] the Pulumi toolchain could not be installed (lines above)" >&2; exit 1; }
    toolchain=""
    dev_stack # setup and the toolchain ran above
    if [ "$chain_remade" = 1 ]; then
        pulumi stack rm dev --yes --force --preserve-config >/dev/null
        pulumi stack init dev >/dev/null
    fi
    # The sequencer's account funded for its registration with the key the stack holds, as an
    # operator readies theirs (Aztec's contracts are on the dev chain: lab/aztec/dev-l1.sh).
    SEQUENCER_KEY="$(pulumi config get devSequencerKey --stack dev)" bash "$ROOT/lab/aztec/dev-l1.sh" fund http://127.0.0.1:8545
    pulumi up --stack dev --yes --skip-preview --non-interactive "$@"
    ;;
preview)
    shift
    prepare
    bash "$ROOT/lab/artifacts.sh" build # the dev config reads its SHA256SUMS
    pulumi preview --stack dev --non-interactive "$@"
    ;;
destroy)
    shift
    prepare
    bash "$ROOT/lab/artifacts.sh" build
    bash "$ROOT/lab/vm.sh" up 2 # destroy runs the delete commands on the hosts
    pulumi destroy --stack dev --yes --skip-preview --non-interactive "$@"
    bash "$ROOT/lab/vm.sh" down
    bash "$ROOT/lab/artifacts.sh" stop
    bash "$ROOT/lab/devchain.sh" stop
    ;;
status)
    shift
    dev_env
    # A stack that was never brought up has no state to read: say so, not Pulumi's "no stack named".
    if [ -z "$(find "${PULUMI_BACKEND_URL#file://}/.pulumi/stacks" -name 'dev.json' -print -quit 2>/dev/null)" ]; then
        echo "[dev] the dev stack is not up (no state in ${PULUMI_BACKEND_URL#file://}): run scripts/dev.sh up first" >&2
        exit 1
    fi
    exec "$ROOT/scripts/nodefleet" status --stack dev "$@"
    ;;
drift)
    dev_env
    exec bash "$ROOT/scripts/ci/stack.sh" drift dev
    ;;
pulumi)
    shift
    dev_env
    exec pulumi "$@"
    ;;
*)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
