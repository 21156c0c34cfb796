"""One validator as the host tool sees it: its settings (/etc/nodefleet/<node>/validator.json,
written by nodefleet), its paths and units, the switch's completion markers, and the checks
every command shares: the JWT file, one 0gchaind per key, heights, the consensus height
rollback, and the verification that both clients run."""
import datetime
import hashlib
import json
import os
import re
import shutil
import time

from .host import (DRIFT, Failed, active, exec_start, find_key, first_committed_time, journal, mono_to_realtime_usec, now, put, run, same_bytes, say,
                   systemctl, tree_diff, tree_stat, unit_props, wait)
from . import comet
from .stall import not_committing, start_after_rollback
from nodefleet_rpc import RpcFailure, block_number, rpc

# The host tool's directory (/usr/local/lib/nodefleet): the scripts installed beside the package.
LIB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# geth's "Chain head was updated number=39,048,765 hash=abcdef..123456 …": the terminal format
# abbreviates the hash to its first and last 3 bytes; logfmt/json carry it whole.
HEAD_LINE = re.compile(r"Chain head was updated.*?\bnumber=([0-9,]+)(?:.*?\bhash=(0x[0-9a-fA-F]{64}|[0-9a-fA-F]{6}\.\.[0-9a-fA-F]{6}))?")


def hashes_agree(logged, full):
    """Whether a hash as geth logged it (whole, or abbreviated `abcdef..123456`) is `full`."""
    logged, full = logged.lower(), full.lower()
    if logged.startswith("0x"):
        return logged == full
    first, last = logged.split("..")
    return full[2:].startswith(first) and full.endswith(last)


# 0gchaind's head is not on the execution client: the spec (7) names the EL's answer -38002; real reth
# 1.11 and geth answer SYNCING, and BeaconKit v1.1 (0gchaind's open core) logs "Received accepted syncing
# payload status ..." and "failed to prepare proposal ... received nil payload ID" round after round (the
# simulator's older beacon-kit: "EL syncing. Retrying...", "Your execution client is syncing ..."): one fault.
# The consensus daemons a 0G validator release may carry: a process of either with this key counts.
DAEMONS = ("0gchaind", "beacond")
FORKCHOICE_FAULT = "0gchaind's head is not on the execution client (-38002 Invalid forkchoice state, or the EL answers SYNCING)"
NIL_PAYLOAD = "received nil payload ID"
# The height a "failed to prepare proposal" line names (BeaconKit's key=value log; colour codes around it).
PROPOSAL_HEIGHT = re.compile(r"\bheight=(\d+)")
FORKCHOICE_MARKS = ("-38002", "EL syncing", "Your execution client is syncing", "Received accepted syncing payload status",
                    NIL_PAYLOAD, "payload status is SYNCING")


def forkchoice_fault_lines(lines):
    return [line for line in lines if any(mark in line for mark in FORKCHOICE_MARKS)]


def after_last_commit(lines):
    """The lines after the last `Committed state` (all of them when there is none)."""
    last_commit = max((i for i, line in enumerate(lines) if "Committed state" in line), default=-1)
    return lines[last_commit + 1:]


