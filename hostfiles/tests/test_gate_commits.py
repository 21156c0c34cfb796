"""nodefleet_gate.py's rule for validators: a height committed in the soak, by the deadline at the
latest. gate() runs on a fake clock over rows made from a recorded healthy answer
(test/fixtures/status/validator.json) at the heights each case gives. Not shown here: a real
network that halts under a gate (the VM tier's rollout).

    cd hostfiles && python3 -m unittest tests.test_gate_commits
"""
import unittest

from tests.test_gate import Clock, answers, gate_tool, health, run


VALIDATOR = answers("validator")["healthy-reth"]


def validator_row(height):
    """validator-1 answering healthy (the recorded answer, its warning only) at consensus height `height`."""
    return health.diagnose("validator-1", "validator", "dev-1", {**VALIDATOR, "consensus": {"catchingUp": False, "height": height}})


def validator_gate(heights, clock, within=60, soak=30):
    """gate() over a validator's answers at `heights` in turn (the last repeats)."""
    seen = []

    def check():
        seen.append(heights[min(len(seen), len(heights) - 1)])
        clock.now += clock.cost
        return validator_row(seen[-1])

    return gate_tool.gate("validator", "validator-1", ["unused"], within, soak, 10, 5, clock=clock, sleep=clock.sleep, run=check), seen


class ValidatorCommits(unittest.TestCase):
    """A validator's soak needs a height committed in it: a validator whose network halts answers
    healthy (running, caught up, its execution client following)."""

    def test_the_fixture_is_healthy_at_any_height(self):
        self.assertTrue(validator_row(3)["healthy"])
        self.assertEqual(validator_row(3)["validator"]["consensusHeight"], 3)

    def test_a_height_committed_in_the_soak_passes(self):
        result, seen = validator_gate([40, 41, 42, 43, 44], Clock())
        self.assertTrue(result["healthy"], result)
        self.assertGreaterEqual(result["soaked"], 30)
        self.assertEqual(result["checks"], 4)  # 2, 14, 26, 38 s: 36 s of soak at the fourth

    def test_no_height_in_the_soak_waits_for_one_until_the_deadline(self):
        result, seen = validator_gate([40, 40, 40, 40, 40, 40, 41], Clock(), within=120)
        self.assertTrue(result["healthy"], result)
        self.assertEqual(seen[-1], 41)
        self.assertEqual(result["waited"], 2.0)
        self.assertGreater(result["soaked"], 30, "the soak ran on until the commit")

    def test_no_height_by_the_deadline_fails_not_committing_first(self):
        result, seen = validator_gate([28], Clock(), within=60, soak=30)
        self.assertFalse(result["healthy"])
        self.assertGreaterEqual(result["waited"], 60)
        self.assertLess(result["waited"], 60 + 12)
        first = result["diagnoses"][0]
        self.assertEqual((first["fault"], first["severity"]), ("not-committing", "error"))
        self.assertIn("committed no height in", first["detail"])
        self.assertIn("(at height 28)", first["detail"])
        self.assertIn("docs/roles.md, Its stop", first["remedy"], "the fault table's remedy")
        self.assertEqual(result["notCommitting"]["height"], 28)
        self.assertGreaterEqual(result["notCommitting"]["seconds"], 30)
        self.assertEqual([d["fault"] for d in result["diagnoses"][1:]], ["reth-no-peers"], "the answer's own diagnoses after it")

    def test_a_height_seen_before_the_soak_began_does_not_count(self):
        # Healthy at 40, unhealthy (the soak starts again), then healthy at 41 and no further: the
        # commit from 40 to 41 happened before the soak that counts.
        seq = iter([validator_row(40), {**validator_row(41), "healthy": False}, validator_row(41)])
        rows = list(seq)
        clock, seen = Clock(), []

        def check():
            seen.append(1)
            clock.now += clock.cost
            return rows[min(len(seen), len(rows)) - 1]

        result = gate_tool.gate("validator", "validator-1", ["unused"], 60, 30, 10, 5, clock=clock, sleep=clock.sleep, run=check)
        self.assertFalse(result["healthy"])
        self.assertEqual(result["diagnoses"][0]["fault"], "not-committing")
        self.assertEqual(result["notCommitting"]["height"], 41)

    def test_an_unknown_height_never_counts_as_a_commit(self):
        result, _ = validator_gate([None], Clock(), within=40, soak=0)
        self.assertFalse(result["healthy"])
        self.assertIn("(at an unknown height)", result["diagnoses"][0]["detail"])

    def test_other_roles_need_no_height(self):
        result, seen = run(["healthy"], Clock(), soak=0)
        self.assertTrue(result["healthy"])
        self.assertEqual(len(seen), 1)
