"""An upgrade at a height on the host (zgvalidator/upgrade.py), against a recording stand-in for
systemd and a consensus daemon whose committed height the test sets (the lab's upgrade drill runs
the real beacond and systemd):

- setup arms the watcher and restarts nothing; a new height for the same release re-arms it; a
  second release while one is pending, a node at or past the height, and the old release named
  again after the swap are refused with the reason, nothing armed or written;
- with the upgrade gone from the config a pending one is cancelled and the watcher disarmed;
- the watcher swaps at the height: the daemon stopped, the staged units installed, the execution
  client and the daemon started in order; a daemon first seen past the height is recorded missed
  and nothing is started; a swap interrupted half-way is finished by whoever runs next;
- health and status report it: pending (blocks left, ready), not ready, overdue, with the fault
  table's remedies (nodefleet_health.validator_row).

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zgvalidator import upgrade  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402
import nodefleet_health  # noqa: E402

CL, GETH, RETH = "0gchaind-validator-1.service", "geth-validator-1.service", "reth-validator-1.service"
WATCHER = "nodefleet-upgrade-validator-1.service"


class Node:
    """The Validator's surface upgrade.py uses: settings, state dir, units, the daemon's height."""

    def __init__(self, root, heights, calls):
        self.node = "validator-1"
        self.state_dir = os.path.join(root, "state")
        self.units = {"consensus": CL, "geth": GETH, "reth": RETH}
        self.heights = list(heights)
        self.calls = calls
        self.s = {"etcDir": os.path.join(root, "etc"), "releaseDir": "/opt/nodefleet/0g-chain", "executionClient": "geth", "ports": {"engine": 56551},
                  "upgrade": {"release": "0g-chain-next", "height": 1200, "units": os.path.join(root, "etc", "upgrade"), "releaseDir": os.path.join(root, "next")}}

    def cl_status(self):
        h = self.heights.pop(0) if len(self.heights) > 1 else self.heights[0]
        if h is None:
            raise Failed("GET http://127.0.0.1:56657/status: no usable result.sync_info")
        return {"height": h, "catchingUp": False}

    def stop(self, unit):
        self.calls.append(("stop", unit))

    def start_consensus(self):
        self.calls.append(("start", CL))

    def host_client(self):
        return "geth"


class UpgradeCase(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.root, "systemd"))
        self.calls = []
        self.running = {CL, GETH}
        self.patches = [
            mock.patch.object(upgrade, "SYSTEMD_DIR", os.path.join(self.root, "systemd")),
            mock.patch.object(upgrade, "systemctl", self.systemctl),
            mock.patch.object(upgrade, "active", lambda unit: unit in self.running),
            mock.patch.object(upgrade, "install_unit", self.install_unit),
            mock.patch.object(upgrade, "start_in_order", self.start_in_order),
            mock.patch.object(upgrade, "take", lambda state_dir, what: self.calls.append(("lock", what))),
            mock.patch.object(upgrade, "say", lambda msg: self.calls.append(("say", msg))),
        ]
        for p in self.patches:
            p.start()

    def tearDown(self):
        for p in self.patches:
            p.stop()

    def systemctl(self, *args, check=True):
        self.calls.append(args)
        if args[0] in ("start", "restart"):
            self.running.add(args[-1])
        if args[:2] == ("disable", "--now"):
            self.running.discard(args[-1])

    def install_unit(self, etc, unit):
        self.calls.append(("install", os.path.basename(etc), unit))
        open(os.path.join(self.root, "systemd", unit), "w").close()
        return [unit]

    def start_in_order(self, v, el, port, changed):
        self.calls.append(("start_in_order", el, tuple(changed)))
        return []

    def node(self, *heights):
        return Node(self.root, heights, self.calls)

    def record(self, v):
        return upgrade.record(v)

    def saved(self, v, **rec):
        upgrade.save(v, {"release": "0g-chain-next", "height": 1200, "from": "0g-chain", **rec})

    def verbs(self):
        return [c for c in self.calls if c[0] != "say"]


class Prepare(UpgradeCase):
    def test_arms_the_watcher_restarts_nothing_and_records_the_release_it_leaves(self):
        v = self.node(1150)
        self.assertEqual(upgrade.prepare(v), v.s["etcDir"])
        rec = self.record(v)
        self.assertEqual({k: rec[k] for k in ("release", "height", "from", "state")}, {"release": "0g-chain-next", "height": 1200, "from": "0g-chain", "state": "pending"})
        self.assertEqual(self.verbs(), [("install", "etc", WATCHER), ("daemon-reload",), ("enable", WATCHER), ("start", WATCHER)])
        self.assertIn(("say", "upgrade to 0g-chain-next at height 1200: armed (50 blocks left)"), self.calls)
        self.assertNotIn(("stop", CL), self.calls)

    def test_a_new_height_for_the_same_release_rearms_the_watcher(self):
        v = self.node(1150)
        self.saved(v, state="pending")
        self.running.add(WATCHER)
        v.s["upgrade"]["height"] = 1300
        upgrade.prepare(v)
        self.assertEqual(self.record(v)["height"], 1300)
        self.assertIn(("restart", WATCHER), self.calls)

    def test_a_second_release_while_one_is_pending_is_refused(self):
        v = self.node(1150)
        self.saved(v, state="pending")
        v.s["upgrade"]["release"] = "0g-chain-later"
        with self.assertRaisesRegex(Failed, r"an upgrade to 0g-chain-next at height 1200 is pending on this host: one upgrade at a time\. Let it happen, or remove `upgrade` from the config to cancel it, before asking for 0g-chain-later"):
            upgrade.prepare(v)
        self.assertEqual(self.record(v)["release"], "0g-chain-next")
        self.assertEqual(self.verbs(), [])

    def test_a_node_at_or_past_the_height_is_refused_nothing_armed(self):
        for h in (1200, 1250):
            self.calls.clear()
            v = self.node(h)
            with self.assertRaisesRegex(Failed, rf"the node is at height {h}, at or past the upgrade height 1200, on release 0g-chain: an upgrade is scheduled ahead of the chain \(nothing was restarted\)"):
                upgrade.prepare(v)
            self.assertIsNone(self.record(v))
            self.assertEqual(self.verbs(), [])

    def test_done_the_staged_units_are_the_nodes_and_the_watcher_is_gone(self):
        v = self.node(1300)
        self.saved(v, state="done")
        open(os.path.join(self.root, "systemd", WATCHER), "w").close()
        self.assertEqual(upgrade.prepare(v), v.s["upgrade"]["units"])
        self.assertEqual(self.verbs(), [("disable", "--now", WATCHER), ("daemon-reload",)])
        self.assertFalse(os.path.exists(os.path.join(self.root, "systemd", WATCHER)))

    def test_gone_from_the_config_a_pending_upgrade_is_cancelled(self):
        v = self.node(1150)
        self.saved(v, state="pending")
        open(os.path.join(self.root, "systemd", WATCHER), "w").close()
        del v.s["upgrade"]
        self.assertEqual(upgrade.prepare(v), v.s["etcDir"])
        self.assertEqual(self.record(v)["state"], "cancelled")
        self.assertIn(("disable", "--now", WATCHER), self.calls)

    def test_the_old_release_again_after_the_swap_is_refused(self):
        v = self.node(1300)
        self.saved(v, state="done")
        del v.s["upgrade"]
        with self.assertRaisesRegex(Failed, r"this node moved from release 0g-chain to 0g-chain-next at height 1200; the config names 0g-chain again, which the chain left at that height: nodefleet does not start it on this state\. Name 0g-chain-next in the node's release"):
            upgrade.prepare(v)
        v.s["releaseDir"] = "/opt/nodefleet/0g-chain-next"
        self.assertEqual(upgrade.prepare(v), v.s["etcDir"], "the new release named: its units are setup's")

    def test_missed_is_refused_with_the_way_out(self):
        v = self.node(1203)
        self.saved(v, state="missed", seen=1203)
        with self.assertRaisesRegex(Failed, r"the daemon was at height 1203, past the upgrade height 1200, on release 0g-chain before the watcher stopped it: nodefleet starts neither release"):
            upgrade.prepare(v)

    def test_an_interrupted_swap_is_finished_by_setup(self):
        v = self.node(None)
        self.saved(v, state="swapping", stoppedAt=1200)
        self.assertEqual(upgrade.prepare(v), v.s["upgrade"]["units"])
        self.assertEqual(self.record(v)["state"], "done")
        self.assertIn(("install", "upgrade", CL), self.calls)


class Watch(UpgradeCase):
    def test_swaps_at_the_height_daemon_first_then_the_execution_client_and_the_daemon_in_order(self):
        v = self.node(None, 1198, 1199, 1200)
        self.saved(v, state="pending")
        sleeps = []
        upgrade.watch(v, sleep=sleeps.append)
        self.assertEqual(len(sleeps), 3, "polled until the height")
        self.assertEqual(self.verbs(), [("lock", "upgrade-watch"), ("stop", CL), ("install", "upgrade", CL), ("install", "upgrade", GETH), ("daemon-reload",),
                                        ("start_in_order", GETH, (CL, GETH)), ("disable", WATCHER)])
        rec = self.record(v)
        self.assertEqual((rec["state"], rec["stoppedAt"], rec["from"]), ("done", 1200, "0g-chain"))

    def test_a_daemon_first_seen_past_the_height_is_recorded_missed_and_nothing_starts(self):
        v = self.node(1203)
        self.saved(v, state="pending")
        upgrade.watch(v, sleep=lambda s: None)
        rec = self.record(v)
        self.assertEqual((rec["state"], rec["seen"]), ("missed", 1203))
        self.assertEqual(self.verbs(), [("lock", "upgrade-watch")])

    def test_an_interrupted_swap_is_finished_without_reading_the_height(self):
        v = self.node(None)
        self.saved(v, state="swapping", stoppedAt=1200)
        self.running.discard(CL)
        upgrade.watch(v, sleep=lambda s: self.fail("no wait"))
        self.assertEqual(self.record(v)["state"], "done")
        self.assertNotIn(("stop", CL), self.calls)

    def test_not_armed_for_this_upgrade_it_ends(self):
        v = self.node(1150)
        self.saved(v, state="cancelled")
        report = upgrade.watch(v, sleep=lambda s: self.fail("no wait"))
        self.assertEqual(report["upgrade"]["state"], "cancelled")


class Reported(UpgradeCase):
    def row(self, v, height):
        facts, found = upgrade.findings(v, height)
        answer = {"client": "geth", "services": {CL: "active", GETH: "active"}, "units": v.units, "consensus": {"height": height, "catchingUp": False},
                  "findings": found, "upgrade": facts}
        return facts, nodefleet_health.validator_row("validator-1", "dev-2", answer)

    def test_pending_and_ready_is_a_warning_with_the_blocks_left(self):
        v = self.node(1150)
        os.makedirs(v.s["upgrade"]["releaseDir"])
        self.saved(v, state="pending")
        self.running.add(WATCHER)
        facts, row = self.row(v, 1150)
        self.assertEqual(facts, {"release": "0g-chain-next", "height": 1200, "state": "pending", "blocksLeft": 50, "ready": True})
        self.assertTrue(row["healthy"])
        d = row["diagnoses"][0]
        self.assertEqual((d["fault"], d["severity"], d["detail"]), ("upgrade-pending", "warning", "release 0g-chain-next at height 1200: 50 blocks left; ready (release staged, watcher running)"))
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "faults.json")) as f:
            self.assertEqual(d["remedy"], json.load(f)["upgrade-pending"]["remedy"])
        self.assertEqual(row["validator"]["upgrade"], facts)

    def test_not_ready_names_what_is_missing(self):
        v = self.node(1150)
        self.saved(v, state="pending")
        _, row = self.row(v, 1150)
        self.assertFalse(row["healthy"])
        self.assertEqual(row["diagnoses"][0]["detail"], "release 0g-chain-next at height 1200: not ready: the release is not staged, the watcher is not running")

    def test_past_the_height_on_the_old_release_is_overdue_and_done_is_quiet(self):
        v = self.node(1210)
        self.saved(v, state="pending")
        _, row = self.row(v, 1210)
        self.assertEqual([(d["fault"], d["severity"]) for d in row["diagnoses"]], [("upgrade-overdue", "error")])
        self.assertIn("the node is at 1210, past it, on release 0g-chain (pending)", row["diagnoses"][0]["detail"])
        self.saved(v, state="done")
        _, row = self.row(v, 1210)
        self.assertEqual(row["diagnoses"], [])


if __name__ == "__main__":
    unittest.main()
