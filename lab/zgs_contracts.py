"""The 0G storage contracts on the dev chain, deployed from the compiled artifacts of the pinned
0g-storage-node archive (storage-contracts-abis/*.json, unpacked by `lab/zgs.sh contracts`) the
way that project's own integration tests deploy them without a market (its
tests/test_framework/blockchain_node.py, deploy_no_market): DummyMarket, DummyReward, Flow(0),
PoraMineTest(0); then mine.initialize(1, flow, reward), setDifficultyAdjustRatio(1),
setTargetSubmissions(2), flow.initialize(market, 100).

  python3 lab/zgs_contracts.py deploy --rpc URL --contracts DIR   deploy what is missing; print
                                                                   the addresses as JSON on stdout
  python3 lab/zgs_contracts.py addresses                           the addresses, without a chain
  python3 lab/zgs_contracts.py miner-key [N]                       the dev miner key N (public test keys:
                                                                   1, the default, is storage-1's; 2 and 3
                                                                   the rollout scenario's storage-2 and -3;
                                                                   4 the first-boot scenario's storage-4)

One deployer account does it all, a public test key used for nothing else, funded from the dev
chain's account (txgen.DEV_KEY). Its nonces 0..7 are the eight transactions above, in order, so
the addresses are fixed (CREATE: keccak(rlp([deployer, nonce]))) and the dev stack's config names
them. The deployment resumes from the deployer's nonce: run it again, after an interruption or on
a chain that has it, and it sends only what is missing.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sim"))
from nodefleet_sim import common, txgen  # noqa: E402

DEPLOYER_KEY = int.from_bytes(common.keccak256(b"nodefleet dev chain storage contracts deployer (public test key)"), "big") % txgen.N
# The dev stack's storage miner key (Pulumi.dev.yaml's devMinerKey holds it, encrypted): a public test
# key. zgs_node sends a transaction with it at start (its miner id request to the mine contract) and
# exits when the account cannot pay the gas ("insufficient funds"), so the dev chain funds it.
DEV_MINER_KEY = int.from_bytes(common.keccak256(b"nodefleet dev storage miner key (public test key)"), "big") % txgen.N
# The rollout scenario's two more storage nodes (Pulumi.dev.yaml's devMinerKey2 and devMinerKey3) and
# the first-boot scenario's storage-4 (devMinerKey4), which runs beside them: each node mines with a
# key of its own.
MINER_KEYS = {1: DEV_MINER_KEY, **{n: int.from_bytes(common.keccak256(f"nodefleet dev storage miner key {n} (public test key)".encode()), "big") % txgen.N for n in (2, 3, 4)}}
FUNDING = 10**20  # 100 of the dev chain's coin each: gas for many transactions
MINE_PERIOD = 100
# (nonce, name, what it is): the CREATE transactions
CREATES = [(0, "DummyMarket", "market"), (1, "DummyReward", "reward"), (2, "Flow", "flow"), (3, "PoraMineTest", "mine")]


def checksum(address):
    """EIP-55 mixed-case form of a 0x address."""
    hexa = address[2:].lower()
    digest = common.keccak256(hexa.encode()).hex()
    return "0x" + "".join(c.upper() if int(digest[i], 16) >= 8 else c for i, c in enumerate(hexa))


def create_address(sender, nonce):
    return checksum("0x" + common.keccak256(common.rlp_encode([bytes.fromhex(sender[2:]), nonce]))[-20:].hex())


def addresses():
    deployer = txgen.address_of(DEPLOYER_KEY)
    return {role: create_address(deployer, nonce) for nonce, _, role in CREATES}


def word(value):
    """One ABI word: a uint256 or an address."""
    if isinstance(value, str):
        value = int(value, 16)
    return value.to_bytes(32, "big")


def selector(abi, name):
    (fn,) = [x for x in abi if x.get("type") == "function" and x.get("name") == name]
    types = ",".join(i["type"] for i in fn["inputs"])
    assert all(i["type"] in ("uint256", "address") for i in fn["inputs"]), f"{name}: only uint256/address arguments are encoded here"
    return common.keccak256(f"{name}({types})".encode())[:4]


def load(contracts, name):
    with open(os.path.join(contracts, f"{name}.json")) as f:
        artifact = json.load(f)
    code = artifact["bytecode"]
    return artifact["abi"], bytes.fromhex(code[2:] if code.startswith("0x") else code)


def transactions(contracts, at):
    """The eight transactions as (nonce, to, data), in nonce order."""
    abi = {}
    out = []
    for nonce, name, role in CREATES:
        abi[role], code = load(contracts, name)
        args = b"" if name.startswith("Dummy") else word(0)  # Flow(0), PoraMineTest(0): their deployDelay
        out.append((nonce, None, code + args))
    out.append((4, at["mine"], selector(abi["mine"], "initialize") + word(1) + word(at["flow"]) + word(at["reward"])))
    out.append((5, at["mine"], selector(abi["mine"], "setDifficultyAdjustRatio") + word(1)))
    out.append((6, at["mine"], selector(abi["mine"], "setTargetSubmissions") + word(2)))
    out.append((7, at["flow"], selector(abi["flow"], "initialize") + word(at["market"]) + word(MINE_PERIOD)))
    return out


def wait_receipt(rpc, tx_hash, what, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        receipt = common.rpc_call(rpc, "eth_getTransactionReceipt", [tx_hash])
        if receipt:
            if receipt["status"] != "0x1":
                raise SystemExit(f"zgs_contracts: {what} failed on chain (transaction {tx_hash}, status {receipt['status']})")
            return receipt
        time.sleep(0.5)
    raise SystemExit(f"zgs_contracts: {what}: no receipt for {tx_hash} after {timeout} s (is the chain making blocks?)")


def check(rpc, at, sent):
    """Every contract has code and the flow is initialized, or this chain's deployment is broken."""
    missing = [role for role, a in at.items() if common.rpc_call(rpc, "eth_getCode", [a, "latest"]) in ("0x", None)]
    initialized = common.rpc_call(rpc, "eth_call", [{"to": at["flow"], "data": "0x" + common.keccak256(b"initialized()")[:4].hex()}, "latest"])
    if missing or int(initialized or "0x0", 16) != 1:
        raise SystemExit(f"zgs_contracts: the deployer has sent {sent} transactions but "
                         f"{'no code at ' + ', '.join(missing) if missing else 'the flow is not initialized'}: "
                         "this chain's deployment is broken (start the dev chain afresh)")


