"""reth SIMULATOR: the subcommands the geth -> reth switch uses (docs/spec.md §4.4, 4.5, 2.6), behaving
as the real reth 1.11 does where the switch meets it (measured against the real binary: the
cli tier's reth contract test and hostfiles/tests/test_real_reth.py).

  reth --version
  reth init   --chain <genesis.json> --datadir <dir>
  reth import [--color never] [--log.file.max-files 0] --chain <genesis.json> --datadir <dir> <file.rlp>
  reth stage unwind [--color never] --chain … --datadir … to-block <N>
  reth db [--quiet] [--color never] --chain … --datadir … list StageCheckpoints --json [--len N]
  reth node   <the flags of docs/spec.md §2.6>

import decodes the RLP chain file for real (hashes with keccak-256 over the header) and, like
reth, checks the whole chunk (here: the whole file; reth's default chunk is 1 GB) before writing
any of it, the first block against the database's last: a block whose parent hash is not the
previous block's fails with reth's `Error: mismatched parent hash: got <its parent hash>,
expected <the previous block's hash>` (exit 1), writing nothing. A chunk imported logs
`Finished stage pipeline_stages=13/13 stage=Finish checkpoint=N` and `Chain was fully imported`.
The genesis state root is not computed (no EVM here): init records a provisional genesis hash,
and the first imported block must be number 1; its parent hash becomes the genesis hash.
Stage checkpoints: Headers is the last block written, every other stage the last block finished
(db/nodefleet-sim-finish); stage unwind brings both down to N.

node serves eth_blockNumber / eth_getBlockByNumber / eth_syncing / net_* on --http.port, and
the engine API (JWT HS256 from --authrpc.jwtsecret; 401 otherwise) on --authrpc.port:
engine_forkchoiceUpdatedV3 (with payload attributes it builds the next block: a synthetic one,
no transactions), engine_getPayloadV3, engine_newPayloadV3. The first valid forkchoice logs
'Starting consensus engine'. A forkchoice head it does not have answers SYNCING and logs
'Received forkchoice updated message when syncing', as the real reth 1.11 does (the spec expected
-38002 Invalid forkchoice state).

Faults: import-stop-at=N (the import is killed at block N, SIGKILL, after writing the headers
before it and finishing none: a one-shot when given as a fault file, removed when it fires),
state-root-mismatch-at=N (block N's state root is not the one computed: reth's validation error,
the chunk unwound, `Stopped at last valid block L due to invalid block N`, exit 0).
"""
import json
import os
import signal
import sys
import threading

from . import common
from .common import Log, RpcError, fault_int, hx, keccak256

VERSION = "1.11.3"
CHAIN_FILE = os.path.join("db", "nodefleet-sim-chain.jsonl")  # one JSON object per block
FINISH_FILE = os.path.join("db", "nodefleet-sim-finish")  # the last block every stage finished
STAGES = ("AccountHashing", "Bodies", "Era", "Execution", "Finish", "Headers", "IndexAccountHistory", "IndexStorageHistory", "MerkleExecute",
          "MerkleUnwind", "Prune", "PruneSenderRecovery", "SenderRecovery", "StorageHashing", "TransactionLookup")  # reth db list StageCheckpoints


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
    set_finish(datadir, 0)
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
    stop_at = fault_int("import-stop-at")
    root_at = fault_int("state-root-mismatch-at")
    log.info("Starting import of 1 file(s)")
    log.info(f"Importing file 1 of 1: {path}")
    log.info("Consensus engine initialized")
    blocks, cut = [], None
    try:
        for block in common.read_blocks(path):
            blocks.append(block)
    except common.RlpError as e:
        cut = e  # reth imports the whole blocks before a cut tail, then finds no tip in what is left
    code = import_chunk(chain, datadir, blocks, path, stop_at, root_at, log)
    if code == 0 and cut is not None:
        log.error(f"failed to decode the rest of the file: {cut}")
        print("Error: file client has no tip", file=sys.stderr)
        return 1
    return code


