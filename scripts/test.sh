#!/usr/bin/env bash
# The test command: installs what is missing, then runs every tier; the e2e tier's tests on the lab's
# hosts (the long pole) run in the background as soon as their builds are done, every other suite
# beside them at nice 10 (docs/development.md, Test tiers).
#   unit  node simulators; pure logic, golden files checked by their real tools, strict Pulumi
#         mocks (under a minute)
#   cli   `pulumi preview` with the real engine on throwaway stacks (toolchain built once, cached);
#         contract tests of the sequencer's rendered files against the real Aztec CLI (installed once)
#         and of the reth and geth units against the real reth and geth (their metrics when monitored), of the storage node's config.toml against the
#         real zgs_node, of the consensus unit and app.toml against the real beacond (prebuilt
#         artifacts, or built once from upstream source, cached), of the monitoring files against
#         Debian's promtool, amtool and node_exporter
#   e2e   real geth driven by the simulators (export/trim/import); real beacond driving real geth
#         (the host tool's consensus pieces); the main job on the lab's hosts (system containers):
#         pulumi up over SSH, releases (real geth, reth, zgs_node), firewall probes, no-op re-run, destroy;
#         and beside it the GitHub workflows run by act on a runner host as its non-root user
# NODEFLEET_TIERS="unit cli" runs a subset.
#   --list  prints the tiers it would run and their tests (stdout), installs and runs nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NF_ROOT="$ROOT"
# shellcheck source=scripts/lib/fail.sh
source "$ROOT/scripts/lib/fail.sh" # a failing command stops the run with its line, never silently
cd "$ROOT"
TIERS="${NODEFLEET_TIERS:-unit cli e2e}"
for tier in $TIERS; do
    case "$tier" in unit | cli | e2e) ;; *) echo "NODEFLEET_TIERS: unknown tier '$tier' (unit, cli, e2e)" >&2; exit 2 ;; esac
