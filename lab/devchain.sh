#!/usr/bin/env bash
# The dev chain: the EVM JSON-RPC endpoints the dev fleet's storage node syncs from (in
# production, public 0G endpoints). A one-validator BeaconKit devnet on this runner: the real
# beacond (lab/beacond.sh; 0gchaind's open core) driving real geth through the engine API, a block
# every 2 s (CometBFT's timeout_commit), reachable from the VMs as
#   http://10.0.2.2:8545   geth itself
#   http://10.0.2.2:8546   the same chain through a forwarder (a second endpoint for failover)
#   http://127.0.0.1:3500  beacond's node API (the beacon API: the blob sidecars an Aztec node
#                          reads its L1's blobs from; beacond serves it on 3501, behind
#                          lab/sim/nodefleet_sim/nodeapi.py, which SIMULATES the one call beacond
#                          v1.1.0 cannot answer, the list of headers, and forwards the rest)
# The devnet is lab/sim/release/devnet (made by lab/beacond.sh dev-genesis; fixed keys, so that its
# CometBFT node id is known: 10.0.2.2:26656 from a VM). Its execution genesis is
# lab/sim/release/geth-genesis.json with the devnet's chain id (80087: beacond's devnet chain spec
# requires it of the execution client) and the deposit and beacon-roots contracts. It also stands in for the sequencer's L1: the
# genesis holds a minimal validator registry at 0x00000000000000000000000000000000000a2ec1
# (getInfo(address) -> stake, withdrawer, proposer, status from storage; see lab/sim/README.md). A
# changed genesis or beacond starts the chain afresh. On it, the 0G storage contracts
# (lab/zgs_contracts.py: flow, mine, reward, market at fixed addresses) and Aztec's L1 contracts for
# the dev stack's sequencer (lab/aztec/dev-l1.sh deploy: the rollup and registry at fixed addresses).
#
# Beside it, the other validator of the dev validator's network (lab/sim/release/vmnet: validator-1
# on the VMs has 40% of its power, this one 60%): a second beacond (vmnet/host_priv_validator_key.json,
# node id of vmnet/host_node_key.json) and a second geth, a block every 5 s. validator-1 names it as
# its peer (10.0.2.2:26756): it holds the chain, so that a host validator-1 moves to, or one whose
# execution client lost blocks, syncs them from a peer, as on a real network. Neither validator
# has two thirds of the power: the network makes no block until validator-1 is up, and halts while
# it is stopped.
#   http://127.0.0.1:8555   its geth (the network's chain, block for block)
#
#   lab/devchain.sh start | stop | status
#   lab/devchain.sh chain N   print the path of an RLP export of a chain of N real geth blocks
#                                 on lab/sim/release/geth-genesis.json (chain id 16661), made once
#                                 natively (real geth, driven by the 0gchaind SIMULATOR without a
#                                 block period) and cached outside the clone; the e2e tier's import
#                                 tests against the real reth read it (hostfiles/tests_real)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${NODEFLEET_STATE:-$ROOT/.state}/devchain" # the e2e tier's own under .state/e2e (scripts/test.sh)
DEVNET="$ROOT/lab/sim/release/devnet" # the devnet's genesis and keys (lab/beacond.sh dev-genesis)
VMNET="$ROOT/lab/sim/release/vmnet"   # the dev validator's network (lab/beacond.sh dev-genesis vmnet)
say() { printf '[devchain] %s\n' "$*" >&2; }

running() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

# Before it starts one of its programs: the loopback ports that program binds are free. Another
# dev chain (another checkout's, or another NODEFLEET_STATE's, which `stop` here cannot see) would
# otherwise answer in its place, and every check below would pass against that chain.
ports_free() { # NAME PORT...
    local name="$1" port; shift
    for port in "$@"; do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            say "127.0.0.1:$port, which the dev chain's $name binds, is taken: $(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:.*' | head -1)"
            say "another dev chain runs here (another checkout's or state directory's?): stop it with its own lab/devchain.sh stop, then start this one"
            exit 1
        fi
    done
}

