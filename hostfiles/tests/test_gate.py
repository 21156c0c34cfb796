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
import time
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
    return gate_tool.gate("storage", "storage-1", ["unused"], opts["within"], opts["soak"], opts["every"], 5, clock=clock, sleep=clock.sleep, run=check, restarts=opts.get("restarts"), handed=opts.get("handed"))


class HandedBase(unittest.TestCase):
    """The health step's record of restart counts (templates/health/health-step.sh.hbs writes it)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-gate-handed-")
        self.path = os.path.join(self.dir, "storage-1.restarts")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def take(self, text, max_age=300, now=2000.0):
        if text is not None:
            write(self.path, text)
        counts = gate_tool.handed_base(self.path, max_age, now=lambda: now)
        self.assertFalse(os.path.exists(self.path), "taken once: removed")
        return counts

    def test_the_counts_it_names(self):
        self.assertEqual(self.take("1990\ngeth-validator-1.service 4\n0gchaind-validator-1.service 0\n"), {"geth-validator-1.service": 4, "0gchaind-validator-1.service": 0})

    def test_none_older_than_the_deadline_nor_from_the_future(self):
        self.assertEqual(self.take("1699\nzgs-storage-1.service 0\n"), {}, "older than max_age: an up cut short before its gate")
        self.assertEqual(self.take("2100\nzgs-storage-1.service 0\n"), {})

    def test_none_without_a_readable_time_and_no_unit_without_a_count(self):
        self.assertEqual(self.take(None), {})
        self.assertEqual(self.take(""), {})
        self.assertEqual(self.take("soon\nzgs-storage-1.service 0\n"), {})
        # systemctl gave no count (an empty value), or a line is not a unit's: those units are unknown.
        self.assertEqual(self.take("1990\nzgs-storage-1.service \nbad unit 3\nzgs-storage-1-failover.timer -1\naztec-sequencer-1.service 2\n"), {"aztec-sequencer-1.service": 2})


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

    def test_restarts_since_the_health_step_began_count_at_the_first_check(self):
        # The health step recorded 0 right after the configure step's restart and saw 3 restarts
        # during its own wait: the gate's first unhealthy answer is a crash loop.
        counts = iter([3, 3, 4, 5])
        result, seen = run(["endpoint-down"], Clock(), within=900, restarts=lambda: {"zgs-storage-1.service": next(counts)}, handed={"zgs-storage-1.service": 0})
        self.assertEqual(result["crashLoop"], {"unit": "zgs-storage-1.service", "restarts": 3, "sinceHealthStep": True})
        self.assertEqual(len(seen), 1)

    def test_a_handed_count_above_the_count_now_gives_way_to_it(self):
        # An explicit restart after the health step's record (the count reset): counted from there.
        counts = iter([0, 0, 1, 2, 3])
        result, seen = run(["endpoint-down"], Clock(), within=900, restarts=lambda: {"zgs-storage-1.service": next(counts)}, handed={"zgs-storage-1.service": 5})
        self.assertEqual(result["crashLoop"], {"unit": "zgs-storage-1.service", "restarts": 3}, "counted from the reset, not said to be from the health step")
        self.assertEqual(len(seen), 4)

    def test_a_handed_count_for_another_unit_changes_nothing(self):
        counts = iter([41, 41, 42, 43, 44])
        result, seen = run(["endpoint-down"], Clock(), within=900, restarts=lambda: {"zgs-storage-1.service": next(counts)}, handed={"zgs-storage-2.service": 0})
        self.assertEqual(result["crashLoop"], {"unit": "zgs-storage-1.service", "restarts": 3})
        self.assertEqual(len(seen), 4)

    def test_fewer_restarts_wait_out_the_deadline(self):
        counts = iter([0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
        result, seen = run(["endpoint-down"], Clock(), within=60, restarts=lambda: {"zgs-storage-1.service": next(counts)})
        self.assertFalse(result["healthy"])
        self.assertNotIn("crashLoop", result)
        self.assertGreaterEqual(result["waited"], 60)


class CommandLineCase:
    """A real health command for the gate: a script printing the recorded answers in turn."""

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

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def never_healthy(self, systemctl, journalctl):
        """Stand-ins for systemctl and journalctl (their shell bodies) first on PATH, and a health tool
        that always answers endpoint-down: the environment to run the gate in."""
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        for tool, body in (("systemctl", systemctl), ("journalctl", journalctl)):
            with open(os.path.join(bin_dir, tool), "w", encoding="utf-8") as f:
                f.write("#!/bin/sh\n" + body)
            os.chmod(os.path.join(bin_dir, tool), 0o755)
        with open(self.tool, "w", encoding="utf-8") as f:
            f.write(f"print({json.dumps(json.dumps(STORAGE['endpoint-down']))})\n")
        return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}

    def gate(self, *args):
        state = os.path.join(self.dir, "n")
        return subprocess.run([sys.executable, GATE, "storage", "storage-1", *args, "--", sys.executable, self.tool, state], capture_output=True, text=True, timeout=60)


class CommandLine(CommandLineCase, unittest.TestCase):
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
        count = os.path.join(self.dir, "restarts")
        env = self.never_healthy(
            f'[ "$1 $2 $3 $4" = "show --property=NRestarts --value zgs-storage-1.service" ] || exit 9\n'
            f'n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; echo "$n"\n',
            'echo "journal of $*"\necho "zgs_node: error: unexpected argument --bad-flag"\n'
            'echo "Failed to reach https://user:hunter2@rpc.example.com:8443/v2/SECRETKEY?token=SECRETTOKEN for the head"\n')
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

    def test_the_health_steps_record_counts_restarts_from_its_start_and_serves_one_gate(self):
        # systemctl answers NRestarts 3 each time: the health step recorded 0 when it began, after
        # the configure step's restart, so the gate's first unhealthy answer is a crash loop.
        env = self.never_healthy('[ "$1 $2 $3 $4" = "show --property=NRestarts --value zgs-storage-1.service" ] || exit 9\necho 3\n',
                                 'echo "zgs_node: exits at start"\n')
        marker = os.path.join(self.dir, "gate", "storage-1")
        os.makedirs(os.path.dirname(marker))
        write(marker, "deployed\n")

        # The first gate gets --within 60: the record's time is whole seconds and it is ignored once
        # older than --within, so a gate slow to start (a loaded machine) must still find it young;
        # it ends at its first answer. The second waits out its deadline: 1 s.
        def gate(within):
            return subprocess.run([sys.executable, GATE, "storage", "storage-1", "--within", within, "--soak", "0", "--every", "0.2", "--marker", marker, "--unit", "zgs-storage-1.service", "--", sys.executable, self.tool],
                                  capture_output=True, text=True, timeout=60, env=env)

        write(marker + ".restarts", f"{int(time.time())}\nzgs-storage-1.service 0\n")
        r = gate("60")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"not healthy after \d+ s \(1 checks\) \(a crash loop: not waiting out the deadline\)")
        self.assertIn("zgs-storage-1.service was restarted by systemd 3 times since its health step began (after the change's restart)", r.stderr)
        self.assertFalse(os.path.exists(marker + ".restarts"), "the record serves one gate")
        # Run again (a halted gate re-run by the next up): no record, counted from its own start:
        # the count stays 3, no crash loop, the deadline.
        again = gate("1")
        self.assertEqual(again.returncode, 1, again.stderr)
        self.assertNotIn("crash loop", again.stderr)
        self.assertNotIn("crashLoop", json.loads(again.stdout.strip().split("\n")[-1]))

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
