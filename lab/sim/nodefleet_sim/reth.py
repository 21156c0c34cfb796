"""reth SIMULATOR: the subcommands the geth -> reth switch uses (seed 4.4, 4.5, 2.6).

  reth --version
  reth init   --chain <genesis.json> --datadir <dir>
  reth import --chain <genesis.json> --datadir <dir> <file.rlp>
  reth node   <the flags of seed 2.6>

import decodes the RLP chain file for real and checks each block against its parent (number
and parent hash, hashes computed with keccak-256 over the header); on a mismatch it fails with
reth's text, keeping every block before the failure, like reth's batched import does:
  'block number X does not match parent block number Y'  (reth <= 1.9, the default here)
  'mismatched parent hash ...'                            (NODEFLEET_SIM_RETH_ERRORS=new)
The genesis state root is not computed (no EVM here): init records a provisional genesis hash,
and the first imported block must be number 1; its parent hash becomes the genesis hash.

node serves eth_blockNumber / eth_getBlockByNumber / eth_syncing / net_* on --http.port, and
the engine API (JWT HS256 from --authrpc.jwtsecret; 401 otherwise) on --authrpc.port:
engine_forkchoiceUpdatedV3 (with payload attributes it builds the next block: a synthetic one,
no transactions), engine_getPayloadV3, engine_newPayloadV3. The first valid forkchoice logs
'Starting consensus engine'. A forkchoice head it does not have answers -38002 Invalid
forkchoice state.

Faults: import-stop-at=N (the import dies before block N: 'partially imported'; one-shot when
given as a fault file, which is removed when it fires),
state-root-mismatch-at=N ('mismatched block state root' at block N), reth-errors=new.
"""
import json
import os
import signal
import sys
import threading

from . import common
from .common import Log, RpcError, fault, fault_int, hx, keccak256

VERSION = "1.9.3"
CHAIN_FILE = os.path.join("db", "nodefleet-sim-chain.jsonl")  # one JSON object per block


class Chain:
    """The simulator's block store: number, hash, parent hash, state root per block."""

    def __init__(self, datadir):
        self.datadir = datadir
        self.path = os.path.join(datadir, CHAIN_FILE)
        self.blocks = []
        self.lock = threading.Lock()
        if os.path.exists(self.path):
            good = 0
            with open(self.path, "rb") as f:
                for line in f:
                    try:
                        self.blocks.append(json.loads(line))
                    except ValueError:
                        break
                    good += len(line)
            if good != os.path.getsize(self.path):
                os.truncate(self.path, good)  # a record cut short by a crash: the database ends before it

    @property
    def initialized(self):
        return bool(self.blocks)

    def tip(self):
        return self.blocks[-1]

    def by_hash(self, h):
        for b in reversed(self.blocks):
            if b["hash"] == h:
                return b
        return None

    def append(self, records, f=None):
        with self.lock:
            own = f is None
            f = f or open(self.path, "a")
            for r in records:
                f.write(json.dumps(r) + "\n")
                self.blocks.append(r)
            f.flush()
            if own:
                os.fsync(f.fileno())
                f.close()


def cmd_init(flags, log):
    datadir, genesis = flags.get("datadir"), flags.get("chain")
    if not datadir or not genesis:
        raise common.FlagError("the following required arguments were not provided: --chain <CHAIN_OR_PATH> --datadir <DATA_DIR>")
    with open(genesis) as f:
        spec = json.load(f)
    os.makedirs(os.path.join(datadir, "db"), exist_ok=True)
    os.makedirs(os.path.join(datadir, "static_files"), exist_ok=True)
    chain = Chain(datadir)
    if chain.initialized:
        log.info("Genesis block written", hash=chain.blocks[0]["hash"])
        return 0
    with open(os.path.join(datadir, "db", "database.version"), "w") as f:
        f.write("2")
    with open(os.path.join(datadir, "reth.toml"), "w") as f:
        f.write("# written by the nodefleet reth simulator\n")
    # The real genesis hash needs the genesis state root (not computed here): a provisional hash
    # stands in until an imported block 1 names the real one as its parent.
    provisional = hx(keccak256(b"nodefleet-sim-genesis" + json.dumps(spec, sort_keys=True).encode()))
    chain.append([{"number": 0, "hash": provisional, "provisional": True, "parentHash": "0x" + "00" * 32,
                   "stateRoot": None, "timestamp": int(str(spec.get("timestamp", "0x0")), 0),
                   "chainId": spec.get("config", {}).get("chainId")}])
    log.info("Initialized database", path=datadir)
    log.info("Writing genesis block")
    log.info("Genesis block written", hash=provisional, note="provisional_until_block_1_is_imported")
    return 0


