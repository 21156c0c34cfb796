#!/usr/bin/env bash
# The dev stack's sequencer's L1: Aztec's L1 contracts on the dev chain (lab/devchain.sh), deployed
# by the real CLI's deploy-l1-contracts (lab/aztec.sh deploy) for a one-sequencer local network,
# and the sequencer's account funded for its registration, as an operator funds theirs before
# nodefleet registers it.
#
#   lab/aztec/dev-l1.sh deploy RPC_URL CHAIN_ID      once per dev chain (lab/devchain.sh start runs it
#                                                    first on a fresh chain); prints the addresses (JSON)
#   SEQUENCER_KEY=0x… lab/aztec/dev-l1.sh fund RPC_URL   (scripts/dev.sh up: the key the stack holds)
#
# The deployer is a public test key used for nothing else (below), paid from the dev chain's funded
# account (lab/sim/nodefleet_sim/txgen.py): its contracts get the same addresses on every fresh dev
# chain, the ones Pulumi.dev.yaml names. They are CREATE addresses of its nonces, and a deployment
# skips the contracts another one already put at their CREATE2 addresses: so it must be the chain's
# first Aztec deployment (the e2e tier's Aztec tests deploy their own after it). The network's
# settings: no committee (anyone may propose), 24 s slots of the dev chain's 2 s blocks, 8-slot epochs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
say() { printf '[aztec-l1] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
ROLLUP=0x4c0406056e4Dfd2Dacf19C7316B6306a1490D853   # Pulumi.dev.yaml's rollupAddress
REGISTRY=0xCC3EFC5CB1e830A7d34631D945b9D9098c647378 # Pulumi.dev.yaml's registryAddress

cmd="${1:-}"
case "$cmd" in
deploy) url="${2:?RPC URL}" chain="${3:?chain id}" ;;
fund) url="${2:?RPC URL}" ;;
*) die "usage: lab/aztec/dev-l1.sh deploy RPC_URL CHAIN_ID | SEQUENCER_KEY=0x… lab/aztec/dev-l1.sh fund RPC_URL" ;;
esac
install="$(bash "$ROOT/lab/aztec.sh" path)"
keys="$(cd "$ROOT/lab/sim" && python3 -c '
from nodefleet_sim import common, txgen
print("0x%064x" % txgen.DEV_KEY)
print("0x%064x" % (int.from_bytes(common.keccak256(b"nodefleet dev L1: Aztec deployer (public test key)"), "big") % txgen.N))')"
funds="${keys%%$'\n'*}" deployer="${keys##*$'\n'}"
l1() { node "$ROOT/lab/aztec/l1.mjs" "$install" "$@"; }
rpc() { curl -fsS -m 5 -X POST -H 'Content-Type: application/json' --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}" "$url"; }
rollup_deployed() {
    local code
    code="$(rpc eth_getCode "[\"$ROLLUP\",\"latest\"]")" || die "the dev chain at $url does not answer"
    [[ "$code" != *'"result":"0x"'* ]]
}

if [ "$cmd" = fund ]; then
    [[ "${SEQUENCER_KEY:-}" =~ ^0x[0-9a-fA-F]{64}$ ]] || die "SEQUENCER_KEY is not a private key (0x and 64 hex digits)"
    rollup_deployed || die "no rollup at $ROLLUP on the dev chain: lab/devchain.sh start deploys it"
    if ! SENDER_KEY="$SEQUENCER_KEY" l1 funded "$url" "$ROLLUP"; then
        say "funding the dev sequencer's account: ETH, the staking asset, the rollup approved"
        DEPLOYER_KEY="$deployer" SENDER_KEY="$SEQUENCER_KEY" l1 fund "$url" "$ROLLUP"
    fi
    exit 0
fi

if ! rollup_deployed; then
    nonce="$(rpc eth_getTransactionCount "[\"$(SENDER_KEY="$deployer" l1 address "$url" -)\",\"latest\"]")"
    [[ "$nonce" == *'"result":"0x0"'* ]] || die "the deployer has sent transactions but the rollup is not at $ROLLUP: a deployment was cut short; start the dev chain afresh (lab/devchain.sh stop, then remove its state directory)"
    say "deploying Aztec's L1 contracts onto the dev chain (about 30 s)"
    PAYER_KEY="$funds" SENDER_KEY="$deployer" l1 topup "$url" 1000
    contracts="$(DEPLOYER_KEY="$deployer" ETHEREUM_SLOT_DURATION=2 AZTEC_SLOT_DURATION=24 AZTEC_EPOCH_DURATION=8 AZTEC_TARGET_COMMITTEE_SIZE=0 \
        bash "$ROOT/lab/aztec.sh" deploy "$url" "$chain")"
    python3 - "$contracts" "$ROLLUP" "$REGISTRY" <<'PY' || exit 1
import json, sys
c, rollup, registry = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
for key, want in (("rollupAddress", rollup), ("registryAddress", registry)):
    if c.get(key, "").lower() != want.lower():
        sys.exit(f"[aztec-l1] deploy-l1-contracts put {key} at {c.get(key)}, not {want} (Pulumi.dev.yaml's): another Aztec deployment came first on this chain, or its transactions changed; start the dev chain afresh (lab/devchain.sh stop, then remove its state directory)")
PY
fi
printf '{"rollupAddress": "%s", "registryAddress": "%s"}\n' "$ROLLUP" "$REGISTRY"
