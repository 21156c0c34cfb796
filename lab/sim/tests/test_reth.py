"""reth simulator against the spec: init, import with parent checks and faults, node RPC + engine."""
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stdout

from nodefleet_sim import common, reth
from tests.support import free_port
from tests.test_common import chain

SIM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RethImport(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.genesis = os.path.join(self.dir, "genesis.json")
        with open(self.genesis, "w") as f:
            json.dump({"config": {"chainId": 16661}, "alloc": {}}, f)
        self.datadir = os.path.join(self.dir, "reth")
        self.blocks = chain(30)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_SIM_")}

    def write(self, name, raws):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(b"".join(raws))
        return path

    def run_reth(self, *args, **env):
        out = io.StringIO()
        old = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env, **{f"NODEFLEET_SIM_{k.upper()}": str(v) for k, v in env.items()})
        try:
            with redirect_stdout(out):
                code = reth.main(list(args))
        finally:
            os.environ.clear()
            os.environ.update(old)
        return code, out.getvalue()

    def height(self):
        return reth.Chain(self.datadir).tip()["number"]

    def test_init_then_full_import(self):
        code, out = self.run_reth("init", "--chain", self.genesis, "--datadir", self.datadir)
        self.assertEqual(code, 0, out)
        path = self.write("chain-export-from-1.rlp", self.blocks)
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, path)
        self.assertEqual(code, 0, out)
        self.assertIn("Chain was fully imported", out)
        self.assertEqual(self.height(), 30)

    def test_overlapping_file_fails_with_the_seed_text_and_keeps_blocks(self):
        self.run_reth("init", "--chain", self.genesis, "--datadir", self.datadir)
        self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("a.rlp", self.blocks[:10]))
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("b.rlp", self.blocks[5:]))
        self.assertEqual(code, 1)
        self.assertIn("block number 6 does not match parent block number 10", out)
        self.assertIn("Chain was partially imported", out)
        self.assertEqual(self.height(), 10)
        # The remedy: re-trim from Y+1 = 11.
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("c.rlp", self.blocks[10:]))
        self.assertEqual(code, 0, out)
        self.assertEqual(self.height(), 30)

    def test_newer_error_text(self):
        self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("a.rlp", self.blocks[:10]))
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("b.rlp", self.blocks[5:]), reth_errors="new")
        self.assertEqual(code, 1)
        self.assertIn("mismatched parent hash", out)

    def test_file_from_another_chain_fails_on_parent_hash(self):
        self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("a.rlp", self.blocks[:10]))
        other = chain(5, start=11, genesis_hash=b"\x99" * 32)
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("o.rlp", other))
        self.assertEqual(code, 1)
        self.assertIn("mismatched parent hash", out)
        self.assertEqual(self.height(), 10)

    def test_faults_stop_mid_file_and_state_root(self):
        path = self.write("all.rlp", self.blocks)
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, path, import_stop_at=17)
        self.assertEqual(code, 1)
        self.assertEqual(self.height(), 16)
        self.assertIn("partially imported", out)
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("rest.rlp", self.blocks[16:]), state_root_mismatch_at=20)
        self.assertEqual(code, 1)
        self.assertIn("mismatched block state root: block 20", out)
        self.assertEqual(self.height(), 19)

    def test_block_zero_in_file_is_refused(self):
        genesis_block = chain(1, start=0)
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, self.write("g.rlp", genesis_block + self.blocks))
        self.assertEqual(code, 1)
        self.assertIn("block number 0 does not match parent block number 0", out)

    def test_truncated_file(self):
        data = b"".join(self.blocks)[:-3]
        path = os.path.join(self.dir, "t.rlp")
        with open(path, "wb") as f:
            f.write(data)
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, path)
        self.assertEqual(code, 1)
        self.assertIn("failed to decode block", out)
        self.assertEqual(self.height(), 29)


class RethNode(unittest.TestCase):
    def test_flags_rpc_and_engine_auth(self):
        d = tempfile.mkdtemp()
        genesis = os.path.join(d, "genesis.json")
        with open(genesis, "w") as f:
            json.dump({"config": {"chainId": 16661}}, f)
        jwt = os.path.join(d, "jwt.hex")
        with open(jwt, "w") as f:
            f.write("aa" * 32)
        bad = subprocess.run([sys.executable, "-m", "nodefleet_sim.reth", "node", "--chain", genesis, "--datadir", d, "--authrpc.jwtsecret", jwt, "--bogus"],
                             cwd=SIM_ROOT, capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unexpected argument '--bogus' found", bad.stderr)
        http, auth = free_port(), free_port()
        env = dict(os.environ, NODEFLEET_SIM_BLOCK_TIME="0.2")
        proc = subprocess.Popen([sys.executable, "-m", "nodefleet_sim.reth", "node", "--chain", genesis, "--datadir", os.path.join(d, "db"),
                                 "--http", "--http.addr", "127.0.0.1", "--http.port", str(http), "--http.api", "eth,net,admin",
                                 "--authrpc.addr", "127.0.0.1", "--authrpc.port", str(auth), "--authrpc.jwtsecret", jwt,
                                 "--engine.persistence-threshold", "0", "--engine.memory-block-buffer-target", "0", "--nat", "extip:10.0.0.1"],
                                cwd=SIM_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            url, engine = f"http://127.0.0.1:{http}", f"http://127.0.0.1:{auth}"
            for _ in range(50):
                try:
                    self.assertEqual(common.rpc_call(url, "eth_blockNumber"), "0x0")
                    break
                except OSError:
                    time.sleep(0.1)
            with self.assertRaisesRegex(OSError, "401"):
                common.rpc_call(engine, "eth_blockNumber", jwt_secret=b"\x00" * 32)
            with self.assertRaises(common.RpcError) as e:
                common.rpc_call(engine, "engine_forkchoiceUpdatedV3", [{"headBlockHash": "0x" + "12" * 32}, None], jwt_secret=b"\xaa" * 32)
            self.assertEqual((e.exception.code, e.exception.message), (-38002, "Invalid forkchoice state"))
            genesis = common.rpc_call(url, "eth_getBlockByNumber", ["0x0", False])
            attrs = {"timestamp": "0x10", "prevRandao": "0x" + "00" * 32, "suggestedFeeRecipient": "0x" + "11" * 20, "withdrawals": [], "parentBeaconBlockRoot": "0x" + "00" * 32}
            ok = common.rpc_call(engine, "engine_forkchoiceUpdatedV3", [{"headBlockHash": genesis["hash"]}, attrs], jwt_secret=b"\xaa" * 32)
            self.assertEqual(ok["payloadStatus"]["status"], "VALID")
            payload = common.rpc_call(engine, "engine_getPayloadV3", [ok["payloadId"]], jwt_secret=b"\xaa" * 32)["executionPayload"]
            self.assertEqual(payload["blockNumber"], "0x1")
            status = common.rpc_call(engine, "engine_newPayloadV3", [payload, [], "0x" + "00" * 32], jwt_secret=b"\xaa" * 32)
            self.assertEqual(status["status"], "VALID")
            self.assertEqual(common.rpc_call(url, "eth_blockNumber"), "0x1")
        finally:
            proc.terminate()
            out = proc.communicate(timeout=10)[0]
        self.assertIn("Starting consensus engine", out)


if __name__ == "__main__":
    unittest.main()
