"""The host tool's checks around the switch: the JWT rule (docs/spec.md §5), the health diagnoses of the
error table and their remedies, waiting for the execution client, step 14's verification, cleanup
and the handover between hosts; on the fixtures of tests/switchcase.py (a fake systemd, real
JSON-RPC from in-test endpoints). The E2E tier runs them on VMs.
"""
import hashlib
import json
import os
import subprocess
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.switchcase import CL, GETH, RETH, Chain, SwitchCase, write_unit  # noqa: E402
from zgvalidator import handover as handover_mod, health as health_mod, node, rollback, stall, switch  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402
from zgvalidator.node import Validator  # noqa: E402



class Jwt(SwitchCase):
    def different_jwt_files(self):
        etc = self.settings["etcDir"]
        for name in ("a.hex", "b.hex"):
            with open(os.path.join(self.root, name), "w") as f:
                f.write("00" * 32)
        for unit in (GETH, RETH):
            write_unit(os.path.join(etc, unit), "--authrpc.jwtsecret", os.path.join(self.root, "a.hex"))
        write_unit(os.path.join(etc, CL), "--chaincfg.engine.jwt-secret-path", os.path.join(self.root, "b.hex"))

    def test_step_13_refuses_before_starting_reth_or_0gchaind(self):
        self.different_jwt_files()
        with self.assertRaisesRegex(Failed, r"reth-validator-1\.service reads the JWT secret from .*/a\.hex but 0gchaind-validator-1\.service from .*/b\.hex: not the same file"):
            switch.step_start(self.validator())
        self.assertEqual(self.fake.started(RETH, CL), [])

    def test_health_reports_a_mismatch_that_appears_later(self):
        self.different_jwt_files()
        v = self.validator()
        v.set_client("geth")
        self.fake.state.update({GETH: "active", CL: "active"})
        report = health_mod.health(v)
        self.assertIn("not the same file", report["jwtError"])
        self.assertEqual([f["fault"] for f in report["findings"]], ["jwt-mismatch"])
        [d] = [d for d in report["diagnoses"] if d["fault"] == "jwt-mismatch"]
        self.assertIn("use the same JWT file for both", d["remedy"])


