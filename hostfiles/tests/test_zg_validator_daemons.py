"""The host tool with a release whose consensus daemon is BeaconKit's beacond (settings
`consensus: {daemon: beacond, flagPrefix: beacon-kit}`) instead of 0gchaind: the JWT check reads
the beacon-kit flag, a running beacond with the key counts as the node's daemon, the JWT file gets
the 0x prefix beacond requires, step 1 reads BeaconKit's version from the binary. What the real
beacond does with these files is proven by the cli tier's contract test (test/cli/beacond-contract)."""
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import sys
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from tests.switchcase import CL, GETH, RETH, SwitchCase, write_unit  # noqa: E402
from zgvalidator import health as health_mod, host as host_mod, setup as setup_mod, switch  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402
from zgvalidator.node import Validator  # noqa: E402

BEACOND = {"daemon": "beacond", "flagPrefix": "beacon-kit"}
REAL_PROCESSES = Validator.consensus_processes  # SwitchCase stubs it: the real one is under test here


class BeacondJwt(SwitchCase):
    def units(self, cl_flag, cl_file):
        etc = self.settings["etcDir"]
        for name in ("a.hex", "b.hex"):
            with open(os.path.join(self.root, name), "w") as f:
                f.write("0x" + "00" * 32)
        write_unit(os.path.join(etc, RETH), "--authrpc.jwtsecret", os.path.join(self.root, "a.hex"))
        write_unit(os.path.join(etc, CL), cl_flag, os.path.join(self.root, cl_file))

    def test_the_beacon_kit_flag_names_the_file(self):
        self.units("--beacon-kit.engine.jwt-secret-path", "a.hex")
        self.assertEqual(self.validator(consensus=BEACOND).check_jwt(RETH), os.path.join(self.root, "a.hex"))
        with self.assertRaisesRegex(Failed, r"cannot find the JWT paths"):
            self.validator().check_jwt(RETH)  # 0gchaind's flag is not on beacond's line

    def test_a_different_file_is_refused_by_name(self):
        self.units("--beacon-kit.engine.jwt-secret-path", "b.hex")
        with self.assertRaisesRegex(Failed, r"reads the JWT secret from .*/a\.hex but 0gchaind-validator-1\.service from .*/b\.hex"):
            self.validator(consensus=BEACOND).check_jwt(RETH)


class ConsensusGenesis(SwitchCase):
    """The release's consensus genesis (settings consensusGenesis) in the home: installed where
    there is none, kept when it is the same, and a home of another chain refused untouched."""

    def setUp(self):
        super().setUp()
        self.release_genesis = os.path.join(self.root, "release", "0g-home", "config", "genesis.json")
        os.makedirs(os.path.dirname(self.release_genesis))
        with open(self.release_genesis, "w") as f:
            f.write('{"chain_id": "beacond-2061"}\n')
        self.target = os.path.join(self.settings["consensusHome"], "config", "genesis.json")
        os.makedirs(os.path.dirname(self.target))
        for name in ("say", "put"):
            p = mock.patch.object(setup_mod, name, wraps=getattr(setup_mod, name))
            self.addCleanup(p.stop)
            setattr(self, name, p.start())
        p = mock.patch("shutil.chown")  # the operator account is the host's
        self.chown = p.start()
        self.addCleanup(p.stop)

    def install(self, genesis):
        return setup_mod.install_consensus_genesis(self.validator(consensusGenesis=genesis))

    def test_a_home_without_one_gets_the_releases(self):
        self.install(self.release_genesis)
        with open(self.target) as f:
            self.assertEqual(f.read(), '{"chain_id": "beacond-2061"}\n')
        self.assertEqual(os.stat(self.target).st_mode & 0o777, 0o644)
        self.chown.assert_called_with(self.target, "nodefleet", "nodefleet")
        self.say.assert_called_with(f"installed the release's consensus genesis as {self.target}")

    def test_the_same_genesis_is_left_as_it_is(self):
        shutil.copy(self.release_genesis, self.target)
        self.install(self.release_genesis)
        self.put.assert_not_called()

    def test_another_chains_genesis_is_refused_and_kept(self):
        with open(self.target, "w") as f:
            f.write('{"chain_id": "other"}\n')
        with self.assertRaisesRegex(Failed, r"genesis\.json is not the release's genesis .*0g-home/config/genesis\.json: this home belongs to another chain; nodefleet never replaces"):
            self.install(self.release_genesis)
        with open(self.target) as f:
            self.assertEqual(f.read(), '{"chain_id": "other"}\n')

    def test_a_release_without_the_file_names_the_setting(self):
        with self.assertRaisesRegex(Failed, r"consensus genesis .*/missing\.json cannot be read \(No such file or directory\): is the release's consensus\.genesis path right\?"):
            self.install(os.path.join(self.root, "release", "missing.json"))
        self.assertFalse(os.path.exists(self.target))

    def test_unset_the_home_brings_its_own(self):
        self.install(None)
        self.assertFalse(os.path.exists(self.target))


