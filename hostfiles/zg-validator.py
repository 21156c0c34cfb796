#!/usr/bin/env -S python3 -S
"""nodefleet's host tool for a 0G chain validator (0gchaind + geth or reth) and the geth -> reth
switch of seed 4.5, run by the role's remote steps as root:

    zg-validator.py <settings.json> setup
    zg-validator.py <settings.json> migrate <step> <inputs-hash>
    zg-validator.py <settings.json> rollback
    zg-validator.py <settings.json> cleanup
    zg-validator.py <settings.json> health

Every command prints progress lines and ends with one JSON report line.

migrate runs one of the 14 steps (STEPS below). Each step checks its preconditions on the host,
acts, and writes a completion marker (<state>/migration/<step>.json, with the inputs hash it ran
with); a step whose marker is there is skipped, so a re-run after any interruption resumes at
the first unfinished step. A marker with another inputs hash is refused: finish the switch with
the settings it started with, or roll back. Export and import run as transient systemd units
(nodefleet-export-<node>, nodefleet-import-<node>); the step starts the unit or attaches to the
one running and prints progress until it ends, so a dropped SSH session loses nothing.

Failpoints for the fault tests: while /run/nodefleet/failpoints/<export|import>-hold exists,
the export or import unit waits before it starts (it is already running, so a test can kill
`pulumi up` or reboot the host at that point). /run is emptied on reboot.
"""
import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nodefleet_rpc import RpcFailure, block_number  # noqa: E402

STEPS = [
    "s01-install-reth", "s02-note-head", "s03-stop", "s04-backup", "s05-export", "s06-delete-geth",
    "s07-init-reth", "s08-trim", "s09-import", "s10-compare", "s11-units", "s12-dial-url", "s13-start", "s14-verify",
]
FAILPOINTS = "/run/nodefleet/failpoints"
HEAD_LINE = re.compile(r"Chain head was updated.*?\bnumber=([0-9,]+)")
MIN_RELEASE = (1, 0, 6)


class Failed(Exception):
    """A refused precondition or a failed action: the message says what and what to do."""


def say(msg):
    print(msg, flush=True)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(cmd, check=True, user=None, **kw):
    if user:
        cmd = ["runuser", "-u", user, "--"] + list(cmd)
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and done.returncode != 0:
        raise Failed(f"{' '.join(cmd)} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-400:]}")
    return done


def systemctl(*args, check=True):
    return run(["systemctl", *args], check=check)


def unit_props(unit, *props):
    out = systemctl("show", unit, "-p", ",".join(props), check=False).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def dispose(unit):
    """Stops a transient unit and forgets its result, so the next start is a fresh one."""
    systemctl("stop", unit, check=False)
    systemctl("reset-failed", unit, check=False)


def active(unit):
    return systemctl("is-active", "--quiet", unit, check=False).returncode == 0


def journal(unit, since_usec=None, lines=20000):
    cmd = ["journalctl", "-u", unit, "-o", "cat", "--no-pager", "-n", str(lines)]
    if since_usec:
        cmd += ["--since", f"@{int(since_usec // 1_000_000)}"]
    return run(cmd, check=False).stdout