class Health(SwitchCase):
    def remedy_commits_again(self, v):
        """v's forkchoice remedy replaced by one after which 0gchaind commits again: the list of its runs."""
        remedies = []

        def remedy():
            remedies.append(1)
            self.fake.logs[CL] = "Committed state height=11\n"
        v.remedy_forkchoice = remedy
        return remedies

    def on_reth(self):
        etc = self.settings["etcDir"]
        jwt = os.path.join(self.root, "jwt.hex")
        with open(jwt, "w") as f:
            f.write("00" * 32)
        write_unit(os.path.join(etc, RETH), "--authrpc.jwtsecret", jwt)
        write_unit(os.path.join(etc, CL), "--chaincfg.engine.jwt-secret-path", jwt)
        v = self.validator()
        v.set_client("reth")
        self.fake.state.update({RETH: "active", CL: "active"})
        self.fake.since[CL] = 5_000_000
        return v

    def test_reth_without_peers_is_reported_with_the_p2p_port_to_open(self):
        report = health_mod.health(self.on_reth())
        self.assertEqual(report["peers"], 0)
        [f] = report["findings"]
        self.assertEqual((f["fault"], f["p2pPort"]), ("reth-no-peers", 56303))
        self.assertNotIn("advice", f, "the tool reports facts; the words are the fault table's")
        [d] = [d for d in report["diagnoses"] if d["fault"] == "reth-no-peers"]
        self.assertIn("expected at first", d["remedy"])
        self.assertIn("make sure 56303 is open on TCP and UDP", d["remedy"])
        self.el.peers = 3
        report = health_mod.health(self.on_reth())
        self.assertEqual(report["findings"], [])
        self.assertNotIn("reth-no-peers", [d["fault"] for d in report["diagnoses"]])

    def test_a_current_38002_is_remedied_and_a_recovered_one_left_alone(self):
        v = self.on_reth()
        self.fake.logs[CL] = "Committed state height=10\nERR engine: -38002 Invalid forkchoice state\n"
        remedies = self.remedy_commits_again(v)
        report = health_mod.health(v)
        self.assertEqual(len(remedies), 1)
        [f] = [f for f in report["findings"] if f["fault"] == "forkchoice-38002"]
        self.assertEqual(f["remedied"], 1)
        self.assertNotIn("forkchoice-38002", [d["fault"] for d in report["diagnoses"]], "remedied: no longer a fault")
        self.fake.logs[CL] = "ERR engine: -38002 Invalid forkchoice state\nCommitted state height=12\n"
        report = health_mod.health(v)
        self.assertEqual(len(remedies), 1, "one that commits again has recovered: no remedy")
        self.assertNotIn("forkchoice-38002", [f["fault"] for f in report["findings"]])

    def test_no_payload_with_the_execution_client_a_block_ahead_is_not_the_fault_and_never_restarted(self):
        # Seen on the lab's real beacond and geth: geth restored a block ahead of 0gchaind's height (a
        # block it took before the network committed it); 0gchaind proposing that height on its own
        # head gets VALID and no payload. Restarting it only made it propose again.
        v = self.on_reth()
        nil = "ERRR failed to prepare proposal height=164 err=received nil payload ID on VALID engine response\n"
        self.fake.logs[CL] = "Committed state height=163\n" + nil * 3
        v.cl_status = lambda: {"height": 163, "catchingUp": False}
        v.el_height = lambda: 164
        remedies = self.remedy_commits_again(v)
        self.assertEqual(v.forkchoice_errors(), [])
        report = health_mod.health(v)
        self.assertEqual(remedies, [], "restarted for it")
        self.assertNotIn("forkchoice-38002", [f["fault"] for f in report["findings"]])
        v.el_height = lambda: 160  # behind it: a head the execution client lacks, the fault
        self.assertEqual(len(v.forkchoice_errors()), 3)
        v.el_height = lambda: 164
        self.fake.logs[CL] = "Committed state height=163\n" + nil + "INFO Received accepted syncing payload status during forkchoice update call\n"
        self.assertEqual(len(v.forkchoice_errors()), 1, "an answer of SYNCING is the fault whatever the heights")

    def test_beacon_kits_el_syncing_for_real_reths_syncing_answer_is_the_same_fault(self):
        # Real reth 1.11 answers a head it lacks with SYNCING, not -38002; 0gchaind logs this.
        v = self.on_reth()
        self.fake.logs[CL] = ("Committed state height=10\n"
                              "WARN Your execution client is syncing. It should be downloading eth blocks from its peers.\n"
                              "INFO NotifyForkchoiceUpdate: EL syncing. Retrying...\n")
        remedies = self.remedy_commits_again(v)
        report = health_mod.health(v)
        [f] = [f for f in report["findings"] if f["fault"] == "forkchoice-38002"]
        self.assertEqual((len(remedies), f["remedied"]), (1, 1))
        self.assertIn("EL syncing", f["detail"])
        self.fake.logs[CL] = "INFO syncing peers: 0\nCommitted state height=12\n"
        self.assertEqual(v.forkchoice_errors(), [], "a line that merely says syncing is not the fault")

    def test_a_38002_that_outlives_the_remedies_fails_health(self):
        v = self.on_reth()
        self.fake.logs[CL] = "ERR engine: -38002 Invalid forkchoice state\n"
        v.remedy_forkchoice = mock.Mock()
        with self.assertRaisesRegex(Failed, r"head is not on the execution client .* after 3 remedies \(last: ERR engine: -38002|head is not on the execution client .* after 3 remedies: stop it"):
            health_mod.health(v)
        self.assertEqual(v.remedy_forkchoice.call_count, 3)

    def test_the_remedy_stops_0gchaind_waits_for_the_execution_client_rolls_back_and_starts_it(self):
        v = self.on_reth()
        order = []
        v.wait_el_synced = lambda: order.append("wait")
        v.height_rollback = lambda: order.append("rollback") or {"rolledBack": 0}
        v.start_consensus = lambda: order.append("start")
        v.remedy_forkchoice()
        self.assertEqual(self.fake.stopped()[0], ("disable", "--now", CL))
        self.assertEqual(order, ["wait", "rollback", "start"])


