"""reth simulator against the spec: init, import with parent checks and faults, node RPC + engine."""
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout

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
            with redirect_stdout(out), redirect_stderr(out):
                code = reth.main(list(args))
        finally:
            os.environ.clear()
            os.environ.update(old)
        return code, out.getvalue()

    def reth(self, *args, **env):
        """The simulator as its own process (a fault may kill it)."""
        return subprocess.run([sys.executable, "-m", "nodefleet_sim.reth", *args], cwd=SIM_ROOT, capture_output=True, text=True,
                              env=dict(self.env, **{f"NODEFLEET_SIM_{k.upper()}": str(v) for k, v in env.items()}))

    def imp(self, name, raws, **env):
        return self.run_reth("import", "--color", "never", "--chain", self.genesis, "--datadir", self.datadir, self.write(name, raws), **env)

    def height(self):
        return reth.Chain(self.datadir).tip()["number"]

    def checkpoints(self):
        code, out = self.run_reth("db", "--quiet", "--color", "never", "--chain", self.genesis, "--datadir", self.datadir,
                                  "list", "StageCheckpoints", "--json", "--len", "100")
        self.assertEqual(code, 0, out)
        return {stage: cp["block_number"] for stage, cp in json.loads(out)}

    def unwind(self, n):
        code, out = self.run_reth("stage", "unwind", "--color", "never", "--chain", self.genesis, "--datadir", self.datadir, "to-block", str(n))
        self.assertEqual(code, 0, out)
        self.assertIn(f"Unwound blocks target={n}", out)

    def test_init_then_full_import(self):
        code, out = self.run_reth("init", "--chain", self.genesis, "--datadir", self.datadir)
        self.assertEqual(code, 0, out)
        code, out = self.imp("chain-export-from-1.rlp", self.blocks)
        self.assertEqual(code, 0, out)
        self.assertIn("stage=Finish checkpoint=30 target=30", out)
        self.assertIn("Chain was fully imported total_imported_blocks=30", out)
        self.assertEqual(self.height(), 30)
        cps = self.checkpoints()
        self.assertEqual((cps["Headers"], cps["Execution"], cps["Finish"], cps["Era"]), (30, 30, 30, 0))

    def test_a_file_that_does_not_continue_the_database_writes_nothing_with_reths_text(self):
        self.imp("a.rlp", self.blocks[:10])
        code, out = self.imp("b.rlp", self.blocks[5:])
        self.assertEqual(code, 1)
        # got: the file's first block's parent (block 5), expected: the database's last block (10).
        self.assertIn(f"Error: mismatched parent hash: got {common.hx(reth_hash(self.blocks[4]))}, expected {common.hx(reth_hash(self.blocks[9]))}", out)
        self.assertEqual(self.height(), 10)
        code, out = self.imp("c.rlp", self.blocks[10:])  # the remedy: the blocks after the database's last
        self.assertEqual(code, 0, out)
        self.assertEqual(self.height(), 30)

    def test_a_gap_in_the_file_writes_nothing_of_it(self):
        code, out = self.imp("gap.rlp", self.blocks[:9] + self.blocks[12:])
        self.assertEqual(code, 1)
        self.assertIn("Error: mismatched parent hash", out)
        self.assertEqual(self.height(), 0)

    def test_file_from_another_chain_fails_on_parent_hash(self):
        self.imp("a.rlp", self.blocks[:10])
        other = chain(5, start=11, genesis_hash=b"\x99" * 32)
        code, out = self.imp("o.rlp", other)
        self.assertEqual(code, 1)
        self.assertIn("mismatched parent hash", out)
        self.assertEqual(self.height(), 10)

    def test_state_root_stops_at_the_last_valid_block_and_exits_0(self):
        self.imp("a.rlp", self.blocks[:10])
        code, out = self.imp("b.rlp", self.blocks[10:], state_root_mismatch_at=20)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"Stage encountered a validation error: mismatched block state root: got 0x[0-9a-f]{64}, expected 0x[0-9a-f]{64} "
                              r"stage=MerkleExecute bad_block=20")
        self.assertIn("Stopped at last valid block 10 due to invalid block 20 in file:", out)
        self.assertNotIn("Chain was fully imported", out)
        self.assertEqual(self.height(), 10)  # the chunk is unwound whole

    def test_a_killed_import_leaves_headers_ahead_and_unwind_repairs_it(self):
        path = self.write("all.rlp", self.blocks)
        flags = ["--chain", self.genesis, "--datadir", self.datadir]
        # The kill comes in the headers stage, before the Merkle stage would check block 25's root.
        done = self.reth("import", "--color", "never", *flags, path, import_stop_at=17, state_root_mismatch_at=25)
        self.assertEqual(done.returncode, -9, done.stderr)
        cps = self.checkpoints()
        self.assertEqual((cps["Headers"], cps["Finish"]), (16, 0))
        again = self.reth("import", *flags, path)  # the same file no longer continues the database
        self.assertEqual(again.returncode, 1)
        self.assertIn("mismatched parent hash", again.stderr)
        self.unwind(0)
        self.assertEqual(self.checkpoints()["Headers"], 0)
        self.assertEqual(self.reth("import", *flags, path).returncode, 0)
        self.assertEqual(self.checkpoints()["Finish"], 30)

    def test_block_zero_in_file_is_refused(self):
        genesis_block = chain(1, start=0)
        code, out = self.imp("g.rlp", genesis_block + self.blocks)
        self.assertEqual(code, 1)
        self.assertIn("mismatched parent hash", out)

    def test_truncated_file_imports_its_whole_blocks_then_fails(self):
        data = b"".join(self.blocks)[:-3]
        path = os.path.join(self.dir, "t.rlp")
        with open(path, "wb") as f:
            f.write(data)
        code, out = self.run_reth("import", "--chain", self.genesis, "--datadir", self.datadir, path)
        self.assertEqual(code, 1)
        self.assertIn("Error: file client has no tip", out)
        self.assertEqual(self.height(), 29)


def reth_hash(raw):
    return common.Block(raw, 0, len(raw)).hash


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
            # Up to 30 s: a cold CI run starts it beside apt and the Go builds (5 s were too few once).
            deadline = time.monotonic() + 30
            while True:
                try:
                    self.assertEqual(common.rpc_call(url, "eth_blockNumber"), "0x0")
                    break
                except OSError:
                    self.assertIsNone(proc.poll(), "the simulator exited")
                    self.assertLess(time.monotonic(), deadline, "the simulator's HTTP port did not answer in 30 s")
                    time.sleep(0.1)
            while True:  # the engine port is bound just after the HTTP one
                try:
                    socket.create_connection(("127.0.0.1", auth), timeout=1).close()
                    break
                except OSError:
                    self.assertLess(time.monotonic(), deadline, "the simulator's engine port did not answer in 30 s")
                    time.sleep(0.1)
            with self.assertRaisesRegex(OSError, "401"):
                common.rpc_call(engine, "eth_blockNumber", jwt_secret=b"\x00" * 32)
            # A head it does not have: SYNCING, as real reth 1.11 answers (not the spec's -38002).
            unknown = common.rpc_call(engine, "engine_forkchoiceUpdatedV3", [{"headBlockHash": "0x" + "12" * 32}, None], jwt_secret=b"\xaa" * 32)
            self.assertEqual((unknown["payloadStatus"]["status"], unknown["payloadId"]), ("SYNCING", None))
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