done
has_tier() { [[ " $TIERS " == *" $1 "* ]]; }
# The cli tier's files that drive the engine (preview, up, no-op, drift, upgrade, the pipeline,
# policy, status), run a second time on stock Pulumi.
CLI_ON_STOCK=(preview pipeline switch-state upgrade policy status)
case "${1:-}" in
"") ;;
--list)
    # What a run would execute, tier by tier: the suites by path (the compiled node tests run from dist/).
    for tier in $TIERS; do
        echo "tier $tier"
        case "$tier" in
        unit) printf '  %s\n' lab/sim/tests hostfiles/tests test/bench/bench_trim.py test/unit/*.test.ts ;;
        cli)
            printf '  %s\n' test/cli/*.test.ts
            printf '  test/cli/%s.test.ts (again, on stock Pulumi)\n' "${CLI_ON_STOCK[@]}"
            ;;
        e2e) printf '  %s\n' lab/sim/tests_geth/test_geth_chain.py hostfiles/tests_real/test_real_reth.py hostfiles/tests_real/test_real_beacond.py test/e2e/*.test.ts ;;
        esac
    done
    exit 0
    ;;
*) echo "usage: scripts/test.sh [--list]   (NODEFLEET_TIERS=\"unit cli e2e\" chooses tiers)" >&2; exit 2 ;;
esac
if has_tier e2e; then
    # shellcheck source=scripts/lib/dev-stack.sh
    source scripts/lib/dev-stack.sh
    dev_found="$(dev_stack_running)"
    if [ -n "$dev_found" ]; then
        echo "== the dev stack runs here ($dev_found): the e2e tier needs its hosts' addresses and the dev chain's ports, so it powers it off for its run (about half an hour), then boots it again and waits until its nodes are as healthy as it finds them now (scripts/lib/dev-stack.sh)" >&2
    fi
fi
# A run writes about 9 GiB (the hosts' disks, the chains, the stacks' states) and a cold cache about
# 5 more: a disk that fills mid-run fails the hosts' services in ways that read as product faults.
need_gib=3
if has_tier e2e; then need_gib=10; fi
cache_dir="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
if [ ! -d "$cache_dir/hosts" ]; then need_gib=$((need_gib + 5)); fi
free_gib=$(($(df -Pk "$ROOT" | awk 'NR == 2 { print $4 }') / 1048576))
if [ "$free_gib" -lt "$need_gib" ]; then
    echo "== $free_gib GiB free on the disk of $ROOT; the tiers '$TIERS' need $need_gib GiB (the lab's hosts and chains under .state/, the build cache $cache_dir): free some and run again" >&2
    exit 1
fi
source scripts/setup.sh
# Debian's cloud-init, unpacked: its own schema checks the user-data rendered for cloud hosts (unit tier).
if has_tier unit; then bash lab/cloud-init.sh; fi

# What is slow to provide once and then cached (the hosts' root filesystem, the Aztec CLI:
# minutes each on a cold machine; the toolchain, reth, zgs_node, beacond and geth: seconds from their
# pinned prebuilt artifacts, many CPU-minutes when built from source) starts now in the background at low
# priority, while the unit tier runs; a tier waits for what it needs. On a warm cache each returns
# at once.
mkdir -p .state/prebuild
prebuild() { # NAME COMMAND...: runs in the background, output to .state/prebuild/NAME.log
    local name="$1"; shift
    setsid nice -n 10 "$@" >".state/prebuild/$name.log" 2>&1 & # its own process group: see the trap
    PREBUILT[$name]=$!
}
await() { # NAME: waits for it, shows its output; stops here if it failed
    local name="$1"
    [ -n "${PREBUILT[$name]:-}" ] || return 0
    if ! wait "${PREBUILT[$name]}"; then
        echo "== the background build '$name' failed:" >&2
        tail -40 ".state/prebuild/$name.log" >&2
        exit 1
    fi
    sed "s/^/[$name] /" ".state/prebuild/$name.log" >&2
    unset "PREBUILT[$name]"
}
declare -A PREBUILT=()
# A tier that fails stops the run: its background builds stop with it (caches are written whole or not at all).
stop_prebuilds() { local pid; for pid in "${PREBUILT[@]}"; do kill -- "-$pid" 2>/dev/null || true; done; }
# Every temporary file of the run (the tests' fixture keys among them) lives in one directory,
# removed when the run ends however it ends.
TMPDIR="$(mktemp -d /tmp/nodefleet-test.XXXXXX)"
export TMPDIR
stop_e2e() { # another tier failed: the lane stops its tests and powers the hosts off
    [ -n "$E2E_PID" ] || return 0
    kill -TERM "$E2E_PID" 2>/dev/null || true
    wait "$E2E_PID" 2>/dev/null || true
    E2E_PID=""
}
E2E_PID=""
# nice orders the tasks of one CPU group (cgroup) only. The lab's hosts are a group of their own
# (lab/lib/cgroups.sh), which weighs as much as one task of the runner's: with the cli tier's dozen
# processes at nice 10 beside them (load 22, measured), the hosts and the lane's pulumi got half the
# CPU their waits are measured against. So what this shell runs beside the lane goes into a group
# too, of a quarter of one task's weight: the idle CPU is all its own, a busy lane's is not. Where
# the machine allows no such group, nice 10 alone, said on stderr.
BESIDE=""
# shellcheck source=scripts/lib/cpu-group.sh
source "$ROOT/scripts/lib/cpu-group.sh"
beside_group() {
    BESIDE="$(low_cpu_group "nodefleet-beside-$$")"
    if ! join_cpu_group "$BESIDE" $$; then
        [ -z "$BESIDE" ] || rmdir "$BESIDE" 2>/dev/null || true
        BESIDE=""
        echo "== the suites beside the e2e lane run at nice 10 only (no CPU group could be made here)" >&2
    fi
}
leave_group() { # back into the parent group, the group removed (its other processes have ended)
    [ -n "$BESIDE" ] || return 0
    echo $$ >"$(dirname "$BESIDE")/cgroup.procs" 2>/dev/null || true
    rmdir "$BESIDE" 2>/dev/null || true
}
on_exit() { local rc=$?; stop_prebuilds; stop_e2e; rm -rf "$TMPDIR"; leave_group; nf_exit_report "$rc"; }
trap on_exit EXIT
if has_tier cli || has_tier e2e; then
    prebuild toolchain bash lab/toolchain.sh hcloud # with the hcloud provider: the Hetzner preview test
    prebuild aztec bash lab/aztec.sh install # the real Aztec CLI for the contract and registration tests
    prebuild reth bash lab/reth.sh build     # the real reth (prebuilt artifact, or 20 CPU-min from source): its contract test
    prebuild zgs bash lab/zgs.sh build       # the real zgs_node (prebuilt artifact, or 28 CPU-min from source): its contract test
    prebuild beacond bash -c 'bash lab/beacond.sh build && bash lab/beacond.sh kzg >/dev/null' # BeaconKit's beacond (prebuilt artifact, or ~40 min from source) and its KZG setup: its contract test
    prebuild geth bash lab/artifacts.sh geth # the real geth (a few minutes cold): the chain of the zgs_node contract test
    prebuild s3 bash lab/s3.sh path          # moto's S3 server (PyPI, under a minute cold): the pipeline test's state backend
    prebuild prometheus bash lab/prometheus.sh path # Debian's Prometheus, Alertmanager, node_exporter (34 MB): promtool and amtool check what nodefleet renders
fi
if has_tier e2e; then prebuild lab bash lab/vm.sh image; fi

rm -rf dist
npx --no-install tsc -p tsconfig.json

# The e2e tier's node tests on the lab's hosts are the run's long pole (the dev-stack scenarios,
# the Aztec registration beside them; about 30 minutes): they run in the background (scripts/lib/e2e-lane.sh,
# their lines marked "[e2e] ") as soon as what they need is built, and every other suite runs beside
# them at a lower priority (nice 10), so that the hosts and their pulumi keep the CPU their waits are
# measured against: the hosts' tests leave about half of two cores idle (they wait on blocks, soaks,
# restarts; measured, docs/development.md). On a cold machine the suites that need no more than
# what is built run first, beside the builds (45 s at most spent finding out which).
E2E_NEEDS=(toolchain aztec reth zgs beacond geth lab)
E2E_T0=0
building() { local n; for n in "$@"; do [ -n "${PREBUILT[$n]:-}" ] && kill -0 "${PREBUILT[$n]}" 2>/dev/null && return 0; done; return 1; }
start_e2e() {
    local n
    [ -z "$E2E_PID" ] || return 0
    for n in "${E2E_NEEDS[@]}"; do await "$n"; done
    echo "== e2e tier: the dev stack on the lab's hosts, with a stack, host disks and dev chain of its own (.state/e2e), in the background"
    bash scripts/lib/e2e-lane.sh &
    E2E_PID=$!
    E2E_T0=$SECONDS
    renice -n 10 -p $$ >/dev/null # what this shell runs from now on: below the hosts' tier
    beside_group
}
unit_tier() {
    echo "== unit tier: node simulators, host scripts and host tools (python unittest)"
    (cd lab/sim && python3 -m unittest discover -s tests -t .)
    (cd hostfiles && python3 -m unittest discover -s tests -t .)
    echo "== unit tier: trim_export.py against cp and the per-block approach, side by side (gates: same output, CPU; see docs/switch.md, The trim tool)"
    python3 test/bench/bench_trim.py --mb 512 --rounds 5
    echo "== unit tier: pure logic, rendered files, strict Pulumi mocks"
    node --test --test-reporter=spec dist/test/unit/
}
cli_tier() {
    echo "== cli tier: pulumi preview with the real engine"
    await toolchain
    await aztec
    await reth
    await zgs
    await beacond
    await geth
    await s3
    await prometheus
    bash lab/toolchain.sh hcloud
    # Two files at once: one alone leaves about a third of two cores idle (pulumi waits on its
    # plugins and the scripted hosts); each file has its own stacks, homes and ports.
    node --test --test-reporter=spec --test-concurrency=2 dist/test/cli/
    cli_on_stock # beside the hosts' tests still running, in the same low-weight CPU group as the rest
}
# The engine's tests again on stock Pulumi (v3.248.0 and the command provider with no patch, as an
# operator installs them): where a patch changes what a test sees, it asserts stock's behaviour
# instead (docs/toolchain.md).
cli_on_stock() {
    echo "== cli tier: the engine's tests on stock Pulumi"
    bash lab/toolchain.sh stock
    local files=() f
    for f in "${CLI_ON_STOCK[@]}"; do files+=("dist/test/cli/$f.test.js"); done
    NODEFLEET_TEST_TOOLCHAIN=stock node --test --test-reporter=spec --test-concurrency=2 "${files[@]}"
}

e2e_python() { # the e2e tier's suites on the runner: real geth, reth and beacond, ports of their own
    echo "== e2e tier: real geth with the simulators (export, trim, import, engine API, JWT)"
    await geth
    NODEFLEET_GETH="$(bash lab/artifacts.sh geth)" bash -c 'cd lab/sim && python3 -m unittest -v tests_geth.test_geth_chain'
    echo "== e2e tier: step 9's import against the real reth, on a chain real geth made (gap, kill -9, forged state root)"
    await reth
    local reth_bin chain_rlp
    reth_bin="$(bash lab/reth.sh path)"
    chain_rlp="$(bash lab/devchain.sh chain 3000)" # the e2e tier's chain (test/support/lab.ts CHAIN_BLOCKS), made once
    NODEFLEET_RETH="$reth_bin" NODEFLEET_CHAIN="$chain_rlp" bash -c 'cd hostfiles && python3 -m unittest -v tests_real.test_real_reth'
    echo "== e2e tier: the host tool's consensus pieces against the real beacond driving real geth, then real reth (status, execution client behind and the height rollback, missing signing state, JWT, the switch's core)"
    await beacond
    NODEFLEET_BEACOND="$(bash lab/beacond.sh path)" NODEFLEET_GETH="$(bash lab/artifacts.sh geth)" NODEFLEET_KZG="$(bash lab/beacond.sh kzg)" NODEFLEET_RETH="$reth_bin" \
        bash -c 'cd hostfiles && python3 -m unittest -v tests_real.test_real_beacond'
}
SUITES=()
has_tier unit && SUITES+=(unit_tier)
has_tier e2e && SUITES+=(e2e_python)
has_tier cli && SUITES+=(cli_tier) # last: it needs the toolchain, as the hosts' tests do
# Warm, each build is a check of its cache that ends within seconds of the compile above.
if has_tier e2e; then for _ in $(seq 45); do building "${E2E_NEEDS[@]}" || break; sleep 1; done; fi
for suite in "${SUITES[@]}"; do
    # The hosts' tests start once their builds are done, or before the suite that waits for the same builds.
    if has_tier e2e && { [ "$suite" = cli_tier ] || ! building "${E2E_NEEDS[@]}"; }; then start_e2e; fi
    "$suite"
done
if has_tier e2e; then
    start_e2e
    echo "== e2e tier: waiting for the dev stack's scenarios on the lab's hosts (started $(( (SECONDS - E2E_T0) / 60 )) min ago; their lines: [e2e])"
    e2e_rc=0
    wait "$E2E_PID" || e2e_rc=$?
    E2E_PID=""
    echo "== e2e tier: the hosts' tests ended with status $e2e_rc after $(( (SECONDS - E2E_T0) / 60 )) min; the whole run took $(( SECONDS / 60 )) min"
    exit "$e2e_rc"
fi