def listening(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def wait(what, predicate, timeout, every=1.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def chown_tree(path, user):
    run(["chown", "-R", f"{user}:{user}", path])


class Validator:
    def __init__(self, settings_path):
        with open(settings_path) as f:
            self.s = json.load(f)
        s = self.s
        self.node = s["node"]
        self.op = s["operator"]
        self.state_dir = os.path.join(s["dataRoot"], ".nodefleet-switch")
        self.markers = os.path.join(self.state_dir, "migration")
        self.mig = os.path.join(s["dataRoot"], "migration")
        self.export_file = os.path.join(self.mig, "chain-export.rlp")
        self.el_url = f"http://127.0.0.1:{s['ports']['http']}"
        self.units = s["services"]

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

    def noted_head(self):
        m = self.marker("s03-stop") or self.marker("s02-note-head")
        if not m:
            raise Failed("no noted chain head: steps 2 and 3 run first")
        return m["head"]

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
        """Seed 5: the path given to --authrpc.jwtsecret and to --chaincfg.engine.jwt-secret-path
        must be the same file, checked on the host (same device and inode), not by name."""
        el_path = self.exec_arg(el_unit, "--authrpc.jwtsecret")
        cl_path = self.exec_arg(self.units["consensus"], "--chaincfg.engine.jwt-secret-path")
        if not el_path or not cl_path:
            raise Failed(f"cannot find the JWT paths on the ExecStart lines of {el_unit} and {self.units['consensus']}")
        try:
            a, b = os.stat(el_path), os.stat(cl_path)
        except OSError as e:
            raise Failed(f"JWT secret file: {e}") from None
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
            raise Failed(f"seed 5: {el_unit} reads the JWT secret from {el_path} but {self.units['consensus']} from {cl_path}: not the same file")
        app_path = self.app_value("jwt-secret-path")
        if app_path:
            try:
                c = os.stat(app_path)
            except OSError:
                raise Failed(f"app.toml jwt-secret-path {app_path} does not exist") from None
            if (c.st_dev, c.st_ino) != (a.st_dev, a.st_ino):
                raise Failed(f"seed 5: app.toml jwt-secret-path {app_path} is not the JWT file of {el_unit} ({el_path})")
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
        """Running 0gchaind processes whose home holds this node's validator key (seed 5: one)."""
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
            if not argv or "start" not in argv or not any(os.path.basename(a) == "0gchaind" for a in argv[:2]):
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
        """Seed 7: a missing priv_validator_state.json is created as {} , never overwritten."""
        path = os.path.join(self.s["consensusHome"], "data", "priv_validator_state.json")
        if os.path.exists(path):
            return None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("{}\n")
        shutil.chown(path, self.op, self.op)
        msg = f"warning: {path} was missing; created it with {{}} (seed 7)"
        say(msg)
        return msg

    def start_consensus(self):
        others = self.consensus_processes()
        if others:
            raise Failed(f"seed 5: a 0gchaind with this validator key is already running ({others}); not starting a second one")
        warning = self.ensure_state_file()
        systemctl("enable", "--now", self.units["consensus"])
        return warning

    def stop(self, unit):
        systemctl("disable", "--now", unit, check=False)
        wait(f"{unit} to stop", lambda: not active(unit), 120)

    def el_height(self):
        return block_number(self.el_url)

    def cl_status(self):
        import urllib.request
        url = f"http://127.0.0.1:{self.s['ports']['cometRpc']}/status"
        try:
            with urllib.request.urlopen(url, timeout=3) as r:
                info = json.load(r)["result"]["sync_info"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise Failed(f"GET {url}: no usable result.sync_info ({e})") from None
        catching_up = info.get("catching_up")
        if not isinstance(catching_up, bool):
            raise Failed(f"GET {url}: result.sync_info.catching_up is {catching_up!r}, not true or false")
        return {"height": int(info.get("latest_block_height", 0)), "catchingUp": catching_up}

    def height_rollback(self, expected_gap=0):
        """expected_gap: heights the consensus is known to be ahead (a rollback to geth drops the
        blocks made on reth since the switch): allowed on top of the usual bound."""
        cmd = ["python3", "-S", os.path.join(HERE, "consensus-height-rollback.py"), self.s["consensusHome"], f"http://localhost:{self.s['ports']['http']}",
               "--service", self.units["consensus"], "--max", str(self.s["rollbackMax"] + max(0, expected_gap)), "--binary", self.release_bin("0gchaind"), "--user", self.op]
        done = run(cmd, check=False)
        for line in done.stdout.strip().splitlines()[:-1]:
            say(f"height rollback: {line}")
        if done.returncode != 0:
            raise Failed(f"consensus height rollback: {done.stderr.strip()}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def verify_running(self, el_unit, since_usec, el_signal):
        """Seed 4.5 step 14 (also after a rollback): the EL log shows el_signal, the consensus log
        shows Committed state and no -38002, and catching_up is false. A -38002 is remedied
        (seed 7): stop 0gchaind, wait for the EL, roll the height back, start again (bounded)."""
        cl = self.units["consensus"]
        remedies = 0
        deadline = time.monotonic() + self.s["verifyTimeout"]
        while True:
            cl_since = int(unit_props(cl, "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"] or 0)
            cl_log = journal(cl, since_usec=mono_to_realtime_usec(cl_since)) if cl_since else ""
            el_log = journal(el_unit, since_usec=since_usec)
            if "-38002" in cl_log:
                if remedies >= self.s["remedyRetries"]:
                    raise Failed(f"0gchaind still logs -38002 Invalid forkchoice state after {remedies} remedies (seed 7): stop it, let the execution client reach the chain head, roll back the height")
                remedies += 1
                say(f"0gchaind logged -38002 Invalid forkchoice state: remedy {remedies} of {self.s['remedyRetries']} (seed 7)")
                self.stop(cl)
                self.wait_el_synced()
                self.height_rollback()
                self.start_consensus()
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
                             f"0gchaind log shows Committed state: {committed}; status: {status}")
            time.sleep(2)

    def wait_el_synced(self):
        def ok():
            try:
                height = self.el_height()
            except (RpcFailure, Failed):
                return False
            ref = self.reference_height()
            return height >= ref - self.s["heightTolerance"]
        wait("the execution client to reach the chain head", ok, 600, 2)

    def reference_height(self):
        url = self.s.get("referenceRpcUrl")
        return block_number(url) if url else self.noted_head()

    # ---- setup -----------------------------------------------------------------------------------

    def setup(self):
        s = self.s
        self.release_bin("0gchaind")
        home = s["consensusHome"]
        for d in (s["dataRoot"], home, os.path.join(home, "config"), os.path.join(home, "data")):
            os.makedirs(d, exist_ok=True)
            shutil.chown(d, self.op, self.op)
        if not os.path.exists(os.path.join(home, "config", "priv_validator_key.json")):
            raise Failed("priv_validator_key.json is missing: the key step runs first")
        if not os.path.exists(s["jwt"]):
            fd = os.open(s["jwt"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(os.urandom(32).hex() + "\n")
            shutil.chown(s["jwt"], self.op, self.op)
            say(f"created the JWT secret {s['jwt']}")
        cfg = os.path.join(home, "config")
        for name in ("app.toml", "config.toml"):
            path = os.path.join(cfg, name)
            if not os.path.exists(path):
                shutil.copy(os.path.join(s["etcDir"], name), path)
                shutil.chown(path, self.op, self.op)
                say(f"wrote {path}")
        self.set_dial_url()
        self.ensure_state_file()
        changed = install_unit(s["etcDir"], self.units["consensus"])
        client = self.host_client()
        want = s["executionClient"]
        report = {"node": self.node, "hostClient": client, "switch": s.get("switch")}
        if s.get("switch"):
            systemctl("daemon-reload")
            say(f"switch {s['switch']} configured: units are left to the switch steps")
            return report
        if client is not None and client != want:
            hint = "switch: migrate" if want == "reth" else "switch: rollback"
            raise Failed(f"validator {self.node} runs {client} on this host but the config says executionClient: {want}; set {hint} to change it")
        self.end_abandoned_switch(client)
        el_unit = self.units[want]
        changed = install_unit(s["etcDir"], el_unit) or changed
        systemctl("daemon-reload")
        if client is None:
            self.init_datadir(want)
            self.set_client(want)
        self.check_jwt(el_unit)
        systemctl("enable", el_unit, check=True)
        if not active(el_unit):
            systemctl("start", el_unit)
        elif el_unit in changed:
            systemctl("restart", el_unit)
        try:
            wait(f"{el_unit} to listen on the engine port {s['ports']['engine']}", lambda: listening(s["ports"]["engine"]), 120)
        except Failed as e:
            raise Failed(f"{e}; its log: {journal(el_unit, lines=5).strip()[-800:]}") from None
        if active(self.units["consensus"]) and self.units["consensus"] in changed:
            systemctl("restart", self.units["consensus"])
        elif not active(self.units["consensus"]):
            self.start_consensus()
        time.sleep(3)
        for unit in (el_unit, self.units["consensus"]):
            if not active(unit):
                raise Failed(f"{unit} is not running: {journal(unit, lines=15).strip()[-600:]}")
        report.update({"hostClient": want, "restarted": changed})
        return report

    def end_abandoned_switch(self, client):
        """No switch is configured but an earlier one left markers: the node goes back to normal
        operation only while nothing destructive has happened, and its markers are set aside so
        that a later switch starts afresh (a stale 'stopped' or 'backed up' must not be skipped)."""
        done = [step for step in STEPS if self.marker(step)]
        if not done or (client == "reth" and self.marker("s14-verify")):
            return  # no switch, or a completed one (its markers stay for cleanup)
        if client == "geth" and not self.marker("s06-delete-geth"):
            for job in ("export", "import"):
                name = f"nodefleet-{job}-{self.node}"
                if unit_props(name, "ActiveState").get("ActiveState") in ("active", "activating"):
                    raise Failed(f"an earlier switch's {name} is still running: wait for it, or stop it (systemctl stop {name}), then re-run")
            history = self.archive_markers("abandoned")
            say(f"an earlier switch stopped after {done[-1]} with the geth datadir intact: geth stays; its markers are set aside in {history}")
            return
        raise Failed(f"validator {self.node}: a switch to reth stopped after {done[-1]}"
                     f"{' and the geth datadir was deleted' if self.marker('s06-delete-geth') else ''}: "
                     "set switch: migrate to finish it, or switch: rollback to restore geth from the backup")

    def archive_markers(self, why):
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        history = os.path.join(self.state_dir, "history", f"{stamp}-{why}")
        os.makedirs(os.path.dirname(history), exist_ok=True)
        os.rename(self.markers, history)
        return history

    def init_datadir(self, client):
        s = self.s
        if client == "geth":
            run([self.release_bin("geth"), "init", "--datadir", s["gethDir"], s["genesis"]], user=None)
            chown_tree(s["gethDir"], self.op)
        else:
            self.install_reth()
            os.makedirs(s["rethDir"], exist_ok=True)
            chown_tree(s["rethDir"], self.op)
            run([s["rethBinary"], "init", "--chain", s["genesis"], "--datadir", s["rethDir"]], user=self.op)
        say(f"initialized the {client} datadir with {s['genesis']}")

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
        url = f"http://localhost:{self.s['ports']['engine']}"
        out = run(["python3", "-S", os.path.join(HERE, "set-rpc-dial-url.py"), os.path.join(self.s["consensusHome"], "config", "app.toml"), url]).stdout
        report = json.loads(out.strip().splitlines()[-1])
        if report["changed"]:
            say(f"app.toml: rpc-dial-url {report['old']} -> {url} (line {report['line']})")
        return report

    # ---- the switch ------------------------------------------------------------------------------

    def migrate(self, step, inputs):
        if step not in STEPS:
            raise Failed(f"unknown step {step}")
        idx = STEPS.index(step)
        for before in STEPS[:idx]:
            if not self.marker(before):
                raise Failed(f"{step}: step {before} has not completed (the steps run in order)")
        done = self.marker(step)
        if done:
            if done.get("inputs") != inputs:
                raise Failed(f"{step} completed with other inputs ({done.get('inputs')}, now {inputs}): finish the switch with "
                             "the settings it started with, or roll back (switch: rollback)")
            say(f"{step}: already done at {done['ended']}: skipped")
            return dict(done, skipped=True)
        started = now()
        say(f"{step}: started {started}")
        data = getattr(self, "step_" + step.split("-", 1)[1].replace("-", "_"))()
        record = dict(data, step=step, inputs=inputs, started=started, ended=now())
        self.write_marker(step, record)
        say(f"{step}: done {record['ended']}")
        return record

    def step_install_reth(self):
        out = run([self.release_bin("0gchaind"), "version"]).stdout.strip()
        m = re.search(r"v?(\d+)\.(\d+)\.(\d+)", out)
        if not m or tuple(int(x) for x in m.groups()) < MIN_RELEASE:
            raise Failed(f"release package version {out!r}: the switch to reth needs 1.0.6 or later (seed 9)")
        version = self.install_reth()
        say(f"installed {self.s['rethBinary']}: {version}")
        return {"releaseVersion": m.group(0), "rethVersion": version}

    def geth_head(self):
        heads = HEAD_LINE.findall(journal(self.units["geth"]))
        if not heads:
            raise Failed(f"no 'Chain head was updated' line in the log of {self.units['geth']}")
        return int(heads[-1].replace(",", ""))

    def step_note_head(self):
        geth = self.units["geth"]
        if not active(geth):
            raise Failed(f"{geth} is not running: the chain head is read from a running geth's log (seed 4.5 step 2)")
        size = tree_size(self.s["gethDir"])
        st = os.statvfs(self.s["dataRoot"])
        free = st.f_bavail * st.f_frsize
        if free < 2 * size:
            raise Failed(f"free disk on {self.s['dataRoot']}: {free} bytes, the switch needs 2x the geth datadir ({2 * size} bytes; seed 8)")
        head = self.geth_head()
        say(f"noted chain head {head} from {geth}'s log; geth datadir {size} bytes, free {free} bytes")
        return {"head": head, "gethBytes": size, "freeBytes": free}

    def step_stop(self):
        geth, cl = self.units["geth"], self.units["consensus"]
        noted = self.marker("s02-note-head")["head"]
        stopped_at = now()
        if active(cl):
            self.stop(cl)
            say(f"stopped {cl}")
        if self.consensus_processes():
            raise Failed(f"a 0gchaind with this key still runs after {cl} stopped: {self.consensus_processes()}")
        head = noted
        if active(geth):
            head = max(noted, self.geth_head())  # geth's head is final once the consensus daemon is stopped
            self.stop(geth)
            say(f"stopped {geth}; its last chain head {head}")
        return {"head": head, "headNoted": noted, "consensusStoppedAt": stopped_at}

    def step_backup(self):
        s = self.s
        for unit in (self.units["consensus"], self.units["geth"]):
            if active(unit):
                raise Failed(f"{unit} is running: the backup is taken only after both are stopped (seed 4.5 step 4)")
        for stale in os.listdir(s["dataRoot"]):
            if stale.startswith("backup-") and stale.endswith(".partial"):
                shutil.rmtree(os.path.join(s["dataRoot"], stale))
                say(f"removed the unfinished backup {stale}")
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        dest = os.path.join(s["dataRoot"], f"backup-{stamp}")
        part = dest + ".partial"
        os.makedirs(part)
        manifest = {}
        for name, src in (("geth", s["gethDir"]), ("0gchaind", s["consensusHome"])):
            run(["cp", "-a", src, os.path.join(part, name)])
            manifest[name] = tree_manifest(os.path.join(part, name))
            if manifest[name] != tree_manifest(src):
                raise Failed(f"backup of {src}: the copy differs from the source")
        with open(os.path.join(part, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        os.rename(part, dest)
        files = sum(len(m) for m in manifest.values())
        size = sum(e[0] for m in manifest.values() for e in m.values())
        say(f"backed up the geth datadir and the consensus home to {dest}: {files} files, {size} bytes, verified")
        return {"backupDir": dest, "files": files, "bytes": size}

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
            if tree_manifest(os.path.join(dest, name)) != manifest.get(name):
                raise Failed(f"backup {dest}/{name} does not match its manifest: it is not a verified backup")
        return dest

    def job_state(self, name):
        """A transient job unit: "running", "exited" (ended, result kept), "failed" or "none"."""
        p = unit_props(name, "ActiveState", "SubState")
        state, sub = p.get("ActiveState"), p.get("SubState")
        if state in ("active", "activating") and sub != "exited":
            say(f"{name} is already running: attaching")
            return "running"
        if state == "active":
            return "exited"
        return "failed" if state == "failed" else "none"

    def long_unit(self, name, argv, log, failpoint):
        """Starts `argv` afresh as transient unit `name`, as the operator."""
        dispose(name)
        cmd = ["systemd-run", f"--unit={name}", f"--uid={self.op}", f"--gid={self.op}", "-p", f"WorkingDirectory={self.mig}",
               "-p", "RemainAfterExit=yes", "-p", f"StandardOutput=append:{log}", "-p", f"StandardError=append:{log}",
               "-p", "LimitNOFILE=65535"]
        hold = os.path.join(FAILPOINTS, failpoint)
        if os.path.exists(hold):
            cmd += ["-p", f"ExecStartPre=/bin/sh -c 'while [ -e {hold} ]; do sleep 0.2; done'"]
            say(f"failpoint {hold}: {name} waits until it is removed")
        run(cmd + ["--", *argv])
        say(f"started {name}: {' '.join(argv)} (log {log})")

    def attach(self, name, progress, every=5.0):
        """Waits for transient unit `name` to end, printing progress(); returns its exit status."""
        last = 0.0
        while True:
            p = unit_props(name, "LoadState", "ActiveState", "SubState", "Result", "ExecMainStatus", "ExecMainCode")
            state, sub = p.get("ActiveState"), p.get("SubState")
            if state == "active" and sub == "exited":
                return int(p.get("ExecMainStatus") or 0)
            if state == "failed":
                return int(p.get("ExecMainStatus") or 1) or 1
            if state == "inactive":
                return None  # gone (reboot, or stopped by hand): the caller starts it again
            if time.monotonic() - last >= every:
                msg = progress()
                if msg:
                    say(msg)
                last = time.monotonic()
            time.sleep(0.5)

    def step_export(self):
        s = self.s
        if active(self.units["geth"]):
            raise Failed(f"{self.units['geth']} is running: export only from a stopped geth")
        self.verify_backup()
        head = self.noted_head()
        os.makedirs(self.mig, exist_ok=True)
        shutil.chown(self.mig, self.op, self.op)
        name = f"nodefleet-export-{self.node}"
        log = os.path.join(self.mig, "export.log")
        for attempt in (1, 2):
            if self.job_state(name) in ("none", "failed"):  # a failed export is run again
                if os.path.exists(self.export_file):
                    os.unlink(self.export_file)  # geth export appends: a partial file must go first
                    say("removed a partial chain-export.rlp before exporting again")
                self.long_unit(name, [self.release_bin("geth"), "export", "--datadir", s["gethDir"], self.export_file, "1", str(head)], log, "export-hold")
            meter = Meter(head)
            status = self.attach(name, lambda: meter.line("exported", count_blocks(self.export_file, meter)))
            if status is None:
                say(f"{name} is gone (host restarted?): exporting again")
                continue
            dispose(name)
            if status != 0:
                raise Failed(f"geth export failed (exit {status}): {tail(log)}")
            break
        else:
            raise Failed("the export did not complete")
        info = verify_export(self.export_file, head)
        say(f"export verified: blocks {info['first']}..{info['last']} ({info['blocks']} blocks, {info['bytes']} bytes), no truncated tail")
        return info

    def step_delete_geth(self):
        s = self.s
        trash = s["gethDir"] + ".deleting"
        backup = self.verify_backup()
        exp = self.marker("s05-export")
        info = verify_export(self.export_file, self.noted_head())
        if info["bytes"] != exp["bytes"]:
            raise Failed(f"{self.export_file} changed since it was verified ({exp['bytes']} -> {info['bytes']} bytes)")
        if os.path.exists(s["gethDir"]):
            os.rename(s["gethDir"], trash)
        if os.path.exists(trash):
            shutil.rmtree(trash)
        say(f"deleted the geth datadir {s['gethDir']} (backup {backup}, export {info['blocks']} blocks verified)")
        return {"deleted": s["gethDir"], "backupDir": backup}

    def step_init_reth(self):
        s = self.s
        if os.path.exists(s["rethDir"]):
            shutil.rmtree(s["rethDir"])  # an unfinished init of an earlier run
        os.makedirs(s["rethDir"])
        chown_tree(s["rethDir"], self.op)
        out = run([s["rethBinary"], "init", "--chain", s["genesis"], "--datadir", s["rethDir"]], user=self.op)
        say((out.stdout + out.stderr).strip().splitlines()[-1] if (out.stdout + out.stderr).strip() else "reth init done")
        return {"rethDir": s["rethDir"]}

    def trim(self, start):
        import trim_export
        path = trim_export.trim(start, self.mig, log=lambda m: say(f"trim: {m}"))
        shutil.chown(path, self.op, self.op)
        return path

    def step_trim(self):
        path = self.trim(1)
        return {"file": path, "bytes": os.path.getsize(path)}

    def step_import(self):
        s = self.s
        head = self.noted_head()
        name = f"nodefleet-import-{self.node}"
        log = os.path.join(self.mig, "import.log")
        state_path = os.path.join(self.markers, "s09-import.state.json")
        try:
            with open(state_path) as f:
                st = json.load(f)
        except (OSError, ValueError):
            st = {"start": 1, "attempts": 0, "logOffset": 0, "history": []}
        if st.get("stateRootMismatch"):
            r = st["stateRootMismatch"]
            raise Failed(f"mismatched block state root at block {r['block']} (got {r['got']}, expected {r['expected']}): reported in "
                         f"{state_path}; do not skip the block (seed 7); roll back with switch: rollback")
        while True:
            file = os.path.join(self.mig, f"chain-export-from-{st['start']}.rlp")
            job = self.job_state(name)  # an ended import (exited or failed) is judged by its log below
            if job == "none" and st.get("pending"):
                st["history"].append({"start": st["start"], "result": "unit gone (host restarted?)"})
                st["pending"] = False
                save_json(state_path, st)
                say(f"{name} of attempt {st['attempts']} is gone (host restarted?): importing again; the import recovery finds where it stopped")
            if job == "none":
                if st["attempts"] > s["importRetries"]:
                    raise Failed(f"the import did not complete in {st['attempts']} attempts ({st['history']}): roll back with switch: rollback")
                st["attempts"] += 1
                st["logOffset"] = os.path.getsize(log) if os.path.exists(log) else 0
                st["pending"] = True
                save_json(state_path, st)
                if not os.path.exists(file):
                    self.trim(st["start"])
                self.long_unit(name, [s["rethBinary"], "import", "--chain", s["genesis"], "--datadir", s["rethDir"], file], log, "import-hold")
            meter = Meter(head)
            status = self.attach(name, lambda: meter.line("imported", last_imported(log, st["logOffset"])))
            text = read_from(log, st["logOffset"])
            if status is None:
                continue  # gone while attached: reported at the top of the loop
            dispose(name)
            st["pending"] = False
            if status == 0 and "Chain was fully imported" in text:
                say(f"import complete: {os.path.basename(file)}")
                return {"importedHeight": head, "attempts": st["attempts"], "history": st["history"], "file": file}
            root = re.search(r"mismatched block state root\D*(\d+)\D*?got (0x[0-9a-fA-F]+)\D*?expected (0x[0-9a-fA-F]+)", text)
            if root:
                st["stateRootMismatch"] = {"block": int(root.group(1)), "got": root.group(2), "expected": root.group(3), "at": now()}
                save_json(state_path, st)
                return self.step_import()  # raises with the report
            parent = re.search(r"block number (\d+) does not match parent block number (\d+)", text)
            if parent:
                written = int(parent.group(2))
            else:
                decoded = re.findall(r"total_(?:decoded|imported)_blocks=(\d+)", text)
                if "mismatched parent hash" in text and decoded:
                    written = st["start"] - 1 + int(decoded[-1])
                elif "partially imported" in text or status != 0:
                    written = None  # interrupted: import the same file again; reth says where it stopped
                else:
                    raise Failed(f"reth import ended (exit {status}) without 'Chain was fully imported': {tail(log)}")
            if written is not None and written >= head:
                say(f"the database already holds every block up to the head {head}: import complete")
                return {"importedHeight": head, "attempts": st["attempts"], "history": st["history"], "file": file}
            if written is not None:
                say(f"import stopped: the database holds blocks up to {written}; re-trimming from {written + 1} (seed 7)")
                st["history"].append({"start": st["start"], "result": f"stopped, database at {written}"})
                st["start"] = written + 1
            else:
                st["history"].append({"start": st["start"], "result": f"exit {status}, interrupted"})
                say(f"import interrupted (exit {status}): importing {os.path.basename(file)} again")
            save_json(state_path, st)

    def transient_reth(self):
        """Seed 4.5 step 10 compares reth's height on <prefix>545 before its unit exists: reth runs
        once with the unit's own command line as a transient unit, and is stopped after."""
        argv = exec_start(os.path.join(self.s["etcDir"], self.units["reth"]))
        name = f"nodefleet-rethcheck-{self.node}"
        dispose(name)
        run(["systemd-run", f"--unit={name}", f"--uid={self.op}", f"--gid={self.op}", "-p", f"WorkingDirectory={self.s['dataRoot']}", "--", *argv])
        return name

    def step_compare(self):
        name = self.transient_reth()
        try:
            def height():
                try:
                    return self.el_height() + 1  # +1: block 0 is a valid answer but falsy
                except (RpcFailure, Failed):
                    return None
            reth = wait(f"reth to answer eth_blockNumber on {self.el_url}", height, 120) - 1
        finally:
            systemctl("stop", name, check=False)
        ref = self.reference_height()
        source = self.s.get("referenceRpcUrl") or "the noted head"
        tol = self.s["heightTolerance"]
        if abs(ref - reth) > tol:
            raise Failed(f"reth is at block {reth}, the reference ({source}) at {ref}: more than {tol} blocks apart (seed 4.5 step 10); "
                         "not switching over: re-run to retry, or roll back")
        say(f"reth height {reth}, reference {ref} ({source}): within {tol}")
        return {"rethHeight": reth, "referenceHeight": ref, "reference": source}

    def step_units(self):
        geth = self.units["geth"]
        if active(geth):
            raise Failed(f"{geth} is running: it must stay stopped during the switch")
        systemctl("disable", geth, check=False)
        path = f"/etc/systemd/system/{geth}"
        if os.path.exists(path):
            os.unlink(path)
        install_unit(self.s["etcDir"], self.units["reth"])
        say(f"removed {geth}; installed {self.units['reth']}")
        return {"removed": geth, "installed": self.units["reth"]}

    def step_dial_url(self):
        r = self.set_dial_url()
        return {"appToml": r["file"], "rpcDialUrl": r["new"], "was": r["old"]}

    def step_start(self):
        s = self.s
        reth, cl = self.units["reth"], self.units["consensus"]
        systemctl("stop", f"nodefleet-rethcheck-{self.node}", check=False)
        systemctl("daemon-reload")
        self.check_jwt(reth)
        reth_start = time.time()
        systemctl("enable", "--now", reth)
        wait(f"something listening on the engine port {s['ports']['engine']}", lambda: listening(s["ports"]["engine"]), 120)
        say(f"{reth} is listening on {s['ports']['engine']}")
        self.set_client("reth")
        rolled = {"skipped": "0gchaind already running"}
        if not active(cl):
            rolled = self.height_rollback()
            self.start_consensus()
            say(f"started {cl}")
        return {"rethStartedAt": reth_start, "heightRollback": rolled, "consensusStartedAt": now()}

    def step_verify(self):
        since = int(self.marker("s13-start")["rethStartedAt"] * 1e6)
        v = self.verify_running(self.units["reth"], since, ["Starting consensus engine", "syncing", "Syncing"])
        stopped = parse_time(self.marker("s03-stop")["consensusStoppedAt"])
        downtime = round(v["committedAt"] - stopped, 1) if v.get("committedAt") else None
        say(f"verified: reth at {v['executionHeight']}, 0gchaind at {v['consensus']['height']}, catching_up false; downtime {downtime} s")
        return dict(v, downtimeSeconds=downtime)

    def migration_report(self):
        steps = {}
        for step in STEPS:
            m = self.marker(step)
            if m:
                steps[step] = {"started": m["started"], "ended": m["ended"]}
        report = {"node": self.node, "steps": steps}
        if self.marker("s03-stop"):
            report["notedHead"] = self.noted_head()
        if self.marker("s09-import"):
            report["importedHeight"] = self.marker("s09-import")["importedHeight"]
            report["importAttempts"] = self.marker("s09-import")["attempts"]
        if self.marker("s14-verify"):
            report["downtimeSeconds"] = self.marker("s14-verify")["downtimeSeconds"]
            report["complete"] = True
        return report

    # ---- rollback and cleanup --------------------------------------------------------------------

    def rollback(self):
        s = self.s
        geth, reth, cl = self.units["geth"], self.units["reth"], self.units["consensus"]
        if not os.path.isdir(self.markers) or not os.listdir(self.markers):
            if self.host_client() == "reth":
                raise Failed("this validator runs reth and no switch is recorded on the host: there is no geth backup to roll back to")
            say("no switch in progress: nothing to roll back")
            return {"node": self.node, "rolledBack": False}
        backup = self.verify_backup() if self.marker("s04-backup") else None
        started = now()
        for unit in (f"nodefleet-import-{self.node}", f"nodefleet-export-{self.node}", f"nodefleet-rethcheck-{self.node}"):
            systemctl("stop", unit, check=False)
        self.stop(cl)
        self.stop(reth)
        # geth too: a re-run of a rollback that already started it must not restore under a live database.
        self.stop(geth)
        if self.consensus_processes():
            raise Failed(f"a 0gchaind with this key still runs: {self.consensus_processes()}")
        if os.path.exists(f"/etc/systemd/system/{reth}"):
            os.unlink(f"/etc/systemd/system/{reth}")
        trash = s["gethDir"] + ".deleting"
        if self.marker("s06-delete-geth") or os.path.exists(trash) or not os.path.isdir(s["gethDir"]):
            if backup is None:
                raise Failed("the geth datadir is gone and there is no verified backup: cannot roll back")
            restoring = s["gethDir"] + ".restoring"
            for stale in (restoring, trash, s["gethDir"]):
                if os.path.exists(stale):
                    shutil.rmtree(stale)
            run(["cp", "-a", os.path.join(backup, "geth"), restoring])
            if tree_manifest(restoring) != tree_manifest(os.path.join(backup, "geth")):
                raise Failed(f"the restored geth datadir differs from the backup {backup}")
            os.rename(restoring, s["gethDir"])
            say(f"restored the geth datadir from {backup}")
            restored = True
        else:
            say("the geth datadir was never deleted: kept as it is")
            restored = False
        install_unit(s["etcDir"], geth)
        systemctl("daemon-reload")
        self.check_jwt(geth)
        self.set_dial_url()
        geth_start = time.time()
        systemctl("enable", "--now", geth)
        wait(f"{geth} to listen on {s['ports']['engine']}", lambda: listening(s["ports"]["engine"]), 120)
        self.set_client("geth")
        # geth is back at its head of the switch (the backup); blocks made on reth since are not
        # in it, so the consensus height is expected to be that many heights ahead.
        committed = [int(h) for h in re.findall(r"Committed state.*?\bheight=(\d+)", journal(cl))]
        gap = (committed[-1] - self.noted_head()) if committed and (self.marker("s03-stop") or self.marker("s02-note-head")) else 0
        rolled = self.height_rollback(expected_gap=gap)
        self.start_consensus()
        v = self.verify_running(geth, int(geth_start * 1e6), ["Chain head was updated", "Forkchoice requested sync", "Syncing beacon headers"])
        if os.path.exists(s["rethDir"]):
            shutil.rmtree(s["rethDir"])
        history = self.archive_markers("rolled-back")
        say(f"rolled back to geth; the switch's markers are kept in {history}")
        return {"node": self.node, "rolledBack": True, "restoredFromBackup": restored, "backupDir": backup, "heightRollback": rolled,
                "started": started, "ended": now(), **v}

    def cleanup(self, clock=time.monotonic):
        s = self.s
        reth = self.units["reth"]
        if not self.marker("s14-verify"):
            raise Failed("the switch to reth has not completed on this host: nothing to clean up")
        if not active(reth):
            raise Failed(f"{reth} is not running: cleanup waits for 24 hours of stable running")
        since = int(unit_props(reth, "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"] or 0) / 1e6
        hours = (clock() - since) / 3600
        need = s["cleanupAfterHours"]
        if hours < need:
            raise Failed(f"{reth} has been active for {hours:.1f} h (from systemd); cleanup waits until {need} h (seed 4.5: 24 to 48 hours of stable running)")
        removed = []
        if os.path.isdir(self.mig):
            for name in sorted(os.listdir(self.mig)):
                if name.endswith(".rlp") or name.endswith(".rlp.partial"):
                    os.unlink(os.path.join(self.mig, name))
                    removed.append(os.path.join(self.mig, name))
        if s["cleanup"].get("removeGethBinary"):
            path = os.path.join(s["releaseDir"], "bin", "geth")
            if os.path.exists(path):
                os.unlink(path)
                removed.append(path)
        if s["cleanup"].get("removeBackup"):
            backup = self.marker("s04-backup")["backupDir"]
            if os.path.exists(backup):
                shutil.rmtree(backup)
                removed.append(backup)
        for path in removed:
            say(f"removed {path}")
        return {"node": self.node, "rethActiveHours": round(hours, 1), "removed": removed}

    def health(self):
        client = self.host_client()
        report = {"node": self.node, "client": client, "services": {}}
        for key in ("geth", "reth", "consensus"):
            report["services"][self.units[key]] = "active" if active(self.units[key]) else "inactive"
        try:
            report["executionHeight"] = self.el_height()
        except (RpcFailure, Failed) as e:
            report["executionError"] = str(e)
        try:
            report["consensus"] = self.cl_status()
        except Failed as e:
            report["consensusError"] = str(e)
        if client in ("geth", "reth") and active(self.units[client]):
            try:
                report["jwtSameFile"] = self.check_jwt(self.units[client])
            except Failed as e:
                report["jwtError"] = str(e)
        report["consensusProcessesWithThisKey"] = len(self.consensus_processes())
        if os.path.isdir(self.markers) and os.listdir(self.markers):
            report["migration"] = self.migration_report()
        return report


class Meter:
    """blocks done, rate and ETA for progress lines."""

    def __init__(self, total):
        self.total, self.t0, self.first = total, time.monotonic(), None
        self.offset, self.count = 0, 0

    def line(self, verb, done):
        if done is None:
            return None
        if self.first is None:
            self.first = done
        dt = time.monotonic() - self.t0
        rate = (done - self.first) / dt if dt > 0 else 0
        eta = f"{(self.total - done) / rate:.0f} s" if rate > 0 else "unknown"
        return f"{verb} {done} of {self.total} blocks, {rate:.0f} blocks/s, ETA {eta}"


def count_blocks(path, meter):
    """Complete blocks in a growing export, walked on from where the last call stopped."""
    try:
        with open(path, "rb") as f:
            f.seek(meter.offset)
            data = f.read()
    except OSError:
        return None
    pos = 0
    while pos < len(data):
        p = data[pos]
        if p < 0xC0:
            break
        if p >= 0xF8:
            n = p - 0xF7
            if pos + 1 + n > len(data):
                break
            size = 1 + n + int.from_bytes(data[pos + 1:pos + 1 + n], "big")
        else:
            size = 1 + p - 0xC0
        if pos + size > len(data):
            break
        pos += size
        meter.count += 1
    meter.offset += pos
    return meter.count


def last_imported(log, offset):
    found = re.findall(r"tip=(\d+)|number=(\d+)", read_from(log, offset))
    return max((int(a or b) for a, b in found), default=None)


def verify_export(path, head):
    """Seed 4.5 step 6 precondition: the export is whole: every block complete, no truncated tail,
    first block 1 and last block the noted head."""
    import mmap
    import trim_export
    try:
        size = os.path.getsize(path)
    except OSError:
        raise Failed(f"{path} does not exist: export first") from None
    if size == 0:
        raise Failed(f"{path} is empty")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        try:
            end, blocks, last = trim_export.skip(mm, 0, size, 1 << 62, {"count": 0, "log": lambda m: None})
        except trim_export.BadInput as e:
            raise Failed(f"{path}: {e}") from None
        first_n, last_n = trim_export.number_of(mm, 0), trim_export.number_of(mm, last)
    if first_n != 1 or last_n != head or blocks != head:
        raise Failed(f"{path}: blocks {first_n}..{last_n} ({blocks} blocks) is not the export of 1..{head}")
    return {"first": first_n, "last": last_n, "blocks": blocks, "bytes": size}


def tree_size(path):
    return sum(e[0] for e in tree_manifest(path).values())


def tree_manifest(path):
    """{relative path: [size, sha256]} of every regular file under path."""
    out = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            h = hashlib.sha256()
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            out[os.path.relpath(full, path)] = [os.path.getsize(full), h.hexdigest()]
    return out


def same_bytes(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


def put(path, text, mode):
    tmp = path + ".nodefleet-new"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def save_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    put(path, json.dumps(data) + "\n", 0o644)


def exec_start(path):
    """The words of a unit file's ExecStart line, as systemd reads them (%% and $$ undoubled)."""
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("ExecStart="):
                return shlex.split(line[len("ExecStart="):].replace("%%", "%").replace("$$", "$"))
    return []


def install_unit(etc, unit):
    """Copies the staged unit file into /etc/systemd/system; returns [unit] when it changed."""
    src, dst = os.path.join(etc, unit), f"/etc/systemd/system/{unit}"
    if os.path.exists(dst) and same_bytes(src, dst):
        return []
    shutil.copy(src, dst + ".nodefleet-new")
    os.chmod(dst + ".nodefleet-new", 0o644)
    os.replace(dst + ".nodefleet-new", dst)
    return [unit]


def find_key(doc, key):
    if key in doc:
        return doc[key]
    for v in doc.values():
        if isinstance(v, dict):
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def read_from(path, offset):
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def tail(path, n=8):
    return " | ".join(read_from(path, 0).strip().splitlines()[-n:])


def mono_to_realtime_usec(mono_usec):
    return int((time.time() - time.monotonic()) * 1e6 + mono_usec)


def first_committed_time(unit, since_usec):
    out = run(["journalctl", "-u", unit, "-o", "json", "--no-pager", "--since", f"@{int(since_usec // 1_000_000)}"], check=False).stdout
    for line in out.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if "Committed state" in str(entry.get("MESSAGE", "")):
            return int(entry["__REALTIME_TIMESTAMP"]) / 1e6
    return None


def parse_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    v = Validator(argv[1])
    cmd = argv[2]
    try:
        if cmd == "migrate" and len(argv) == 5:
            record = v.migrate(argv[3], argv[4])
            report = v.migration_report() if argv[3] == STEPS[-1] else record
        elif cmd in ("setup", "rollback", "cleanup", "health") and len(argv) == 3:
            report = getattr(v, cmd)()
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (Failed, RpcFailure) as e:
        print(f"validator {v.node}: {cmd} {' '.join(argv[3:4])}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
