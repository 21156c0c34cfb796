"""nodefleet_gate.py, a rollout's gate: healthy within the deadline and for the soak, or a failure
naming the node's diagnoses. The timing cases run gate() on a fake clock with rows made from the
recorded health answers (test/fixtures/status); the command line runs a real health command (a
script that prints those answers in turn) in a subprocess. Not shown here: the gate after a real
restart on a host (the VM tier).

    cd hostfiles && python3 -m unittest tests.test_gate
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import nodefleet_gate as gate_tool  # noqa: E402
import nodefleet_health as health  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "test", "fixtures", "status")
GATE = os.path.join(os.path.dirname(HERE), "nodefleet_gate.py")


def answers(role):
    with open(os.path.join(FIXTURES, f"{role}.json"), encoding="utf-8") as f:
        return json.load(f)


STORAGE = answers("storage")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_empty(path):
    with open(path, "w", encoding="utf-8"):
        pass


def row(name):
    return health.diagnose("storage-1", "storage", "dev-1", STORAGE[name])


class Clock:
    """A clock that moves only when the gate sleeps, and each health check takes `cost` seconds."""

    def __init__(self, cost=2.0):
        self.now, self.cost = 1000.0, cost

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def run(sequence, clock, **kw):
    """gate() over `sequence` (fixture names; the last repeats), each check advancing the clock."""
    seen = []

    def check():
        name = sequence[min(len(seen), len(sequence) - 1)]
        seen.append(name)
        clock.now += clock.cost
        return row(name)

    opts = {"within": 60, "soak": 30, "every": 10, **kw}
    return health_gate(check, clock, opts), seen


def health_gate(check, clock, opts):
    return gate_tool.gate("storage", "storage-1", ["unused"], opts["within"], opts["soak"], opts["every"], 5, clock=clock, sleep=clock.sleep, run=check, restarts=opts.get("restarts"))


class Gate(unittest.TestCase):
    def test_the_fixtures_are_what_the_cases_take_them_for(self):
        self.assertTrue(row("healthy")["healthy"])
        self.assertFalse(row("endpoint-down")["healthy"])

    def test_healthy_after_a_while_then_for_the_soak_passes(self):
        result, seen = run(["endpoint-down", "endpoint-down", "healthy"], Clock())
        self.assertTrue(result["healthy"])
        # Healthy at the third check (t=2+12+12=26 s after the start), then 30 s of healthy answers.
        self.assertEqual(result["waited"], 26.0)
        self.assertGreaterEqual(result["soaked"], 30)
        self.assertEqual(seen[:3], ["endpoint-down", "endpoint-down", "healthy"])
        self.assertEqual(result["checks"], 6)  # 26, 38, 50, 62 s: 36 s >= 30 at the sixth

    def test_never_healthy_fails_at_the_deadline_with_the_last_diagnoses(self):
        result, seen = run(["endpoint-down"], Clock())
        self.assertFalse(result["healthy"])
        self.assertGreaterEqual(result["waited"], 60)
        self.assertLess(result["waited"], 60 + 12)
        self.assertEqual([d["fault"] for d in result["diagnoses"] if d["severity"] == "error"], ["rpc-endpoint-down"])
        self.assertEqual(result["checks"], len(seen))

    def test_an_unhealthy_answer_in_the_soak_starts_it_again(self):
        result, seen = run(["healthy", "healthy", "endpoint-down", "healthy"], Clock(), within=120, soak=30)
        self.assertTrue(result["healthy"])
        self.assertIn("endpoint-down", seen)
        # The soak counted from the answer after the unhealthy one (the fourth check, t=38 s).
        self.assertEqual(result["waited"], 38.0)

    def test_a_soak_broken_past_the_deadline_fails(self):
        result, _ = run(["healthy", "healthy", "healthy", "endpoint-down"], Clock(), within=30, soak=60)
        self.assertFalse(result["healthy"])
        self.assertEqual([d["fault"] for d in result["diagnoses"] if d["severity"] == "error"], ["rpc-endpoint-down"])

    def test_a_soak_of_zero_passes_at_the_first_healthy_answer(self):
        result, seen = run(["healthy"], Clock(), soak=0)
        self.assertTrue(result["healthy"])
        self.assertEqual(seen, ["healthy"])

    def test_a_warning_is_not_unhealthy(self):
        peers = row("peers-0")
        self.assertTrue(peers["healthy"])
        self.assertTrue(any(d["severity"] == "warning" for d in peers["diagnoses"]))
        result, _ = run(["peers-0"], Clock(), soak=0)
        self.assertTrue(result["healthy"])

    def test_a_unit_systemd_keeps_restarting_fails_the_gate_before_the_deadline(self):
        clock, counts = Clock(), iter([4, 5, 6, 7, 8, 9])
        result, seen = run(["endpoint-down"], clock, within=900, restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertFalse(result["healthy"])
        self.assertEqual(result["crashLoop"], {"unit": "zgs-storage-1.service", "restarts": 3}, "counted from the gate's start (4), not from boot")
        self.assertEqual(len(seen), 3)
        self.assertLess(result["waited"], 60)
        self.assertEqual([d["fault"] for d in result["diagnoses"] if d["severity"] == "error"], ["rpc-endpoint-down"])

    def test_restarts_while_the_node_answers_healthy_are_no_crash_loop(self):
        counts = iter(range(0, 100, 2))
        result, _ = run(["healthy"], Clock(), restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertTrue(result["healthy"])
        self.assertNotIn("crashLoop", result)

    def test_a_count_reset_by_an_explicit_restart_is_the_new_base(self):
        counts = iter([5, 0, 1, 2, 3])  # 5 at the start; the failover timer restarts it: 0
        result, seen = run(["endpoint-down"], Clock(), within=900, restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertEqual(result["crashLoop"], {"unit": "zgs-storage-1.service", "restarts": 3})
        self.assertEqual(len(seen), 4)

    def test_an_unreadable_count_is_unknown_not_zero(self):
        # The unit has restarted 7 times before the gate (an older crash, a failover); systemctl
        # cannot answer at the gate's start: 7 must not count as 7 new restarts at the next read.
        counts = iter([None, 7, 7, None, 8, 8, 8, 8, 8, 8, 8, 8])
        result, _ = run(["endpoint-down"], Clock(), within=60, restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertFalse(result["healthy"])
        self.assertNotIn("crashLoop", result, "a restart history older than the gate is no crash loop")

    def test_a_restart_history_older_than_the_gate_is_its_base(self):
        counts = iter([41, 41, 42, 43, 44])
        result, seen = run(["endpoint-down"], Clock(), within=900, restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertEqual(result["crashLoop"], {"unit": "zgs-storage-1.service", "restarts": 3}, "3 since the gate began, not 44")
        self.assertEqual(len(seen), 4)

    def test_restarts_while_healthy_move_the_base_so_a_later_unhealthy_spell_counts_from_there(self):
        # healthy, healthy (2 restarts meanwhile), then unhealthy with one more restart: 1, not 3.
        counts = iter([0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3])
        result, _ = run(["healthy", "healthy", "endpoint-down"], Clock(), within=60, soak=300, restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertFalse(result["healthy"])
        self.assertNotIn("crashLoop", result)

    def test_fewer_restarts_wait_out_the_deadline(self):
        counts = iter([0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
        result, seen = run(["endpoint-down"], Clock(), within=60, restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertFalse(result["healthy"])
        self.assertNotIn("crashLoop", result)
        self.assertGreaterEqual(result["waited"], 60)


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-gate-")
        # A health tool that prints the answers of `sequence` in turn, one per run (the last repeats).
        self.tool = os.path.join(self.dir, "health.py")
        with open(self.tool, "w", encoding="utf-8") as f:
            f.write(
                "import json, os, sys\n"
                "state = sys.argv[1]\n"
                "n = int(open(state).read()) if os.path.exists(state) else 0\n"
                "open(state, 'w').write(str(n + 1))\n"
                f"seq = json.loads({json.dumps([STORAGE['endpoint-down'], STORAGE['healthy']])!r})\n"
                "print('progress line first')\n"
                "print(json.dumps(seq[min(n, len(seq) - 1)]))\n"
            )

    def gate(self, *args):
        state = os.path.join(self.dir, "n")
        return subprocess.run([sys.executable, GATE, "storage", "storage-1", *args, "--", sys.executable, self.tool, state], capture_output=True, text=True, timeout=60)

    def test_passes_once_the_tool_answers_healthy(self):
        r = self.gate("--within", "10", "--soak", "0.2", "--every", "0.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        result = json.loads(r.stdout.strip().split("\n")[-1])
        self.assertTrue(result["healthy"])
        self.assertGreaterEqual(result["checks"], 3)
        self.assertIn("gate storage-1: healthy after", r.stderr)

    def test_fails_naming_the_node_its_diagnosis_and_remedy(self):
        r = self.gate("--within", "0", "--soak", "10", "--every", "0.1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("gate storage-1: not healthy after", r.stderr)
        self.assertIn("the rollout stops here", r.stderr)
        self.assertIn("rpc-endpoint-down: ", r.stderr)
        self.assertIn("remedy: check it with eth_blockNumber", r.stderr)
        self.assertFalse(json.loads(r.stdout.strip().split("\n")[-1])["healthy"])

    def test_a_health_command_that_fails_is_a_check_failed_diagnosis(self):
        r = subprocess.run([sys.executable, GATE, "storage", "storage-1", "--within", "0", "--soak", "0", "--", "false"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("check-failed: ", r.stderr)

    def test_a_first_deploy_is_not_gated_and_the_next_gate_waits(self):
        marker = os.path.join(self.dir, "gate", "storage-1")
        first = self.gate("--within", "0", "--soak", "10", "--every", "0.1", "--marker", marker)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(json.loads(first.stdout.strip().split("\n")[-1]), {"node": "storage-1", "role": "storage", "healthy": None, "firstDeploy": True})
        self.assertIn("its first deploy, not gated", first.stderr)
        self.assertTrue(os.path.isfile(marker))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "n")), "the first deploy runs no health check")
        # The marker is there: the same gate now waits, and (the tool answering unhealthy first) fails.
        second = self.gate("--within", "0", "--soak", "10", "--every", "0.1", "--marker", marker)
        self.assertEqual(second.returncode, 1, second.stderr)
        self.assertIn("rpc-endpoint-down: ", second.stderr)

    def test_a_crash_loop_fails_at_once_with_the_units_journal(self):
        # systemctl answers NRestarts one higher each time it is asked (a unit systemd keeps
        # restarting); journalctl prints the unit's last lines. The tool never answers healthy.
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        count = os.path.join(self.dir, "restarts")
        with open(os.path.join(bin_dir, "systemctl"), "w", encoding="utf-8") as f:
            f.write(f'#!/bin/sh\n[ "$1 $2 $3 $4" = "show --property=NRestarts --value zgs-storage-1.service" ] || exit 9\n'
                    f'n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; echo "$n"\n')
        with open(os.path.join(bin_dir, "journalctl"), "w", encoding="utf-8") as f:
            f.write('#!/bin/sh\necho "journal of $*"\necho "zgs_node: error: unexpected argument --bad-flag"\n'
                    'echo "Failed to reach https://user:hunter2@rpc.example.com:8443/v2/SECRETKEY?token=SECRETTOKEN for the head"\n')
        for tool in ("systemctl", "journalctl"):
            os.chmod(os.path.join(bin_dir, tool), 0o755)
        with open(self.tool, "w", encoding="utf-8") as f:
            f.write(f"print({json.dumps(json.dumps(STORAGE['endpoint-down']))})\n")
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        r = subprocess.run([sys.executable, GATE, "storage", "storage-1", "--within", "600", "--soak", "0", "--every", "0.05", "--unit", "zgs-storage-1.service", "--", sys.executable, self.tool],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"gate storage-1: not healthy after \d+ s \(3 checks\) \(a crash loop: not waiting out the deadline\); the rollout stops here")
        self.assertIn("crash-loop: zgs-storage-1.service was restarted by systemd 3 times since the gate began", r.stderr)
        self.assertIn("journal of -u zgs-storage-1.service -n 12 --no-pager", r.stderr)
        self.assertIn("unexpected argument --bad-flag", r.stderr)
        self.assertIn("Failed to reach https://rpc.example.com:8443/… for the head", r.stderr, "its URLs cut to scheme://host[:port]")
        for secret in ("hunter2", "SECRETKEY", "SECRETTOKEN"):
            self.assertNotIn(secret, r.stderr)
        self.assertIn("rpc-endpoint-down: ", r.stderr)
        self.assertEqual(json.loads(r.stdout.strip().split("\n")[-1])["crashLoop"], {"unit": "zgs-storage-1.service", "restarts": 3})

    def rollback_gate(self, *args, pins=(), extra_files=()):
        """The gate with `onFailure: rollback` over two files of the node (one made by the change),
        and `pins` pinned, with a systemctl that records its calls."""
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        calls = os.path.join(self.dir, "systemctl.calls")
        with open(os.path.join(bin_dir, "systemctl"), "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> {calls}\n")
        os.chmod(os.path.join(bin_dir, "systemctl"), 0o755)
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
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        calls = os.path.join(self.dir, "order")
        with open(os.path.join(bin_dir, "systemctl"), "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> {calls}\n")
        os.chmod(os.path.join(bin_dir, "systemctl"), 0o755)
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

    def test_bad_arguments_exit_2_saying_what(self):
        for args, why in [
            (["storage", "s", "--within", "1", "--soak", "1"], "the health command follows --"),
            (["miner", "s", "--within", "1", "--soak", "1", "--", "true"], "ROLE must be one of"),
            (["storage", "s", "--soak", "1", "--", "true"], "--within and --soak are required"),
            (["storage", "s", "--within", "x", "--soak", "1", "--", "true"], "--within: not a number"),
            (["storage", "s", "--within", "-1", "--soak", "1", "--", "true"], "--within: not a number of seconds"),
            (["storage", "s", "--wait", "1", "--soak", "1", "--", "true"], "unknown option --wait"),
            (["storage", "s", "--within", "1", "--soak", "1", "--marker", "gate/s", "--", "true"], "--marker: an absolute path"),
            (["storage", "s", "--within", "1", "--soak", "1", "--keep", "/k", "--file", "/f", "--", "true"], "--keep needs --marker, at least one --file and at least one --restart"),
            (["storage", "s", "--within", "1", "--soak", "1", "--restart", "u", "--", "true"], "--file, --restart, --pin and --await-port go with --keep"),
            (["storage", "s", "--within", "1", "--soak", "1", "--pin", "/etc/k", "--", "true"], "--file, --restart, --pin and --await-port go with --keep"),
            (["storage", "s", "--within", "1", "--soak", "1", "--pin", "k", "--", "true"], "--pin: an absolute path"),
            (["storage", "s", "--within", "1", "--soak", "1", "--marker", "/m", "--keep", "/k", "--file", "/f", "--restart", "u", "--pin", "/f", "--", "true"], "a --pin file is never put back: not also a --file"),
            (["storage", "s", "--within", "1", "--soak", "1", "--file", "f", "--", "true"], "--file: an absolute path"),
            (["storage", "s", "--within", "1", "--soak", "1", "--unit", "--all", "--", "true"], "--unit: not a unit name"),
            (["storage", "s", "--within", "1", "--soak", "1", "--unit", "a b.service", "--", "true"], "--unit: not a unit name"),
        ]:
            r = subprocess.run([sys.executable, GATE, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(why, r.stderr, args)


if __name__ == "__main__":
    unittest.main()
