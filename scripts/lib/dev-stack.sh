# shellcheck shell=bash
# The user's dev stack (scripts/dev.sh up: the lab's hosts, the dev chain and the artifact server of
# the checkout's .state) as the test command found it. The e2e tier needs its hosts' addresses and
# the dev chain's ports (docs/development.md, "The two commands in either order"): it powers the dev
# stack off for its run, then boots what ran again and waits until every node is as healthy as it
# was. Sourced by scripts/test.sh (to say so when it starts) and scripts/lib/e2e-lane.sh.
#   dev_stack_running          what of the dev stack runs: its hosts' names, "chain", "artifacts"
#   dev_stack_health FILE      its `status --json` into FILE (empty when it has no state or no host answers)
#   dev_stack_restore WHAT FILE  boots WHAT again, then waits until each node FILE found healthy is so again
#                              (NODEFLEET_DEV_RESTORE_SECONDS, default 600; checked every NODEFLEET_DEV_RESTORE_POLL, 10)
# Each runs the lab's scripts on the checkout's own state, whatever NODEFLEET_STATE the caller set.

dev_stack_running() {
    local found=() line
    while read -r line; do
        case "$line" in *" running "*) found+=("${line%% *}") ;; esac
    done < <(env -u NODEFLEET_STATE bash "$ROOT/lab/vm.sh" status 2>/dev/null || true)
    # Read whole before it is searched: `| grep -q` closes the pipe at its first match, and under
    # pipefail the writer's SIGPIPE read as a chain that does not run.
    local chain pid
    chain="$(env -u NODEFLEET_STATE bash "$ROOT/lab/devchain.sh" status 2>/dev/null || true)"
    if grep -q ' running$' <<<"$chain"; then found+=(chain); fi
    pid="$(cat "$ROOT/.state/artifacts/server.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then found+=(artifacts); fi
    echo "${found[*]}"
}

dev_stack_health() { # FILE
    : >"$1"
    # Exit 1 is an unhealthy node, which is a finding; 2, no stack to read.
    env -u NODEFLEET_STATE bash "$ROOT/scripts/dev.sh" status --json --timeout 30 >"$1" 2>/dev/null || true
}

# The nodes FILE found healthy that the status in NOW is not (one per line), or "unreadable".
dev_stack_still_unhealthy() { # FILE NOW
    node -e '
        const fs = require("fs");
        const read = (f) => { const t = fs.readFileSync(f, "utf8").trim(); return t === "" ? undefined : JSON.parse(t.split("\n").pop()); };
        const before = read(process.argv[1]);
        let now;
        try { now = read(process.argv[2]); } catch { now = undefined; }
        if (before === undefined) process.exit(0);
        if (now === undefined) { console.log("unreadable"); process.exit(0); }
        const healthy = new Map(now.nodes.map((n) => [n.node, n.healthy]));
        for (const n of before.nodes) if (n.healthy && healthy.get(n.node) !== true) console.log(n.node);
    ' "$1" "$2"
}

dev_stack_restore() { # WHAT FILE
    local what="$1" before="$2" vms=() w
    [ -n "$what" ] || return 0
    echo "== the dev stack as the run found it: starting ${what} again" >&2
    for w in $what; do case "$w" in dev-*) vms+=("$w") ;; esac; done
    # Called where a failing command does not stop the caller (an EXIT trap, an `if`): each says so.
    if [[ " $what " == *" chain "* ]]; then
        env -u NODEFLEET_STATE bash "$ROOT/lab/devchain.sh" start || { echo "== the dev chain did not start again (lines above)" >&2; return 1; }
    fi
    if [[ " $what " == *" artifacts "* ]]; then
        env -u NODEFLEET_STATE bash "$ROOT/lab/artifacts.sh" serve || { echo "== the artifact server did not start again (lines above)" >&2; return 1; }
    fi
    if [ "${#vms[@]}" -gt 0 ]; then
        env -u NODEFLEET_STATE bash "$ROOT/lab/vm.sh" start "${vms[@]}" || { echo "== the dev stack's hosts did not boot again (lines above)" >&2; return 1; }
    fi
    [ -s "$before" ] || return 0
    # Its nodes start under systemd as the hosts boot; a sequencer takes a minute or two to prove again.
    local now="$before.now" left deadline=$((SECONDS + ${NODEFLEET_DEV_RESTORE_SECONDS:-600}))
    while :; do
        dev_stack_health "$now"
        left="$(dev_stack_still_unhealthy "$before" "$now")"
        if [ -z "$left" ]; then
            echo "== the dev stack is as the run found it: every node healthy before is healthy again" >&2
            return 0
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "== the dev stack is not as the run found it: healthy before, not now: $(echo "$left" | tr '\n' ' ')" >&2
            env -u NODEFLEET_STATE bash "$ROOT/scripts/dev.sh" status >&2 || true
            return 1
        fi
        sleep "${NODEFLEET_DEV_RESTORE_POLL:-10}"
    done
}
