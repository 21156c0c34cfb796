"""0gchaind SIMULATOR: the consensus daemon of a 0G chain validator, as far as nodefleet needs it.

  0gchaind version
  0gchaind start --home <home> [--chaincfg.engine.rpc-dial-url URL] [--chaincfg.engine.jwt-secret-path FILE]
                 [--p2p.laddr ...] [--rpc.laddr tcp://127.0.0.1:<P>657] ...
  0gchaind rollback --home <home> [--hard]

The home holds config/app.toml (keys rpc-dial-url and jwt-secret-path under [beacon-kit.engine]
or at top level), config/config.toml, config/priv_validator_key.json and
data/priv_validator_state.json. start refuses, like CometBFT, when priv_validator_state.json is
missing, and holds a lock so a second 0gchaind on the same home fails.

The engine link drives the execution client the way a beacon node does, over the
JWT-authenticated engine endpoint (rpc-dial-url): every NODEFLEET_SIM_BLOCK_TIME s (default 2) it
proposes the next block (engine_forkchoiceUpdatedV3 with payload attributes; half the block time
later, as a beacon node asks for its payload well after it asked for one to be built,
engine_getPayloadV3: geth answers with what it has built by then, an empty block when it has not
finished the full one; engine_newPayloadV3, forkchoice to the new head) and logs 'Committed state'
for the new height.
This works with real geth (post-merge genesis) and with the reth simulator. If the EL is ahead
(after an import) it first commits the EL's blocks. Its consensus height lives in
data/nodefleet-sim-state.json ({height, hashes}). When its height is ahead of the EL, the
forkchoice for its own head gets no VALID and nothing is committed until the height is rolled
back. What it logs is what beacon-kit (0gchaind's consensus layer) logs for the EL's answer: for
SYNCING or ACCEPTED (what real reth 1.11 and geth answer for a head they do not have), once per
start the warning 'Your execution client is syncing. It should be downloading eth blocks from its
peers. Restart the beacon node once the execution client is caught up.', then
'NotifyForkchoiceUpdate: EL syncing. Retrying...' each round; for an engine API error (the spec's
'-38002 Invalid forkchoice state'), 'failed to notify forkchoice update' with the code. A JWT
mismatch gets HTTP 401 from the EL: logged as an engine API error, and the daemon exits after 3.

GET /status on the CometBFT RPC port (from --rpc.laddr or config.toml [rpc] laddr) answers
{"result": {"sync_info": {"latest_block_height": "N", "catching_up": false}}}; catching_up is
true while the EL is unreachable or rejects the forkchoice.

The blob transactions of a block it proposes go into engine_newPayloadV3 as their versioned
hashes. It has no node API (the dev chain's is the real beacond's: lab/devchain.sh).

rollback moves the consensus height back by one per run (like `0gchaind rollback`).
"""
import fcntl
import hashlib
import json
import os
import re
import sys
import time

from . import common
from .common import Log, RpcError

VERSION = "v1.0.6"
STATE = os.path.join("data", "nodefleet-sim-state.json")


def read_toml(path):
    import tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def find_key(doc, key):
    if key in doc:
        return doc[key]
    for v in doc.values():
        if isinstance(v, dict):
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def load_state(home):
    try:
        with open(os.path.join(home, STATE)) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"height": 0, "hashes": {}}


def save_state(home, state):
    path = os.path.join(home, STATE)
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(path + ".tmp", path)


def fee_recipient_of(cfg_dir):
    """A 20-byte address derived from the validator's public key (the real daemon takes its
    configured suggested fee recipient)."""
    try:
        with open(os.path.join(cfg_dir, "priv_validator_key.json")) as f:
            pub = json.load(f).get("pub_key", {}).get("value", "")
    except (OSError, ValueError, AttributeError):
        pub = ""
    return "0x" + common.keccak256(pub.encode()).hex()[-40:]


def laddr_port(laddr, default):
    m = re.search(r":(\d+)$", laddr or "")
    return int(m.group(1)) if m else default


def beacon_block_root(block_hash):
    """The parentBeaconBlockRoot handed to the execution client for the block after this one: any
    32 bytes do for geth and reth; this is keccak256 of the parent's hash."""
    return "0x" + common.keccak256(block_hash.encode()).hex()


