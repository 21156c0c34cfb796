"""0gchaind and aztec simulators against the spec, each as a real process (zgs_node is real now:
its simulator is gone, see test/cli/zgs-contract.test.ts)."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from nodefleet_sim import common, zerog
from tests.support import consensus_home, free_port, until
from tests.test_reth import SIM_ROOT

FAST = {"NODEFLEET_SIM_BLOCK_TIME": "0.2"}


def start(module, *args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_SIM_")}
    e.update(FAST, **(env or {}))
    return subprocess.Popen([sys.executable, "-m", f"nodefleet_sim.{module}", *args], cwd=SIM_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e)


def run(module, *args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_SIM_")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", f"nodefleet_sim.{module}", *args], cwd=SIM_ROOT, capture_output=True, text=True, env=e, timeout=60)


def stop(proc):
    proc.terminate()
    try:
        return proc.communicate(timeout=10)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


class ZeroGChain(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.genesis = os.path.join(self.d, "genesis.json")
        with open(self.genesis, "w") as f:
            json.dump({"config": {"chainId": 16661}}, f)
        self.jwt = os.path.join(self.d, "jwt.hex")
        with open(self.jwt, "w") as f:
            f.write("0x" + "ab" * 32)
        self.http, self.auth, self.cmt = free_port(), free_port(), free_port()
        self.reth = start("reth", "node", "--chain", self.genesis, "--datadir", os.path.join(self.d, "reth"), "--http",
                          "--http.port", str(self.http), "--authrpc.port", str(self.auth), "--authrpc.jwtsecret", self.jwt)
        self.home = consensus_home(os.path.join(self.d, "0gchaind"), self.auth, self.jwt, self.cmt)
        until(lambda: common.rpc_call(f"http://127.0.0.1:{self.http}", "eth_blockNumber"))

    def tearDown(self):
        stop(self.reth)

    def status(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.cmt}/status", timeout=2) as r:
            return json.load(r)["result"]["sync_info"]

    def test_commits_follow_the_el_and_status_reports_sync(self):
        node = start("zerog", "start", "--home", self.home)
        try:
            until(lambda: int(self.status()["latest_block_height"]) >= 3, timeout=15)
            until(lambda: self.status()["catching_up"] is False)
            second = run("zerog", "start", "--home", self.home)
            self.assertEqual(second.returncode, 1)
            self.assertIn("another 0gchaind is running", second.stdout + second.stderr)
        finally:
            out = stop(node)
        self.assertRegex(out, r"Committed state height=\d+")

    def test_behind_the_el_catches_up_in_batches_with_the_el_hashes(self):
        node = start("zerog", "start", "--home", self.home)
        try:
            until(lambda: int(self.status()["latest_block_height"]) >= 4, timeout=15)
        finally:
            stop(node)
        fresh = consensus_home(os.path.join(self.d, "fresh"), self.auth, self.jwt, self.cmt)  # height 0: behind reth
        node = start("zerog", "start", "--home", fresh)
        try:
            until(lambda: int(self.status()["latest_block_height"]) >= 4 and self.status()["catching_up"] is False, timeout=15)
        finally:
            out = stop(node)
        url = f"http://127.0.0.1:{self.http}"
        for h in range(1, 5):
            want = common.rpc_call(url, "eth_getBlockByNumber", [hex(h), False])["hash"]
            self.assertIn(f"Committed state height={h} block_hash={want}", out)
        # The batch itself, as reth answers one: in order, an error where a call fails.
        self.assertEqual(common.rpc_batch(url, [("eth_blockNumber", []), ("net_peerCount", [])])[1], "0x0")
        with self.assertRaises(common.RpcError):
            common.rpc_batch(url, [("eth_blockNumber", []), ("no_such_method", [])])

    def test_ahead_of_the_el_logs_el_syncing_until_rolled_back(self):
        with open(os.path.join(self.home, "data", "nodefleet-sim-state.json"), "w") as f:
            json.dump({"height": 10_000, "hashes": {"10000": "0x" + "77" * 32}}, f)
        node = start("zerog", "start", "--home", self.home)
        lines = []

        def read():
            for line in node.stdout:
                lines.append(line)
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        # Read as it runs, not after a fixed sleep: a loaded machine (two cores, every suite at once)
        # may start it late.
        retries = lambda: sum("NotifyForkchoiceUpdate: EL syncing. Retrying..." in line for line in lines)  # noqa: E731
        until(lambda: retries() >= 2, timeout=30)
        node.terminate()
        node.wait(timeout=10)
        reader.join(timeout=10)
        out = "".join(lines)
        # The EL lacks 0gchaind's head and answers SYNCING: beacon-kit's lines, the warning once.
        self.assertEqual(out.count("Your execution client is syncing"), 1, out)
        self.assertGreaterEqual(out.count("NotifyForkchoiceUpdate: EL syncing. Retrying..."), 2, out)
        self.assertNotIn("Committed state", out)
        r = run("zerog", "rollback", "--home", self.home)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Rolled back state to height 9999", r.stdout)

    def test_jwt_mismatch_fails_like_the_real_one(self):
        other = os.path.join(self.d, "other.hex")
        with open(other, "w") as f:
            f.write("cd" * 32)
        r = run("zerog", "start", "--home", self.home, "--chaincfg.engine.jwt-secret-path", other)
        self.assertEqual(r.returncode, 1)
        self.assertIn("the JWT secret differs", r.stdout)

    def test_missing_priv_validator_state(self):
        os.unlink(os.path.join(self.home, "data", "priv_validator_state.json"))
        r = run("zerog", "start", "--home", self.home)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("error reading PrivValidator state", r.stderr)
        self.assertIn("priv_validator_state.json: no such file or directory", r.stderr)


class Sequencer(unittest.TestCase):
    """The aztec simulator is the registration CLI alone (its node is the real one now)."""

    def test_add_l1_validator_and_quota_revert(self):
        args = ["add-l1-validator", "--l1-rpc-urls", "http://127.0.0.1:8545", "--private-key", "0x" + "4c" * 32, "--attester", "0x" + "ab" * 20,
                "--proposer-eoa", "0x" + "ab" * 20, "--staking-asset-handler", "0x" + "cd" * 20, "--l1-chain-id", "11155111"]
        self.assertEqual(run("aztec", *args).returncode, 0)
        until_ts = int(time.time()) + 3600
        r = run("aztec", *args, env={"NODEFLEET_SIM_VALIDATOR_QUOTA_FILLED_UNTIL": str(until_ts)})
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"ValidatorQuotaFilledUntil(uint256 {until_ts})", r.stderr)

    def test_add_l1_validator_reads_the_key_from_private_key_like_the_real_cli(self):
        args = ["add-l1-validator", "--l1-rpc-urls", "http://127.0.0.1:8545", "--attester", "0x" + "ab" * 20,
                "--proposer-eoa", "0x" + "ab" * 20, "--staking-asset-handler", "0x" + "cd" * 20, "--l1-chain-id", "11155111"]
        r = run("aztec", *args, env={"PRIVATE_KEY": "0x" + "4c" * 32})
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("aztec", *args, env={"PRIVATE_KEY": ""})
        self.assertEqual(r.returncode, 1)
        self.assertIn("--private-key is required", r.stderr)


if __name__ == "__main__":
    unittest.main()
