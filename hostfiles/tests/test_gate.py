"""nodefleet_gate.py, a rollout's gate: healthy within the deadline and for the soak, or a failure
naming the node's diagnoses. The timing cases run gate() on a fake clock with rows made from the
recorded health answers (test/fixtures/status); the command line runs a real health command (a
script that prints those answers in turn) in a subprocess. Not shown here: the gate after a real
restart on a host (the VM tier).

    cd hostfiles && python3 -m unittest tests.test_gate
"""
import json
import os
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
    return gate_tool.gate("storage", "storage-1", ["unused"], opts["within"], opts["soak"], opts["every"], 5, clock=clock, sleep=clock.sleep, run=check)


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

    def test_bad_arguments_exit_2_saying_what(self):
        for args, why in [
            (["storage", "s", "--within", "1", "--soak", "1"], "the health command follows --"),
            (["miner", "s", "--within", "1", "--soak", "1", "--", "true"], "ROLE must be one of"),
            (["storage", "s", "--soak", "1", "--", "true"], "--within and --soak are required"),
            (["storage", "s", "--within", "x", "--soak", "1", "--", "true"], "--within: not a number"),
            (["storage", "s", "--within", "-1", "--soak", "1", "--", "true"], "--within: not a number of seconds"),
            (["storage", "s", "--wait", "1", "--soak", "1", "--", "true"], "unknown option --wait"),
            (["storage", "s", "--within", "1", "--soak", "1", "--marker", "gate/s", "--", "true"], "--marker: an absolute path"),
        ]:
            r = subprocess.run([sys.executable, GATE, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(why, r.stderr, args)


if __name__ == "__main__":
    unittest.main()
