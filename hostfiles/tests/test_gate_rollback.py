"""nodefleet_gate.py's rollback (`onFailure: rollback`): what a passing gate keeps, what a failing
one puts back and restarts, what it never puts back (pinned keys and state, what the node signed),
and when it refuses. Each case runs the real gate in a subprocess with a systemctl that records its
calls (tests.test_gate.CommandLineCase). Not shown here: a rollback on a host (the e2e tier's
rollout scenario).

    cd hostfiles && python3 -m unittest tests.test_gate_rollback
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

from tests.test_gate import GATE, CommandLineCase, read, write, write_empty  # noqa: E402


class Rollback(CommandLineCase, unittest.TestCase):
    def recording_systemctl(self, calls):
        """A systemctl that appends each call's arguments to `calls`: the directory it is in."""
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        with open(os.path.join(bin_dir, "systemctl"), "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> {calls}\n")
        os.chmod(os.path.join(bin_dir, "systemctl"), 0o755)
        return bin_dir

    def rollback_gate(self, *args, pins=(), extra_files=()):
        """The gate with `onFailure: rollback` over two files of the node (one made by the change),
        and `pins` pinned, with a systemctl that records its calls."""
        calls = os.path.join(self.dir, "systemctl.calls")
        bin_dir = self.recording_systemctl(calls)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        state = os.path.join(self.dir, "n")
        rb = ["--marker", self.marker, "--keep", self.keep, "--file", self.unit, "--file", self.extra, *(a for p in extra_files for a in ("--file", p)), "--restart", "zgs-storage-1.service", *(a for p in pins for a in ("--pin", p))]
        r = subprocess.run([sys.executable, GATE, "storage", "storage-1", *args, *rb, "--", sys.executable, self.tool, state], capture_output=True, text=True, timeout=60, env=env)
        return r, (read(calls).splitlines() if os.path.exists(calls) else [])

    def rollback_files(self):
        self.marker = os.path.join(self.dir, "gate", "storage-1")
        self.keep = os.path.join(self.dir, "gate", "storage-1.prev")
        self.unit = os.path.join(self.dir, "zgs-storage-1.service")
        self.extra = os.path.join(self.dir, "new-file")
        write(self.unit, "ExecStart=/opt/nodefleet/releases/zgs-old/zgs_node\n")
        os.chmod(self.unit, 0o640)

    def change_the_unit(self):
        write(self.unit, "ExecStart=/opt/nodefleet/releases/zgs-new/zgs_node\n")

    def pin_changed_with_the_change(self, pin, kept, now):
        """Files kept while `pin` held `kept` (a first deploy), then a change of the unit that came
        with `pin` holding `now`: the failing gate's run and the systemctl calls it made."""
        self.rollback_files()
        write(pin, kept)
        self.assertEqual(self.rollback_gate("--within", "0", "--soak", "0", pins=[pin])[0].returncode, 0)
        self.change_the_unit()
        write(pin, now)
        return self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1", pins=[pin])

    def test_rollback_puts_back_what_passed_restarts_and_checks_again(self):
        self.rollback_files()
        first, calls = self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1")
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(calls, [], "a first deploy restarts nothing")
        manifest = json.loads(read(os.path.join(self.keep, "manifest.json")))
        self.assertEqual([(e["path"], e["present"]) for e in manifest], [(self.unit, True), (self.extra, False)])
        self.assertEqual(oct(os.stat(self.keep).st_mode & 0o777), "0o700", "the kept files are root's alone")
        # The change: a new unit and a file the node did not have. The tool answers endpoint-down first.
        self.change_the_unit()
        os.chmod(self.unit, 0o644)
        write(self.extra, "made by the change\n")
        failed, calls = self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1")
        self.assertEqual(failed.returncode, 1, "the up still fails: the change did not pass")
        result = json.loads(failed.stdout.strip().split("\n")[-1])
        self.assertFalse(result["healthy"])
        self.assertTrue(result["rolledBack"])
        self.assertTrue(result["afterRollback"]["healthy"], failed.stderr)
        self.assertEqual(read(self.unit), "ExecStart=/opt/nodefleet/releases/zgs-old/zgs_node\n")
        self.assertEqual(oct(os.stat(self.unit).st_mode & 0o777), "0o640", "its mode as kept")
        self.assertFalse(os.path.exists(self.extra), "a file the node did not have is removed")
        self.assertEqual(calls, ["daemon-reload", "restart zgs-storage-1.service"])
        self.assertIn("rpc-endpoint-down: ", failed.stderr)
        self.assertIn("gate storage-1: rolled back to what it ran before (2 files put back; restarted zgs-storage-1.service)", failed.stderr)
        self.assertIn("gate storage-1: healthy again on what it ran before", failed.stderr)
        self.assertTrue(os.path.isfile(self.marker + ".rolled-back"))
        # The next up with nothing changed: the gate fails at once, asking nothing of the node.
        checks = read(os.path.join(self.dir, "n"))
        again, calls = self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1")
        self.assertEqual(again.returncode, 1)
        self.assertIn("rolled back (", again.stderr)
        self.assertIn("Fix the change", again.stderr)
        self.assertEqual(read(os.path.join(self.dir, "n")), checks, "no health check")
        self.assertEqual(calls, ["daemon-reload", "restart zgs-storage-1.service"], "and no restart")
        # The configure step ran (it removes the marker): the gate checks the node, and keeps what passed.
        os.unlink(self.marker + ".rolled-back")
        passed, _ = self.rollback_gate("--within", "5", "--soak", "0", "--every", "0.1")
        self.assertEqual(passed.returncode, 0, passed.stderr)

    def test_a_rollback_cut_short_puts_back_what_it_can_names_the_rest_and_leaves_the_mark(self):
        self.rollback_files()
        other = os.path.join(self.dir, "etc", "settings.json")
        os.makedirs(os.path.dirname(other))
        write(other, "kept\n")
        rb = lambda *a: self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1", *a, extra_files=(other,))
        self.assertEqual(rb()[0].returncode, 0)
        self.change_the_unit()
        shutil.rmtree(os.path.dirname(other))  # its directory gone: it cannot go back
        failed, calls = rb()
        self.assertEqual(failed.returncode, 1)
        self.assertEqual(read(self.unit), "ExecStart=/opt/nodefleet/releases/zgs-old/zgs_node\n", "the rest went back")
        self.assertIn(f"gate storage-1: rolled back in part: 2 files put back, 1 not:\n  not put back: {other}: ", failed.stderr)
        self.assertEqual(json.loads(failed.stdout.strip().split("\n")[-1])["notRestored"], [other])
        self.assertIn(f"rolled back in part: not put back: {other}", read(self.marker + ".rolled-back"))
        self.assertEqual(calls, ["daemon-reload", "restart zgs-storage-1.service"], "restarted on what is back")

    def test_await_port_restarts_the_last_unit_once_the_port_answers(self):
        # A validator's rollback: the execution client first, the consensus daemon once the engine
        # port answers (here: a wait that records when it was asked, between the two restarts).
        calls = os.path.join(self.dir, "order")
        bin_dir = self.recording_systemctl(calls)
        import importlib.util
        spec = importlib.util.spec_from_file_location("gate_module", GATE)
        gate_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gate_module)
        path = os.environ["PATH"]
        os.environ["PATH"] = f"{bin_dir}:{path}"
        try:
            def waited(port, seconds):
                with open(calls, "a") as f:
                    f.write(f"wait {port} {seconds}\n")
                return True
            self.assertEqual(gate_module.restart(["geth-validator-1.service", "0gchaind-validator-1.service"], 56551, wait=waited), [])
            self.assertEqual(read(calls).splitlines(), ["daemon-reload", "restart geth-validator-1.service", f"wait 56551 {gate_module.AWAIT_PORT_SECONDS}", "restart 0gchaind-validator-1.service"])
            os.unlink(calls)
            failed = gate_module.restart(["geth-validator-1.service", "0gchaind-validator-1.service"], 56551, wait=lambda port, seconds: False)
            self.assertEqual(failed, [f"port 56551 did not answer within {gate_module.AWAIT_PORT_SECONDS} s of the restarts before it; 0gchaind-validator-1.service restarted all the same"])
            self.assertEqual(read(calls).splitlines()[-1], "restart 0gchaind-validator-1.service")
            # A real port: it answers at once.
            import socket
            with socket.socket() as srv:
                srv.bind(("127.0.0.1", 0))
                srv.listen()
                self.assertTrue(gate_module.wait_port(srv.getsockname()[1], 5))
            closed = socket.socket()
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
            closed.close()
            self.assertFalse(gate_module.wait_port(port, 0, sleep=lambda s: None))
        finally:
            os.environ["PATH"] = path

    def test_await_port_is_refused_without_a_rollback_or_with_one_unit(self):
        for args, why in ((["--await-port", "56551"], "--file, --restart, --pin and --await-port go with --keep"),
                          (["--marker", "/m", "--keep", "/k", "--file", "/f", "--restart", "a.service", "--await-port", "56551"], "--await-port needs two --restart units or more"),
                          (["--marker", "/m", "--keep", "/k", "--file", "/f", "--restart", "a.service", "--restart", "b.service", "--await-port", "http"], "--await-port: not a port: 'http'")):
            r = subprocess.run([sys.executable, GATE, "validator", "validator-1", "--within", "1", "--soak", "0", *args, "--", "true"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(why, r.stderr)

    def test_a_passing_gate_keeps_what_the_node_now_runs(self):
        self.rollback_files()
        self.assertEqual(self.rollback_gate("--within", "0", "--soak", "0")[0].returncode, 0)
        self.change_the_unit()
        r, calls = self.rollback_gate("--within", "5", "--soak", "0", "--every", "0.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(calls, [])
        kept = json.loads(read(os.path.join(self.keep, "manifest.json")))[0]
        self.assertEqual(read(os.path.join(self.keep, kept["copy"])), "ExecStart=/opt/nodefleet/releases/zgs-new/zgs_node\n")
        self.assertFalse(os.path.exists(self.keep + ".new") or os.path.exists(self.keep + ".old"))

    def test_rollback_with_nothing_kept_leaves_the_node_as_it_is(self):
        self.rollback_files()
        os.makedirs(os.path.dirname(self.marker))
        write_empty(self.marker)  # deployed before rollback was turned on: nothing kept
        r, calls = self.rollback_gate("--within", "0", "--soak", "0")
        self.assertEqual(r.returncode, 1)
        self.assertIn("nothing is kept to roll it back to", r.stderr)
        self.assertFalse(json.loads(r.stdout.strip().split("\n")[-1])["rolledBack"])
        self.assertEqual(calls, [])
        self.assertFalse(os.path.exists(self.marker + ".rolled-back"))

    def test_a_pinned_file_as_kept_lets_the_rollback_run_and_is_never_put_back(self):
        self.rollback_files()
        key = os.path.join(self.dir, "aztec.env")
        write(key, "VALIDATOR_PRIVATE_KEY=0xSECRETKEY\n")
        self.assertEqual(self.rollback_gate("--within", "0", "--soak", "0", pins=[key])[0].returncode, 0)
        manifest = json.loads(read(os.path.join(self.keep, "manifest.json")))
        pinned = [e for e in manifest if e.get("pinned")]
        self.assertEqual([(e["path"], "copy" in e) for e in pinned], [(key, False)], "only its digest is kept")
        self.assertEqual(sorted(os.listdir(self.keep)), ["f0", "manifest.json"], "no copy of the pinned file")
        self.assertNotIn("SECRETKEY", read(os.path.join(self.keep, "manifest.json")))
        self.change_the_unit()
        r, calls = self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1", pins=[key])
        self.assertEqual(r.returncode, 1)
        self.assertTrue(json.loads(r.stdout.strip().split("\n")[-1])["rolledBack"], r.stderr)
        self.assertEqual(read(self.unit), "ExecStart=/opt/nodefleet/releases/zgs-old/zgs_node\n")
        self.assertEqual(read(key), "VALIDATOR_PRIVATE_KEY=0xSECRETKEY\n")
        self.assertEqual(calls, ["daemon-reload", "restart zgs-storage-1.service"])

    def test_a_pinned_file_changed_since_it_was_kept_stops_the_rollback(self):
        # A new key (or endpoints, or the variables' names of another version) with the change: the
        # kept unit was run with the old one, which the operator may have moved to another machine.
        key = os.path.join(self.dir, "aztec.env")
        r, calls = self.pin_changed_with_the_change(key, "VALIDATOR_PRIVATE_KEY=0xOLDKEY\n", "VALIDATOR_PRIVATE_KEY=0xNEWKEY\n")
        self.assertEqual(r.returncode, 1)
        result = json.loads(r.stdout.strip().split("\n")[-1])
        self.assertFalse(result["rolledBack"])
        self.assertEqual(result["pinsChanged"], [key])
        self.assertIn(f"gate storage-1: not rolled back: {key} changed since it last passed its gate", r.stderr)
        for secret in ("OLDKEY", "NEWKEY"):
            self.assertNotIn(secret, r.stderr + r.stdout)
        self.assertEqual(read(self.unit), "ExecStart=/opt/nodefleet/releases/zgs-new/zgs_node\n", "left as it is")
        self.assertEqual(calls, [], "nothing restarted")
        self.assertFalse(os.path.exists(self.marker + ".rolled-back"), "not marked rolled back: the next up checks it")

    def test_a_validator_switched_from_geth_to_reth_since_its_files_were_kept_is_not_rolled_back(self):
        # The validator's switch state (its host tool's state.json) is pinned: the kept units are
        # geth's, and the node now runs reth; putting them back would start the client it left.
        state = os.path.join(self.dir, "state.json")
        r, calls = self.pin_changed_with_the_change(state, '{"client": "geth", "since": "2026-11-29T07:00:00Z"}\n', '{"client": "reth", "since": "2026-11-29T08:00:00Z"}\n')
        self.assertEqual(r.returncode, 1)
        self.assertEqual(json.loads(r.stdout.strip().split("\n")[-1])["pinsChanged"], [state])
        self.assertIn(f"not rolled back: {state} changed since it last passed its gate", r.stderr)
        self.assertEqual(calls, [], "nothing restarted")

    def test_what_the_node_signed_since_its_files_were_kept_is_intact_after_a_rollback(self):
        # A validator's priv_validator_state.json is never kept: it records what the node signed,
        # and an older copy put back could let it sign a height twice.
        self.rollback_files()
        signed = os.path.join(self.dir, "priv_validator_state.json")
        write(signed, '{"height": "100", "round": 0, "step": 3}\n')
        self.assertEqual(self.rollback_gate("--within", "0", "--soak", "0")[0].returncode, 0)
        self.change_the_unit()
        write(signed, '{"height": "142", "round": 0, "step": 3}\n')
        r, calls = self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1")
        self.assertEqual(r.returncode, 1)
        self.assertTrue(json.loads(r.stdout.strip().split("\n")[-1])["rolledBack"], r.stderr)
        self.assertEqual(read(self.unit), "ExecStart=/opt/nodefleet/releases/zgs-old/zgs_node\n", "the unit put back")
        self.assertEqual(read(signed), '{"height": "142", "round": 0, "step": 3}\n', "the signing state as the node left it")
        self.assertNotIn("priv_validator_state", read(os.path.join(self.keep, "manifest.json")))

    def test_files_kept_with_no_record_of_a_pin_are_not_rolled_back(self):
        # Kept by a gate of before the pin (an earlier nodefleet): nothing says the key is the same.
        self.rollback_files()
        self.assertEqual(self.rollback_gate("--within", "0", "--soak", "0")[0].returncode, 0)
        key = os.path.join(self.dir, "aztec.env")
        write_empty(key)
        self.change_the_unit()
        r, calls = self.rollback_gate("--within", "0", "--soak", "0", "--every", "0.1", pins=[key])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(json.loads(r.stdout.strip().split("\n")[-1])["pinsChanged"], [key])
        self.assertEqual(calls, [])


if __name__ == "__main__":
    unittest.main()
