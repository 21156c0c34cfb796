"""The switch's steps, refusals and integrity check (ordered and low-downtime), each exercised on
a temporary data root with a fake systemd and real JSON-RPC from in-test endpoints
(tests/switchcase.py). What these cannot prove: that real systemd, geth and 0gchaind behave as
faked here; the E2E tier runs the switch on VMs.

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import json
import os
import sys
import types
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import trim_export  # noqa: E402
from tests.chainfile import block  # noqa: E402
from tests.switchcase import CL, GETH, REAL_RUN, Chain, SwitchCase, block_hash  # noqa: E402
from zgvalidator import chain as chain_mod, host, jobs, lowdowntime, rollback, switch  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402


class Step1Release(SwitchCase):
    def test_a_release_older_than_1_0_6_is_refused_before_anything_is_installed(self):
        self.fake.release_version = "0gchaind v1.0.5"
        os.makedirs(os.path.join(self.settings["releaseDir"], "bin"))
        with open(os.path.join(self.settings["releaseDir"], "bin", "0gchaind"), "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(os.path.join(self.settings["releaseDir"], "bin", "0gchaind"), 0o755)
        v = self.validator()
        v.install_reth = mock.Mock(side_effect=AssertionError("installed"))
        with self.assertRaisesRegex(Failed, r"release package version '0gchaind v1.0.5': the switch to reth needs 1.0.6 or later"):
            switch.step_install_reth(v)
        v.install_reth.assert_not_called()


class Step2NoteHead(SwitchCase):
    def test_refuses_without_twice_the_datadir_free_before_anything_is_stopped(self):
        self.fake.state.update({GETH: "active", CL: "active"})
        with open(os.path.join(self.settings["gethDir"], "000001.ldb"), "wb") as f:
            f.write(b"x" * 4096)
        self.geth_logs_head(100, "aaaaaa..aaaa64")
        tight = types.SimpleNamespace(f_bavail=8191, f_frsize=1)
        with mock.patch.object(switch.os, "statvfs", return_value=tight):
            with self.assertRaisesRegex(Failed, r"free disk on .*: 8191 bytes, the switch needs 2x the geth datadir \(8192 bytes"):
                switch.step_note_head(self.validator())
        self.assertEqual(self.fake.stopped(), [])
        self.assertEqual((self.fake.state[GETH], self.fake.state[CL]), ("active", "active"))

    def test_measures_the_live_datadir_from_metadata_without_reading_a_file_or_tripping_on_one_removed(self):
        gd = self.settings["gethDir"]
        with open(os.path.join(gd, "a.ldb"), "wb") as f:
            f.write(b"x" * 1000)
        os.symlink("a.ldb", os.path.join(gd, "link"))
        listing = [(gd, [], ["a.ldb", "link", "compacted-away.ldb"])]
        with mock.patch("builtins.open", side_effect=AssertionError("a live file was opened")), mock.patch.object(host.os, "walk", return_value=listing):
            self.assertEqual(host.tree_bytes(gd), 1000)

    def test_notes_the_head_and_its_hash_from_geth_log_terminal_and_logfmt(self):
        self.fake.state[GETH] = "active"
        self.geth_logs_head(39048765, "4a5b6c..d7e8f9")
        m = switch.step_note_head(self.validator())
        self.assertEqual((m["head"], m["headHash"]), (39048765, "4a5b6c..d7e8f9"))
        whole = block_hash(12)
        self.fake.logs[GETH] = f't=2026-11-23T10:00:00+0000 lvl=info msg="Chain head was updated" number=12 hash={whole} root=0x00\n'
        m = switch.step_note_head(self.validator())
        self.assertEqual((m["head"], m["headHash"]), (12, whole))


class Step3Stop(SwitchCase):
    def setUp(self):
        super().setUp()
        self.fake.state.update({GETH: "active", CL: "active"})
        self.validator().write_marker("s02-note-head", {"head": 90, "headHash": "aaaaaa..aaaa5a"})

    def test_the_final_head_gets_its_whole_hash_from_geth_rpc_when_it_agrees_with_the_log(self):
        whole = block_hash(100)
        self.geth_logs_head(100, f"{whole[2:8]}..{whole[-6:]}")
        m = switch.step_stop(self.validator())
        self.assertEqual((m["head"], m["headHash"], m["headHashFrom"]), (100, whole, "geth's RPC"))
        self.assertEqual((self.fake.state[GETH], self.fake.state[CL]), ("inactive", "inactive"))

    def test_a_log_and_rpc_that_disagree_stop_the_switch_with_geth_still_running(self):
        self.geth_logs_head(100, "123456..654321")
        with self.assertRaisesRegex(Failed, r"block 100: geth's log says hash 123456\.\.654321, its RPC 0xa+64: geth's chain changed"):
            switch.step_stop(self.validator())
        self.assertEqual(self.fake.state[GETH], "active")


class DowntimePath(SwitchCase):
    """Steps 4 to 8 read the datadir once (the backup copy) and the export once (while it is
    written): every later check is by metadata."""

    def datadir(self):
        gd = self.settings["gethDir"]
        os.makedirs(os.path.join(gd, "geth", "chaindata", "ancient"))
        for i, size in enumerate((2_000_000, 2_100_000, 300, 0)):
            with open(os.path.join(gd, "geth", "chaindata", f"{i:06d}.ldb"), "wb") as f:
                f.write(bytes([i]) * size)
        with open(os.path.join(gd, "geth", "chaindata", "ancient", "bodies.0000.cdat"), "wb") as f:
            f.write(b"b" * 5_000_000)
        with open(os.path.join(self.settings["consensusHome"], "app.toml"), "w") as f:
            f.write("x = 1\n")

    def backup(self):
        self.datadir()
        with mock.patch.object(host, "run", REAL_RUN):
            return switch.step_backup(self.validator())

    def test_the_backup_is_one_copy_checked_by_metadata_and_a_later_check_reads_nothing(self):
        m = self.backup()
        self.assertEqual((m["files"], m["bytes"], m["method"]), (6, 9_100_306, "copy"))  # ext4 here: no reflink
        v = self.validator()
        v.write_marker("s04-backup", m)
        with mock.patch("builtins.open", wraps=open) as opened:
            self.assertEqual(v.verify_backup(), m["backupDir"])
        read = [c.args[0] for c in opened.call_args_list if str(c.args[0]).startswith(m["backupDir"])]
        self.assertEqual(read, [os.path.join(m["backupDir"], "manifest.json")])  # no file of the backup itself

    def test_a_backup_missing_a_file_or_with_a_file_of_another_size_is_refused_naming_it(self):
        m = self.backup()
        v = self.validator()
        v.write_marker("s04-backup", m)
        gone = os.path.join(m["backupDir"], "geth", "geth", "chaindata", "000002.ldb")
        os.unlink(gone)
        with self.assertRaisesRegex(Failed, r"geth does not match its manifest \(geth/chaindata/000002.ldb is missing\)"):
            v.verify_backup()
        with open(gone, "wb") as f:
            f.write(b"short")
        with self.assertRaisesRegex(Failed, r"geth/chaindata/000002.ldb has size/mtime \[5, "):
            v.verify_backup()

    def test_a_backup_taken_by_the_older_tool_is_checked_by_its_sizes(self):
        m = self.backup()
        path = os.path.join(m["backupDir"], "manifest.json")
        with open(path) as f:
            new = json.load(f)
        old = {n: {k: [e[0], "sha256 of the older tool"] for k, e in new[n].items()} for n in ("geth", "0gchaind")}
        with open(path, "w") as f:
            json.dump(old, f)
        v = self.validator()
        v.write_marker("s04-backup", m)
        self.assertEqual(v.verify_backup(), m["backupDir"])
        os.truncate(os.path.join(m["backupDir"], "geth", "geth", "chaindata", "ancient", "bodies.0000.cdat"), 10)
        with self.assertRaisesRegex(Failed, r"bodies.0000.cdat has size/mtime 10, expected 5000000"):
            v.verify_backup()

    def export(self, blocks):
        path = os.path.join(self.root, "chain-export.rlp")
        with open(path, "wb") as f:
            f.write(b"".join(blocks))
        return path

    def test_the_export_is_verified_by_the_walk_that_showed_its_progress(self):
        path = self.export([block(n) for n in range(1, 41)])
        meter = jobs.Meter(40)
        jobs.count_blocks(path, meter)
        with mock.patch.object(trim_export, "skip", side_effect=AssertionError("walked twice")):
            info = chain_mod.verify_export(path, 40, walked=meter)
        self.assertEqual((info["first"], info["last"], info["blocks"], info["checked"]), (1, 40, 40, "walked while exported"))

    def test_an_export_whose_progress_walk_stopped_short_is_walked_again_and_the_fault_named(self):
        good = b"".join(block(n) for n in range(1, 11))
        path = self.export([good, block(11)[:-7]])
        meter = jobs.Meter(11)
        jobs.count_blocks(path, meter)
        self.assertEqual(meter.count, 10)
        with self.assertRaisesRegex(Failed, rf"offset {len(good)}: truncated block"):
            chain_mod.verify_export(path, 11, walked=meter)

    def test_step_6_and_the_trim_take_the_verified_export_by_its_metadata(self):
        path = self.export([block(n) for n in range(1, 41)])
        meter = jobs.Meter(40)
        jobs.count_blocks(path, meter)
        info = chain_mod.verify_export(path, 40, walked=meter)
        with mock.patch.object(trim_export, "skip", side_effect=AssertionError("walked again")):
            self.assertEqual(chain_mod.export_unchanged(path, info), info)
            out = trim_export.trim(1, self.root, log=lambda m: None, verified=info)
        self.assertEqual(os.stat(out).st_ino, os.stat(path).st_ino)  # a hard link (ext4): no data copied
        os.unlink(out)
        with open(path, "r+b") as f:  # same size, new content: the mtime changes
            f.write(block(1))
        os.utime(path, ns=(info["mtimeNs"] + 1_000_000, info["mtimeNs"] + 1_000_000))
        with self.assertRaisesRegex(Failed, r"changed since it was verified \(size/mtime .*\): it is not the export that was verified; roll back"):
            chain_mod.export_unchanged(path, info)
        with mock.patch.object(trim_export, "skip", wraps=trim_export.skip) as walked:
            trim_export.trim(1, self.root, log=lambda m: None, verified=info)
        self.assertTrue(walked.called)

    def test_the_switch_trims_only_the_export_it_verified_even_through_its_hard_link(self):
        # Found on the real reth in the e2e tier: the trimmed file is a hard link of the verified
        # export, so a change to it changes the export; step 9's recovery then "made it again"
        # from the changed export. The switch's trim now refuses an export changed since it was verified.
        v = self.validator()
        os.makedirs(v.mig)
        path = os.path.join(v.mig, "chain-export.rlp")
        with open(path, "wb") as f:
            f.write(b"".join(block(n) for n in range(1, 41)))
        info = chain_mod.verify_export(path, 40)
        with mock.patch.object(chain_mod.shutil, "chown"):  # to the operator, who does not exist here
            out = chain_mod.trim(v, 1, verified=info)
            self.assertEqual(os.stat(out).st_ino, os.stat(path).st_ino)
            with open(out, "r+b") as f:  # the trimmed file loses its last block
                f.truncate(info["lastOffset"])
            with self.assertRaisesRegex(Failed, r"chain-export.rlp changed since it was verified .*: it is not the export that was verified; roll back"):
                chain_mod.trim(v, 1, verified=info)
            self.assertFalse(os.path.exists(out + ".partial"))

    def test_a_long_job_shows_blocks_percent_rate_and_eta_and_keeps_them_for_status(self):
        path = self.export([block(n) for n in range(1, 41)])
        v = self.validator()
        os.makedirs(v.state_dir, exist_ok=True)
        meter = jobs.Meter(80)
        states = iter([{"ActiveState": "active", "SubState": "running"}, {"ActiveState": "active", "SubState": "exited", "ExecMainStatus": "0"}])
        said = []
        with mock.patch.object(jobs, "unit_props", lambda *a: next(states)), mock.patch.object(jobs, "say", said.append), \
                mock.patch.object(jobs.time, "sleep", lambda s: None):
            status = jobs.attach(v, "nodefleet-export-x", meter.progress("exported", lambda: jobs.count_blocks(path, meter)), every=0)
        self.assertEqual(status, 0)
        self.assertRegex(said[0], r"^exported 40 of 80 blocks \(50\.0%\), \d+ blocks/s, ETA (\d+ s|unknown)$")
        with open(os.path.join(v.state_dir, "progress.json")) as f:
            kept = json.load(f)
        self.assertEqual({k: kept[k] for k in ("job", "verb", "done", "total", "percent")}, {"job": "nodefleet-export-x", "verb": "exported", "done": 40, "total": 80, "percent": 50.0})
        self.assertIn("etaSeconds", kept)
        self.assertRegex(kept["at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        # A progress file that cannot be written does not stop the job.
        meter = jobs.Meter(80)
        states = iter([{"ActiveState": "active", "SubState": "running"}, {"ActiveState": "active", "SubState": "exited", "ExecMainStatus": "0"}])
        with mock.patch.object(jobs, "unit_props", lambda *a: next(states)), mock.patch.object(jobs, "say", said.append), \
                mock.patch.object(jobs.time, "sleep", lambda s: None), mock.patch.object(jobs, "put", side_effect=OSError(28, "No space left on device")):
            self.assertEqual(jobs.attach(v, "nodefleet-export-x", meter.progress("exported", lambda: jobs.count_blocks(path, meter)), every=0), 0)
        self.assertIn("progress not kept for status ([Errno 28] No space left on device); the job goes on", said)

    def test_the_report_splits_the_downtime_into_the_work_and_the_overhead(self):
        steps = {"s04-backup": {"seconds": 30.0}, "s05-export": {"seconds": 100.5}, "s09-import": {"seconds": 200.0}}
        self.assertEqual(switch.downtime_parts(352.0, steps), {"backup": 30.0, "export": 100.5, "import": 200.0, "total": 352.0, "overhead": 21.5})
        self.assertIsNone(switch.downtime_parts(352.0, {"s04-backup": {"seconds": 30.0}})["overhead"])


class LowDowntime(SwitchCase):
    """The low-downtime switch's own steps: the validator keeps running until the cutover."""

    def running(self):
        self.fake.state.update({GETH: "active", CL: "active"})
        with open(lowdowntime.ipc_path(self.validator()), "w"):
            pass  # geth's IPC socket (a file is enough for the check)

    def test_note_head_refuses_a_validator_that_is_not_running_or_a_geth_without_ipc(self):
        self.fake.state[GETH] = "active"
        with self.assertRaisesRegex(Failed, rf"{CL} is not running: the low-downtime switch exports while the validator runs"):
            lowdowntime.step_note_head(self.validator())
        self.fake.state[CL] = "active"
        with self.assertRaisesRegex(Failed, r"geth.ipc does not exist: the live export needs geth's IPC socket"):
            lowdowntime.step_note_head(self.validator())

    def test_note_head_takes_head_and_hash_from_geth_rpc_and_checks_2x_disk_first(self):
        self.running()
        with open(os.path.join(self.settings["gethDir"], "000001.ldb"), "wb") as f:
            f.write(b"x" * 4096)
        tight = types.SimpleNamespace(f_bavail=8191, f_frsize=1)
        with mock.patch.object(lowdowntime.os, "statvfs", return_value=tight):
            with self.assertRaisesRegex(Failed, r"8191 bytes, the low-downtime switch needs 2x the geth datadir \(8192 bytes"):
                lowdowntime.step_note_head(self.validator())
        m = lowdowntime.step_note_head(self.validator())
        self.assertEqual((m["head"], m["headHash"]), (100, block_hash(100)))
        self.assertEqual(self.fake.stopped(), [])

    def test_the_live_export_asks_the_running_geth_over_ipc_for_blocks_1_to_the_noted_head(self):
        self.running()
        v = self.validator()
        v.write_marker("l02-note-head", {"head": 100})
        with mock.patch("zgvalidator.lowdowntime.export_job", return_value={"blocks": 100}) as job:
            lowdowntime.step_export_live(v)
        argv, path, first, last = job.call_args.args[1:]
        self.assertEqual(argv[-3:], [lowdowntime.ipc_path(v), "admin_exportChain", json.dumps([v.export_file, 1, 100])])
        self.assertEqual((path, first, last), (v.export_file, 1, 100))
        self.assertEqual(self.fake.stopped(), [])

    def test_the_cutover_stops_0gchaind_then_takes_geth_final_head_then_stops_geth(self):
        self.running()
        v = self.validator()
        v.write_marker("l02-note-head", {"head": 90})
        m = lowdowntime.step_cutover(v)
        self.assertEqual([c[-1] for c in self.fake.stopped()], [CL, GETH])
        self.assertEqual((m["head"], m["headHash"], m["liveHead"], m["headHashFrom"]), (100, block_hash(100), 90, "geth's RPC"))
        self.assertEqual(v.noted_head(), 90)  # no marker yet: the live head
        v.write_marker("l07-cutover", m)
        self.assertEqual((v.noted_head(), v.noted_hash()), (100, block_hash(100)))

    def test_a_cutover_run_again_after_both_stopped_takes_the_head_from_geth_log(self):
        v = self.validator()
        v.write_marker("l02-note-head", {"head": 90})
        self.geth_logs_head(97, "aaaaaa..aaaa61")
        m = lowdowntime.step_cutover(v)
        self.assertEqual((m["head"], m["headHash"], m["headHashFrom"]), (97, "aaaaaa..aaaa61", "geth's log"))
        self.assertEqual(self.fake.stopped(), [])

    def test_a_geth_head_below_the_live_export_is_refused(self):
        self.running()
        v = self.validator()
        v.write_marker("l02-note-head", {"head": 120})
        with self.assertRaisesRegex(Failed, r"geth's head 100 is below the 120 exported live"):
            lowdowntime.step_cutover(v)
        self.assertEqual(self.fake.stopped(), [])  # refused before the validator was stopped

    def test_the_rest_is_exported_from_the_stopped_geth_and_nothing_when_no_block_was_made(self):
        v = self.validator()
        v.write_marker("l07-cutover", {"head": 100, "liveHead": 100})
        self.assertEqual(lowdowntime.step_export_rest(v)["blocks"], 0)
        v.write_marker("l08-export-rest", {"first": 101, "last": 100, "blocks": 0})
        self.assertEqual(lowdowntime.step_import_rest(v)["attempts"], 0)
        os.makedirs(os.path.join(self.settings["releaseDir"], "bin"))
        geth = os.path.join(self.settings["releaseDir"], "bin", "geth")
        with open(geth, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(geth, 0o755)
        v.write_marker("l07-cutover", {"head": 130, "liveHead": 100})
        with mock.patch("zgvalidator.lowdowntime.export_job", return_value={"blocks": 30}) as job:
            lowdowntime.step_export_rest(v)
        argv, path, first, last = job.call_args.args[1:]
        self.assertEqual(argv, [geth, "export", "--datadir", self.settings["gethDir"], path, "101", "130"])
        self.assertEqual((os.path.basename(path), first, last), ("chain-rest.rlp", 101, 130))
        self.fake.state[GETH] = "active"
        with self.assertRaisesRegex(Failed, r"is running: export only from a stopped geth"):
            lowdowntime.step_export_rest(v)

    def test_the_two_modes_never_mix_on_one_host(self):
        v = self.validator()
        v.write_marker("s01-install-reth", {"inputs": "x", "ended": "t"})
        with self.assertRaisesRegex(Failed, r"l01-install-reth: a switch in the other mode is on record on this host \(its step s01-install-reth is done\)"):
            switch.migrate(v, "l01-install-reth", "x")

    def test_a_rollback_before_the_cutover_leaves_the_validator_running_and_removes_the_switch_work(self):
        self.running()
        v = self.validator()
        v.write_marker("l02-note-head", {"head": 90})
        v.write_marker("l06-import", {"importedHeight": 90})
        os.makedirs(os.path.join(self.settings["rethDir"], "db"))
        os.makedirs(v.mig)
        for name in ("chain-export.rlp", "chain-export-from-1.rlp", "export.log"):
            with open(os.path.join(v.mig, name), "w") as f:
                f.write("x")
        r = rollback.rollback(v)
        self.assertEqual((r["beforeCutover"], r["validatorKeptRunning"]), (True, True))
        self.assertEqual(self.fake.stopped(), [("stop", f"nodefleet-import-{v.node}"), ("stop", f"nodefleet-export-{v.node}"), ("stop", f"nodefleet-rethcheck-{v.node}")])
        self.assertEqual(sorted(os.listdir(v.mig)), ["export.log"])
        self.assertFalse(os.path.exists(self.settings["rethDir"]))
        self.assertTrue(os.path.isdir(self.settings["gethDir"]))
        self.assertIsNone(v.marker("l02-note-head"))  # archived: a later migrate starts afresh
        self.assertEqual(v.host_client(), "geth")

    def test_the_report_counts_only_the_cutover_export_and_import_as_the_work(self):
        v = self.validator()
        for step, secs in (("l03-export-live", 500.0), ("l06-import", 900.0), ("l07-cutover", 1.0), ("l08-export-rest", 2.0), ("l09-import-rest", 5.0)):
            v.write_marker(step, {"started": "a", "ended": "b", "seconds": secs, "head": 130, "liveHead": 100, "importedHeight": 130, "attempts": 1})
        v.write_marker("l14-verify", {"started": "a", "ended": "b", "seconds": 9.0, "downtimeSeconds": 20.0})
        r = switch.migration_report(v)
        self.assertEqual(r["mode"], "lowDowntime")
        self.assertEqual(r["downtime"], {"export": 2.0, "import": 5.0, "total": 20.0, "overhead": 13.0})
        self.assertEqual(r["notedHead"], 130)


class Step10Compare(SwitchCase):
    """Step 10 runs reth once (transient) and compares its block at the exported head."""

    def setUp(self):
        super().setUp()
        p = mock.patch.object(switch, "transient_reth", lambda v: "nodefleet-rethcheck-validator-1")
        p.start()
        self.addCleanup(p.stop)

    def noted(self, head=100, hash_=None):
        v = self.validator()
        v.write_marker("s03-stop", {"head": head, "headHash": hash_})
        return v

    def test_passes_when_reth_has_geth_block_at_the_head(self):
        r = switch.step_compare(self.noted(hash_=block_hash(100)))
        self.assertEqual((r["head"], r["hash"], r["gethHash"]), (100, block_hash(100), block_hash(100)))
        abbreviated = f"{block_hash(100)[2:8]}..{block_hash(100)[-6:]}"
        self.assertEqual(switch.step_compare(self.noted(hash_=abbreviated))["hash"], block_hash(100))

    def test_refuses_another_block_naming_both_hashes(self):
        self.el.fork = "f"
        with self.assertRaisesRegex(Failed, rf"block 100: reth has hash {block_hash(100, 'f')}, geth had {block_hash(100)}: the imported chain is not geth's"):
            switch.step_compare(self.noted(hash_=block_hash(100)))

    def test_refuses_an_incomplete_import(self):
        self.el.head = 97
        with self.assertRaisesRegex(Failed, r"reth holds blocks up to 97, the export ended at 100: the import is incomplete"):
            switch.step_compare(self.noted(hash_=block_hash(100)))

    def test_with_a_reference_the_gap_to_the_network_is_catch_up_not_a_failure(self):
        ref = Chain(5000)
        self.addCleanup(ref.close)
        self.settings["referenceRpcUrl"] = ref.url
        r = switch.step_compare(self.noted(hash_=block_hash(100)))
        self.assertEqual((r["referenceHash"], r["referenceHeight"], r["catchUpBlocks"]), (block_hash(100), 5000, 4900))

    def test_refuses_a_chain_that_is_not_the_reference_naming_both_hashes(self):
        ref = Chain(5000, fork="e")
        self.addCleanup(ref.close)
        self.settings["referenceRpcUrl"] = ref.url
        with self.assertRaisesRegex(Failed, rf"block 100: reth has hash {block_hash(100)}, the reference {ref.url} has {block_hash(100, 'e')}"):
            switch.step_compare(self.noted(hash_=block_hash(100)))

    def test_without_a_noted_hash_or_a_reference_there_is_nothing_to_check_against(self):
        with self.assertRaisesRegex(Failed, r"no hash of block 100 was noted at step 3 and no referenceRpcUrl is set"):
            switch.step_compare(self.noted(hash_=None))