def import_chunk(chain, datadir, blocks, path, stop_at, root_at, log):
    """One chunk, as reth's import_blocks_from_file does it: checked whole, then written whole."""
    tip = chain.tip()
    prev_hash, provisional = tip["hash"], tip.get("provisional")
    for block in blocks:  # the whole chunk is checked before any of it is written
        parent = hx(block.parent_hash)
        if provisional:
            provisional = False
            if block.number != 1:
                print(f"Error: mismatched parent hash: got {parent}, expected {prev_hash}", file=sys.stderr)
                return 1
        elif parent != prev_hash:
            print(f"Error: mismatched parent hash: got {parent}, expected {prev_hash}", file=sys.stderr)
            return 1
        prev_hash = hx(block.hash)
    log.info("Importing chain file chunk")
    log.info("Starting sync pipeline")
    if not blocks:
        log.info("Chain was fully imported", total_imported_blocks=0, total_imported_txns=0)
        return 0
    last = blocks[-1].number
    if tip.get("provisional"):
        tip["hash"] = hx(blocks[0].parent_hash)  # genesis hash, learned from block 1 (see module doc)
        del tip["provisional"]
        chain.blocks[0] = tip
        _rewrite(chain)
    records = [{"number": b.number, "hash": hx(b.hash), "parentHash": hx(b.parent_hash), "stateRoot": hx(b.state_root),
                "timestamp": b.timestamp} for b in blocks]
    if stop_at is not None and tip["number"] < stop_at <= last:
        common.consume_fault("import-stop-at")  # one-shot: the re-import gets past it
        chain.append(records[:stop_at - blocks[0].number])  # the headers stage's work, no stage finished
        log.info("Executing stage", pipeline_stages="4/13", stage="Execution", checkpoint=tip["number"], target=last)
        os.kill(os.getpid(), signal.SIGKILL)
    # The state root is checked by the Merkle stage, after the headers and bodies of the whole
    # chunk are written (a kill comes before it); the chunk is then unwound.
    if root_at is not None and tip["number"] < root_at <= last:
        bad = next(b for b in blocks if b.number == root_at)
        log.error(f"Stage encountered a validation error: mismatched block state root: got {hx(bad.state_root)}, "
                  f"expected {hx(keccak256(bad.state_root))}", stage="MerkleExecute", bad_block=root_at)
        log.warn("Invalid block encountered during import; stopping at last valid block", bad_block=root_at, last_valid_block=tip["number"])
        log.info(f"Stopped at last valid block {tip['number']} due to invalid block {root_at} in file: {path}. Imported 0 blocks, 0 transactions")
        return 0
    chain.append(records)
    txs = sum(b.tx_count for b in blocks)
    for i, stage in enumerate(("Headers", "Bodies", "SenderRecovery", "Execution", "Finish")):
        log.info("Finished stage", pipeline_stages=f"{[1, 2, 3, 4, 13][i]}/13", stage=stage, checkpoint=last, target=last)
    set_finish(datadir, last)
    log.info("Chain was fully imported", total_imported_blocks=len(blocks), total_imported_txns=txs)
    log.info(f"Successfully imported file {path}: {len(blocks)} blocks, {txs} transactions")
    return 0


def finish(datadir, chain):
    try:
        with open(os.path.join(datadir, FINISH_FILE)) as f:
            return min(int(f.read()), chain.tip()["number"])
    except (OSError, ValueError):
        return chain.tip()["number"] if chain.initialized else 0  # a database of an older simulator: all finished


def set_finish(datadir, n):
    tmp = os.path.join(datadir, FINISH_FILE + ".tmp")
    with open(tmp, "w") as f:
        f.write(f"{n}\n")
    os.replace(tmp, os.path.join(datadir, FINISH_FILE))


def cmd_unwind(flags, rest, log):
    if not flags.get("datadir") or not flags.get("chain") or len(rest) != 2 or rest[0] != "to-block" or not rest[1].isdigit():
        raise common.FlagError("usage: reth stage unwind --chain <CHAIN_OR_PATH> --datadir <DATA_DIR> to-block <TARGET>")
    chain = Chain(flags["datadir"])
    target = int(rest[1])
    if target < chain.tip()["number"]:
        chain.blocks = chain.blocks[:target + 1]
        _rewrite(chain)
    set_finish(flags["datadir"], min(target, finish(flags["datadir"], chain)))
    log.info("Unwound blocks", target=target)
    return 0


def cmd_db_list(flags, rest, log):
    if not flags.get("datadir") or not flags.get("chain") or rest != ["list", "StageCheckpoints"] or "json" not in flags:
        raise common.FlagError("usage: reth db --chain <CHAIN_OR_PATH> --datadir <DATA_DIR> list StageCheckpoints --json")
    chain = Chain(flags["datadir"])
    done, headers = finish(flags["datadir"], chain), chain.tip()["number"]
    rows = [[stage, {"block_number": 0 if stage in ("Era", "PruneSenderRecovery") else headers if stage == "Headers" else done,
                     "stage_checkpoint": None}] for stage in STAGES]
    print(json.dumps(rows[:int(flags.get("len", 5))], indent=2))
    return 0


def _rewrite(chain):
    tmp = chain.path + ".tmp"
    with open(tmp, "w") as f:
        for r in chain.blocks:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, chain.path)


LOG_FLAGS = {"color", "log.file.max-files"}  # accepted, without effect: the simulator writes no log files, no colours
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
        if head is None:  # real reth 1.11: SYNCING (it would fetch the head from peers), not -38002
            log.info("Received forkchoice updated message when syncing", head_block_hash=fc.get("headBlockHash"))
            return {"payloadStatus": {"status": "SYNCING", "latestValidHash": None, "validationError": None}, "payloadId": None}
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
    stop = common.stop_on_sigterm()
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
        print(f"Reth Version: {VERSION}\nCommit SHA: 0000000\nBuild Features: {common.SIMULATOR_NOTE}")
        return 0
    sub, rest = argv[0], argv[1:]
    try:
        if sub == "init":
            flags, _ = common.parse_flags(rest, {"chain", "datadir"})
            return cmd_init(flags, log)
        if sub == "import":
            flags, files = common.parse_flags(rest, LOG_FLAGS | {"chain", "datadir"})
            return cmd_import(flags, files, log)
        if sub == "stage" and rest[:1] == ["unwind"]:
            flags, args = common.parse_flags(rest[1:], LOG_FLAGS | {"chain", "datadir"})
            return cmd_unwind(flags, args, log)
        if sub == "db":
            flags, args = common.parse_flags(rest, LOG_FLAGS | {"chain", "datadir", "len"}, {"quiet", "json"})
            return cmd_db_list(flags, args, log)
        if sub == "node":
            flags, extra = common.parse_flags(rest, NODE_FLAGS | LOG_FLAGS, NODE_SWITCHES)
            if extra:
                raise common.FlagError(f"unexpected argument '{extra[0]}' found")
            return cmd_node(flags, log)
        raise common.FlagError(f"unrecognized subcommand '{sub}'")
    except common.FlagError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
