#!/usr/bin/env bash
# The e2e tier's node tests on the lab's hosts (the dev-stack scenarios, and beside them the Aztec
# registration on the runner, a cloud host's first boot and the workflows run by act): the test command's long pole, started by scripts/test.sh after the cli tier
# and the Python e2e suites, with the unit tier beside it on a warm machine. Its lines carry "[e2e] "
# on the run's stdout and stderr and are kept whole in the state directory's e2e-tier.log. Exits with the tests' status; the hosts and
# the dev chain are powered off whichever way it ends: scripts/test.sh sends it SIGTERM when another
# tier fails, and it stops the node runners (each a process group of its own) before powering them off.
# A dev stack it found running is running again when it exits, its nodes as healthy as they were
# (else it exits 1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NF_ROOT="$ROOT"
# shellcheck source=scripts/lib/fail.sh
source "$ROOT/scripts/lib/fail.sh"
# shellcheck source=scripts/lib/failed-tests.sh
source "$ROOT/scripts/lib/failed-tests.sh"
cd "$ROOT"
log="$ROOT/.state/e2e-tier.log"
mkdir -p "$ROOT/.state"
: >"$log"
exec > >(tee -a "$log" | sed -u 's/^/[e2e] /') 2> >(tee -a "$log" | sed -u 's/^/[e2e] /' >&2)

# shellcheck source=scripts/lib/dev-stack.sh
source "$ROOT/scripts/lib/dev-stack.sh"

bash lab/toolchain.sh
# The dev stack's hosts and dev chain (scripts/dev.sh up) hold the addresses and ports the tier
# needs: they are powered off cleanly, their disks, chain and state kept as they are, and booted
# again when the tier ends, however it ends (scripts/lib/dev-stack.sh). The tier's own state starts
# afresh each run and is left powered off.
dev_found="$(dev_stack_running)"
dev_before="$ROOT/.state/e2e-dev-stack-before.json"
rm -f "$dev_before"
if [ -n "$dev_found" ]; then
    echo "the dev stack runs here ($dev_found): its status now, then it is powered off for the tier's run"
    dev_stack_health "$dev_before"
    env -u NODEFLEET_STATE bash lab/artifacts.sh stop
fi
bash lab/vm.sh down
bash lab/devchain.sh stop
export NODEFLEET_STATE="$ROOT/.state/e2e"
down() { bash lab/vm.sh down || true; bash lab/devchain.sh stop || true; bash lab/artifacts.sh stop || true; }
artifacts=""
on_exit() {
    local rc=$?
    [ -z "$artifacts" ] || kill "$artifacts" 2>/dev/null || true
    down
    if ! dev_stack_restore "$dev_found" "$dev_before"; then [ "$rc" -ne 0 ] || rc=1; fi
    [ "$rc" -eq 0 ] || nf_failed_tests "$log" >&2 || true
    nf_exit_report "$rc"
    exit "$rc"
}
trap on_exit EXIT
bash lab/vm.sh down
bash lab/devchain.sh stop
rm -rf "$NODEFLEET_STATE"
# The dev chain both files use, started once before them: the registration file (on the runner,
# about a minute, against a rollup of its own) then runs beside the dev stack's scenarios instead
# of before them. Neither stops a chain it did not start; the dev stack's scenarios stop it at their end.
# Beside it the release archives the hosts take, served from here on (a cold cache packs them: about a
# minute, mostly the Aztec release; at once on a warm one): both files of hosts need them.
bash lab/artifacts.sh serve &
artifacts=$!
bash lab/devchain.sh start
wait "$artifacts"
artifacts=""
# Each file runs in the background and is waited for, so that SIGTERM is handled at once (bash runs
# a trap only between commands), in a session of its own, so that its runner and its test files stop
# together, and with a limit of its own (minutes, well above its usual time): a test's own timeout
# is a timer of its file's event loop, which cannot fire when that loop is stuck (a deadlock in
# native code once hung a file for good), and the tier then fails at the limit, naming it, instead
# of holding the pipeline until its job's own limit.
# The workflows run by act (gitops-act: a runner host of its own, scripted hosts, nothing of the dev
# stack's) and a cloud host's first boot (first-boot: hosts dev-3 and dev-4 and a stack of its own)
# run beside the dev stack's scenarios, not after them: those leave about half of two cores idle
# (they wait on blocks, soaks and restarts; docs/development.md). Their `pulumi up`s, npm installs
# and storage node would take the CPU the scenarios' waits are measured against, so their files run
# in a CPU group of a quarter of one task's weight and their hosts weigh a quarter of a lab host
# (lab/vm.sh, NODEFLEET_HOST_CPU_SHARES): they take the idle CPU.
# shellcheck source=scripts/lib/cpu-group.sh
source "$ROOT/scripts/lib/cpu-group.sh"
runners=()
start_tests() { # LIMIT_MINUTES CPU_GROUP FILE...: a session of its own in the background (its pid in runners)
    local limit="$1" group="$2"
    shift 2
    (
        [ -z "$group" ] || join_cpu_group "$group" "$BASHPID" || echo "e2e-lane.sh: $* runs outside its CPU group" >&2
        exec setsid timeout --kill-after=60 "${limit}m" node --test --test-reporter=spec --test-concurrency=2 "$@"
    ) &
    runners+=("$!")
}
await_tests() { # PID LIMIT_MINUTES FILE...: its status; a run stopped at its limit is named
    local pid="$1" limit="$2" rc=0
    shift 2
    wait "$pid" || rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "e2e-lane.sh: $* did not end within ${limit} min: stopped" >&2; fi
    return "$rc"
}
beside_group=""
stop_runners() { local p; for p in "${runners[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; for p in "${runners[@]}"; do wait "$p" 2>/dev/null || true; done; }
trap 'stop_runners; [ -z "$beside_group" ] || rmdir "$beside_group" 2>/dev/null || true; exit 143' TERM
scenarios=() beside=()
for f in dist/test/e2e/*.test.js; do
    case "$f" in */gitops-act.test.js | */first-boot.test.js) beside+=("$f") ;; *) scenarios+=("$f") ;; esac
done
status=0
start_tests 65 "" "${scenarios[@]}"
scenarios_pid="${runners[0]}"
if [ "${#beside[@]}" -gt 0 ]; then
    beside_group="$(low_cpu_group "nodefleet-beside-hosts-$$")"
    NODEFLEET_HOST_CPU_SHARES=256 start_tests 60 "$beside_group" "${beside[@]}"
fi
await_tests "$scenarios_pid" 65 "${scenarios[@]}" || status=$?
if [ "${#beside[@]}" -gt 0 ]; then await_tests "${runners[1]}" 60 "${beside[@]}" || status=$?; fi
[ -z "$beside_group" ] || rmdir "$beside_group" 2>/dev/null || true
[ "$status" -eq 0 ] # the tier's status: a failed file fails it (on_exit reports it)
