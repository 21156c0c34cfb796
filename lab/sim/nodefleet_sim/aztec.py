"""aztec SIMULATOR: the Aztec sequencer node CLI (alpha-testnet), as far as nodefleet drives it.

  aztec start --node --archiver --sequencer --network alpha-testnet --l1-rpc-urls URL[,URL]
              --l1-consensus-host-urls URL[,URL] --sequencer.validatorPrivateKey 0x<64 hex>
              --sequencer.coinbase 0x<40 hex> --p2p.p2pIp <ipv4> [--port 8080] [--data-directory DIR]
  aztec add-l1-validator --l1-rpc-urls URL [--private-key 0x..] --attester 0x.. --proposer-eoa 0x..
              --staking-asset-handler 0x.. --l1-chain-id 11155111
              (like the real CLI, --private-key defaults to $PRIVATE_KEY)
  aztec-up <version|latest>      (the version manager; a separate command in the real install)

Every start flag can come from its environment variable instead (NETWORK, ETHEREUM_HOSTS,
L1_CONSENSUS_HOST_URLS, VALIDATOR_PRIVATE_KEY, COINBASE, P2P_IP, P2P_PORT, DATA_DIRECTORY,
AZTEC_PORT, AZTEC_ADMIN_PORT, LOG_JSON), which is how nodefleet passes the key (a 0600 env file,
never argv). Missing or malformed values are refused with the flag's name.

start listens on P2P_PORT (40400) TCP and UDP, serves JSON-RPC on AZTEC_PORT (8080):
node_getL2Tips, node_getArchiveSiblingPath(blockNumber, leafIndex) (a base64 string),
node_isReady, node_getBlockNumber, node_getProvenBlockNumber, node_getNodeInfo; the admin port
(8880) listens on 127.0.0.1. The L2 chain advances one block every NODEFLEET_SIM_BLOCK_TIME s
(default 2); proven trails latest by 2. Logs go to stderr like pino: coloured text, or JSON
lines with LOG_JSON=1, including 'Started P2P service' with the node's peerId (kept in the data
directory across restarts).

Faults: validator-quota-filled-until=<unix time> (add-l1-validator reverts with
ValidatorQuotaFilledUntil(uint256)); l1-unreachable (start exits: cannot reach L1).
"""
import base64
import json
import os
import re
import secrets
import socket
import sys
import time

from . import common

VERSION = "2.0.2"
HEX_KEY = re.compile(r"^0x[0-9a-fA-F]{64}$")
ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
IPV4 = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

START_FLAGS = {
    "network": "NETWORK", "l1-rpc-urls": "ETHEREUM_HOSTS", "l1-consensus-host-urls": "L1_CONSENSUS_HOST_URLS",
    "sequencer.validatorPrivateKey": "VALIDATOR_PRIVATE_KEY", "sequencer.coinbase": "COINBASE",
    "p2p.p2pIp": "P2P_IP", "p2p.p2pPort": "P2P_PORT", "data-directory": "DATA_DIRECTORY", "port": "AZTEC_PORT",
    "admin-port": "AZTEC_ADMIN_PORT", "log-level": "LOG_LEVEL",
}
SWITCHES = {"node", "archiver", "sequencer"}


class Refused(Exception):
    pass


def urls(name, value):
    parts = [u.strip() for u in value.split(",") if u.strip()]
    if not parts or not all(re.match(r"^https?://[^\s/]+", u) for u in parts):
        raise Refused(f"--{name}: expected a comma-separated list of http(s) URLs, got {value!r}")
    return parts