def cmd_start(flags, log):
    home = flags.get("home") or os.path.expanduser("~/.0gchaind")
    cfg_dir = os.path.join(home, "config")
    try:
        app = read_toml(os.path.join(cfg_dir, "app.toml"))
    except FileNotFoundError:
        log.error(f"open {cfg_dir}/app.toml: no such file or directory")
        return 1
    for name in ("priv_validator_key.json",):
        if not os.path.exists(os.path.join(cfg_dir, name)):
            log.error(f"couldn't read PrivValidator key from {cfg_dir}/{name}: open: no such file or directory")
            return 1
    state_file = os.path.join(home, "data", "priv_validator_state.json")
    if not os.path.exists(state_file):
        print(f"panic: error reading PrivValidator state from {state_file}: open {state_file}: no such file or directory", file=sys.stderr)
        return 2
    lock = open(os.path.join(home, "data", "nodefleet-sim.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log.error(f"another 0gchaind is running with home {home} (lock held)")
        return 1
    dial = flags.get("chaincfg.engine.rpc-dial-url") or find_key(app, "rpc-dial-url")
    jwt_path = flags.get("chaincfg.engine.jwt-secret-path") or find_key(app, "jwt-secret-path")
    if not dial or not jwt_path:
        log.error("engine: rpc-dial-url and jwt-secret-path must be set (app.toml or flags)")
        return 1
    try:
        secret = common.read_jwt_secret(jwt_path)
    except (OSError, ValueError) as e:
        log.error(f"engine: failed to load JWT secret: {e}")
        return 1
    cfg = {}
    if os.path.exists(os.path.join(cfg_dir, "config.toml")):
        cfg = read_toml(os.path.join(cfg_dir, "config.toml"))
    rpc_port = laddr_port(flags.get("rpc.laddr") or cfg.get("rpc", {}).get("laddr"), 26657)

    st = load_state(home)
    status = {"catching_up": True}
    fee_recipient = fee_recipient_of(cfg_dir)

    def status_route():
        return {"jsonrpc": "2.0", "id": -1, "result": {
            "node_info": {"moniker": os.path.basename(home), "version": VERSION},
            "sync_info": {"latest_block_height": str(st["height"]), "catching_up": status["catching_up"]},
        }}

    server = common.serve_jsonrpc("127.0.0.1", rpc_port, {}, get_routes={"/status": status_route})
    log.info("Starting 0gchaind", version=VERSION, home=home, note=common.SIMULATOR_NOTE.replace(" ", "_"))
    log.info("Connected to execution client", url=dial)
    stop = common.stop_on_sigterm()
    auth_failures = 0
    engine = Engine(dial, secret)
    period = float(os.environ.get("NODEFLEET_SIM_BLOCK_TIME", "2"))
    build_time = period / 2  # the EL's time to pack the next block (see Engine.build)
    behind = False
    warned_syncing = False
    # Block sync: while the EL is ahead, commit its blocks in batches without waiting a period.
    while not stop.wait(0 if behind else period - build_time):
        behind = False
        try:
            head = int(engine.call("eth_blockNumber"), 16)
            auth_failures = 0
            own = st["hashes"].get(str(st["height"]))
            if st["height"] > head and own:
                # Our head is ahead of the EL: assert it anyway, as the real daemon does.
                status["catching_up"] = True
                engine.forkchoice(own)
                continue
            wanted = range(st["height"] + 1, min(head, st["height"] + 50) + 1)
            if wanted:  # one batch request for the blocks of this round (the EL's own batch support)
                blocks = engine.batch([("eth_getBlockByNumber", [hex(h), False]) for h in wanted])
                for h, block in zip(wanted, blocks):
                    commit(st, h, block["hash"], log)
            if st["height"] < head:
                status["catching_up"] = True
                save_state(home, st)
                behind = True
                continue
            status["catching_up"] = False
            # Propose the next block: forkchoice with payload attributes, get, execute, adopt.
            parent = engine.call("eth_getBlockByNumber", [hex(st["height"]), False])
            new_hash = engine.build(parent, fee_recipient, lambda: stop.wait(build_time))
            commit(st, st["height"] + 1, new_hash, log)
            save_state(home, st)
        except ElSyncing as e:
            status["catching_up"] = True
            if not warned_syncing:
                warned_syncing = True
                log.warn("Your execution client is syncing. It should be downloading eth blocks from its peers. "
                         "Restart the beacon node once the execution client is caught up.", head_eth1_hash=e.head)
            log.info("NotifyForkchoiceUpdate: EL syncing. Retrying...", status=e.status)
        except RpcError as e:
            status["catching_up"] = True
            log.error("failed to notify forkchoice update", error=f'"{e.code}: {e.message}"')
        except OSError as e:
            status["catching_up"] = True
            log.error("engine API error", url=dial, error=f'"{e}"')
            if "401" in str(e):
                auth_failures += 1
                if auth_failures >= 3:
                    log.error("engine API: unauthorized: the JWT secret differs from the execution client's (docs/spec.md §5: use the same file)")
                    server.shutdown()
                    return 1
    save_state(home, st)
    server.shutdown()
    log.info("Stopped")
    return 0


def commit(st, height, block_hash, log):
    st["height"] = height
    st["hashes"][str(height)] = block_hash
    for old in [k for k in st["hashes"] if int(k) < height - 1000]:
        del st["hashes"][old]  # keep the state file small
    log.info("Committed state", height=height, block_hash=block_hash)


class ElSyncing(Exception):
    """The EL answered a forkchoice update with SYNCING or ACCEPTED: it lacks the head."""

    def __init__(self, status, head):
        super().__init__(status)
        self.status, self.head = status, head


class Engine:
    """The consensus side of the engine API (JWT-authenticated JSON-RPC)."""

    def __init__(self, url, secret):
        self.url, self.secret = url, secret

    def call(self, method, params=None):
        return common.rpc_call(self.url, method, params or [], jwt_secret=self.secret)

    def batch(self, calls):
        return common.rpc_batch(self.url, calls, jwt_secret=self.secret)

    def forkchoice(self, head, attributes=None):
        state = {"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head}
        result = self.call("engine_forkchoiceUpdatedV3", [state, attributes])
        status = result["payloadStatus"]["status"]
        if status in ("SYNCING", "ACCEPTED"):
            raise ElSyncing(status, head)
        if status != "VALID":
            raise RpcError(-32000, f"forkchoice update: execution client says {status}: {result['payloadStatus'].get('validationError')}")
        return result

    def build(self, parent, fee_recipient, pause):
        """Proposes a block on parent: `pause` runs between the forkchoice with payload attributes
        and engine_getPayloadV3. geth answers getPayload with the payload built so far and stops
        building: asked at once, it answers with the empty block whenever a transaction takes it
        longer to execute than that round trip (a 3 M gas contract call stayed pending for minutes)."""
        ts = max(int(time.time()), int(parent["timestamp"], 16) + 1)
        beacon_root = beacon_block_root(parent["hash"])
        attrs = {"timestamp": hex(ts), "prevRandao": "0x" + common.keccak256(str(ts).encode()).hex(),
                 "suggestedFeeRecipient": fee_recipient, "withdrawals": [], "parentBeaconBlockRoot": beacon_root}
        payload_id = self.forkchoice(parent["hash"], attrs)["payloadId"]
        pause()
        built = self.call("engine_getPayloadV3", [payload_id])
        payload, bundle = built["executionPayload"], built.get("blobsBundle") or {"commitments": [], "proofs": [], "blobs": []}
        # The blob transactions' versioned hashes, in order (EIP-4844: 0x01 ++ sha256(commitment)[1:]).
        hashes = ["0x01" + hashlib.sha256(bytes.fromhex(c[2:])).hexdigest()[2:] for c in bundle["commitments"]]
        status = self.call("engine_newPayloadV3", [payload, hashes, beacon_root])
        if status["status"] != "VALID":
            raise RpcError(-32000, f"payload {payload['blockNumber']} rejected: {status.get('validationError')}")
        self.forkchoice(payload["blockHash"])
        return payload["blockHash"]


def cmd_rollback(flags, log):
    home = flags.get("home") or os.path.expanduser("~/.0gchaind")
    lock_path = os.path.join(home, "data", "nodefleet-sim.lock")
    if os.path.exists(lock_path):
        with open(lock_path, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print("Error: cannot roll back while 0gchaind is running (database locked)", file=sys.stderr)
                return 1
    st = load_state(home)
    if st["height"] <= 0:
        print("Error: cannot roll back below height 1", file=sys.stderr)
        return 1
    st["hashes"].pop(str(st["height"]), None)
    st["height"] -= 1
    save_state(home, st)
    print(f"Rolled back state to height {st['height']} and hash {st['hashes'].get(str(st['height']), '')}")
    return 0


START_FLAGS = {"home", "chaincfg.engine.rpc-dial-url", "chaincfg.engine.jwt-secret-path", "rpc.laddr", "p2p.laddr",
               "p2p.external_address", "p2p.seeds", "log_level", "chaincfg.chain-spec", "chaincfg.kzg.trusted-setup-path",
               "chaincfg.kzg.implementation", "chaincfg.block-store-service.enabled", "pruning", "minimum-gas-prices",
               "p2p.persistent_peers", "proxy_app"}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    log = Log("0gchaind")
    if not argv or argv[0] in ("version", "--version"):
        print(f"{VERSION} ({common.SIMULATOR_NOTE})")
        return 0
    sub, rest = argv[0], argv[1:]
    try:
        if sub == "start":
            flags, extra = common.parse_flags(rest, START_FLAGS)
            if extra:
                raise common.FlagError(f"unknown command \"{extra[0]}\" for \"0gchaind start\"")
            return cmd_start(flags, log)
        if sub == "rollback":
            flags, _ = common.parse_flags(rest, {"home"}, {"hard"})
            return cmd_rollback(flags, log)
        raise common.FlagError(f"unknown command \"{sub}\" for \"0gchaind\"")
    except common.FlagError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
