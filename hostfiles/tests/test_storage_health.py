"""zgs-health.py run for real against local JSON-RPC servers standing in for the chain endpoint
and the storage node's zgs_getStatus: the facts `nodefleet status` reads (endpoint errors, the
sample age behind `increasing`). It writes /etc/nodefleet/<node> and /run/nodefleet like on a
host, under a test node name. What it cannot prove: the real zgs_node's answers (the E2E tier
reads them on a VM; the cli tier's contract test checks their shape) and systemd (`active` is whatever this machine's systemctl says).

    cd hostfiles && python3 -m unittest tests.test_storage_health
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, HTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "zgs-health.py")
sys.path.insert(0, os.path.dirname(HERE))
from nodefleet_faults import FAULTS  # noqa: E402
NODE = "nodefleet-test-health"


def server(results):
    """A JSON-RPC server answering each method from `results` (a dict it reads on every call)."""
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": results[req["method"]]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def dead_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StorageHealth(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-zgs-health-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.etc = f"/etc/nodefleet/{NODE}"
        os.makedirs(self.etc, exist_ok=True)
        self.addCleanup(shutil.rmtree, self.etc, True)
        self.addCleanup(lambda: os.path.exists(f"/run/nodefleet/{NODE}-health.json") and os.remove(f"/run/nodefleet/{NODE}-health.json"))
        self.node = {"zgs_getStatus": {"logSyncHeight": 100, "connectedPeers": 0}}
        self.chain = {"eth_blockNumber": "0x66"}  # 102
        self.zgs, self.rpc = server(self.node), server(self.chain)
        for srv in (self.zgs, self.rpc):
            self.addCleanup(srv.server_close)
            self.addCleanup(srv.shutdown)

    def write(self, endpoint, extra=""):
        config = os.path.join(self.dir, "config.toml")
        with open(config, "w") as f:
            f.write(f'blockchain_rpc_endpoint = "{endpoint}"\nlog_directory = "{self.dir}/log"\n{extra}'
                    f'[rpc]\nlisten_address = "127.0.0.1:{self.zgs.server_address[1]}"\n')
        with open(os.path.join(self.etc, "storage.json"), "w") as f:
            json.dump({"config": config, "service": f"zgs-{NODE}.service"}, f)

    def health(self):
        r = subprocess.run([sys.executable, SCRIPT, NODE], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout.strip().splitlines()[-1])

    def test_synced_with_the_service_state_and_the_sample_age_on_the_second_check(self):
        self.write(f"http://127.0.0.1:{self.rpc.server_address[1]}")
        first = self.health()
        # Without confirmation_block_count the node's default, 3: it syncs up to block 99 at most.
        self.assertEqual((first["chainHead"], first["logSyncHeight"], first["confirmations"], first["behind"], first["synced"]), (102, 100, 3, 0, True))
        self.assertEqual(first["service"], f"zgs-{NODE}.service")
        self.assertIs(first["active"], False)  # no such unit on this machine
        self.assertNotIn("endpointError", first)
        self.node["zgs_getStatus"] = {"logSyncHeight": 101, "connectedPeers": 0}
        second = self.health()
        self.assertIs(second["increasing"], True)
        self.assertIsInstance(second["sampleSeconds"], float)
        self.assertLess(second["sampleSeconds"], 30)

    def test_checks_run_at_once_never_read_half_a_sample(self):
        # The timer, status, the health step and a gate may ask at the same moment: twelve checks
        # at once, then each must have read a whole sample (or none) and left one behind.
        self.write(f"http://127.0.0.1:{self.rpc.server_address[1]}")
        self.health()
        runs = [subprocess.Popen([sys.executable, SCRIPT, NODE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(12)]
        for p in runs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            answer = json.loads(out.strip().splitlines()[-1])
            self.assertIsInstance(answer["sampleSeconds"], float, "a half-written sample reads as none")
        with open(f"/run/nodefleet/{NODE}-health.json") as f:
            self.assertEqual(json.load(f)["logSyncHeight"], 100)
        self.assertEqual([n for n in os.listdir("/run/nodefleet") if n.startswith(f"{NODE}-health.json.")], [], "no staging file left")

    def test_behind_counts_from_the_head_less_the_confirmations_the_node_waits_for(self):
        # The real zgs_node syncs the log up to head - confirmation_block_count, never closer.
        self.chain["eth_blockNumber"] = "0x6e"  # 110
        self.write(f"http://127.0.0.1:{self.rpc.server_address[1]}", "confirmation_block_count = 2\n")
        a = self.health()
        self.assertEqual((a["confirmations"], a["behind"], a["synced"]), (2, 8, False))
        [d] = [d for d in a["diagnoses"] if d["fault"] == "not-synced"]
        self.assertEqual(d["detail"], "8 blocks behind the chain head 110 less its 2 confirmations (synced means fewer than 5)")
        self.assertEqual(d["remedy"], FAULTS["not-synced"]["remedy"], "the fault table's words, not the tool's")
        self.node["zgs_getStatus"] = {"logSyncHeight": 104, "connectedPeers": 0}
        b = self.health()
        self.assertEqual((b["behind"], b["synced"]), (4, True))

    def test_the_last_failed_start_is_read_from_the_node_log_with_the_url_cut_to_its_host(self):
        # Lines as zgs_node v1.1.0 writes them (the contract test saw these), the URL with a key.
        self.write(f"http://127.0.0.1:{self.rpc.server_address[1]}")
        os.makedirs(f"{self.dir}/log")
        today = __import__("datetime").datetime.now(__import__("datetime").timezone.utc).strftime("%Y-%m-%d")
        url = ('Url { scheme: "https", cannot_be_a_base: false, username: "", password: None, host: Some(Domain("rpc.example.org")), '
               'port: None, path: "/v2/KEYsecret123", query: Some("apikey=KEYsecret456"), fragment: None }')
        lines = [
            "2026-11-25T01:58:17.317476Z  INFO zgs_node: Services started",
            "2026-11-25T01:59:01.000000Z  INFO zgs_node: Starting services...",
            f"2026-11-25T01:59:01.100000Z ERROR zgs_node: Failed to start zgs node reason=Unable to get chain id: HTTPError(reqwest::Error {{ kind: Request, url: {url}, source: x }})",
        ]
        with open(f"{self.dir}/log/zgs.log.{today}", "w") as f:
            f.write("\n".join(lines) + "\n")
        a = self.health()
        self.assertEqual(a["startError"], "Unable to get chain id: HTTPError(reqwest::Error { kind: Request, url: url rpc.example.org, source: x })")
        self.assertNotIn("KEYsecret", json.dumps(a))
        # Started again since, and running: no failure to report.
        with open(f"{self.dir}/log/zgs.log.{today}", "a") as f:
            f.write("2026-11-25T01:59:06.000000Z  INFO zgs_node: Starting services...\n2026-11-25T01:59:06.500000Z  INFO zgs_node: Services started\n")
        self.assertNotIn("startError", self.health())

    def test_a_dead_endpoint_is_named_with_its_error(self):
        url = f"http://127.0.0.1:{dead_port()}"
        self.write(url)
        a = self.health()
        self.assertIsNone(a["chainHead"])
        self.assertRegex(a["endpointError"], r"Connection refused|urlopen error")
        self.assertEqual(a["endpoint"], url)
        self.assertEqual(a["logSyncHeight"], 100)
        [d] = [d for d in a["diagnoses"] if d["fault"] == "rpc-endpoint-down"]
        self.assertIn(f"blockchain_rpc_endpoint {url} does not answer eth_blockNumber", d["detail"])

    def test_a_node_that_does_not_answer_zgs_getstatus(self):
        self.write(f"http://127.0.0.1:{self.rpc.server_address[1]}")
        self.zgs.shutdown()
        self.zgs.server_close()
        a = self.health()
        self.assertIn("statusError", a)
        self.assertIsNone(a["logSyncHeight"])


if __name__ == "__main__":
    unittest.main()