def start_options(flags):
    opts = {}
    for flag, env in START_FLAGS.items():
        value = flags.get(flag, os.environ.get(env))
        if value is not None:
            opts[flag] = value
    for switch in SWITCHES:
        if not flags.get(switch):
            raise Refused(f"--{switch} is required (docs/spec.md §2.4: start --node --archiver --sequencer)")
    for required in ("network", "l1-rpc-urls", "l1-consensus-host-urls", "sequencer.validatorPrivateKey", "sequencer.coinbase", "p2p.p2pIp"):
        if not opts.get(required):
            raise Refused(f"--{required} (or ${START_FLAGS[required]}) is required")
    if opts["network"] != "alpha-testnet":
        raise Refused(f"--network: unknown network {opts['network']!r} (alpha-testnet)")
    urls("l1-rpc-urls", opts["l1-rpc-urls"])
    urls("l1-consensus-host-urls", opts["l1-consensus-host-urls"])
    if not HEX_KEY.match(opts["sequencer.validatorPrivateKey"]):
        raise Refused("--sequencer.validatorPrivateKey: expected 0x followed by 64 hex characters")
    if not ADDRESS.match(opts["sequencer.coinbase"]):
        raise Refused("--sequencer.coinbase: expected a 0x-prefixed 20-byte address")
    m = IPV4.match(opts["p2p.p2pIp"])
    if not m or any(int(g) > 255 for g in m.groups()):
        raise Refused(f"--p2p.p2pIp: not an IPv4 address: {opts['p2p.p2pIp']!r}")
    for p in ("p2p.p2pPort", "port", "admin-port"):
        if p in opts and not str(opts[p]).isdigit():
            raise Refused(f"--{p}: not a port number: {opts[p]!r}")
    if not opts.get("data-directory"):
        raise Refused("--data-directory (or $DATA_DIRECTORY) is required: without it data goes to a temporary directory")
    return opts


class PinoLog:
    def __init__(self, as_json):
        self.as_json = as_json

    def info(self, module, msg, **fields):
        if self.as_json:
            line = json.dumps({"level": "info", "time": int(time.time() * 1000), "module": module, "msg": msg, **fields})
        else:
            ts = common.utc_now().strftime("%H:%M:%S")
            extra = " " + json.dumps(fields) if fields else ""
            line = f"\x1b[90m[{ts}]\x1b[39m \x1b[32mINFO\x1b[39m: \x1b[35m{module}\x1b[39m \x1b[36m{msg}\x1b[39m{extra}"
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def peer_id(data_dir):
    path = os.path.join(data_dir, "p2p-private-key")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(secrets.token_hex(32))
    with open(path) as f:
        seed = bytes.fromhex(f.read().strip())
    n = int.from_bytes(common.keccak256(seed), "big")
    out = ""
    while len(out) < 45:
        n, r = divmod(n, 58)
        out = B58[r] + out
        if n == 0:
            n = int.from_bytes(common.keccak256(out.encode()), "big")
    return "16Uiu2" + out[:47]


def cmd_start(flags):
    opts = start_options(flags)
    data_dir = opts["data-directory"]
    os.makedirs(data_dir, exist_ok=True)
    log = PinoLog(os.environ.get("LOG_JSON") in ("1", "true"))
    if common.fault("l1-unreachable") is not None:
        log.info("node", "Cannot connect to L1", url=opts["l1-rpc-urls"].split(",")[0])
        return 1
    p2p_port = int(opts.get("p2p.p2pPort", 40400))
    rpc_port = int(opts.get("port", 8080))
    admin_port = int(opts.get("admin-port", 8880))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("0.0.0.0", p2p_port))
    tcp.listen(16)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", p2p_port))
    pid = peer_id(data_dir)
    chain_file = os.path.join(data_dir, "nodefleet-sim-l2.json")
    try:
        with open(chain_file) as f:
            latest = json.load(f)["latest"]
    except (OSError, ValueError, KeyError):
        latest = 0

    def block_hash(n):
        return "0x" + common.keccak256(b"l2" + n.to_bytes(8, "big")).hex()

    def tips():
        proven = max(0, latest - 2)
        return {"latest": {"number": latest, "hash": block_hash(latest)},
                "proven": {"number": proven, "hash": block_hash(proven)},
                "finalized": {"number": proven, "hash": block_hash(proven)}}

    def sibling_path(block_number, leaf_index):
        b, leaf = int(block_number), int(leaf_index)
        if b > latest:
            raise common.RpcError(-32000, f"Block {b} not found")
        nodes = b"".join(common.keccak256(f"{b}:{leaf}:{i}".encode()) for i in range(29))
        return base64.b64encode(len(nodes).to_bytes(4, "big") + nodes).decode()

    methods = {
        "node_getL2Tips": tips,
        "node_getArchiveSiblingPath": sibling_path,
        "node_isReady": lambda: True,
        "node_getBlockNumber": lambda: latest,
        "node_getProvenBlockNumber": lambda: max(0, latest - 2),
        "node_getNodeInfo": lambda: {"nodeVersion": VERSION, "l1ChainId": 11155111, "enr": None, "note": common.SIMULATOR_NOTE},
    }
    rpc = common.serve_jsonrpc("0.0.0.0", rpc_port, methods)
    admin = common.serve_jsonrpc("127.0.0.1", admin_port, {"nodeAdmin_getConfig": lambda: {"coinbase": opts["sequencer.coinbase"]}})
    log.info("node", f"Aztec node version {VERSION} ({common.SIMULATOR_NOTE})")
    log.info("p2p", "Started P2P service", peerId=pid, listenAddress=f"0.0.0.0:{p2p_port}", announceAddress=f"{opts['p2p.p2pIp']}:{p2p_port}")
    log.info("node", f"Aztec Server listening on port {rpc_port}")
    stop = common.stop_on_sigterm()
    period = float(os.environ.get("NODEFLEET_SIM_BLOCK_TIME", "2"))
    while not stop.wait(period):
        latest += 1
        with open(chain_file + ".tmp", "w") as f:
            json.dump({"latest": latest}, f)
        os.replace(chain_file + ".tmp", chain_file)
        log.info("sequencer", "Published block", blockNumber=latest)
    rpc.shutdown()
    admin.shutdown()
    return 0