class WaitForTheExecutionClient(SwitchCase):
    """The remedy's wait: the reference's head, else the noted head, else eth_syncing."""

    def outcome(self, v):
        def once(what, predicate, timeout, every=1.0):
            if not predicate():
                raise Failed(f"timed out waiting for {what}")
        with mock.patch.object(node, "wait", once):
            try:
                v.wait_el_synced()
                return "synced"
            except Failed:
                return "waiting"

    def test_without_a_switch_on_record_it_asks_the_client_whether_it_syncs(self):
        v = self.validator()
        self.assertEqual(self.outcome(v), "synced")
        self.el.syncing = True
        self.assertEqual(self.outcome(v), "waiting")

    def test_with_a_noted_head_or_a_reference_it_compares_heights_within_the_tolerance(self):
        v = self.validator()
        v.write_marker("s03-stop", {"head": 105})
        self.assertEqual(self.outcome(v), "synced")  # 100 >= 105 - 5
        v.write_marker("s03-stop", {"head": 106})
        self.assertEqual(self.outcome(v), "waiting")
        ref = Chain(200)
        self.addCleanup(ref.close)
        self.assertEqual(self.outcome(self.validator(referenceRpcUrl=ref.url)), "waiting")


class Step14Verify(SwitchCase):
    def started_on_reth(self, cl_log):
        """A validator whose reth and 0gchaind run, reth's log showing its start, 0gchaind's cl_log."""
        self.fake.state.update({RETH: "active", CL: "active"})
        self.fake.since[CL] = 5_000_000
        self.fake.logs[RETH] = "Starting consensus engine\n"
        self.fake.logs[CL] = cl_log
        return self.validator()

    def test_a_38002_during_verification_is_remedied_then_verified(self):
        v = self.started_on_reth("ERR -38002 Invalid forkchoice state\n")

        def remedy():
            self.fake.logs[CL] = "Committed state height=101\n"
        v.remedy_forkchoice = remedy
        v.cl_status = lambda: {"height": 101, "catchingUp": False}
        with mock.patch.object(node, "first_committed_time", lambda unit, since: 1.0), mock.patch.object(node.time, "sleep", lambda s: None):
            r = v.verify_running(RETH, 0, ["Starting consensus engine"])
        self.assertEqual(r["remedies"], 1)
        self.assertEqual(r["executionHeight"], 100)

    def test_a_daemon_that_never_commits_fails_the_verification_saying_where_its_consensus_stands(self):
        v = self.started_on_reth("INF Starting consensus state\n\x1b[31mERR\x1b[0m Failed signing vote height=224 err=\"step regression\"\n")
        v.watched = "consensus: height 224, where its peers were when it left block sync, not committed within 90 s of its start and its restart"
        clock = iter(range(0, 100_000, 10))
        with mock.patch.object(node.time, "monotonic", lambda: next(clock)), mock.patch.object(node.time, "sleep", lambda s: None), \
                mock.patch.object(stall.comet, "brief", lambda rpc: f"at 224/2/Prevote ({rpc})"):
            with self.assertRaises(Failed) as e:
                v.verify_running(RETH, 0, ["Starting consensus engine"])
        self.assertEqual(str(e.exception), "not verified after 30 s: EL log shows Starting consensus engine: True; 0gchaind log shows Committed state: False; status: None; "
                                           "consensus at 224/2/Prevote (http://127.0.0.1:1); restarted by systemd ? time(s); after its last start after a height rollback: "
                                           f"{v.watched}; its last lines that warn or fail: ERR Failed signing vote height=224 err=\"step regression\"")

    def verify_with_no_payload_at_157(self, el):
        """verify_running on geth while 0gchaind at 156 logs its proposal of 157 refused (VALID, no
        payload), with the execution client at `el`; after the first wait the network commits 157
        and the line stays in the log. Returns (the result or the failure, the remedy's runs)."""
        v = self.validator()
        self.fake.state.update({GETH: "active", CL: "active"})
        self.fake.since[CL] = 5_000_000
        self.fake.logs[GETH] = "Chain head was updated\n"
        nil = "\x1b[31mERRR\x1b[0m failed to prepare proposal height=157\x1b[0m \x1b[31merr=received nil payload ID on VALID engine response\x1b[0m\n"
        self.fake.logs[CL] = nil * 2
        cl = {"height": 156}
        v.el_height = lambda: el
        v.cl_status = lambda: {"height": cl["height"], "catchingUp": False}
        v.remedy_forkchoice = mock.Mock()

        def next_round(_seconds):
            cl["height"] = 157
            self.fake.logs[CL] = nil * 2 + "Committed state height=157\n"
        with mock.patch.object(node, "first_committed_time", lambda unit, since: 1.0), mock.patch.object(node.time, "sleep", next_round):
            try:
                return v.verify_running(GETH, 0, ["Chain head was updated"]), v.remedy_forkchoice.call_count
            except Failed as e:
                return e, v.remedy_forkchoice.call_count

    def test_no_payload_for_a_height_the_execution_client_holds_is_waited_out_never_remedied(self):
        # Seen on the lab's real beacond and geth after a rollback: geth restored a block ahead (157)
        # of 0gchaind (156). Each remedy restarted 0gchaind into the round it proposes in, three
        # times, and the rollback failed; the next round's proposer's block is what commits 157.
        r, remedies = self.verify_with_no_payload_at_157(el=157)
        self.assertEqual(remedies, 0)
        self.assertEqual((r["remedies"], r["consensus"]["height"]), (0, 157), "verified once the network committed 157")

    def test_no_payload_with_the_execution_client_behind_the_height_is_the_fault(self):
        r, remedies = self.verify_with_no_payload_at_157(el=150)
        self.assertEqual(remedies, 3)
        self.assertRegex(str(r), r"head is not on the execution client .* after 3 remedies")


