"""zgs-endpoint.py run for real: the miner key and the endpoint it renders into config.toml
(zgs_node v1.1.0 reads miner_key from its config file alone), against a local JSON-RPC server and
dead ports. It writes /etc/nodefleet/<node> like on a host, under a test node name; `systemctl` is a
stand-in that keeps one unit's state as systemd's verbs change it. What it cannot prove: systemd's
own try-restart and the real node reading the file (the cli tier's contract test and the E2E tier
do).

    cd hostfiles && python3 -m unittest tests.test_storage_endpoint
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unittest

from tests.test_storage_health import dead_port, server

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "zgs-endpoint.py")
NODE = "nodefleet-test-endpoint-key"
KEY = "c0ffee" * 10 + "abcd"
TEMPLATE = 'blockchain_rpc_endpoint = "@NODEFLEET_RPC_ENDPOINT@"\nminer_key = "@NODEFLEET_MINER_KEY@"\n'


class StorageEndpointKey(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-zgs-endpoint-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.etc = f"/etc/nodefleet/{NODE}"
        os.makedirs(self.etc, exist_ok=True)
        self.addCleanup(shutil.rmtree, self.etc, True)
        self.spec = {k: os.path.join(self.dir, f) for k, f in
                     (("template", "config.toml.nodefleet"), ("config", "config.toml"), ("urls", "urls.json"), ("minerKey", "miner.key"))}
        self.spec["service"] = f"zgs-{NODE}.service"
        with open(os.path.join(self.etc, "storage.json"), "w") as f:
            json.dump(self.spec, f)
        with open(self.spec["template"], "w") as f:
            f.write(TEMPLATE)
        self.chain = server({"eth_blockNumber": "0x10"})
        self.addCleanup(self.chain.server_close)
        self.addCleanup(self.chain.shutdown)
        self.good = f"http://127.0.0.1:{self.chain.server_address[1]}"

    def urls(self, *endpoints):
        with open(self.spec["urls"], "w") as f:
            json.dump({"rpcEndpoints": list(endpoints)}, f)

    def key(self, text):
        with open(self.spec["minerKey"], "w") as f:
            f.write(text)

    def run_tool(self, *args, env=None):
        r = subprocess.run([sys.executable, SCRIPT, NODE, *args], capture_output=True, text=True, env=env)
        return r.returncode, r.stdout + r.stderr

    def systemctl(self, state):
        """A stand-in systemctl on PATH for the node's unit, in STATE (active or inactive): it logs
        each call and changes the state as systemd's verbs do (try-restart: only a running unit)."""
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        self.unit_state = os.path.join(self.dir, "unit-state")
        self.calls = os.path.join(self.dir, "calls")
        with open(self.unit_state, "w") as f:
            f.write(state)
        with open(os.path.join(bin_dir, "systemctl"), "w") as f:
            f.write(f"""#!/bin/sh
echo "$*" >> '{self.calls}'
s=$(cat '{self.unit_state}')
case "$1" in
start|restart) echo active > '{self.unit_state}' ;;
try-restart) ;;
stop) echo inactive > '{self.unit_state}' ;;
is-active) [ "$s" = active ] ;;
*) exit 9 ;;
esac
""")
        os.chmod(os.path.join(bin_dir, "systemctl"), 0o755)
        return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}

    def test_a_node_the_operator_stopped_stays_stopped_when_the_failover_rewrites_its_config(self):
        self.key(KEY)
        self.urls(f"http://127.0.0.1:{dead_port()}", self.good)
        env = self.systemctl("inactive")
        rc, out = self.run_tool("--restart", env=env)
        self.assertEqual(rc, 10, out)
        self.assertEqual(self.config()["blockchain_rpc_endpoint"], self.good)
        with open(self.calls) as f:
            calls = f.read().split("\n")
        self.assertEqual([c for c in calls if c], [f"try-restart zgs-{NODE}.service"], "only try-restart: never start, restart or a check then a restart")
        with open(self.unit_state) as f:
            self.assertEqual(f.read().strip(), "inactive", "the node stays stopped")
        # Run again: the file is what it would write, so nothing is written or restarted.
        os.remove(self.calls)
        rc, out = self.run_tool("--restart", env=env)
        self.assertEqual(rc, 0, out)
        self.assertFalse(os.path.exists(self.calls), "nothing restarted when nothing changed")

    def config(self):
        with open(self.spec["config"], "rb") as f:
            return tomllib.load(f)

    def test_the_key_goes_into_config_toml_and_is_never_printed(self):
        self.urls(self.good)
        self.key(KEY + "\n")
        rc, said = self.run_tool()
        self.assertEqual(rc, 10, said)
        self.assertEqual(self.config(), {"blockchain_rpc_endpoint": self.good, "miner_key": KEY})
        self.assertEqual(os.stat(self.spec["config"]).st_mode & 0o777, 0o600)
        self.assertNotIn(KEY, said)
        self.assertEqual(self.run_tool()[0], 0, "nothing changed: nothing written")

    def test_a_missing_or_malformed_key_file_stops_it_without_writing_or_echoing(self):
        self.urls(self.good)
        rc, said = self.run_tool()
        self.assertEqual(rc, 3)
        self.assertIn(f"the miner key file {self.spec['minerKey']} is missing", said)
        # A malformed file (here: a key with a stray quote that would end the TOML string).
        self.key(KEY[:-1] + '"')
        rc, said = self.run_tool()
        self.assertEqual(rc, 3)
        self.assertIn("does not hold 64 hex digits", said)
        self.assertNotIn(KEY[:-1], said)
        self.assertFalse(os.path.exists(self.spec["config"]), "config.toml was written")

    def test_a_new_key_goes_in_even_while_no_endpoint_answers_keeping_the_endpoint_in_use(self):
        self.urls(self.good)
        self.key(KEY)
        self.assertEqual(self.run_tool()[0], 10)
        dead = [f"http://127.0.0.1:{dead_port()}", f"http://127.0.0.1:{dead_port()}"]
        self.urls(*dead)
        self.assertEqual(self.run_tool()[0], 2, "no candidate answers and nothing to change")
        new = "ab" * 32
        self.key(new)
        rc, said = self.run_tool()
        self.assertEqual(rc, 10, said)
        self.assertIn("no candidate answers eth_blockNumber", said)
        self.assertEqual(self.config(), {"blockchain_rpc_endpoint": self.good, "miner_key": new})

    def test_the_drift_record_holds_the_digest_of_what_it_rendered(self):
        import hashlib
        self.spec["driftRecord"] = os.path.join(self.dir, "drift")
        with open(os.path.join(self.etc, "storage.json"), "w") as f:
            json.dump(self.spec, f)
        self.urls(self.good)
        self.key(KEY)
        self.assertEqual(self.run_tool()[0], 10)
        with open(self.spec["config"], "rb") as f:
            written = f.read()
        with open(os.path.join(self.spec["driftRecord"], "f.config")) as f:
            kind, path, digest, mode_owner = f.read().rstrip("\n").split("\t")
        self.assertEqual((kind, path, digest), ("file", self.spec["config"], hashlib.sha256(written).hexdigest()))
        self.assertTrue(mode_owner.startswith("600 "), mode_owner)
        self.assertNotIn(KEY, open(os.path.join(self.spec["driftRecord"], "f.config")).read())
        # A hand edit is put back on the next run, and the record still names the rendered file.
        with open(self.spec["config"], "a") as f:
            f.write("# edited by hand\n")
        self.assertEqual(self.run_tool()[0], 10)
        with open(os.path.join(self.spec["driftRecord"], "f.config")) as f:
            self.assertEqual(f.read().split("\t")[2], hashlib.sha256(written).hexdigest())


if __name__ == "__main__":
    unittest.main()