def cmd_add_l1_validator(flags):
    # As the CLI's options do: --private-key from PRIVATE_KEY, --l1-rpc-urls from ETHEREUM_HOSTS.
    for flag, env in (("private-key", "PRIVATE_KEY"), ("l1-rpc-urls", "ETHEREUM_HOSTS")):
        if not flags.get(flag) and os.environ.get(env):
            flags = {**flags, flag: os.environ[env]}
    need = ("l1-rpc-urls", "private-key", "attester", "proposer-eoa", "staking-asset-handler", "l1-chain-id")
    for n in need:
        if not flags.get(n):
            raise Refused(f"--{n} is required")
    urls("l1-rpc-urls", flags["l1-rpc-urls"])
    if not HEX_KEY.match(flags["private-key"]):
        raise Refused("--private-key: expected 0x followed by 64 hex characters")
    for n in ("attester", "proposer-eoa", "staking-asset-handler"):
        if not ADDRESS.match(flags[n]):
            raise Refused(f"--{n}: expected a 0x-prefixed 20-byte address")
    if flags["l1-chain-id"] != "11155111":
        raise Refused(f"--l1-chain-id: expected 11155111 (Sepolia), got {flags['l1-chain-id']}")
    until = common.fault_int("validator-quota-filled-until")
    if until is not None and until > time.time():
        print(f"Error: execution reverted: ValidatorQuotaFilledUntil(uint256 {until})", file=sys.stderr)
        return 1
    tx = "0x" + common.keccak256(f"{flags['attester']}{time.time()}".encode()).hex()
    print(f"Adding validator {flags['attester']} via staking asset handler {flags['staking-asset-handler']}")
    print(f"Transaction hash: {tx}")
    return 0


def cmd_aztec_up(argv):
    if len(argv) != 1 or not re.match(r"^(latest|\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?)$", argv[0]):
        print("usage: aztec-up <version|latest>", file=sys.stderr)
        return 2
    version = VERSION if argv[0] == "latest" else argv[0]
    home = os.path.expanduser(os.environ.get("AZTEC_HOME", "~/.aztec"))
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "version"), "w") as f:
        f.write(version + "\n")
    print(f"Pulling aztecprotocol/aztec:{version} ({common.SIMULATOR_NOTE})")
    print(f"Installed aztec {version}")
    return 0


def main(argv=None):
    # Installed as two executables (bin/aztec, bin/aztec-up): the name it is called by decides.
    prog = os.path.basename(sys.argv[0]) if argv is None else "aztec"
    argv = sys.argv[1:] if argv is None else argv
    if prog == "aztec-up" or (argv and argv[0] == "aztec-up"):
        return cmd_aztec_up(argv[1:] if argv and argv[0] == "aztec-up" else argv)
    if not argv or argv[0] in ("--version", "-V"):
        print(f"{VERSION} ({common.SIMULATOR_NOTE})")
        return 0
    sub, rest = argv[0], argv[1:]
    try:
        if sub == "start":
            flags, extra = common.parse_flags(rest, set(START_FLAGS), SWITCHES)
            if extra:
                raise Refused(f"unknown argument {extra[0]!r}")
            return cmd_start(flags)
        if sub == "add-l1-validator":
            flags, extra = common.parse_flags(rest, {"l1-rpc-urls", "private-key", "attester", "proposer-eoa", "staking-asset-handler", "l1-chain-id"})
            if extra:
                raise Refused(f"unknown argument {extra[0]!r}")
            return cmd_add_l1_validator(flags)
        raise Refused(f"unknown command '{sub}'")
    except (common.FlagError, Refused) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