def cmd_import(flags, files, log):
    datadir = flags.get("datadir")
    if not datadir or not flags.get("chain") or len(files) != 1:
        raise common.FlagError("usage: reth import --chain <CHAIN_OR_PATH> --datadir <DATA_DIR> <IMPORT_PATH>")
    chain = Chain(datadir)
    if not chain.initialized:
        cmd_init(flags, log)
        chain = Chain(datadir)
    path = files[0]
    new_errors = fault("reth-errors") == "new"
    stop_at = fault_int("import-stop-at")
    root_at = fault_int("state-root-mismatch-at")
    log.info("Importing chain file", path=path)
    decoded = txs = 0
    f = open(chain.path, "a")
    try:
        for block in common.read_blocks(path):
            tip = chain.tip()
            if stop_at is not None and block.number >= stop_at:
                common.consume_fault("import-stop-at")  # one-shot: the re-import gets past it
                f.flush()
                log.error("Import interrupted", block=block.number)
                log.info("Chain was partially imported", imported=decoded)
                return 1
            if block.number != tip["number"] + 1:
                if new_errors:
                    raise ImportFailure(f"mismatched parent hash: got {hx(block.parent_hash)}, expected {tip['hash']}", decoded)
                raise ImportFailure(f"block number {block.number} does not match parent block number {tip['number']}", decoded)
            parent = hx(block.parent_hash)
            if not tip.get("provisional") and parent != tip["hash"]:
                raise ImportFailure(f"mismatched parent hash: got {parent}, expected {tip['hash']}", decoded)
            if root_at is not None and block.number == root_at:
                wrong = hx(keccak256(block.state_root))
                raise ImportFailure(f"mismatched block state root: block {block.number} got {wrong}, expected {hx(block.state_root)}", decoded)
            if tip.get("provisional"):
                tip["hash"] = parent  # genesis hash, learned from block 1 (see module doc)
                del tip["provisional"]
                chain.blocks[0] = tip
                f.close()
                _rewrite(chain)  # replaces the file: append to the new one from here
                f = open(chain.path, "a")
            chain.append([{"number": block.number, "hash": hx(block.hash), "parentHash": parent,
                           "stateRoot": hx(block.state_root), "timestamp": block.timestamp}], f)
            decoded += 1
            txs += block.tx_count
            if decoded % 1000 == 0:
                log.info("Imported blocks", count=decoded, tip=block.number)
    except common.RlpError as e:
        log.error(f"failed to decode block: {e}")
        log.info("Chain was partially imported", total_decoded_blocks=decoded)
        return 1
    except ImportFailure as e:
        log.error(str(e))
        log.info("Chain was partially imported", total_decoded_blocks=e.decoded)
        return 1
    finally:
        f.close()
    log.info("Chain file imported", total_decoded_blocks=decoded, total_decoded_txns=txs)
    log.info("Chain was fully imported")
    return 0


class ImportFailure(Exception):
    def __init__(self, message, decoded):
        super().__init__(message)
        self.decoded = decoded


def _rewrite(chain):
    tmp = chain.path + ".tmp"
    with open(tmp, "w") as f:
        for r in chain.blocks:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, chain.path)


NODE_FLAGS = {
    "chain", "datadir", "http.addr", "http.port", "http.api", "ws.addr", "ws.port", "authrpc.addr",
    "authrpc.port", "authrpc.jwtsecret", "ipcpath", "engine.persistence-threshold",
    "engine.memory-block-buffer-target", "port", "bootnodes", "nat", "log.file.directory",
}
NODE_SWITCHES = {"http", "ws"}