class Cleanup(SwitchCase):
    HOUR = 3600

    def setUp(self):
        super().setUp()
        v = self.validator()
        self.backup = os.path.join(self.root, "backup-20261122T000000Z")
        os.makedirs(os.path.join(self.backup, "geth"))
        v.write_marker("s04-backup", {"backupDir": self.backup})
        v.write_marker("s14-verify", {"downtimeSeconds": 1})
        os.makedirs(v.mig)
        for name in ("chain-export.rlp", "chain-export-from-1.rlp", "chain-export-from-2001.rlp.partial", "export.log", "import.log", "notes.rlp.txt"):
            with open(os.path.join(v.mig, name), "w") as f:
                f.write(name)
        self.geth_bin = os.path.join(self.settings["releaseDir"], "bin", "geth")
        os.makedirs(os.path.dirname(self.geth_bin))
        for b in ("geth", "0gchaind"):
            with open(os.path.join(self.settings["releaseDir"], "bin", b), "w") as f:
                f.write(b)
        # The release's list of its files, as its install writes it.
        self.listing = os.path.join(self.settings["releaseDir"], ".nodefleet-files.sha256")
        with open(self.listing, "w") as f:
            f.write("".join(f"{hashlib.sha256(b.encode()).hexdigest()}  bin/{b}\n" for b in ("0gchaind", "geth")))
        # Units are looked for here: this node's staged geth unit, and (a test's) another node's.
        self.units = os.path.join(self.root, "units")
        self.staged = os.path.join(self.root, "staged")
        os.makedirs(self.units)
        os.makedirs(self.settings["etcDir"], exist_ok=True)
        with open(os.path.join(self.settings["etcDir"], GETH), "w") as f:
            f.write(f"[Service]\nExecStart={self.geth_bin} --datadir /data\n")
        globs = rollback.UNIT_GLOBS
        rollback.UNIT_GLOBS = (os.path.join(self.units, "*.service"), os.path.join(os.path.dirname(self.settings["etcDir"]), "*", "*.service"))
        self.addCleanup(setattr, rollback, "UNIT_GLOBS", globs)
        self.fake.state[RETH] = "active"
        self.fake.since[RETH] = 1000 * 1_000_000  # active since monotonic second 1000
        self.v = v

    def after(self, hours, **options):
        v = self.validator(cleanup={"removeGethBinary": False, "removeBackup": False, **options})
        return rollback.cleanup(v, clock=lambda: 1000 + hours * self.HOUR)

    def left(self):
        return sorted(os.listdir(self.v.mig))

    def test_before_24_hours_it_refuses_and_removes_nothing(self):
        with self.assertRaisesRegex(Failed, r"active for 23\.9 h \(from systemd\); cleanup waits until 24 h"):
            self.after(23.9)
        self.assertEqual(len(self.left()), 6)

    def test_after_24_hours_it_removes_exactly_the_rlp_files(self):
        r = self.after(24.5)
        self.assertEqual(self.left(), ["export.log", "import.log", "notes.rlp.txt"])
        self.assertEqual(sorted(os.path.basename(p) for p in r["removed"]), ["chain-export-from-1.rlp", "chain-export-from-2001.rlp.partial", "chain-export.rlp"])
        self.assertTrue(os.path.exists(self.geth_bin))
        self.assertTrue(os.path.isdir(self.backup))

    def test_when_asked_it_also_removes_the_geth_binary_and_the_backup_and_nothing_else(self):
        r = self.after(30, removeGethBinary=True, removeBackup=True)
        self.assertFalse(os.path.exists(self.geth_bin))
        self.assertFalse(os.path.exists(self.backup))
        self.assertIn(self.geth_bin, r["removed"])
        self.assertEqual(os.listdir(os.path.dirname(self.geth_bin)), ["0gchaind"])
        self.assertTrue(os.path.isdir(self.settings["gethDir"]) and os.path.isdir(self.settings["consensusHome"]))
        # Off the release's list too: its install and the drift check do not take it for damage.
        with open(self.listing) as f:
            self.assertEqual([line.split("  ")[1] for line in f.read().splitlines()], ["bin/0gchaind"])
        records = os.path.join(self.root, "drift", "release-0g-chain")
        os.makedirs(records)
        link = os.path.join(self.root, "0g-chain")
        os.symlink(self.settings["releaseDir"], link)
        with open(os.path.join(records, "t.release"), "w") as f:
            f.write(f"tree\t{self.settings['releaseDir']}\t{link}\n")
        checked = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "drift.py"), os.path.dirname(records)], capture_output=True, text=True)
        self.assertEqual(json.loads(checked.stdout), {"records": 1, "drift": []}, checked.stderr)
        # Again: nothing left to remove, and nothing fails.
        again = self.after(31, removeGethBinary=True, removeBackup=True)
        self.assertEqual(again["removed"], [])

    def test_it_keeps_a_geth_another_node_starts_and_removes_nothing(self):
        other = os.path.join(self.units, "geth-validator-2.service")
        with open(other, "w") as f:
            f.write(f"[Service]\nExecStart={self.geth_bin} --datadir /data/validator-2\n")
        with self.assertRaisesRegex(Failed, r"the release's geth is still started by .*geth-validator-2\.service: not removed \(nothing was\)"):
            self.after(30, removeGethBinary=True, removeBackup=True)
        self.assertTrue(os.path.exists(self.geth_bin))
        self.assertTrue(os.path.isdir(self.backup))
        self.assertEqual(len(self.left()), 6)
        # Without removeGethBinary the rest goes.
        self.after(30, removeBackup=True)
        self.assertTrue(os.path.exists(self.geth_bin))
        self.assertFalse(os.path.exists(self.backup))


