#!/usr/bin/env bash
# The dev chain: the EVM JSON-RPC endpoints the dev fleet's storage node syncs from (in
# production, public 0G endpoints). Real geth on this runner with the dev genesis, driven by the
# 0gchaind simulator through the engine API (a block every 2 s), reachable from the VMs as
#   http://10.0.2.2:8545   geth itself
#   http://10.0.2.2:8546   the same chain through a forwarder (a second endpoint for failover)
# It also stands in for the sequencer's L1: the genesis holds a minimal validator registry at
# 0x00000000000000000000000000000000000a2ec1 (getInfo(address) -> stake, withdrawer, proposer,
# status from storage; see sim/README.md). A changed genesis starts the chain afresh.
#
#   scripts/devchain.sh start | stop | status
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$ROOT/.state/devchain"
say() { printf '[devchain] %s\n' "$*" >&2; }

running() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

answers() {
    curl -fsS -m 2 -X POST -H 'Content-Type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' "$1" 2>/dev/null | grep -q '"result":"0x'
}

cmd_start() {
    mkdir -p "$STATE"
    local geth
    geth="$(bash "$ROOT/scripts/artifacts.sh" geth)"
    local genesis_sum
    genesis_sum="$(sha256sum "$ROOT/sim/release/geth-genesis.json" | cut -d' ' -f1)"
    if [ -d "$STATE/geth" ] && [ "$(cat "$STATE/genesis.sha256" 2>/dev/null)" != "$genesis_sum" ]; then
        say "the dev genesis changed: starting the dev chain afresh"
        cmd_stop
        rm -rf "$STATE/geth" "$STATE/cl"
    fi
    if [ ! -d "$STATE/geth/geth/chaindata" ]; then
        "$geth" init --datadir "$STATE/geth" "$ROOT/sim/release/geth-genesis.json" >"$STATE/init.log" 2>&1
        echo "$genesis_sum" > "$STATE/genesis.sha256"
    fi
    [ -f "$STATE/jwt.hex" ] || (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$STATE/jwt.hex")
    if ! running geth; then
        "$geth" --datadir "$STATE/geth" --networkid 16661 --syncmode full --nodiscover --maxpeers 0 --port 0 \
            --http --http.addr 127.0.0.1 --http.port 8545 --http.api eth,net,web3 \
            --authrpc.addr 127.0.0.1 --authrpc.port 8651 --authrpc.jwtsecret "$STATE/jwt.hex" \
            >"$STATE/geth.log" 2>&1 &
        echo $! > "$STATE/geth.pid"
    fi
    for _ in $(seq 100); do answers http://127.0.0.1:8545 && break; sleep 0.2; done
    answers http://127.0.0.1:8545 || { tail -20 "$STATE/geth.log" >&2; say "geth did not start"; exit 1; }
    if ! running cl; then
        mkdir -p "$STATE/cl/config" "$STATE/cl/data"
        printf '[beacon-kit.engine]\nrpc-dial-url = "http://localhost:8651"\njwt-secret-path = "%s"\n' "$STATE/jwt.hex" > "$STATE/cl/config/app.toml"
        printf '[rpc]\nladdr = "tcp://127.0.0.1:8657"\n' > "$STATE/cl/config/config.toml"
        echo '{"pub_key": {"value": "ZGV2Y2hhaW4="}}' > "$STATE/cl/config/priv_validator_key.json"
        [ -f "$STATE/cl/data/priv_validator_state.json" ] || echo '{}' > "$STATE/cl/data/priv_validator_state.json"
        (cd "$ROOT/sim" && exec python3 -m nodefleet_sim.zerog start --home "$STATE/cl" >"$STATE/cl.log" 2>&1) &
        echo $! > "$STATE/cl.pid"
    fi
    if ! running proxy; then
        (cd "$ROOT/sim" && exec python3 -m nodefleet_sim.rpcproxy --listen 127.0.0.1:8546 --to http://127.0.0.1:8545 >"$STATE/proxy.log" 2>&1) &
        echo $! > "$STATE/proxy.pid"
    fi
    for _ in $(seq 50); do answers http://127.0.0.1:8546 && break; sleep 0.2; done
    say "dev chain up: geth on 127.0.0.1:8545, forwarder on 127.0.0.1:8546 (VMs: 10.0.2.2)"
}

cmd_stop() {
    local p
    for p in proxy cl geth; do
        if running "$p"; then kill "$(cat "$STATE/$p.pid")" 2>/dev/null || true; fi
        rm -f "$STATE/$p.pid"
    done
    sleep 1
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) for p in geth cl proxy; do running "$p" && echo "$p running" || echo "$p stopped"; done ;;
*) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
