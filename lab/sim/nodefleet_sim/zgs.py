"""zgs_node SIMULATOR: the 0G storage node, as far as nodefleet configures and checks it.

  zgs_node --version
  zgs_node --config <config.toml>

Reads config.toml like the real node (keys of seed 2.1 and DOMAIN.md; ZGS_NODE__<KEY> environment
variables override keys, e.g. ZGS_NODE__MINER_KEY) and refuses a config the real node would
refuse: a missing blockchain_rpc_endpoint or log_contract_address, a miner_key that is not 64
hex characters, network_boot_nodes that are not /ip4/<ip>/udp/<port>/p2p/<id> multiaddrs, and
boot nodes without network_enr_address (UDP discovery needs both).

Every second it asks blockchain_rpc_endpoint for eth_blockNumber and syncs towards that head
(at most 200 blocks a second), writing 'log sync to block number N' lines into
<log_directory>/zgs.log.<YYYY-MM-DD> (UTC date). When the endpoint does not answer, the
height stops advancing and the log says why. connectedPeers is 0 without boot nodes, else the
number of boot nodes. db_dir gets flow_db and data_db.

JSON-RPC on [rpc] listen_address (default 0.0.0.0:5678 like the real node; nodefleet binds it
to 127.0.0.1): zgs_getStatus -> {connectedPeers, logSyncHeight, logSyncBlock, nextTxSeq,
networkIdentity}.
Faults: rpc-ignore (stop following even if the endpoint answers).
"""
import os
import re
import signal
import sys
import threading

from . import common
from .common import Log

VERSION = "1.1.0"
MULTIADDR = re.compile(r"^/ip4/(\d{1,3}\.){3}\d{1,3}/udp/\d{1,5}/p2p/[1-9A-HJ-NP-Za-km-z]{46,60}$")


def load_config(path):
    import tomllib
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    for key, value in os.environ.items():
        if key.startswith("ZGS_NODE__"):
            cfg[key[len("ZGS_NODE__"):].lower()] = value
    return cfg


def check_config(cfg):
    problems = []
    for key in ("blockchain_rpc_endpoint", "log_contract_address"):
        if not cfg.get(key):
            problems.append(f"{key} is required")
    mk = cfg.get("miner_key")
    if mk is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", str(mk)):
        problems.append("miner_key must be 64 hex characters without 0x")
    boot = cfg.get("network_boot_nodes", [])
    for b in boot:
        if not MULTIADDR.match(b):
            problems.append(f"network_boot_nodes: invalid multiaddr {b}")
    if boot and not cfg.get("network_enr_address"):
        problems.append("network_boot_nodes needs network_enr_address (UDP discovery)")
    return problems


def run(config_path):
    cfg = load_config(config_path)
    base = os.path.dirname(os.path.abspath(config_path))
    problems = check_config(cfg)
    if problems:
        for p in problems:
            print(f"Error: invalid config {config_path}: {p}", file=sys.stderr)
        return 1
    log_dir = os.path.join(base, cfg.get("log_directory", "log"))
    db_dir = os.path.join(base, cfg.get("db_dir", "db"))
    os.makedirs(log_dir, exist_ok=True)
    for d in ("flow_db", "data_db"):
        os.makedirs(os.path.join(db_dir, d), exist_ok=True)

    def log_path():
        return os.path.join(log_dir, "zgs.log." + common.utc_now().strftime("%Y-%m-%d"))

    log = Log("zgs_node", stream=sys.stdout)

    def write(level, msg, **fields):
        log.path = log_path()
        log.line(level, msg, **fields)

    height_file = os.path.join(db_dir, "flow_db", "nodefleet-sim-height")
    try:
        with open(height_file) as f:
            height = int(f.read().strip() or 0)
    except FileNotFoundError:
        height = int(cfg.get("log_sync_start_block_number", 0))
    state = {"height": height, "block": None}
    peers = len(cfg.get("network_boot_nodes", []))
    identity = {"chainId": 16601, "flowAddress": cfg["log_contract_address"], "p2pProtocolVersion": {"major": 0, "minor": 4, "build": 0}}

    listen = cfg.get("rpc", {}).get("listen_address") or cfg.get("rpc_listen_address") or "0.0.0.0:5678"
    host, _, port = listen.rpartition(":")
    server = common.serve_jsonrpc(host, int(port), {
        "zgs_getStatus": lambda: {"connectedPeers": peers, "logSyncHeight": state["height"],
                                  "logSyncBlock": state["block"] or "0x" + "00" * 32, "nextTxSeq": 0,
                                  "networkIdentity": identity},
    })
    write("INFO", "Starting zgs_node", version=VERSION, note=common.SIMULATOR_NOTE.replace(" ", "_"))
    write("INFO", "RPC server started", listen=listen)
    if peers == 0:
        write("WARN", "no boot nodes configured: connectedPeers stays 0")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    endpoint = cfg["blockchain_rpc_endpoint"]
    failing = False
    while not stop.wait(1.0):
        if common.fault("rpc-ignore") is not None:
            continue
        try:
            head = int(common.rpc_call(endpoint, "eth_blockNumber", timeout=3), 16)
            if failing:
                write("INFO", "blockchain rpc endpoint is back", endpoint=endpoint)
                failing = False
        except (OSError, common.RpcError, ValueError) as e:
            if not failing:
                write("WARN", "failed to get block number from blockchain rpc endpoint", endpoint=endpoint, error=f'"{e}"')
                failing = True
            continue
        if head > state["height"]:
            state["height"] = min(head, state["height"] + 200)
            state["block"] = "0x" + common.keccak256(state["height"].to_bytes(8, "big")).hex()
            write("INFO", f"log sync to block number {state['height']}")
            with open(height_file + ".tmp", "w") as f:
                f.write(str(state["height"]))
            os.replace(height_file + ".tmp", height_file)
    server.shutdown()
    write("INFO", "Stopped")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("--version", "-V"):
        print(f"zgs_node {VERSION} ({common.SIMULATOR_NOTE})")
        return 0
    try:
        flags, extra = common.parse_flags(argv, {"config"})
    except common.FlagError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if extra or "config" not in flags:
        print("usage: zgs_node --config <config.toml>", file=sys.stderr)
        return 2
    return run(flags["config"])


if __name__ == "__main__":
    sys.exit(main())
