"""The error table's rows against the real node simulators (lab/sim: reth and 0gchaind, run as
processes on this machine), the host tool's own code judging what they do: health's diagnoses
and the -38002 remedy, with consensus-height-rollback.py running the simulator's `0gchaind
rollback`. `SimHost` stands in for systemd only: a unit is started from its unit file's
ExecStart line as a process, stopped by SIGTERM, and its journal is the process's output (a
`journalctl` on PATH gives the rollback script the same). What it cannot prove: real systemd's
behaviour (the E2E tier on VMs) and the real reth and 0gchaind (they cannot run here).

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.join(os.path.dirname(os.path.dirname(HERE)), "lab", "sim")
sys.path.insert(0, os.path.dirname(HERE))
from zgvalidator import health as health_mod, host, node, switch  # noqa: E402
from zgvalidator.host import exec_start  # noqa: E402
from zgvalidator.node import Validator  # noqa: E402
from nodefleet_rpc import RpcFailure, block_number  # noqa: E402

RETH, CL, GETH = "reth-simtest.service", "0gchaind-simtest.service", "geth-simtest.service"


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what, f, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = f()
        except (OSError, RpcFailure, ValueError, host.Failed):
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class SimHost:
    """systemd as the host tool sees it, with processes: units from their files' ExecStart."""

    def __init__(self, root, etc):
        self.etc, self.logs = etc, os.path.join(root, "journal")
        os.makedirs(self.logs)
        self.procs, self.since, self.offsets = {}, {}, {}
        self.env = dict(os.environ, PYTHONPATH=SIM, NODEFLEET_SIM_BLOCK_TIME="0.3")

    def log_path(self, unit):
        return os.path.join(self.logs, unit + ".log")

    def alive(self, unit):
        p = self.procs.get(unit)
        return p is not None and p.poll() is None

    def start(self, unit):
        if self.alive(unit):
            return
        argv = exec_start(os.path.join(self.etc, unit))
        self.offsets[unit] = os.path.getsize(self.log_path(unit)) if os.path.exists(self.log_path(unit)) else 0
        with open(self.log_path(unit), "a") as out:
            self.procs[unit] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        self.since[unit] = int(time.monotonic() * 1e6)

    def stop(self, unit):
        p = self.procs.get(unit)
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def systemctl(self, *args, check=True):
        unit = args[-1]
        if args[0] == "start" or args[:2] == ("enable", "--now"):
            self.start(unit)
        elif args[0] == "stop" or args[:2] == ("disable", "--now"):
            self.stop(unit)
        code = 0 if args[0] != "is-active" or self.alive(unit) else 3
        return types.SimpleNamespace(returncode=code, stdout="", stderr="")

    def active(self, unit):
        return self.alive(unit)

    def journal(self, unit, since_usec=None, lines=20000):
        try:
            with open(self.log_path(unit)) as f:
                f.seek(self.offsets.get(unit, 0) if since_usec else 0)
                return f.read()
        except OSError:
            return ""

    def unit_props(self, unit, *props):
        alive = self.alive(unit)
        return {"ActiveEnterTimestampMonotonic": str(self.since.get(unit, 0) if alive else 0), "ActiveState": "active" if alive else "inactive"}

    def close(self):
        for unit in list(self.procs):
            self.stop(unit)