# A receipt geth does not have is plain null: not "transaction indexing is in progress".
indexed() {
    curl -fsS -m 2 -X POST -H 'Content-Type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["0x1111111111111111111111111111111111111111111111111111111111111111"]}' \
        http://127.0.0.1:8545 2>/dev/null | grep -q '"result":null'
}

# geth's genesis block is the one the consensus genesis names (its execution payload header).
genesis_agrees() {
    local want have
    want="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["app_state"]["beacon"]["execution_payload_header"]["blockHash"])' "$STATE/cl/config/genesis.json")"
    have="$(curl -fsS -m 2 -X POST -H 'Content-Type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x0",false]}' http://127.0.0.1:8545 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["hash"])')"
    [ "$want" = "$have" ] && return 0
    say "the devnet's consensus genesis names execution block $want but geth's genesis block is $have: run lab/beacond.sh dev-genesis (lab/sim/release/devnet)"
    return 1
}

answers() {
    curl -fsS -m 2 -X POST -H 'Content-Type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' "$1" 2>/dev/null | grep -q '"result":"0x'
}

# The devnet from lab/sim/release/devnet (lab/beacond.sh dev-genesis made it): a home made by
# `beacond init` (its config files and signing state) given the devnet's genesis and keys, geth
# initialised with the devnet's execution genesis, the JWT.
make_chain() {
    local geth="$1" beacond="$2" stamp="$3" f
    say "making the dev chain: the one-validator BeaconKit devnet of lab/sim/release/devnet (real beacond) and real geth"
    cmd_stop
    rm -rf "$STATE/geth" "$STATE/cl" "$STATE/eth-genesis.json" "$STATE/stamp" "$STATE"/*.log
    mkdir -p "$STATE"
    CHAIN_SPEC=devnet "$beacond" init nodefleet-devchain --chain-id beacond-2061 --home "$STATE/cl" >"$STATE/init.log" 2>&1 ||
        { tail -5 "$STATE/init.log" >&2; say "beacond init failed"; exit 1; }
    for f in genesis.json priv_validator_key.json node_key.json; do
        install -m 0600 "$DEVNET/$f" "$STATE/cl/config/$f"
    done
    cp "$DEVNET/eth-genesis.json" "$STATE/eth-genesis.json"
    # beacond wants its JWT 0x-prefixed (geth takes either).
    (umask 077 && printf '0x%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$STATE/jwt.hex")
    # Blocks every 2 s (the Aztec tests' L1 slot); every application state and block kept, the
    # block store on and the node API on 127.0.0.1:3501 (behind nodeapi.py on 3500: an L1 client's
    # blob reads).
    python3 - "$STATE/cl/config" <<'PY'
import re, sys
d = sys.argv[1]
def edit(name, subs):
    with open(f"{d}/{name}") as f:
        text = f.read()
    for pattern, value in subs:
        text, n = re.subn(pattern, value, text, count=1, flags=re.M | re.S)
        if n != 1:
            sys.exit(f"devchain: {name} of beacond init has no {pattern!r}")
    with open(f"{d}/{name}", "w") as f:
        f.write(text)
edit("config.toml", [(r'^timeout_commit = ".*?"$', 'timeout_commit = "2s"')])
edit("app.toml", [(r'^pruning = ".*?"$', 'pruning = "nothing"'),
                  (r'(\[beacon-kit\.block-store-service\].*?^enabled = )"false"', r'\1"true"'),
                  (r'(\[beacon-kit\.node-api\].*?^enabled = )"false"', r'\1"true"'),
                  (r'(\[beacon-kit\.node-api\].*?^address = )"127\.0\.0\.1:3500"', r'\1"127.0.0.1:3501"')])
PY
    "$geth" init --datadir "$STATE/geth" "$STATE/eth-genesis.json" >>"$STATE/init.log" 2>&1 || { tail -5 "$STATE/init.log" >&2; say "geth init failed"; exit 1; }
    # vmnet's validator on the runner: its genesis and keys, a block every 5 s (docs/development.md,
    # "Which tests meet the real consensus daemon": validator-1 is fitted to these timings).
    rm -rf "$STATE/vm-geth" "$STATE/vm-cl"
    CHAIN_SPEC=devnet "$beacond" init nodefleet-vmnet-host --chain-id beacond-2061 --home "$STATE/vm-cl" >>"$STATE/init.log" 2>&1 ||
        { tail -5 "$STATE/init.log" >&2; say "beacond init (vmnet) failed"; exit 1; }
    install -m 0600 "$VMNET/genesis.json" "$STATE/vm-cl/config/genesis.json"
    install -m 0600 "$VMNET/host_priv_validator_key.json" "$STATE/vm-cl/config/priv_validator_key.json"
    install -m 0600 "$VMNET/host_node_key.json" "$STATE/vm-cl/config/node_key.json"
    sed -i 's/^timeout_commit = ".*"$/timeout_commit = "5s"/' "$STATE/vm-cl/config/config.toml"
    grep -q '^timeout_commit = "5s"$' "$STATE/vm-cl/config/config.toml" || { say "vmnet: config.toml of beacond init has no timeout_commit"; exit 1; }
    "$geth" init --datadir "$STATE/vm-geth" "$VMNET/eth-genesis.json" >>"$STATE/init.log" 2>&1 || { tail -5 "$STATE/init.log" >&2; say "geth init (vmnet) failed"; exit 1; }
    echo "$stamp" > "$STATE/stamp"
}

cmd_start() {
    mkdir -p "$STATE"
    local geth beacond kzg stamp
    geth="$(bash "$ROOT/lab/artifacts.sh" geth)"
    beacond="$(bash "$ROOT/lab/beacond.sh" path)"
    kzg="$(bash "$ROOT/lab/beacond.sh" kzg)"
    running geth || ports_free geth 8545 8651 # geth's, checked here once: before minutes of making a chain
    stamp="$( (cat "$DEVNET"/*.json "$VMNET"/*.json "$ROOT/lab/devchain.sh"; bash "$ROOT/lab/beacond.sh" key) | sha256sum | cut -c1-16)"
    if [ "$(cat "$STATE/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -d "$STATE/geth/geth/chaindata" ] || [ ! -d "$STATE/vm-geth/geth/chaindata" ]; then
        [ ! -d "$STATE/geth" ] || say "the devnet, beacond or this script changed: starting the dev chain afresh"
        make_chain "$geth" "$beacond" "$stamp"
    fi
    if ! running geth; then
        "$geth" --datadir "$STATE/geth" --networkid 80087 --syncmode full --nodiscover --maxpeers 0 --port 0 \
            --http --http.addr 127.0.0.1 --http.port 8545 --http.api eth,net,web3 --rpc.allow-unprotected-txs --miner.gasprice 1 \
            --authrpc.addr 127.0.0.1 --authrpc.port 8651 --authrpc.jwtsecret "$STATE/jwt.hex" \
            >>"$STATE/geth.log" 2>&1 &
        echo $! > "$STATE/geth.pid"
    fi
    for _ in $(seq 100); do answers http://127.0.0.1:8545 && break; sleep 0.2; done
    answers http://127.0.0.1:8545 || { tail -20 "$STATE/geth.log" >&2; say "geth did not start"; exit 1; }
    genesis_agrees || exit 1
    if ! running cl; then
        ports_free beacond 8657 26656 3501
        # CometBFT's P2P on loopback: what a VM reaches as 10.0.2.2:26656.
        CHAIN_SPEC=devnet "$beacond" start --home "$STATE/cl" \
            --beacon-kit.engine.rpc-dial-url http://127.0.0.1:8651 --beacon-kit.engine.jwt-secret-path "$STATE/jwt.hex" \
            --beacon-kit.kzg.trusted-setup-path "$kzg" --rpc.laddr tcp://127.0.0.1:8657 --p2p.laddr tcp://127.0.0.1:26656 \
            >>"$STATE/cl.log" 2>&1 &
        echo $! > "$STATE/cl.pid"
    fi
    if ! running vm-geth; then
        ports_free "vmnet's geth" 8555 8661
        "$geth" --datadir "$STATE/vm-geth" --networkid 80087 --syncmode full --nodiscover --maxpeers 0 --port 0 \
            --http --http.addr 127.0.0.1 --http.port 8555 --http.api eth,net,web3 \
            --authrpc.addr 127.0.0.1 --authrpc.port 8661 --authrpc.jwtsecret "$STATE/jwt.hex" \
            >>"$STATE/vm-geth.log" 2>&1 &
        echo $! > "$STATE/vm-geth.pid"
    fi
    if ! running vm-cl; then
        ports_free "vmnet's beacond" 8667 26756
        for _ in $(seq 100); do answers http://127.0.0.1:8555 && break; sleep 0.2; done
        answers http://127.0.0.1:8555 || { tail -20 "$STATE/vm-geth.log" >&2; say "vmnet's geth did not start"; exit 1; }
        # P2P on loopback: what validator-1 reaches as 10.0.2.2:26756.
        CHAIN_SPEC=devnet "$beacond" start --home "$STATE/vm-cl" \
            --beacon-kit.engine.rpc-dial-url http://127.0.0.1:8661 --beacon-kit.engine.jwt-secret-path "$STATE/jwt.hex" \
            --beacon-kit.kzg.trusted-setup-path "$kzg" --rpc.laddr tcp://127.0.0.1:8667 --p2p.laddr tcp://127.0.0.1:26756 \
            >>"$STATE/vm-cl.log" 2>&1 &
        echo $! > "$STATE/vm-cl.pid"
    fi
    if ! running nodeapi; then
        ports_free "node API forwarder" 3500
        (cd "$ROOT/lab/sim" && exec python3 -m nodefleet_sim.nodeapi --listen 127.0.0.1:3500 --to http://127.0.0.1:3501 >"$STATE/nodeapi.log" 2>&1) &
        echo $! > "$STATE/nodeapi.pid"
    fi
    if ! running proxy; then
        ports_free "RPC forwarder" 8546
        (cd "$ROOT/lab/sim" && exec python3 -m nodefleet_sim.rpcproxy --listen 127.0.0.1:8546 --to http://127.0.0.1:8545 >"$STATE/proxy.log" 2>&1) &
        echo $! > "$STATE/proxy.pid"
    fi
    for _ in $(seq 50); do answers http://127.0.0.1:8546 && break; sleep 0.2; done
    # A fresh geth answers a receipt it does not have with "transaction indexing is in progress"
    # until its indexer has seen a block; viem (the Aztec CLI's) gives up on that answer instead
    # of waiting. Up means: an unknown receipt is plain null.
    for _ in $(seq 300); do indexed && break; sleep 0.2; done
    indexed || { tail -5 "$STATE/cl.log" "$STATE/geth.log" >&2; say "geth's transaction index is not ready after 60 s (is beacond making blocks?)"; exit 1; }
    # The 0G storage contracts the real zgs_node syncs its log from (addresses fixed: the dev
    # stack's config names them); sends only what a chain that has them lacks.
    python3 "$ROOT/lab/zgs_contracts.py" deploy --rpc http://127.0.0.1:8545 --contracts "$(bash "$ROOT/lab/zgs.sh" contracts)" >"$STATE/zgs-contracts.json"
    # Aztec's L1 contracts for the dev stack's sequencer, at the addresses the dev config names: the
    # chain's first Aztec deployment, before any test deploys its own (lab/aztec/dev-l1.sh says why).
    bash "$ROOT/lab/aztec/dev-l1.sh" deploy http://127.0.0.1:8545 80087 >"$STATE/aztec-contracts.json"
    say "dev chain up: beacond and geth (127.0.0.1:8545), forwarder 127.0.0.1:8546 (VMs: 10.0.2.2), node API 127.0.0.1:3500; storage contracts $(cat "$STATE/zgs-contracts.json"); Aztec's $(cat "$STATE/aztec-contracts.json"); vmnet's validator (geth 127.0.0.1:8555, P2P 10.0.2.2:26756 from a VM)"
}

cmd_stop() {
    local p
    for p in proxy nodeapi vm-cl vm-geth cl geth; do
        if running "$p"; then kill "$(cat "$STATE/$p.pid")" 2>/dev/null || true; fi
        rm -f "$STATE/$p.pid"
    done
    sleep 1
}

# A chain of N blocks made natively: geth under TCG emulation makes about 2 blocks/s, this about 50.
cmd_chain() {
    local n="$1" geth stamp cache work
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { say "chain: N must be a positive block count, got '$n'"; exit 2; }
    geth="$(bash "$ROOT/lab/artifacts.sh" geth)"
    stamp="$(cat "$geth" "$ROOT/lab/sim/release/geth-genesis.json" "$ROOT/lab/sim/nodefleet_sim/zerog.py" | sha256sum | cut -c1-16)"
    cache="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}/chains/$stamp"
    # One chain made at a time on this machine: the maker's geth and 0gchaind use fixed ports, and a
    # second maker would read the first one's head and export a chain it does not have.
    mkdir -p "$cache"
    [ -s "$cache/chain-$n.rlp" ] || { exec 9>"$(dirname "$cache")/.maker.lock" && flock 9; }
    if [ ! -s "$cache/chain-$n.rlp" ]; then
        work="$(mktemp -d)"
        say "making a chain of $n real geth blocks (once; cached in $cache)"
        "$geth" init --datadir "$work/geth" "$ROOT/lab/sim/release/geth-genesis.json" >"$work/init.log" 2>&1
        (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/jwt.hex")
        "$geth" --datadir "$work/geth" --networkid 16661 --syncmode full --nodiscover --maxpeers 0 --port 0 \
            --http --http.addr 127.0.0.1 --http.port 18545 --http.api eth --authrpc.addr 127.0.0.1 \
            --authrpc.port 18651 --authrpc.jwtsecret "$work/jwt.hex" >"$work/geth.log" 2>&1 &
        local gpid=$!
        for _ in $(seq 100); do answers http://127.0.0.1:18545 && break; sleep 0.2; done
        mkdir -p "$work/cl/config" "$work/cl/data"
        printf '[beacon-kit.engine]\nrpc-dial-url = "http://localhost:18651"\njwt-secret-path = "%s"\n' "$work/jwt.hex" > "$work/cl/config/app.toml"
        printf '[rpc]\nladdr = "tcp://127.0.0.1:18657"\n' > "$work/cl/config/config.toml"
        echo '{"pub_key": {"value": "Y2hhaW4="}}' > "$work/cl/config/priv_validator_key.json"
        echo '{}' > "$work/cl/data/priv_validator_state.json"
        (cd "$ROOT/lab/sim" && NODEFLEET_SIM_BLOCK_TIME=0.001 exec python3 -m nodefleet_sim.zerog start --home "$work/cl" >"$work/cl.log" 2>&1) &
        local cpid=$!
        local head=0
        while [ "$head" -lt "$n" ]; do
            sleep 2
            if ! kill -0 "$cpid" 2>/dev/null || ! kill -0 "$gpid" 2>/dev/null; then
                tail -5 "$work/cl.log" "$work/geth.log" >&2; say "chain: geth or the simulator stopped"; exit 1
            fi
            head=$(( $(curl -fsS -m 2 -X POST -H 'Content-Type: application/json' \
                --data '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' http://127.0.0.1:18545 | sed -n 's/.*"result":"\(0x[0-9a-f]*\)".*/\1/p') ))
        done
        kill "$cpid"; wait "$cpid" 2>/dev/null || true
        kill "$gpid"; wait "$gpid" 2>/dev/null || true
        "$geth" export --datadir "$work/geth" "$work/chain.rlp" 1 "$n" >"$work/export.log" 2>&1
        mv "$work/chain.rlp" "$cache/chain-$n.rlp" && rm -rf "$work"
    fi
    echo "$cache/chain-$n.rlp"
}

case "${1:-}" in
start) cmd_start ;;
chain) cmd_chain "${2:-}" ;;
stop) cmd_stop ;;
status) for p in geth cl nodeapi proxy vm-geth vm-cl; do running "$p" && echo "$p running" || echo "$p stopped"; done ;;
*) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
