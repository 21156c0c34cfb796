"""The validator tool's marker rules (zgvalidator.setup), on a temporary data root (systemd is
asked through `unit_props`, replaced here; the dev VMs prove the real units):

- an abandoned switch (markers, geth datadir intact, no switch configured) is set aside so that a
  later switch starts afresh instead of skipping a stale stop or backup;
- past step 6 (geth datadir deleted), or with an earlier export still running, setup refuses and
  names the way forward or back;
- a completed switch keeps its markers (cleanup reads them).

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zgvalidator import setup  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402
from zgvalidator.node import Validator  # noqa: E402
from zgvalidator.switch import STEPS  # noqa: E402

NAMES = list(STEPS)


class AbandonedSwitch(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="nodefleet-markers-")
        settings = os.path.join(self.root, "validator.json")
        with open(settings, "w") as f:
            json.dump({"node": "validator-1", "operator": "nodefleet", "dataRoot": self.root, "ports": {"http": 56545},
                       "services": {"geth": "geth-validator-1.service", "reth": "reth-validator-1.service", "consensus": "0gchaind-validator-1.service"}}, f)
        self.v = Validator(settings)
        self.units = {}
        self.real_unit_props = setup.unit_props
        setup.unit_props = lambda unit, *props: {"ActiveState": self.units.get(unit, "inactive")}

    def tearDown(self):
        setup.unit_props = self.real_unit_props

    def mark(self, *steps):
        for step in steps:
            self.v.write_marker(step, {"step": step, "ended": "2026-11-21T00:00:00Z"})

    def test_no_markers_nothing_to_do(self):
        setup.end_abandoned_switch(self.v, "geth")
        self.assertFalse(os.path.exists(os.path.join(self.v.state_dir, "history")))

    def test_stopped_before_deleting_geth_sets_the_markers_aside(self):
        self.mark("s01-install-reth", "s02-note-head", "s03-stop", "s04-backup")
        setup.end_abandoned_switch(self.v, "geth")
        self.assertIsNone(self.v.marker("s03-stop"), "a later switch must stop and back up again")
        [kept] = os.listdir(os.path.join(self.v.state_dir, "history"))
        self.assertTrue(kept.endswith("-abandoned"))
        self.assertEqual(sorted(os.listdir(os.path.join(self.v.state_dir, "history", kept))),
                         ["s01-install-reth.json", "s02-note-head.json", "s03-stop.json", "s04-backup.json"])

    def test_refuses_while_the_export_still_runs(self):
        self.mark("s01-install-reth", "s02-note-head", "s03-stop", "s04-backup")
        self.units["nodefleet-export-validator-1"] = "active"
        with self.assertRaisesRegex(Failed, r"nodefleet-export-validator-1 is still running: wait for it, or stop it"):
            setup.end_abandoned_switch(self.v, "geth")
        self.assertIsNotNone(self.v.marker("s04-backup"), "nothing set aside")

    def test_refuses_after_the_geth_datadir_was_deleted(self):
        self.mark(*NAMES[:7])
        with self.assertRaisesRegex(Failed, r"stopped after s07-init-reth and the geth datadir was deleted: set switch: migrate to finish it, or switch: rollback"):
            setup.end_abandoned_switch(self.v, "geth")
        self.assertIsNotNone(self.v.marker("s06-delete-geth"))

    def test_refuses_a_half_switched_reth_host(self):
        self.mark(*NAMES[:12])
        with self.assertRaisesRegex(Failed, r"a switch to reth stopped after s12-dial-url"):
            setup.end_abandoned_switch(self.v, "reth")

    def test_a_completed_switch_keeps_its_markers(self):
        self.mark(*NAMES)
        setup.end_abandoned_switch(self.v, "reth")
        self.assertIsNotNone(self.v.marker("s14-verify"))
        self.assertFalse(os.path.exists(os.path.join(self.v.state_dir, "history")))


if __name__ == "__main__":
    unittest.main()