class SimCase(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="nodefleet-sims-")
        self.addCleanup(shutil.rmtree, self.root, True)
        r = lambda *p: os.path.join(self.root, *p)  # noqa: E731
        ports = {"http": free_port(), "engine": free_port(), "p2p": free_port(), "cometRpc": free_port()}
        self.s = {
            "node": "simtest", "operator": "root", "dataRoot": self.root, "gethDir": r("geth"), "rethDir": r("reth"),
            "consensusHome": r("0gchaind"), "etcDir": r("etc"), "releaseDir": r("release"), "rethBinary": r("bin", "reth"),
            "genesis": os.path.join(SIM, "release", "geth-genesis.json"), "ports": ports,
            "services": {"geth": GETH, "reth": RETH, "consensus": CL}, "referenceRpcUrl": None, "heightTolerance": 0,
            "remedyRetries": 2, "remedySettleSeconds": 3, "rollbackMax": 64, "verifyTimeout": 60,
        }
        for d in ("etc", "bin", "release/bin", "0gchaind/config", "0gchaind/data", ".nodefleet-switch"):
            os.makedirs(r(d))
        for path, module in ((self.s["rethBinary"], "reth"), (r("release", "bin", "0gchaind"), "zerog")):
            with open(path, "w") as f:  # the simulator under the real binary's name
                f.write(f"#!/bin/sh\nexec {sys.executable} -m nodefleet_sim.{module} \"$@\"\n")
            os.chmod(path, 0o755)
        self.jwt = r("jwt.hex")
        with open(self.jwt, "w") as f:
            f.write(os.urandom(32).hex())
        home = self.s["consensusHome"]
        files = {
            "config/app.toml": f'[beacon-kit.engine]\nrpc-dial-url = "http://localhost:{ports["engine"]}"\njwt-secret-path = "{self.jwt}"\n',
            "config/config.toml": f'[rpc]\nladdr = "tcp://127.0.0.1:{ports["cometRpc"]}"\n',
            "config/priv_validator_key.json": '{"pub_key": {"value": "c2ltdGVzdA=="}}',
            "data/priv_validator_state.json": "{}",
        }
        for name, text in files.items():
            with open(os.path.join(home, name), "w") as f:
                f.write(text)
        self.units(cl_jwt=self.jwt)
        with open(r(".nodefleet-switch", "state.json"), "w") as f:
            json.dump({"client": "reth"}, f)
        with open(r("settings.json"), "w") as f:
            json.dump(self.s, f)
        self.v = Validator(r("settings.json"))
        self.host = SimHost(self.root, self.s["etcDir"])
        self.addCleanup(self.host.close)
        for m in (host, node, switch, health_mod):
            for name in ("systemctl", "active", "journal", "unit_props"):
                if hasattr(m, name):
                    p = mock.patch.object(m, name, getattr(self.host, name))
                    p.start()
                    self.addCleanup(p.stop)
        shim = r("shim")  # journalctl for consensus-height-rollback.py: the SimHost's journal of -u UNIT
        os.makedirs(shim)
        with open(os.path.join(shim, "journalctl"), "w") as f:
            f.write(f'#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -u ] && unit="$2"; shift; done\ncat "{self.host.logs}/$unit.log" 2>/dev/null\n')
        os.chmod(os.path.join(shim, "journalctl"), 0o755)
        p = mock.patch.dict(os.environ, {"PATH": shim + os.pathsep + os.environ["PATH"], "PYTHONPATH": SIM})
        p.start()
        self.addCleanup(p.stop)

    def units(self, cl_jwt):
        s, ports = self.s, self.s["ports"]
        reth = [s["rethBinary"], "node", "--chain", s["genesis"], "--datadir", s["rethDir"], "--http", "--http.port", str(ports["http"]),
                "--authrpc.port", str(ports["engine"]), "--authrpc.jwtsecret", self.jwt, "--port", str(ports["p2p"])]
        cl = [os.path.join(s["releaseDir"], "bin", "0gchaind"), "start", "--home", s["consensusHome"], "--chaincfg.engine.jwt-secret-path", cl_jwt]
        for unit, argv in ((RETH, reth), (CL, cl)):
            with open(os.path.join(s["etcDir"], unit), "w") as f:
                f.write(f"[Service]\nExecStart={' '.join(argv)}\n")

    def committed(self, at_least):
        def height():
            return self.v.cl_status()["height"] >= at_least and not self.v.cl_status()["catchingUp"]
        until(f"0gchaind to commit height {at_least}", height, 90)  # a block each 0.3 s; slower on a loaded runner


    def reth_loses_blocks_after(self, keep):
        """Both stopped, reth's database cut back to block `keep` (the simulator's block store)."""
        self.host.stop(CL)
        self.host.stop(RETH)
        chain = os.path.join(self.s["rethDir"], "db", "nodefleet-sim-chain.jsonl")
        with open(chain) as f:
            kept = f.readlines()[:keep + 1]  # genesis and blocks 1..keep
        with open(chain, "w") as f:
            f.writelines(kept)

    def consensus_ahead_of_reth(self, committed, keep):
        """docs/spec.md §7's fault: 0gchaind commits `committed`, reth loses the blocks after `keep` while
        both are stopped, both start again; returns once 0gchaind logs that its head is not on
        the EL (reth answers SYNCING, as the real reth 1.11 does; the spec says -38002)."""
        self.host.start(RETH)
        self.host.start(CL)
        self.committed(committed)
        self.reth_loses_blocks_after(keep)
        self.host.start(RETH)
        until(f"reth at block {keep}", lambda: block_number(self.v.el_url) == keep)
        self.host.start(CL)
        until("0gchaind's forkchoice fault", lambda: self.v.forkchoice_errors())

    def jwt_files_differ(self):
        """0gchaind given another JWT file than reth's: it gives up; returns that file's path."""
        other = os.path.join(self.root, "other-jwt.hex")
        with open(other, "w") as f:
            f.write(os.urandom(32).hex())
        self.units(cl_jwt=other)
        self.host.start(RETH)
        until("reth", lambda: block_number(self.v.el_url) + 1)
        self.host.start(CL)
        until("0gchaind to give up", lambda: not self.host.alive(CL), timeout=60)
        return other