class Handover(SwitchCase):
    """The host a validator leaves stops signing before the new one starts, and passes its signing state on."""

    def setUp(self):
        super().setUp()
        home = self.settings["consensusHome"]
        os.makedirs(os.path.join(home, "config"))
        os.makedirs(os.path.join(home, "data"))
        self.key = os.path.join(home, "config", "priv_validator_key.json")
        with open(self.key, "w") as f:
            f.write('{"priv_key": "not a real key"}')
        self.state = {"height": "1200", "round": 0, "step": 3, "signature": "c2ln", "signbytes": "AB"}
        with open(os.path.join(home, "data", "priv_validator_state.json"), "w") as f:
            json.dump(self.state, f)
        self.fake.state.update({CL: "active", GETH: "active", RETH: "inactive"})
        units = os.path.join(self.root, "systemd")
        os.makedirs(units)
        for unit in (CL, GETH, "zgs-storage-1.service"):
            with open(os.path.join(units, unit), "w") as f:
                f.write("[Service]\n")
        p = mock.patch.object(handover_mod, "UNIT_DIR", units)
        p.start()
        self.addCleanup(p.stop)
        self.units = units

    def test_stops_and_disables_the_daemons_sets_the_key_aside_and_reports_the_signing_state(self):
        r = handover_mod.handover(self.validator())
        self.assertEqual(r["stopped"], [CL, GETH])
        self.assertEqual(sorted(os.listdir(self.units)), ["zgs-storage-1.service"], "only this validator's units are removed")
        self.assertEqual(r["unitsRemoved"], [os.path.join(self.units, CL), os.path.join(self.units, GETH)])
        self.assertEqual(self.fake.stopped(), [("disable", "--now", CL), ("disable", "--now", GETH)])
        self.assertIn(("daemon-reload",), self.fake.calls)
        self.assertFalse(os.path.exists(self.key))
        self.assertRegex(r["keySetAside"], r"priv_validator_key\.json\.handed-over-\d{8}T\d{6}Z$")
        self.assertTrue(os.path.exists(r["keySetAside"]))
        self.assertEqual(r["signingState"], self.state)
        again = handover_mod.handover(self.validator())
        self.assertEqual((again["stopped"], again["keySetAside"], again["signingState"]), ([], r["keySetAside"], self.state))

    def test_refuses_while_a_0gchaind_with_the_key_still_runs_and_keeps_the_key(self):
        with mock.patch.object(Validator, "consensus_processes", lambda _self: [{"pid": 4242, "home": "/elsewhere"}]):
            with self.assertRaisesRegex(Failed, r"a 0gchaind with this validator key still runs .*4242"):
                handover_mod.handover(self.validator())
        self.assertTrue(os.path.exists(self.key))

    def test_a_host_that_never_held_the_key_names_the_override(self):
        os.unlink(self.key)
        with self.assertRaisesRegex(Failed, r"never handed over from this host.*validator\.abandonHost"):
            handover_mod.handover(self.validator())

    def test_the_new_host_takes_the_carried_state_only_when_it_is_further_on(self):
        path = os.path.join(self.settings["consensusHome"], "data", "priv_validator_state.json")
        with mock.patch.object(handover_mod.shutil, "chown"):
            carried = dict(self.state, height="1300")
            r = handover_mod.carry_signing_state(self.validator(carriedSigningState=carried))
            self.assertEqual(r, {"carried": True, "at": [1300, 0, 3]})
            with open(path) as f:
                self.assertEqual(json.load(f), carried)
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
            behind = dict(self.state, height="1299", step=8)
            self.assertEqual(handover_mod.carry_signing_state(self.validator(carriedSigningState=behind)), {"carried": False, "at": [1300, 0, 3]})
            os.unlink(path)
            self.assertEqual(handover_mod.carry_signing_state(self.validator(carriedSigningState=behind))["at"], [1299, 0, 8])
            self.assertIsNone(handover_mod.carry_signing_state(self.validator(carriedSigningState=None)))
            with self.assertRaisesRegex(Failed, r"height, round and step must be numbers"):
                handover_mod.carry_signing_state(self.validator(carriedSigningState={"height": "x"}))


if __name__ == "__main__":
    unittest.main()
