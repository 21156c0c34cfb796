"""consensus-height-rollback.py run for real: the 0gchaind simulator's `rollback` as the daemon,
a local JSON-RPC server as the execution client. (Reading the height from the journal is proven
on the dev VMs; here --height gives it.)

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTFILES = os.path.dirname(HERE)
SIM = os.path.join(os.path.dirname(HOSTFILES), "lab", "sim")
sys.path.insert(0, SIM)
from nodefleet_sim import common  # noqa: E402

SCRIPT = os.path.join(HOSTFILES, "consensus-height-rollback.py")


class HeightRollback(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="nodefleet-rollback-")
        self.home = os.path.join(self.d, "home")
        os.makedirs(os.path.join(self.home, "config"))
        os.makedirs(os.path.join(self.home, "data"))
        self.binary = os.path.join(self.d, "0gchaind")
        with open(self.binary, "w") as f:
            f.write(f"#!/bin/sh\ncd {SIM} && exec {sys.executable} -m nodefleet_sim.zerog \"$@\"\n")
        os.chmod(self.binary, stat.S_IRWXU)
        self.el = {"height": "0x64"}
        self.server = common.serve_jsonrpc("127.0.0.1", 0, {"eth_blockNumber": lambda: self.el["height"]})
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tearDown(self):
        self.server.shutdown()

    def beacond_app(self, extra='pruning = "default"'):
        """An app.toml naming the pruning strategy and the files beacond's rollback loads (here: any existing file)."""
        with open(os.path.join(self.home, "config", "app.toml"), "w") as f:
            f.write(f'{extra}\n[beacon-kit.engine]\njwt-secret-path = "{SCRIPT}"\n[beacon-kit.kzg]\ntrusted-setup-path = "{SCRIPT}"\n')

    def consensus(self, height):
        state = {"height": height, "hashes": {str(h): f"0x{h:064x}" for h in range(max(0, height - 20), height + 1)}}
        with open(os.path.join(self.home, "data", "nodefleet-sim-state.json"), "w") as f:
            json.dump(state, f)

    def height(self):
        with open(os.path.join(self.home, "data", "nodefleet-sim-state.json")) as f:
            return json.load(f)["height"]

    def run_script(self, *args):
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.home, self.url, "--binary", self.binary, *args], capture_output=True, text=True)
        return done.returncode, done.stdout, done.stderr

    def test_rolls_back_exactly_to_the_execution_height(self):
        self.consensus(104)
        code, out, err = self.run_script("--height", "104")
        self.assertEqual(code, 0, err)
        self.assertEqual(self.height(), 100)
        report = json.loads(out.strip().splitlines()[-1])
        self.assertEqual((report["rolledBack"], report["consensusHeight"], report["executionHeight"]), (4, 100, 100))

    def test_nothing_to_do_when_not_ahead(self):
        self.consensus(99)
        code, out, _ = self.run_script("--height", "99")
        self.assertEqual(code, 0)
        self.assertIn("nothing to roll back", out)
        self.assertEqual(self.height(), 99)

    def test_dry_run_changes_nothing(self):
        self.consensus(103)
        code, out, _ = self.run_script("--height", "103", "--dry-run")
        self.assertEqual(code, 0)
        self.assertIn("would roll back 3 height(s), 103 -> 100", out)
        self.assertEqual(self.height(), 103)

    def test_refuses_more_than_max(self):
        self.consensus(200)
        code, _, err = self.run_script("--height", "200", "--max", "10")
        self.assertEqual(code, 1)
        self.assertIn("100 ahead of the execution client (100), more than --max 10", err)
        self.assertEqual(self.height(), 200)

    def test_bad_execution_answer_is_named(self):
        self.el["height"] = "latest"
        self.consensus(104)
        code, _, err = self.run_script("--height", "104")
        self.assertEqual(code, 1)
        self.assertIn(f"eth_blockNumber at {self.url}: 'latest' is not a hex block number", err)
        self.assertEqual(self.height(), 104)

    def test_refuses_a_directory_that_is_not_a_consensus_home(self):
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.d + "/nope", self.url, "--height", "5"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("not a consensus home (no config directory)", done.stderr)

    def test_usage(self):
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.home], capture_output=True, text=True)
        self.assertEqual(done.returncode, 2)

    def test_a_daemon_that_prints_no_height_counts_one_per_run_and_every_run_is_hard(self):
        """BeaconKit's beacond v1.1 logs "Rolled back state to height %d and hash %X" (its format
        verbs unfilled): each successful run counts as one height. Every run passes --hard: without
        it CometBFT goes back one height once and then changes nothing."""
        runs = os.path.join(self.d, "runs")
        beacond = os.path.join(self.d, "beacond")
        with open(beacond, "w") as f:
            f.write(f'#!/bin/sh\necho "$*" >> {runs}\nprintf \'INFO Rolled back state to height %%d and hash %%X\\n =\\001\\002\\n\'\n')
        os.chmod(beacond, stat.S_IRWXU)
        self.beacond_app()
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.home, self.url, "--binary", beacond, "--height", "103"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertEqual((report["rolledBack"], report["consensusHeight"]), (3, 100))
        with open(runs) as f:
            self.assertEqual(f.read().splitlines(), [f"rollback --hard --home {self.home}"] * 3)

    def test_a_failing_rollback_is_named_by_its_binary(self):
        beacond = os.path.join(self.d, "beacond")
        with open(beacond, "w") as f:
            f.write("#!/bin/sh\necho 'panic: runtime error: invalid memory address or nil pointer dereference' >&2\nexit 2\n")
        os.chmod(beacond, stat.S_IRWXU)
        self.beacond_app()
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.home, self.url, "--binary", beacond, "--height", "101"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("beacond rollback at height 101 failed (exit 2): panic: runtime error", done.stderr)

    def test_a_rollback_deeper_than_the_pruned_application_state_is_refused_before_anything_runs(self):
        """BeaconKit keeps only the application states app.toml's pruning keeps (`beacond init`
        writes pruning = "everything": two). A rollback deeper than that fails half-way (CometBFT
        rolled back, the application not: the node cannot start), so it is refused up front."""
        runs = os.path.join(self.d, "runs")
        beacond = os.path.join(self.d, "beacond")
        with open(beacond, "w") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> {runs}\n")
        os.chmod(beacond, stat.S_IRWXU)
        for pruning, ahead, refused in (('pruning = "everything"', 3, True), ('pruning = "everything"', 1, False),
                                        ('pruning = "custom"\npruning-keep-recent = "100"', 99, False),
                                        ('pruning = "custom"\npruning-keep-recent = "100"', 100, True), ('pruning = "nothing"', 60, False)):
            self.beacond_app(pruning)
            done = subprocess.run([sys.executable, "-S", SCRIPT, self.home, self.url, "--binary", beacond, "--height", str(100 + ahead), "--max", "1000", "--dry-run"],
                                  capture_output=True, text=True)
            if refused:
                self.assertEqual(done.returncode, 1, pruning)
                self.assertIn(f"keeps the last", done.stderr)
                self.assertIn("Nothing was changed", done.stderr)
            else:
                self.assertEqual(done.returncode, 0, done.stderr)
        self.assertFalse(os.path.exists(runs), "the daemon was never run")

    def test_beacond_needs_its_files_in_app_toml_and_is_not_run_without_them(self):
        runs = os.path.join(self.d, "runs")
        beacond = os.path.join(self.d, "beacond")
        with open(beacond, "w") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> {runs}\necho 'Rolled back state to height %d and hash %X'\n")
        os.chmod(beacond, stat.S_IRWXU)
        jwt = os.path.join(self.d, "jwt.hex")
        with open(jwt, "w") as f:
            f.write("0x" + "00" * 32)
        app = os.path.join(self.home, "config", "app.toml")
        with open(app, "w") as f:
            f.write(f'[beacon-kit.engine]\njwt-secret-path = "{jwt}"\n[beacon-kit.kzg]\ntrusted-setup-path = "./testing/files/kzg-trusted-setup.json"\n')
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.home, self.url, "--binary", beacond, "--height", "101"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("[beacon-kit.kzg] trusted-setup-path is './testing/files/kzg-trusted-setup.json', not the absolute path of a file", done.stderr)
        self.assertFalse(os.path.exists(runs))
        # Without a pruning strategy its start takes the SDK's default, its rollback panics
        # ("unknown pruning strategy", seen on the dev VM).
        with open(app, "w") as f:
            f.write(f'[beacon-kit.engine]\njwt-secret-path = "{jwt}"\n[beacon-kit.kzg]\ntrusted-setup-path = "{jwt}"\n')
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.home, self.url, "--binary", beacond, "--height", "101"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 1)
        self.assertIn("pruning is None, not one of default, everything, nothing, custom", done.stderr)
        self.assertFalse(os.path.exists(runs))
        with open(app, "w") as f:
            f.write(f'pruning = "default"\n[beacon-kit.engine]\njwt-secret-path = "{jwt}"\n[beacon-kit.kzg]\ntrusted-setup-path = "{jwt}"\n')
        done = subprocess.run([sys.executable, "-S", SCRIPT, self.home, self.url, "--binary", beacond, "--height", "101"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)


if __name__ == "__main__":
    unittest.main()
