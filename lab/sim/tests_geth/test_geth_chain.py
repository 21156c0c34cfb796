"""Real geth with the simulators, on this machine (no VM): the chain the geth -> reth switch
moves. NODEFLEET_GETH names the geth binary (scripts/test.sh passes the one built by
lab/artifacts.sh). Proves: the 0gchaind simulator drives real geth through the engine API
with a shared JWT file; txgen's signed transactions land in real blocks; `geth export` of
1..head, trimmed by hostfiles/trim_export.py, imports into the reth simulator with every parent hash
checked; the running geth's live export over IPC (admin_exportChain, the low-downtime switch)
is byte for byte `geth export`'s, and the export of the blocks made since continues it; `geth
import` of the same export rebuilds the chain in a fresh datadir; a JWT file that differs stops
the consensus daemon."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

SIM = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(SIM))
GENESIS = os.path.join(SIM, "release", "geth-genesis.json")
sys.path.insert(0, SIM)
from nodefleet_sim import common  # noqa: E402
from tests.support import consensus_home, free_port, until as _until  # noqa: E402


def until(f, timeout=60.0):
    return _until(f, timeout, every=0.2)




class GethChain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.geth = os.environ.get("NODEFLEET_GETH")
        if not cls.geth or not os.access(cls.geth, os.X_OK):
            raise AssertionError("NODEFLEET_GETH must name the geth binary (lab/artifacts.sh builds it)")
        cls.d = tempfile.mkdtemp(prefix="nodefleet-geth-")
        cls.jwt = os.path.join(cls.d, "jwt.hex")
        with open(cls.jwt, "w") as f:
            f.write(os.urandom(32).hex())
        cls.http, cls.auth, cls.cmt = free_port(), free_port(), free_port()
        cls.datadir = os.path.join(cls.d, "geth")
        subprocess.run([cls.geth, "init", "--datadir", cls.datadir, GENESIS], check=True, capture_output=True)
        cls.geth_log = open(os.path.join(cls.d, "geth.log"), "w")
        cls.proc = subprocess.Popen([cls.geth, "--datadir", cls.datadir, "--networkid", "16661", "--syncmode", "full",
                                     "--http", "--http.addr", "127.0.0.1", "--http.port", str(cls.http),
                                     "--authrpc.addr", "127.0.0.1", "--authrpc.port", str(cls.auth), "--authrpc.jwtsecret", cls.jwt,
                                     "--port", str(free_port()), "--nodiscover", "--maxpeers", "0"],
                                    stdout=cls.geth_log, stderr=subprocess.STDOUT)
        cls.url = f"http://127.0.0.1:{cls.http}"
        until(lambda: common.rpc_call(cls.url, "eth_blockNumber"))
        cls.home = consensus_home(os.path.join(cls.d, "0gchaind"), cls.auth, cls.jwt, cls.cmt,
                                  validator_key=json.dumps({"pub_key": {"value": "dGVzdA=="}}))
        env = dict(os.environ, NODEFLEET_SIM_BLOCK_TIME="0.5")
        cls.cl = subprocess.Popen([sys.executable, "-m", "nodefleet_sim.zerog", "start", "--home", cls.home], cwd=SIM, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    @classmethod
    def tearDownClass(cls):
        for p in (cls.cl, cls.proc):
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
        cls.geth_log.close()
        shutil.rmtree(cls.d, ignore_errors=True)

    def test_1_blocks_with_real_transactions(self):
        until(lambda: int(common.rpc_call(self.url, "eth_blockNumber"), 16) >= 3)
        r = subprocess.run([sys.executable, "-m", "nodefleet_sim.txgen", "--rpc", self.url, "--count", "6", "--interval", "0.1"],
                           cwd=SIM, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        hashes = r.stdout.split()
        self.assertEqual(len(hashes), 6)
        receipt = until(lambda: common.rpc_call(self.url, "eth_getTransactionReceipt", [hashes[-1]]))
        self.assertEqual(receipt["status"], "0x1")
        until(lambda: int(common.rpc_call(self.url, "eth_blockNumber"), 16) >= 25)
        with open(self.geth_log.name) as f:
            self.assertRegex(f.read(), r"Chain head was updated\s+number=\d+")

    def test_1a_a_transaction_geth_needs_time_to_pack_is_included(self):
        # geth's engine_getPayload answers with the payload built so far: the empty one, when the
        # full one is not done yet (miner/payload_building.go, Resolve). A beacon node asks for the
        # payload well after its forkchoice with attributes; a simulator that asks at once gets an
        # empty block every time a transaction takes geth longer to execute than that round trip
        # (the storage contracts' flow.initialize, 3 M gas, stayed pending for 120 s in a cold run).
        # This one burns about 8 M gas in a loop (GAS, PUSH3 50000, LT, PUSH1 0, JUMPI), tens of ms.
        from nodefleet_sim import txgen
        burn = bytes.fromhex("5b5a6200c350106000570" + "0")
        chain_id = int(common.rpc_call(self.url, "eth_chainId"), 16)
        sender = txgen.address_of(txgen.DEV_KEY)
        nonce = int(common.rpc_call(self.url, "eth_getTransactionCount", [sender, "pending"]), 16)
        gas_price = int(common.rpc_call(self.url, "eth_gasPrice"), 16) * 2
        tx = common.rpc_call(self.url, "eth_sendRawTransaction", [txgen.signed_tx(txgen.DEV_KEY, chain_id, nonce, None, 0, gas_price, 8_000_000, burn)])
        start = int(common.rpc_call(self.url, "eth_blockNumber"), 16)
        receipt = until(lambda: common.rpc_call(self.url, "eth_getTransactionReceipt", [tx]), timeout=30)
        self.assertEqual(receipt["status"], "0x1")
        self.assertGreater(int(receipt["gasUsed"], 16), 7_000_000)
        self.assertLessEqual(int(receipt["blockNumber"], 16) - start, 3, "geth packed it only after several empty blocks")

    def test_1b_dev_registry_answers_get_info_in_real_evm(self):
        # The dev genesis' registry stand-in (the sequencer's L1 in the dev stack), run by geth's EVM:
        # getInfo(address) returns four words, status 0 (NONE) for an address never stored; any other
        # selector reverts. aztec-register.py's reader decodes geth's answer.
        registry = "0x00000000000000000000000000000000000a2ec1"
        who = "00" * 12 + "fb6916095ca1df60bb79ce92ce3ea74c37c5d359"
        out = common.rpc_call(self.url, "eth_call", [{"to": registry, "data": "0xffdd5cf1" + who}, "latest"])
        self.assertEqual(out, "0x" + "00" * 128)
        with self.assertRaises(common.RpcError):
            common.rpc_call(self.url, "eth_call", [{"to": registry, "data": "0x12345678" + who}, "latest"])
        sys.path.insert(0, os.path.join(ROOT, "hostfiles"))
        import importlib.util
        spec = importlib.util.spec_from_file_location("aztec_register", os.path.join(ROOT, "hostfiles", "aztec-register.py"))
        register = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(register)
        status, queued, url = register.registry_status({"dialect": "staking-asset-handler", "validatorAddress": "0x" + who[24:], "registryAddress": registry,
                                                        "l1RpcUrls": [self.url], "l1ChainId": 11155111})
        self.assertEqual((status, queued, url), (0, None, self.url))

    def test_1c_live_export_over_ipc_while_0gchaind_commits(self):
        # The low-downtime switch's l03: the running geth exports 1..head over its IPC socket
        # (nodefleet_rpc.py, as the host tool runs it) while the chain goes on growing.
        head = int(common.rpc_call(self.url, "eth_blockNumber"), 16)
        path = os.path.join(self.d, "live-export.rlp")
        r = subprocess.run([sys.executable, "-S", os.path.join(ROOT, "hostfiles", "nodefleet_rpc.py"), "ipc", os.path.join(self.datadir, "geth.ipc"),
                            "admin_exportChain", json.dumps([path, 1, head])], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "true"), r.stderr)
        blocks = list(common.read_blocks(path))
        self.assertEqual([b.number for b in blocks], list(range(1, head + 1)))
        self.assertEqual(common.hx(blocks[-1].hash), common.rpc_call(self.url, "eth_getBlockByNumber", [hex(head), False])["hash"])
        until(lambda: int(common.rpc_call(self.url, "eth_blockNumber"), 16) > head + 1)  # 0gchaind went on committing
        again = subprocess.run([sys.executable, "-S", os.path.join(ROOT, "hostfiles", "nodefleet_rpc.py"), "ipc", os.path.join(self.datadir, "geth.ipc"),
                                "admin_exportChain", json.dumps([path, 1, head])], capture_output=True, text=True)
        self.assertEqual(again.returncode, 1)
        self.assertIn("location would overwrite an existing file", again.stderr)
        type(self).live = (path, head)

    def test_2_export_trim_import_into_reth_and_geth(self):
        self.cl.terminate()
        out = self.cl.communicate(timeout=30)[0]
        self.assertIn("Committed state", out)
        head = int(common.rpc_call(self.url, "eth_blockNumber"), 16)
        self.proc.terminate()
        self.proc.wait(timeout=60)
        export_dir = os.path.join(self.d, "export")
        os.makedirs(export_dir)
        rlp = os.path.join(export_dir, "chain-export.rlp")
        r = subprocess.run([self.geth, "export", "--datadir", self.datadir, rlp, "1", str(head)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        blocks = list(common.read_blocks(rlp))
        self.assertEqual([b.number for b in blocks], list(range(1, head + 1)))
        self.assertGreaterEqual(sum(b.tx_count for b in blocks), 6)
        # The live export (test_1c) is byte for byte the stopped geth's export of the same range,
        # and `geth export` of the rest (the low-downtime cutover's l08) continues it.
        live, live_head = self.live
        r = subprocess.run([self.geth, "export", "--datadir", self.datadir, os.path.join(self.d, "same.rlp"), "1", str(live_head)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(live, "rb") as a, open(os.path.join(self.d, "same.rlp"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        rest = os.path.join(self.d, "chain-rest.rlp")
        r = subprocess.run([self.geth, "export", "--datadir", self.datadir, rest, str(live_head + 1), str(head)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        rest_blocks = list(common.read_blocks(rest))
        self.assertEqual([b.number for b in rest_blocks], list(range(live_head + 1, head + 1)))
        self.assertEqual(rest_blocks[0].parent_hash, blocks[live_head - 1].hash)
        # Trim (step 8): from 1 nothing is dropped; then a re-trim from the middle (step 9's remedy).
        for start in (1, head // 2):
            r = subprocess.run([sys.executable, os.path.join(ROOT, "hostfiles", "trim_export.py"), str(start), export_dir], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
        reth_dir = os.path.join(self.d, "reth")
        run = lambda *a: subprocess.run([sys.executable, "-m", "nodefleet_sim.reth", *a], cwd=SIM, capture_output=True, text=True)  # noqa: E731
        self.assertEqual(run("init", "--chain", GENESIS, "--datadir", reth_dir).returncode, 0)
        # Importing the middle part first fails like reth 1.11 (its first block's parent, block
        # head // 2 - 1, is not the database's last block) and writes nothing ...
        r = run("import", "--chain", GENESIS, "--datadir", reth_dir, os.path.join(export_dir, f"chain-export-from-{head // 2}.rlp"))
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"Error: mismatched parent hash: got {common.hx(blocks[head // 2 - 2].hash)}, expected 0x", r.stderr)
        # ... and the full trimmed file imports with every parent hash matching real geth's.
        r = run("import", "--chain", GENESIS, "--datadir", reth_dir, os.path.join(export_dir, "chain-export-from-1.rlp"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("Chain was fully imported", r.stdout)
        with open(os.path.join(reth_dir, "db", "nodefleet-sim-chain.jsonl")) as f:
            tip = json.loads(f.read().strip().split("\n")[-1])
        self.assertEqual(tip["number"], head)
        self.assertEqual(tip["hash"], common.hx(blocks[-1].hash))
        # geth import rebuilds the same chain in a fresh datadir (the rollback path's tool).
        fresh = os.path.join(self.d, "geth2")
        subprocess.run([self.geth, "init", "--datadir", fresh, GENESIS], check=True, capture_output=True)
        r = subprocess.run([self.geth, "import", "--datadir", fresh, rlp], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        port = free_port()
        node = subprocess.Popen([self.geth, "--datadir", fresh, "--networkid", "16661", "--syncmode", "full", "--http", "--http.addr", "127.0.0.1",
                                 "--http.port", str(port), "--authrpc.port", str(free_port()), "--port", str(free_port()), "--nodiscover", "--maxpeers", "0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.assertEqual(until(lambda: common.rpc_call(f"http://127.0.0.1:{port}", "eth_blockNumber")), hex(head))
            self.assertEqual(common.rpc_call(f"http://127.0.0.1:{port}", "eth_getBlockByNumber", [hex(head), False])["hash"], common.hx(blocks[-1].hash))
        finally:
            node.terminate()
            node.wait(timeout=30)

    def test_3_jwt_mismatch_stops_the_consensus_daemon(self):
        other = os.path.join(self.d, "other.hex")
        with open(other, "w") as f:
            f.write(os.urandom(32).hex())
        auth = free_port()
        subprocess.run([self.geth, "init", "--datadir", os.path.join(self.d, "geth3"), GENESIS], check=True, capture_output=True)
        proc = subprocess.Popen([self.geth, "--datadir", os.path.join(self.d, "geth3"), "--networkid", "16661", "--syncmode", "full",
                                 "--authrpc.addr", "127.0.0.1", "--authrpc.port", str(auth), "--authrpc.jwtsecret", self.jwt,
                                 "--port", str(free_port()), "--nodiscover", "--maxpeers", "0", "--http.port", str(free_port())],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            until(lambda: socket.create_connection(("127.0.0.1", auth), timeout=1).close() or True)
            r = subprocess.run([sys.executable, "-m", "nodefleet_sim.zerog", "start", "--home", self.home,
                                "--chaincfg.engine.rpc-dial-url", f"http://localhost:{auth}", "--chaincfg.engine.jwt-secret-path", other],
                               cwd=SIM, capture_output=True, text=True, timeout=60, env=dict(os.environ, NODEFLEET_SIM_BLOCK_TIME="0.3"))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stdout, re.compile(r"HTTP 401"))
        self.assertIn("the JWT secret differs", r.stdout)


if __name__ == "__main__":
    unittest.main()
