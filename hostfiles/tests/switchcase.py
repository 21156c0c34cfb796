"""The host tool's test fixtures for the switch and the health checks: `Chain`, small in-test
JSON-RPC endpoints standing in for geth, reth and a reference node (real HTTP); `FakeHost`, a fake
systemd (units, their journal and start times); `SwitchCase`, a temporary data root with both.
What they cannot prove: that real systemd, geth and 0gchaind behave as faked here; the E2E tier
runs the switch on VMs and the real beacond, geth and reth natively (tests_real)."""
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zgvalidator import handover as handover_mod, health as health_mod, host, lowdowntime, node, rollback, stall, switch  # noqa: E402
from zgvalidator.node import Validator  # noqa: E402

REAL_RUN = host.run
GETH, RETH, CL = "geth-validator-1.service", "reth-validator-1.service", "0gchaind-validator-1.service"
MODULES = (host, node, switch, rollback, health_mod, handover_mod, lowdowntime, stall)


def block_hash(n, fork=""):
    return "0x" + f"{fork}{n:x}".rjust(64, "a")


class Chain:
    """A JSON-RPC endpoint on loopback: eth_blockNumber, eth_getBlockByNumber, net_peerCount."""

    def __init__(self, head, fork="", peers=0):
        self.head, self.fork, self.peers, self.syncing = head, fork, peers, False
        chain = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                method, params = req["method"], req.get("params") or []
                if method == "eth_blockNumber":
                    result = hex(chain.head)
                elif method == "eth_getBlockByNumber":
                    n = int(params[0], 16)
                    result = {"number": hex(n), "hash": block_hash(n, chain.fork)} if n <= chain.head else None
                elif method == "net_peerCount":
                    result = hex(chain.peers)
                elif method == "eth_syncing":
                    result = {"currentBlock": hex(chain.head), "highestBlock": hex(chain.head + 50)} if chain.syncing else False
                else:
                    result = None
                body = json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class FakeHost:
    """systemd as the tool sees it: unit states, their journals, start times, and every systemctl call."""

    def __init__(self):
        self.state = {}
        self.logs = {}
        self.since = {}
        self.calls = []
        self.release_version = "v1.0.6"

    def systemctl(self, *args, check=True):
        self.calls.append(args)
        unit = args[-1]
        if args[0] == "is-enabled":
            return types.SimpleNamespace(returncode=0 if self.state.get(unit) in ("active", "enabled") else 1, stdout="", stderr="")
        if args[:2] == ("enable", "--now") or args[0] == "start":
            self.state[unit] = "active"
        elif args[:2] == ("disable", "--now") or args[0] == "stop":
            self.state[unit] = "inactive"
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    def active(self, unit):
        return self.state.get(unit) == "active"

    def journal(self, unit, since_usec=None, lines=20000):
        return self.logs.get(unit, "")

    def unit_props(self, unit, *props):
        return {"ActiveEnterTimestampMonotonic": str(self.since.get(unit, 0)), "ActiveState": self.state.get(unit, "inactive")}

    def run(self, cmd, check=True, user=None, **kw):
        self.calls.append(tuple(cmd))
        out = self.release_version if cmd[-1] == "version" else ""
        return types.SimpleNamespace(returncode=0, stdout=out, stderr="")

    def started(self, *what):
        return [c for c in self.calls if c[:2] == ("enable", "--now") and c[-1] in what or c[0] == "start" and c[-1] in what]

    def stopped(self):
        return [c for c in self.calls if c[0] == "stop" or c[:2] == ("disable", "--now")]


class SwitchCase(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="nodefleet-switch-")
        self.addCleanup(shutil.rmtree, self.root)
        self.el = Chain(100)
        self.addCleanup(self.el.close)
        self.fake = FakeHost()
        self.settings = {
            "node": "validator-1", "operator": "nodefleet", "dataRoot": self.root,
            "gethDir": os.path.join(self.root, "geth"), "rethDir": os.path.join(self.root, "reth"),
            "consensusHome": os.path.join(self.root, "0gchaind"), "etcDir": os.path.join(self.root, "etc"),
            "releaseDir": os.path.join(self.root, "release"), "rethBinary": os.path.join(self.root, "bin", "reth"),
            "ports": {"http": self.el.port, "p2p": 56303, "engine": 56551, "cometRpc": 1},
            "services": {"geth": GETH, "reth": RETH, "consensus": CL},
            "referenceRpcUrl": None, "heightTolerance": 5, "remedyRetries": 3, "remedySettleSeconds": 0,
            # No daemon answers here: the watch after a height rollback has its own test (test_consensus_stall).
            "stallWatchSeconds": 0,
            "rollbackMax": 64, "verifyTimeout": 30, "cleanupAfterHours": 24,
            "cleanup": {"removeGethBinary": False, "removeBackup": False},
        }
        for d in ("gethDir", "consensusHome", "etcDir"):
            os.makedirs(self.settings[d])
        for m in MODULES:
            for name in ("systemctl", "active", "journal", "unit_props", "run"):
                if hasattr(m, name):
                    p = mock.patch.object(m, name, getattr(self.fake, name))
                    p.start()
                    self.addCleanup(p.stop)
        p = mock.patch.object(Validator, "consensus_processes", lambda _self: [])
        p.start()
        self.addCleanup(p.stop)

    def validator(self, **changes):
        path = os.path.join(self.root, "validator.json")
        with open(path, "w") as f:
            json.dump({**self.settings, **changes}, f)
        return Validator(path)

    def geth_logs_head(self, n, hash_text):
        self.fake.logs[GETH] = "\n".join([
            "INFO [11-23|10:00:00.000] Imported new potential chain segment     number=1 hash=aaaaaa..aaaaaa",
            f"INFO [11-23|10:00:01.000] Chain head was updated                   number={n:,} hash={hash_text} root=bbbbbb..bbbbbb elapsed=1.2ms",
        ]) + "\n"



def write_unit(path, flag, jwt):
    with open(path, "w") as f:
        f.write(f"[Service]\nExecStart=/bin/true --datadir /x {flag} {jwt}\n")