class ErrorTableOnTheSimulators(SimCase):
    def test_a_healthy_validator_on_reth_has_no_diagnosis_but_reth_without_peers(self):
        self.host.start(RETH)
        self.host.start(CL)
        self.committed(3)
        report = health_mod.health(self.v)
        self.assertEqual(report["services"], {GETH: "inactive", RETH: "active", CL: "active"})
        self.assertEqual(report["peers"], 0)  # the reth simulator, like reth among geth nodes, has none
        self.assertEqual([d["fault"] for d in report["diagnoses"]], ["reth-no-peers"])
        self.assertIn(f"make sure {self.s['ports']['p2p']} is open on TCP and UDP", report["diagnoses"][0]["remedy"])

    def test_0gchaind_ahead_of_reth_logs_el_syncing_and_health_remedies_it(self):
        # docs/spec.md §7: the execution client lost blocks 0gchaind committed (here: reth's database cut
        # back to block 4 while both were stopped); 0gchaind asserts its head, reth answers
        # SYNCING (the spec says -38002), and 0gchaind logs beacon-kit's "EL syncing".
        self.consensus_ahead_of_reth(committed=8, keep=4)
        self.assertIn("NotifyForkchoiceUpdate: EL syncing. Retrying...", self.v.forkchoice_errors()[-1])
        report = health_mod.health(self.v)
        [found] = [f for f in report["findings"] if f["fault"] == "forkchoice-38002"]
        self.assertEqual(found["remedied"], 1)
        self.assertNotIn("forkchoice-38002", [d["fault"] for d in report["diagnoses"]], "remedied: no longer a fault")
        self.assertEqual(self.v.forkchoice_errors(), [])
        self.committed(6)  # rolled back to reth's head, then committing on it again
        after = self.host.journal(CL).split("EL syncing. Retrying...")[-1]
        self.assertRegex(after, r"Committed state height=(\d+)")
        self.assertEqual(re.search(r"Committed state height=(\d+)", after).group(1), "5")  # rolled back to 4, on from there

    def test_step_14_remedies_a_38002_of_the_simulated_0gchaind_then_verifies(self):
        self.host.start(RETH)
        self.host.start(CL)
        self.committed(6)
        self.reth_loses_blocks_after(2)  # 0gchaind is 4 or more ahead
        since = int(time.time() * 1e6)
        self.host.start(RETH)
        self.host.start(CL)
        until("0gchaind's forkchoice fault", lambda: self.v.forkchoice_errors())
        verified = self.v.verify_running(RETH, since, ["Starting consensus engine"])
        self.assertEqual(verified["remedies"], 1)
        self.assertFalse(verified["consensus"]["catchingUp"])
        self.assertGreaterEqual(verified["executionHeight"], 3)

    def test_a_38002_the_remedies_cannot_cure_fails_health_after_remedy_retries(self):
        self.host.start(RETH)
        self.host.start(CL)
        self.committed(3)
        self.host.stop(CL)
        state = os.path.join(self.s["consensusHome"], "data", "nodefleet-sim-state.json")
        with open(state) as f:
            st = json.load(f)
        st["height"] += 200  # further ahead than rollbackMax: the rollback script refuses
        st["hashes"][str(st["height"])] = "0x" + "77" * 32
        with open(state, "w") as f:
            json.dump(st, f)
        with open(self.host.log_path(CL), "a") as f:
            f.write(f"INFO Committed state height={st['height']} block_hash=0x{'77' * 32}\n")
        self.host.start(CL)
        until("0gchaind's forkchoice fault", lambda: self.v.forkchoice_errors())
        with self.assertRaisesRegex(host.Failed, r"consensus height rollback: .*more than --max 64"):
            health_mod.health(self.v)

    def test_jwt_files_that_differ_stop_the_simulated_0gchaind_and_health_names_both(self):
        other = self.jwt_files_differ()
        self.assertIn("the JWT secret differs from the execution client's", self.host.journal(CL))
        report = health_mod.health(self.v)
        self.assertEqual(report["services"][CL], "inactive")
        [diag] = [d for d in report["diagnoses"] if d["fault"] == "jwt-mismatch"]
        self.assertIn(f"reads the JWT secret from {self.jwt} but {CL} from {other}: not the same file", diag["detail"])


# NODEFLEET_RECORD_STATUS=<file>: the status answers below are also written there, by case name;
# test/fixtures/status/validator.json holds them for the diagnosis table's unit tests (status/).
RECORD = os.environ.get("NODEFLEET_RECORD_STATUS")


def record(case, answer):
    if not RECORD:
        return
    try:
        with open(RECORD) as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        recorded = {}
    recorded[case] = answer
    with open(RECORD, "w") as f:
        json.dump(recorded, f, indent=1, sort_keys=True)
        f.write("\n")