class Validator:
    def __init__(self, settings_path):
        with open(settings_path) as f:
            self.s = json.load(f)
        # The reference endpoint (it may carry an API key) is in a root-only file of its own,
        # written by the key step; a host set up before it has none yet.
        if self.s.get("urlsFile") and "referenceRpcUrl" not in self.s:
            try:
                with open(self.s["urlsFile"]) as f:
                    self.s["referenceRpcUrl"] = json.load(f).get("referenceRpcUrl")
            except FileNotFoundError:
                self.s["referenceRpcUrl"] = None
        s = self.s
        self.node = s["node"]
        self.op = s["operator"]
        self.state_dir = os.path.join(s["dataRoot"], ".nodefleet-switch")
        self.markers = os.path.join(self.state_dir, "migration")
        self.mig = os.path.join(s["dataRoot"], "migration")
        self.export_file = os.path.join(self.mig, "chain-export.rlp")
        self.el_url = f"http://127.0.0.1:{s['ports']['http']}"
        self.watched = None  # what stall.watch saw after the daemon's last start after a height rollback
        self.units = s["services"]
        # The release's consensus daemon: 0gchaind (flags --chaincfg.*) or BeaconKit's beacond
        # (--beacon-kit.*); settings written before nodefleet knew beacond name none.
        consensus = s.get("consensus") or {}
        self.daemon = consensus.get("daemon", "0gchaind")
        self.flag_prefix = consensus.get("flagPrefix", "chaincfg")
        DRIFT.update(dir=s.get("driftUnits"), units=frozenset(self.units.values()))

    # ---- host state ------------------------------------------------------------------------------

    def host_client(self):
        try:
            with open(os.path.join(self.state_dir, "state.json")) as f:
                return json.load(f)["client"]
        except (OSError, ValueError, KeyError):
            pass
        if os.path.isdir(os.path.join(self.s["gethDir"], "geth", "chaindata")):
            return "geth"
        if os.path.isdir(os.path.join(self.s["rethDir"], "db")):
            return "reth"
        return None

    def set_client(self, client):
        os.makedirs(self.state_dir, exist_ok=True)
        put(os.path.join(self.state_dir, "state.json"), json.dumps({"client": client, "since": now()}) + "\n", 0o644)

    def marker(self, step):
        try:
            with open(os.path.join(self.markers, step + ".json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def write_marker(self, step, data):
        os.makedirs(self.markers, exist_ok=True)
        put(os.path.join(self.markers, step + ".json"), json.dumps(data) + "\n", 0o644)

    def step_marker(self, *steps):
        """The marker of the first of these steps that has one (the ordered and the low-downtime
        switch name the same moments differently: s03-stop and l07-cutover, say), or None."""
        for step in steps:
            m = self.marker(step)
            if m:
                return m
        return None

    # The head the switch works to: the final one once 0gchaind stopped, else the one noted live.
    NOTED = ("s03-stop", "l07-cutover", "s02-note-head", "l02-note-head")

    def noted_head(self):
        m = self.step_marker(*self.NOTED)
        if not m:
            raise Failed("no noted chain head: the switch's note-head step runs first")
        return m["head"]

    def noted_hash(self):
        """The hash of the noted head as geth gave it (its RPC: whole; its log: maybe abbreviated), or None."""
        return (self.step_marker(*self.NOTED) or {}).get("headHash")

    def archive_markers(self, why):
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        history = os.path.join(self.state_dir, "history", f"{stamp}-{why}")
        os.makedirs(os.path.dirname(history), exist_ok=True)
        os.rename(self.markers, history)
        return history

    def verify_backup(self):
        m = self.marker("s04-backup")
        if not m:
            raise Failed("no backup was taken (step 4)")
        dest = m["backupDir"]
        try:
            with open(os.path.join(dest, "manifest.json")) as f:
                manifest = json.load(f)
        except (OSError, ValueError) as e:
            raise Failed(f"backup {dest}: no readable manifest ({e})") from None
        for name in ("geth", "0gchaind"):
            want, got = manifest.get(name) or {}, tree_stat(os.path.join(dest, name))
            if manifest.get("format") != 2:  # an older tool's manifest: [size, sha256] per file
                want, got = {k: e[0] for k, e in want.items()}, {k: e[0] for k, e in got.items()}
            diff = tree_diff(want, got) if want else "the manifest lists no files"
            if diff:
                raise Failed(f"backup {dest}/{name} does not match its manifest ({diff}): it is not a verified backup")
        return dest

    # ---- shared checks ---------------------------------------------------------------------------

    def release_bin(self, name):
        path = os.path.join(self.s["releaseDir"], "bin", name)
        if not os.access(path, os.X_OK):
            raise Failed(f"{path} is missing: the release {self.s['releaseDir']} was not installed")
        return path

    def exec_arg(self, unit, flag):
        """The value of `flag` on the ExecStart line of an installed or staged unit file."""
        for path in (f"/etc/systemd/system/{unit}", os.path.join(self.s["etcDir"], unit)):
            try:
                words = exec_start(path)
            except OSError:
                continue
            for i, w in enumerate(words):
                if w == flag and i + 1 < len(words):
                    return words[i + 1]
                if w.startswith(flag + "="):
                    return w.split("=", 1)[1]
            return None
        return None

    def check_jwt(self, el_unit):
        """docs/spec.md §5: the path given to --authrpc.jwtsecret and to --chaincfg.engine.jwt-secret-path
        (beacond: --beacon-kit.engine.jwt-secret-path) must be the same file, checked on the host
        (same device and inode), not by name."""
        el_path = self.exec_arg(el_unit, "--authrpc.jwtsecret")
        cl_path = self.exec_arg(self.units["consensus"], f"--{self.flag_prefix}.engine.jwt-secret-path")
        if not el_path or not cl_path:
            raise Failed(f"cannot find the JWT paths on the ExecStart lines of {el_unit} and {self.units['consensus']}")
        try:
            a, b = os.stat(el_path), os.stat(cl_path)
        except OSError as e:
            raise Failed(f"JWT secret file: {e}") from None
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
            raise Failed(f"{el_unit} reads the JWT secret from {el_path} but {self.units['consensus']} from {cl_path}: not the same file")
        app_path = self.app_value("jwt-secret-path")
        if app_path:
            try:
                c = os.stat(app_path)
            except OSError:
                raise Failed(f"app.toml jwt-secret-path {app_path} does not exist") from None
            if (c.st_dev, c.st_ino) != (a.st_dev, a.st_ino):
                raise Failed(f"app.toml jwt-secret-path {app_path} is not the JWT file of {el_unit} ({el_path})")
        return el_path

    def app_value(self, key):
        import tomllib
        try:
            with open(os.path.join(self.s["consensusHome"], "config", "app.toml"), "rb") as f:
                doc = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError):
            return None
        return find_key(doc, key)

    def key_digest(self, home):
        try:
            with open(os.path.join(home, "config", "priv_validator_key.json"), "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
        except OSError:
            return None

    def consensus_processes(self):
        """Running consensus daemons (0gchaind or beacond, whichever a release carries) whose home
        holds this node's validator key (docs/spec.md §5: one)."""
        mine = self.key_digest(self.s["consensusHome"])
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            except OSError:
                continue
            if not argv or "start" not in argv or not any(os.path.basename(a) in DAEMONS for a in argv[:2]):
                continue
            home = None
            for i, a in enumerate(argv):
                if a == "--home" and i + 1 < len(argv):
                    home = argv[i + 1]
                elif a.startswith("--home="):
                    home = a.split("=", 1)[1]
            if home and self.key_digest(home) == mine:
                found.append({"pid": int(pid), "home": home})
        return found

    def ensure_state_file(self):
        """docs/spec.md §7: a missing priv_validator_state.json is created as {} , never overwritten."""
        path = os.path.join(self.s["consensusHome"], "data", "priv_validator_state.json")
        if os.path.exists(path):
            return None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("{}\n")
        shutil.chown(path, self.op, self.op)
        msg = f"warning: {path} was missing; created it with {{}} (0gchaind does not start without it)"
        say(msg)
        return msg

    def start_consensus(self):
        others = self.consensus_processes()
        if others:
            raise Failed(f"a 0gchaind with this validator key is already running ({others}); not starting a second one")
        warning = self.ensure_state_file()
        systemctl("enable", "--now", self.units["consensus"])
        return warning

    def stop(self, unit):
        systemctl("disable", "--now", unit, check=False)
        wait(f"{unit} to stop", lambda: not active(unit), 120)

    def el_height(self):
        return block_number(self.el_url)

    def geth_head(self):
        """geth's last logged chain head: (number, hash as logged, or None when the line has none)."""
        heads = HEAD_LINE.findall(journal(self.units["geth"]))
        if not heads:
            raise Failed(f"no 'Chain head was updated' line in the log of {self.units['geth']}")
        number, logged = heads[-1]
        return int(number.replace(",", "")), (logged.lower() or None)

    @property
    def comet_rpc(self):
        return f"http://127.0.0.1:{self.s['ports']['cometRpc']}"

    def cl_status(self):
        return comet.status(self.comet_rpc)

    def height_rollback(self, expected_gap=0):
        """expected_gap: heights the consensus is known to be ahead (a rollback to geth drops the
        blocks made on reth since the switch): allowed on top of the usual bound."""
        cmd = ["python3", "-S", os.path.join(LIB, "consensus-height-rollback.py"), self.s["consensusHome"], f"http://localhost:{self.s['ports']['http']}",
               "--service", self.units["consensus"], "--max", str(self.s["rollbackMax"] + max(0, expected_gap)), "--binary", self.release_bin(self.daemon), "--user", self.op]
        done = run(cmd, check=False)
        for line in done.stdout.strip().splitlines()[:-1]:
            say(f"height rollback: {line}")
        if done.returncode != 0:
            raise Failed(f"consensus height rollback: {done.stderr.strip()}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def verify_running(self, el_unit, since_usec, el_signal):
        """docs/spec.md §4.5 step 14 (also after a rollback): the EL log shows el_signal, the consensus log
        shows Committed state and no forkchoice fault, and catching_up is false. A forkchoice fault
        (0gchaind's head not on the EL: docs/spec.md §7's -38002, or beacon-kit's "EL syncing" for the
        SYNCING that real reth and geth answer) is remedied: stop 0gchaind, wait for the EL, roll
        the height back, start again (bounded)."""
        cl = self.units["consensus"]
        remedies = 0
        deadline = time.monotonic() + self.s["verifyTimeout"]
        while True:
            cl_since = int(unit_props(cl, "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"] or 0)
            cl_log = journal(cl, since_usec=mono_to_realtime_usec(cl_since)) if cl_since else ""
            el_log = journal(el_unit, since_usec=since_usec)
            faults = self.unless_el_ahead(forkchoice_fault_lines(cl_log.splitlines()))
            if faults:
                if remedies >= self.s["remedyRetries"]:
                    raise Failed(f"{FORKCHOICE_FAULT} after {remedies} remedies (last: {faults[-1].strip()[:160]}): stop it, let the execution client reach the chain head, roll back the height")
                remedies += 1
                say(f"{FORKCHOICE_FAULT} ({faults[-1].strip()[:160]}): remedy {remedies} of {self.s['remedyRetries']}")
                self.remedy_forkchoice()
                time.sleep(2)
                continue
            committed = "Committed state" in cl_log
            signal = any(s in el_log for s in el_signal)
            status = None
            if committed and signal:
                try:
                    status = self.cl_status()
                except Failed:
                    status = None
            if committed and signal and status and not status["catchingUp"]:
                first = first_committed_time(cl, mono_to_realtime_usec(cl_since))
                return {"consensus": status, "executionHeight": self.el_height(), "remedies": remedies, "committedAt": first}
            if time.monotonic() > deadline:
                raise Failed(f"not verified after {self.s['verifyTimeout']} s: EL log shows {' or '.join(el_signal)}: {signal}; "
                             f"0gchaind log shows Committed state: {committed}; status: {status}; {not_committing(self, cl_log)}")
            time.sleep(2)

    def remedy_forkchoice(self):
        """The remedy for a forkchoice fault (0gchaind's head not on the EL): stop 0gchaind, wait
        for the execution client to reach the chain head, roll the consensus height back, start it."""
        self.stop(self.units["consensus"])
        self.wait_el_synced()
        rolled = self.height_rollback()
        start_after_rollback(self)
        return rolled

    def lines_since_start(self):
        """The consensus daemon's journal since it last started; none when it is not running."""
        cl = self.units["consensus"]
        since = int(unit_props(cl, "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"] or 0)
        if not since or not active(cl):
            return []
        return journal(cl, since_usec=mono_to_realtime_usec(since)).splitlines()

    def lines_since_commit(self):
        """The consensus daemon's journal since it last started and after its last `Committed
        state`; none when it is not running."""
        return after_last_commit(self.lines_since_start())

    def forkchoice_errors(self):
        """0gchaind's current forkchoice-fault lines (forkchoice_fault_lines): those after its last
        commit, or, when it commits on (the real beacond in a network commits the network's blocks
        while its execution client answers SYNCING), those since its start while the execution
        client is more than a block behind the consensus height."""
        lines = self.lines_since_start()
        current = self.unless_el_ahead(forkchoice_fault_lines(after_last_commit(lines)))
        if current:
            return current
        earlier = forkchoice_fault_lines(lines)
        if not earlier:
            return []
        try:
            behind = self.cl_status()["height"] - self.el_height()
        except (Failed, RpcFailure):
            return []
        return earlier if behind > 1 else []

    def unless_el_ahead(self, lines):
        """`lines` without BeaconKit's "received nil payload ID" for a height the execution client
        already holds a block at (one BeaconKit moved it to before the network committed it): geth
        ignores an update to an ancestor of its head (VALID, no payload), there is nothing to roll
        back, a restart puts 0gchaind back in the round it proposes in, and the next round's
        proposer cures it (docs/roles.md). The line's own height decides: it stays in the log after
        the network commits that height. A line without a height stays the fault."""
        if not any(NIL_PAYLOAD in line for line in lines):
            return lines
        try:
            el = self.el_height()
        except (Failed, RpcFailure):
            return lines
        heights = [(line, PROPOSAL_HEIGHT.search(line)) for line in lines]
        return [line for line, h in heights if NIL_PAYLOAD not in line or h is None or el < int(h.group(1))]

    def engine_waits(self):
        """The consensus daemon's current "Waiting for execution client to start" lines: BeaconKit
        logs one every 3 s, and nothing else, while the engine API does not answer it, whether the
        execution client is down, listens elsewhere, or refuses its JWT."""
        return [line for line in self.lines_since_commit() if "Waiting for execution client to start" in line]

    def wait_el_synced(self):
        """Until the execution client is within heightTolerance of the chain head: the reference's
        head, else the head noted by a switch, else (no switch on record) its own eth_syncing false."""
        url = self.s.get("referenceRpcUrl")
        noted = (self.step_marker(*self.NOTED) or {}).get("head")

        def ok():
            try:
                height = self.el_height()
                if url:
                    ref = block_number(url)
                elif noted is not None:
                    ref = noted
                else:
                    return rpc(self.el_url, "eth_syncing") is False
            except (RpcFailure, Failed):
                return False
            return height >= ref - self.s["heightTolerance"]
        wait("the execution client to reach the chain head", ok, 600, 2)

    def install_reth(self):
        src = self.release_bin("reth")
        dst = self.s["rethBinary"]
        if not (os.path.exists(dst) and same_bytes(src, dst)):
            tmp = dst + ".nodefleet-new"
            shutil.copy(src, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, dst)
        version = run([dst, "--version"]).stdout.strip().splitlines()[0]
        return version

    def set_dial_url(self):
        url = self.s["dialUrl"]
        out = run(["python3", "-S", os.path.join(LIB, "set-rpc-dial-url.py"), os.path.join(self.s["consensusHome"], "config", "app.toml"), url]).stdout
        report = json.loads(out.strip().splitlines()[-1])
        if report["changed"]:
            say(f"app.toml: rpc-dial-url {report['old']} -> {url} (line {report['line']})")
        return report