def fund(rpc, chain_id, gas_price, accounts):
    """Tops up each account below a tenth of FUNDING from the dev chain's funded account."""
    dev = txgen.address_of(txgen.DEV_KEY)
    sent = []
    for what, address in accounts.items():
        if int(common.rpc_call(rpc, "eth_getBalance", [address, "latest"]), 16) < FUNDING // 10:
            dev_nonce = int(common.rpc_call(rpc, "eth_getTransactionCount", [dev, "pending"]), 16)
            raw = txgen.signed_tx(txgen.DEV_KEY, chain_id, dev_nonce, address, FUNDING, gas_price)
            sent.append((common.rpc_call(rpc, "eth_sendRawTransaction", [raw]), f"funding {what}"))
    for tx_hash, what in sent:
        wait_receipt(rpc, tx_hash, what)


def deploy(rpc, contracts):
    deployer = txgen.address_of(DEPLOYER_KEY)
    at = addresses()
    chain_id = int(common.rpc_call(rpc, "eth_chainId"), 16)
    gas_price = int(common.rpc_call(rpc, "eth_gasPrice"), 16) * 2
    todo = transactions(contracts, at)
    fund(rpc, chain_id, gas_price, {"the deployer": deployer, **{f"dev miner {n}": txgen.address_of(k) for n, k in MINER_KEYS.items()}})
    nonce = int(common.rpc_call(rpc, "eth_getTransactionCount", [deployer, "latest"]), 16)
    if nonce >= len(todo):
        check(rpc, at, nonce)
        return at
    print(f"[zgs-contracts] deploying from nonce {nonce} of {len(todo)} (deployer {deployer})", file=sys.stderr)
    pending = []
    for n, to, data in todo[nonce:]:
        what = f"transaction {n} ({'create ' + CREATES[n][1] if to is None else 'call ' + to})"
        if to is not None:  # a call needs the state the transactions before it leave: wait for them
            for tx_hash, earlier in pending:
                wait_receipt(rpc, tx_hash, earlier)
            pending = []
        call = {"from": deployer, "data": "0x" + data.hex(), **({"to": to} if to else {})}
        try:
            gas = int(common.rpc_call(rpc, "eth_estimateGas", [call]), 16) * 5 // 4
        except common.RpcError as e:
            raise SystemExit(f"zgs_contracts: {what} would fail: {e}") from None
        raw = txgen.signed_tx(DEPLOYER_KEY, chain_id, n, to, 0, gas_price, gas, data)
        pending.append((common.rpc_call(rpc, "eth_sendRawTransaction", [raw]), what))
    for tx_hash, what in pending:
        wait_receipt(rpc, tx_hash, what)
    check(rpc, at, len(todo))
    print(f"[zgs-contracts] deployed: {json.dumps(at)}", file=sys.stderr)
    return at


def main(argv):
    if argv[:1] == ["miner-key"]:
        n = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
        if n not in MINER_KEYS:
            raise SystemExit(f"zgs_contracts miner-key: N is one of {sorted(MINER_KEYS)}")
        print("%064x" % MINER_KEYS[n])
        return 0
    if argv[:1] == ["addresses"]:
        print(json.dumps(addresses()))
        return 0
    if argv[:1] == ["deploy"]:
        flags, _ = common.parse_flags(argv[1:], {"rpc", "contracts"})
        if "contracts" not in flags:
            raise SystemExit("zgs_contracts deploy: --contracts DIR is required (lab/zgs.sh contracts prints it)")
        print(json.dumps(deploy(flags.get("rpc", "http://127.0.0.1:8545"), flags["contracts"])))
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
