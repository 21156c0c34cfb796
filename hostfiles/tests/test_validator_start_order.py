"""The order in which setup starts a validator's two daemons (zgvalidator.starting.start_in_order),
against a recording stand-in for systemd (the dev VMs run the real units):

- an execution client whose unit changed is restarted with the consensus daemon stopped, and the
  daemon is started again only once the engine port answers (restarted under it, the daemon goes
  on with its network while the client is down and the client is left behind, answering SYNCING);
- nothing changed, nothing restarts; a changed consensus unit alone restarts the daemon alone;
- nothing running: the execution client first, then the daemon;
- what it reports restarted is what it restarted (the daemon too, when it was stopped for the client);
- a daemon not running after its start is warned of (its journal, on stderr) and reported, not
  a failure: the health step fails for it (a failed step records nothing in Pulumi's state, so
  setup would not run again when the change is set back);
- a switch still in the config is over on the host (switch_over) once its work is done there: its
  units are then setup's again (a metrics flag added later is applied, not left to steps that
  will not run again); while it is under way they stay the switch steps'.

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zgvalidator import setup, starting  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402

EL, CL = "geth-validator-1.service", "0gchaind-validator-1.service"


class Systemd:
    """Units' states and every call, in order; the engine port answers while EL is active."""

    def __init__(self, running, engine_answers=True):
        self.running = set(running)
        self.calls = []
        self.engine_answers = engine_answers

    def systemctl(self, *args, check=True):
        verb, unit = args[0], args[-1]
        self.calls.append((verb, unit))
        if verb in ("start", "restart"):
            self.running.add(unit)
        elif verb == "stop":
            self.running.discard(unit)

    def listening(self, port, host="127.0.0.1"):
        self.calls.append(("engine?", EL in self.running and self.engine_answers))
        return EL in self.running and self.engine_answers


class Node:
    units = {"consensus": CL}

    def __init__(self, sd):
        self.sd = sd

    def stop(self, unit):
        self.sd.systemctl("stop", unit)

    def start_consensus(self):
        self.sd.systemctl("start", CL)


class StartInOrder(unittest.TestCase):
    def run_with(self, running, changed, engine_answers=True):
        sd = Systemd(running, engine_answers)
        saved = {name: getattr(starting, name) for name in ("systemctl", "active", "listening", "wait", "journal", "say")}
        starting.systemctl = sd.systemctl
        starting.active = lambda unit: unit in sd.running
        starting.listening = sd.listening
        starting.wait = lambda what, predicate, timeout, every=1.0: predicate() or (_ for _ in ()).throw(Failed(f"timed out waiting for {what}"))
        starting.journal = lambda unit, lines=5: "its last lines"
        starting.say = lambda *a: None
        class V(Node):
            node = "validator-1"
        try:
            sd.restarted = starting.start_in_order(V(sd), EL, 56551, changed)
        finally:
            for name, f in saved.items():
                setattr(starting, name, f)
        return sd

    def test_a_changed_execution_client_restarts_with_the_daemon_stopped(self):
        sd = self.run_with({EL, CL}, [EL])
        self.assertEqual(sd.calls, [("stop", CL), ("restart", EL), ("engine?", True), ("start", CL)])
        self.assertEqual(sd.restarted, [EL, CL])

    def test_both_changed_the_same_order(self):
        sd = self.run_with({EL, CL}, [CL, EL])
        self.assertEqual(sd.calls, [("stop", CL), ("restart", EL), ("engine?", True), ("start", CL)])

    def test_a_stopped_daemon_is_started_not_reported_restarted(self):
        sd = self.run_with({EL}, [EL])
        self.assertEqual(sd.calls, [("restart", EL), ("engine?", True), ("start", CL)])
        self.assertEqual(sd.restarted, [EL])

    def test_a_daemon_not_running_after_its_start_is_warned_of_not_failed(self):
        import contextlib
        import io
        from unittest import mock

        class V:
            node = "validator-1"
        err = io.StringIO()
        with mock.patch.object(starting, "active", lambda unit: unit != EL), mock.patch.object(starting, "journal", lambda unit, lines: f"{unit}: exited at start\n"), contextlib.redirect_stderr(err):
            down = starting.warn_not_running(V(), (EL, CL))
        self.assertEqual(down, [EL])
        self.assertEqual(err.getvalue(), f"{EL}: exited at start\nvalidator validator-1: warning: {EL} is not running: its health step judges it\n")
        self.assertEqual(starting.cut_urls("dial http://u:p@10.0.0.1:8545/key?x=1 failed; enode://abc@1.2.3.4:30303 ok"), "dial http://10.0.0.1:8545/… failed; enode://1.2.3.4:30303 ok")
        with mock.patch.object(starting, "active", lambda unit: True):
            self.assertEqual(starting.warn_not_running(V(), (EL, CL)), [])

    def test_nothing_changed_nothing_restarts(self):
        sd = self.run_with({EL, CL}, [])
        self.assertEqual(sd.calls, [("engine?", True)])
        self.assertEqual(sd.restarted, [])

    def test_a_changed_daemon_alone_restarts_alone(self):
        sd = self.run_with({EL, CL}, [CL])
        self.assertEqual(sd.calls, [("engine?", True), ("restart", CL)])
        self.assertEqual(sd.restarted, [CL])

    def test_nothing_running_starts_the_execution_client_first(self):
        sd = self.run_with(set(), [EL, CL])
        self.assertEqual(sd.calls, [("start", EL), ("engine?", True), ("start", CL)])
        self.assertEqual(sd.restarted, [], "started, not restarted")

    def test_an_engine_port_that_never_answers_leaves_the_daemon_stopped(self):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            sd = self.run_with({EL, CL}, [EL], engine_answers=False)
        self.assertNotIn(CL, sd.running, "the daemon stays stopped")
        self.assertEqual(sd.restarted, [EL])
        self.assertIn("warning: timed out waiting for geth-validator-1.service to listen on the engine port 56551; its log: its last lines; 0gchaind-validator-1.service is left stopped", err.getvalue())


if __name__ == "__main__":
    unittest.main()


class Markers:
    """A node whose switch markers are the given step names."""

    def __init__(self, *steps):
        self.steps = set(steps)

    def marker(self, step):
        return {"started": 0} if step in self.steps else None

    def step_marker(self, *steps):
        return next((self.marker(s) for s in steps if self.marker(s)), None)


class SwitchOver(unittest.TestCase):
    def test_a_rollback_is_over_on_geth_with_no_switch_on_record(self):
        self.assertTrue(setup.switch_over(Markers(), "rollback", "geth"))
        self.assertFalse(setup.switch_over(Markers("s03-stop", "s04-backup"), "rollback", "geth"), "the rollback has not run yet")
        self.assertFalse(setup.switch_over(Markers("s14-verify"), "rollback", "reth"))
        self.assertFalse(setup.switch_over(Markers(), "rollback", None), "a host without a client: nothing was rolled back")

    def test_a_migrate_or_cleanup_is_over_once_reth_runs_the_verified_chain(self):
        for switch in ("migrate", "cleanup"):
            self.assertTrue(setup.switch_over(Markers("s13-start", "s14-verify"), switch, "reth"))
            self.assertTrue(setup.switch_over(Markers("l14-verify"), switch, "reth"), "the low-downtime switch's step 14")
            self.assertFalse(setup.switch_over(Markers("s11-units", "s13-start"), switch, "reth"), "not verified yet")
            self.assertFalse(setup.switch_over(Markers("s05-export"), switch, "geth"))