class StatusOnTheSimulators(SimCase):
    """`status` (nodefleet status's check): what health sees, and nothing on the host changed."""

    def status(self, case):
        answer = json.loads(json.dumps(health_mod.status(self.v)))  # as it crosses the wire
        record(case, answer)
        return answer

    def test_a_healthy_validator_on_reth(self):
        self.host.start(RETH)
        self.host.start(CL)
        self.committed(3)
        a = self.status("healthy-reth")
        self.assertEqual(a["client"], "reth")
        self.assertEqual(a["units"], {"geth": GETH, "reth": RETH, "consensus": CL})
        self.assertEqual(a["services"], {GETH: "inactive", RETH: "active", CL: "active"})
        self.assertFalse(a["consensus"]["catchingUp"])
        self.assertTrue(a["privValidatorState"]["exists"])
        self.assertEqual([d["fault"] for d in a["diagnoses"]], ["reth-no-peers"])
        self.assertNotIn("running", a)
        self.assertNotIn("networkHeight", a)  # no referenceRpcUrl

    def test_a_38002_is_reported_and_left_alone(self):
        self.consensus_ahead_of_reth(committed=6, keep=4)
        pid = self.host.procs[CL].pid
        a = self.status("forkchoice-38002")
        [found] = [f for f in a["findings"] if f["fault"] == "forkchoice-38002"]
        self.assertEqual(found["remedied"], 0)
        [diag] = [d for d in a["diagnoses"] if d["fault"] == "forkchoice-38002"]
        self.assertIn("EL syncing", diag["detail"])
        self.assertIn("run the height rollback script", diag["remedy"])
        self.assertEqual(self.host.procs[CL].pid, pid, "status restarted 0gchaind")
        self.assertTrue(self.host.alive(CL))
        self.assertTrue(self.v.forkchoice_errors(), "status remedied the -38002")

    def test_jwt_files_that_differ(self):
        self.jwt_files_differ()
        a = self.status("jwt-mismatch")
        self.assertEqual(a["services"][CL], "inactive")
        self.assertEqual([d["fault"] for d in a["diagnoses"] if d["fault"] == "jwt-mismatch"], ["jwt-mismatch"])

    def test_a_missing_priv_validator_state_json(self):
        path = os.path.join(self.s["consensusHome"], "data", "priv_validator_state.json")
        os.remove(path)
        self.host.start(RETH)
        self.host.start(CL)
        until("0gchaind to stop without its state file", lambda: not self.host.alive(CL), timeout=30)
        a = self.status("missing-priv-validator-state")
        self.assertEqual(a["privValidatorState"], {"path": path, "exists": False})
        self.assertEqual(a["services"][CL], "inactive")
        self.assertFalse(os.path.exists(path), "status created the state file")

    def test_a_switch_importing_shows_its_steps_and_progress(self):
        self.host.start(RETH)
        self.host.start(CL)
        self.committed(2)
        for i, step in enumerate(list(switch.MODES["ordered"])[:8]):
            self.v.write_marker(step, {"started": f"2026-11-24T06:0{i}:00Z", "ended": f"2026-11-24T06:0{i}:30Z", "seconds": 30.0, "head": 3000})
        unit = "nodefleet-import-simtest"
        with open(os.path.join(self.s["etcDir"], unit), "w") as f:
            f.write("[Service]\nExecStart=sleep 60\n")
        self.host.start(unit)
        with open(os.path.join(self.v.state_dir, "progress.json"), "w") as f:  # an earlier run's
            json.dump({"verb": "imported", "done": 900, "total": 3000, "percent": 30.0, "rate": 200.0, "etaSeconds": 10, "job": unit, "at": "2026-11-24T06:09:00Z"}, f)
        a = self.status("switch-importing")
        self.assertEqual(sorted(a["migration"]["steps"]), list(list(switch.MODES["ordered"])[:8]))
        started = a["running"]["import"]["started"]
        self.assertRegex(started, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(a["running"], {"import": {"unit": unit, "started": started}}, "figures older than the job's start are not its own")
        at = host.now(time.time() + 1)
        with open(os.path.join(self.v.state_dir, "progress.json"), "w") as f:
            json.dump({"verb": "imported", "done": 1200, "total": 3000, "percent": 40.0, "rate": 240.0, "etaSeconds": 8, "job": unit, "at": at}, f)
        a = self.status("switch-importing")
        self.assertEqual(a["running"], {"import": {"unit": unit, "started": started, "verb": "imported", "done": 1200, "total": 3000, "percent": 40.0,
                                                   "rate": 240.0, "etaSeconds": 8, "job": unit, "at": at}})


if __name__ == "__main__":
    unittest.main()