def cmd_node(flags, log):
    for required in ("chain", "datadir", "authrpc.jwtsecret"):
        if required not in flags:
            raise common.FlagError(f"the following required arguments were not provided: --{required}")
    for name in ("http.port", "ws.port", "authrpc.port", "port"):
        if name in flags and not str(flags[name]).isdigit():
            raise common.FlagError(f"invalid value '{flags[name]}' for '--{name} <PORT>': invalid digit found in string")
    if "nat" in flags and not str(flags["nat"]).startswith("extip:"):
        raise common.FlagError(f"invalid value '{flags['nat']}' for '--nat <NAT>'")
    try:
        secret = common.read_jwt_secret(flags["authrpc.jwtsecret"])
    except (OSError, ValueError) as e:
        log.error(f"failed to read JWT secret: {e}")
        return 1
    chain = Chain(flags["datadir"])
    if not chain.initialized:
        cmd_init(flags, log)
        chain = Chain(flags["datadir"])
    log.info("Starting reth", version=VERSION, note=common.SIMULATOR_NOTE.replace(" ", "_"))
    state = {"engine": False}

    def block_json(b):
        return {"number": hex(b["number"]), "hash": b["hash"], "parentHash": b["parentHash"],
                "stateRoot": b["stateRoot"], "timestamp": hex(b.get("timestamp") or 0)}

    def get_block(tag, _full=False):
        if tag == "latest":
            return block_json(chain.tip())
        n = int(tag, 16)
        return block_json(chain.blocks[n]) if n < len(chain.blocks) else None

    public = {
        "eth_blockNumber": lambda: hex(chain.tip()["number"]),
        "eth_getBlockByNumber": get_block,
        "eth_syncing": lambda: False,
        "eth_chainId": lambda: hex(chain.blocks[0].get("chainId") or 16661),
        "net_version": lambda: str(chain.blocks[0].get("chainId") or 16661),
        "net_peerCount": lambda: "0x0",
        "admin_peers": lambda: [],
    }

    payloads = {}

    def forkchoice(fc, attrs=None):
        head = chain.by_hash(fc.get("headBlockHash"))
        if head is None or head["number"] < chain.tip()["number"] - 64:
            raise RpcError(-38002, "Invalid forkchoice state")
        if not state["engine"]:
            state["engine"] = True
            log.info("Starting consensus engine")
        payload_id = None
        if attrs:
            number = head["number"] + 1
            h = hx(keccak256(bytes.fromhex(head["hash"][2:]) + attrs["timestamp"].encode()))
            payload_id = "0x" + h[2:18]
            payloads[payload_id] = {"blockNumber": hex(number), "blockHash": h, "parentHash": head["hash"],
                                    "stateRoot": h, "timestamp": attrs["timestamp"], "feeRecipient": attrs.get("suggestedFeeRecipient"),
                                    "transactions": [], "withdrawals": attrs.get("withdrawals", [])}
        return {"payloadStatus": {"status": "VALID", "latestValidHash": head["hash"], "validationError": None}, "payloadId": payload_id}

    def get_payload(payload_id):
        if payload_id not in payloads:
            raise RpcError(-38001, "Unknown payload")
        return {"executionPayload": payloads[payload_id], "blockValue": "0x0", "blobsBundle": {"commitments": [], "proofs": [], "blobs": []}, "shouldOverrideBuilder": False}

    def new_payload(payload, _blob_hashes=None, _beacon_root=None):
        tip = chain.tip()
        number = int(payload["blockNumber"], 16)
        if chain.by_hash(payload["blockHash"]):
            return {"status": "VALID", "latestValidHash": payload["blockHash"], "validationError": None}
        if payload["parentHash"] != tip["hash"] or number != tip["number"] + 1:
            return {"status": "SYNCING", "latestValidHash": None, "validationError": None}
        chain.append([{"number": number, "hash": payload["blockHash"], "parentHash": payload["parentHash"],
                       "stateRoot": payload["stateRoot"], "timestamp": int(payload["timestamp"], 16)}])
        log.info("Canonical chain committed", number=number, hash=payload["blockHash"])
        return {"status": "VALID", "latestValidHash": payload["blockHash"], "validationError": None}

    engine = dict(public)
    engine.update({
        "engine_exchangeCapabilities": lambda caps: ["engine_forkchoiceUpdatedV3", "engine_newPayloadV3", "engine_getPayloadV3"],
        "engine_forkchoiceUpdatedV3": forkchoice,
        "engine_getPayloadV3": get_payload,
        "engine_newPayloadV3": new_payload,
    })
    servers = []
    if flags.get("http"):
        servers.append(common.serve_jsonrpc(flags.get("http.addr", "127.0.0.1"), flags.get("http.port", 8545), public))
        log.info("RPC HTTP server started", url=f"{flags.get('http.addr', '127.0.0.1')}:{flags.get('http.port', 8545)}")
    if flags.get("ws"):
        servers.append(common.serve_jsonrpc(flags.get("ws.addr", "127.0.0.1"), flags.get("ws.port", 8546), public))
        log.info("RPC WS server started", url=f"{flags.get('ws.addr', '127.0.0.1')}:{flags.get('ws.port', 8546)}")
    servers.append(common.serve_jsonrpc(flags.get("authrpc.addr", "127.0.0.1"), flags.get("authrpc.port", 8551), engine, jwt_secret=secret, log=log))
    log.info("RPC auth server started", url=f"{flags.get('authrpc.addr', '127.0.0.1')}:{flags.get('authrpc.port', 8551)}")
    if "ipcpath" in flags:
        open(flags["ipcpath"], "a").close()  # a placeholder where reth's IPC socket would be
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log.info("Status", connected_peers=0, latest_block=chain.tip()["number"])
    stop.wait()
    log.info("Shutting down")
    for s in servers:
        s.shutdown()
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    log = Log("reth::cli")
    if not argv or argv[0] in ("--version", "-V"):
        print(f"reth Version: {VERSION}\nCommit SHA: 0000000\nBuild Features: {common.SIMULATOR_NOTE}")
        return 0
    sub, rest = argv[0], argv[1:]
    try:
        if sub == "init":
            flags, _ = common.parse_flags(rest, {"chain", "datadir"})
            return cmd_init(flags, log)
        if sub == "import":
            flags, files = common.parse_flags(rest, {"chain", "datadir"})
            return cmd_import(flags, files, log)
        if sub == "node":
            flags, extra = common.parse_flags(rest, NODE_FLAGS, NODE_SWITCHES)
            if extra:
                raise common.FlagError(f"unexpected argument '{extra[0]}' found")
            return cmd_node(flags, log)
        raise common.FlagError(f"unrecognized subcommand '{sub}'")
    except common.FlagError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