class Put(unittest.TestCase):
    """host.put, which writes as root into directories the operator account owns."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-put-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = os.path.join(self.dir, "genesis.json")

    def test_a_link_left_under_the_temporary_name_is_replaced_not_followed(self):
        victim = os.path.join(self.dir, "victim")
        with open(victim, "w") as f:
            f.write("kept\n")
        os.symlink(victim, self.path + ".nodefleet-new")
        host_mod.put(self.path, "{}\n", 0o644)
        with open(victim) as f:
            self.assertEqual(f.read(), "kept\n")
        with open(self.path) as f:
            self.assertEqual(f.read(), "{}\n")
        self.assertFalse(os.path.lexists(self.path + ".nodefleet-new"))

    def test_the_file_has_its_mode_from_the_start(self):
        host_mod.put(self.path, "secret\n", 0o600)
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o600)


class PrefixJwt(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-jwt-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = os.path.join(self.dir, "jwt.hex")

    def write(self, text, mode=0o640):
        with open(self.path, "w") as f:
            f.write(text)
        os.chmod(self.path, mode)

    def test_a_bare_secret_gets_the_prefix_and_keeps_its_mode(self):
        self.write("ab" * 32 + "\n")
        with mock.patch.object(setup_mod, "say"):
            self.assertTrue(setup_mod.prefix_jwt(self.path))
        with open(self.path) as f:
            self.assertEqual(f.read(), "0x" + "ab" * 32 + "\n")
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o640)
        self.assertEqual(os.listdir(self.dir), ["jwt.hex"])

    def test_a_prefixed_or_malformed_file_is_left_alone(self):
        for text in ("0x" + "ab" * 32 + "\n", "ab" * 31, "not a secret\n", "ab" * 32 + "ff"):
            self.write(text)
            with mock.patch.object(setup_mod, "say"):
                self.assertFalse(setup_mod.prefix_jwt(self.path), text)
            with open(self.path) as f:
                self.assertEqual(f.read(), text)


class DaemonProcesses(SwitchCase):
    def test_a_running_beacond_with_this_key_counts(self):
        """A real process whose argv[0] is .../beacond, started with --home of a home holding the
        same key, is found (one key never runs twice, whichever daemon a release carries)."""
        home = self.settings["consensusHome"]
        os.makedirs(os.path.join(home, "config"), exist_ok=True)
        with open(os.path.join(home, "config", "priv_validator_key.json"), "w") as f:
            f.write('{"k": 1}')
        other = os.path.join(self.root, "other-home")
        os.makedirs(os.path.join(other, "config"))
        with open(os.path.join(other, "config", "priv_validator_key.json"), "w") as f:
            f.write('{"k": 1}')
        daemon = os.path.join(self.root, "release", "bin", "beacond")
        # A process whose argv is what the unit's ExecStart makes: [.../beacond, start, --home, H].
        proc = subprocess.Popen(["bash", "-c", f'exec -a {daemon} python3 -c "import time; time.sleep(30)" start --home {other}'])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        found = []
        deadline = time.monotonic() + 20  # bash then python starting, beside a busy CI
        while not found and time.monotonic() < deadline:
            found = REAL_PROCESSES(self.validator(consensus=BEACOND))
            if not found:
                time.sleep(0.05)
        self.assertEqual(found, [{"pid": proc.pid, "home": other}])
        self.assertEqual(REAL_PROCESSES(self.validator()), found, "either daemon's name counts, whatever the release carries")
        self.assertEqual(found, [{"pid": proc.pid, "home": other}])


class Step1Beacond(SwitchCase):
    def test_the_version_is_read_from_the_binary_and_needs_no_0g_floor(self):
        bindir = os.path.join(self.settings["releaseDir"], "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "beacond"), "wb") as f:
            f.write(b"\x00junk\tpath\tgithub.com/berachain/beacon-kit/cmd/beacond\nmod\tgithub.com/berachain/beacon-kit\tv1.1.0\th1:x=\ndep\t")
        os.chmod(os.path.join(bindir, "beacond"), 0o755)
        v = self.validator(consensus=BEACOND)
        v.install_reth = mock.Mock(return_value="reth 1.11.4")
        with mock.patch.object(switch, "say"):
            self.assertEqual(switch.step_install_reth(v), {"releaseVersion": "beacond v1.1.0", "rethVersion": "reth 1.11.4"})


class EngineUnreachable(SwitchCase):
    def on_geth(self, log):
        etc = self.settings["etcDir"]
        jwt = os.path.join(self.root, "jwt.hex")
        with open(jwt, "w") as f:
            f.write("0x" + "00" * 32)
        write_unit(os.path.join(etc, GETH), "--authrpc.jwtsecret", jwt)
        write_unit(os.path.join(etc, CL), "--beacon-kit.engine.jwt-secret-path", jwt)
        v = self.validator(consensus=BEACOND, dialUrl="http://localhost:56551")
        v.set_client("geth")
        self.fake.state.update({GETH: "active", CL: "active"})
        self.fake.since[CL] = 5_000_000
        self.fake.logs[CL] = log
        return v

    def test_beacond_waiting_for_the_engine_is_diagnosed_after_five_tries(self):
        wait = "INFO Waiting for execution client to start... service=engine.client dial_url=http://localhost:56551\n"
        report = health_mod.health(self.on_geth("INFO Starting service type=engine-client\n" + wait * 5))
        [f] = report["findings"]
        self.assertEqual((f["fault"], f["dialUrl"], f["tries"]), ("engine-unreachable", "http://localhost:56551", 5))
        [d] = [d for d in report["diagnoses"] if d["fault"] == "engine-unreachable"]
        self.assertIn("engine API at http://localhost:56551 (5 tries;", d["detail"])
        self.assertIn("dial_url=http://localhost:56551", d["detail"])
        self.assertEqual(health_mod.health(self.on_geth(wait * 4))["findings"], [], "four tries: a slow start")
        self.assertEqual(health_mod.health(self.on_geth(wait * 9 + "INFO Committed state height=7\n"))["findings"], [], "it reached it since")

    def test_a_daemon_started_just_now_is_given_time_to_answer_status(self):
        v = self.on_geth("INFO Starting service type=engine-client\n")
        self.fake.since[CL] = int(time.monotonic() * 1e6)  # started now
        answers = itertools.chain([Failed("connection refused")] * 2, itertools.repeat({"height": 3, "catchingUp": False}))

        def cl_status():
            a = next(answers)
            if isinstance(a, Exception):
                raise a
            return a
        v.cl_status = cl_status
        with mock.patch.object(host_mod.time, "sleep"):
            report = health_mod.health(v)
        self.assertEqual(report["consensus"], {"height": 3, "catchingUp": False})
        self.assertNotIn("consensusError", report)

    def test_a_daemon_up_for_long_is_not_waited_for(self):
        v = self.on_geth("INFO Starting service type=engine-client\n")

        def refused():
            raise Failed("connection refused")
        v.cl_status = refused
        started = time.monotonic()
        report = health_mod.health(v)
        self.assertLess(time.monotonic() - started, 5)
        self.assertIn("connection refused", report["consensusError"])

    def test_beacond_committing_the_networks_blocks_while_its_execution_client_is_behind_is_a_forkchoice_fault(self):
        """Seen on the dev VM: with reth set back under it, the real beacond in a network logs that
        reth answers SYNCING and goes on committing the network's blocks; reth does not follow."""
        syncing = "ERRR Received accepted syncing payload status during forkchoice update call service=execution-engine\n"
        v = self.on_geth(syncing + "INFO Committed state module=state height=110\n")
        v.cl_status = lambda: {"height": 110, "catchingUp": False}
        v.el_height = lambda: 100
        [f] = health_mod.status_now(v)["findings"]
        self.assertEqual(f["fault"], "forkchoice-38002")
        v.el_height = lambda: 109
        self.assertEqual(health_mod.status_now(v)["findings"], [], "its execution client follows: recovered")
        v = self.on_geth("INFO Committed state module=state height=110\n")
        v.cl_status = lambda: {"height": 110, "catchingUp": False}
        v.el_height = lambda: 100
        self.assertEqual(health_mod.status_now(v)["findings"], [], "no fault line since its start: a lag alone is not this fault")


class JournalMessage(unittest.TestCase):
    def test_beacond_colours_make_the_message_a_byte_list_and_its_commit_is_still_found(self):
        line = "\x1b[90m2026-11-27T05:54:45Z\x1b[0m \x1b[32mINFO\x1b[0m Committed state module=state height=27"
        entries = [{"MESSAGE": "plain line", "__REALTIME_TIMESTAMP": "1000000"},
                   {"MESSAGE": list(line.encode()), "__REALTIME_TIMESTAMP": "2500000"}]
        out = "\n".join(json.dumps(e) for e in entries) + "\n"
        with mock.patch.object(host_mod, "run", lambda cmd, check=True: subprocess.CompletedProcess(cmd, 0, out, "")):
            self.assertEqual(host_mod.first_committed_time("0gchaind-validator-1", 0), 2.5)
        self.assertEqual(host_mod.journal_message({"MESSAGE": list(b"a\x1bb")}), "a\x1bb")


if __name__ == "__main__":
    unittest.main()
