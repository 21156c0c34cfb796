"""`setup`: the validator's files, units and datadir, and its clients started, outside a switch.
It never changes which client runs: that takes the switch (or its rollback)."""
import os
import re
import shutil
import stat
import time

from .host import Failed, chown_tree, install_unit, put, record_toml, run, same_bytes, say, systemctl, unit_props
from .handover import carry_signing_state
from .starting import start_in_order, warn_not_running
from .switch import ALL_STEPS
from .upgrade import prepare


def install_consensus_genesis(v):
    """The release's consensus genesis (settings consensusGenesis) as the home's config/genesis.json
    where the home has none. A home with another genesis belongs to another chain: refused, never
    overwritten (its blocks, state and signing state are that chain's)."""
    source = v.s.get("consensusGenesis")
    if not source:
        return
    target = os.path.join(v.s["consensusHome"], "config", "genesis.json")
    try:
        with open(source, encoding="utf-8") as f:
            wanted = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Failed(f"the release's consensus genesis {source} cannot be read ({getattr(e, 'strerror', None) or 'not UTF-8 text'}): is the release's consensus.genesis path right?")
    if os.path.exists(target):
        if not same_bytes(source, target):
            raise Failed(f"{target} is not the release's genesis {source}: this home belongs to another chain; "
                         "nodefleet never replaces a node's genesis (move the home away to start this node on the release's chain)")
        return
    put(target, wanted, 0o644)
    shutil.chown(target, v.op, v.op)
    say(f"installed the release's consensus genesis as {target}")


TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
INSTRUMENTATION_KEY = re.compile(r"^(\s*)(prometheus|prometheus_listen_addr)(\s*=\s*)([^#\r\n]*?)(\s*(?:#.*)?)(\r?\n)?$")


def toml_string(value):
    """A TOML basic string: quote and backslash escaped, control characters as \\uXXXX."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def instrumentation_edit(text, listen, where):
    """config.toml's text with CometBFT's metrics on (`[instrumentation]` prometheus = true,
    prometheus_listen_addr = `listen`), or None when it has them already. Only those two values
    change (or are added, with the table when it is missing); every other line stays as it is. A
    file that is not TOML, or that the edit would not make right, is refused: Failed, untouched."""
    import tomllib
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise Failed(f"{where} is not TOML ({e}): nodefleet does not edit it; fix it by hand") from None
    have = doc.get("instrumentation")
    if isinstance(have, dict) and have.get("prometheus") is True and have.get("prometheus_listen_addr") == listen:
        return None
    nl = "\r\n" if "\r\n" in text else "\n"
    wanted = {"prometheus": "true", "prometheus_listen_addr": toml_string(listen)}
    lines = text.splitlines(keepends=True)
    start = end = None
    for i, line in enumerate(lines):
        m = TABLE.match(line.rstrip("\r\n"))
        if not m or line.lstrip().startswith("[["):
            continue
        if start is not None and end is None:
            end = i
        if m.group(1).strip().strip('"') == "instrumentation":
            start, end = i, None
    if start is None:
        lead = nl if text and not text.endswith("\n") else ""
        new = f"{text}{lead}{nl}[instrumentation]{nl}" + "".join(f"{k} = {v}{nl}" for k, v in wanted.items())
    else:
        end = len(lines) if end is None else end
        done = set()
        for i in range(start + 1, end):
            m = INSTRUMENTATION_KEY.match(lines[i])
            if m:
                lines[i] = f"{m.group(1)}{m.group(2)}{m.group(3)}{wanted[m.group(2)]}{m.group(5)}{m.group(6) or ''}"
                done.add(m.group(2))
        lines.insert(start + 1, "".join(f"{k} = {v}{nl}" for k, v in wanted.items() if k not in done))
        new = "".join(lines)
    try:
        got = tomllib.loads(new).get("instrumentation", {})
    except tomllib.TOMLDecodeError as e:
        got = {"error": str(e)}
    if got.get("prometheus") is not True or got.get("prometheus_listen_addr") != listen:
        raise Failed(f"{where}: nodefleet could not set [instrumentation] prometheus = true and prometheus_listen_addr = {toml_string(listen)} "
                     "(the table or its keys are written in a form it does not edit); set them by hand")
    return new


def ensure_instrumentation(v):
    """Monitored (settings `metrics`): the home's config.toml serves CometBFT's metrics, an existing
    one edited (config.toml is written whole only where the home has none). True when it changed."""
    metrics = v.s.get("metrics")
    if not metrics:
        return False
    path = os.path.join(v.s["consensusHome"], "config", "config.toml")
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    new = instrumentation_edit(text, metrics["prometheusListenAddr"], path)
    if new is None:
        return False
    st = os.stat(path)
    put(path, new, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid))
    say(f"{path}: CometBFT's metrics on {metrics['prometheusListenAddr']} ([instrumentation])")
    return True


def setup(v):
    s = v.s
    v.release_bin(v.daemon)
    home = s["consensusHome"]
    for d in (s["dataRoot"], home, os.path.join(home, "config"), os.path.join(home, "data")):
        os.makedirs(d, exist_ok=True)
        shutil.chown(d, v.op, v.op)
    if not os.path.exists(os.path.join(home, "config", "priv_validator_key.json")):
        raise Failed("priv_validator_key.json is missing: the key step runs first")
    if not os.path.exists(s["jwt"]):
        # 0x-prefixed: BeaconKit refuses a JWT file without it ("hex string without 0x prefix");
        # geth and reth read either form.
        fd = os.open(s["jwt"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("0x" + os.urandom(32).hex() + "\n")
        shutil.chown(s["jwt"], v.op, v.op)
        say(f"created the JWT secret {s['jwt']}")
    elif v.daemon == "beacond":
        prefix_jwt(s["jwt"])
    cfg = os.path.join(home, "config")
    install_consensus_genesis(v)
    for name in ("app.toml", "config.toml"):
        path = os.path.join(cfg, name)
        if not os.path.exists(path):
            shutil.copy(os.path.join(s["etcDir"], name), path)
            shutil.chown(path, v.op, v.op)
            say(f"wrote {path}")
    v.set_dial_url()
    instrumented = ensure_instrumentation(v)
    # What nodefleet sets in the files it edits in place, for the drift check: the engine dial URL
    # and JWT path in app.toml, the metrics settings in config.toml (the rest is the operator's).
    record_toml(os.path.join(cfg, "app.toml"), ("rpc-dial-url", "jwt-secret-path"))
    if s.get("metrics"):
        record_toml(os.path.join(cfg, "config.toml"), ("instrumentation.prometheus", "instrumentation.prometheus_listen_addr"))
    carried = carry_signing_state(v)
    v.ensure_state_file()
    # The units of the release the node runs: staged in etcDir, or, once an upgrade at a height
    # swapped it, the upgrade's (upgrade.py).
    units_dir = prepare(v)
    changed = install_unit(units_dir, v.units["consensus"])
    if instrumented and v.units["consensus"] not in changed:
        changed = [*changed, v.units["consensus"]]  # it reads config.toml at start only
    client = v.host_client()
    want = s["executionClient"]
    report = {"node": v.node, "hostClient": client, "switch": s.get("switch"), "signingState": carried}
    if s.get("switch"):
        if not switch_over(v, s["switch"], client):
            systemctl("daemon-reload")
            say(f"switch {s['switch']} configured: units are left to the switch steps")
            return report
        # A switch still in the config but done on this host: a changed unit (a metrics flag) is
        # setup's to put in place and restart, as without one; left alone it stayed unapplied.
        say(f"switch {s['switch']} configured and done on this host: the units are setup's again")
    if client is not None and client != want:
        hint = "switch: migrate" if want == "reth" else "switch: rollback"
        raise Failed(f"validator {v.node} runs {client} on this host but the config says executionClient: {want}; set {hint} to change it")
    end_abandoned_switch(v, client)
    el_unit = v.units[want]
    changed = [*changed, *install_unit(units_dir, el_unit)]  # both units may have changed
    systemctl("daemon-reload")
    if client is None:
        init_datadir(v, want)
        v.set_client(want)
    v.check_jwt(el_unit)
    systemctl("enable", el_unit, check=True)
    restarted = start_in_order(v, el_unit, s["ports"]["engine"], changed)
    time.sleep(3)
    # Not running after its (re)start (a release that exits at start): warned, not failed. The
    # health step fails for it (or, gated and past its first deploy, the node's gate judges it): a
    # step that fails records nothing in Pulumi's state, so setup, having changed the node, would
    # not run again when the change is set back, and the node would stay on it.
    report.update({"hostClient": want, "restarted": restarted, "notRunning": warn_not_running(v, (el_unit, v.units["consensus"]))})
    return report


def switch_over(v, switch, client):
    """Whether the configured switch has nothing left to do on this host: a rollback once the host
    runs geth with no switch on record (the rollback sets its markers aside), a migrate or a
    cleanup once reth runs the chain the switch verified (step 14's marker)."""
    if switch == "rollback":
        return client == "geth" and not any(v.marker(step) for step in ALL_STEPS)
    return client == "reth" and bool(v.step_marker("s14-verify", "l14-verify"))


def end_abandoned_switch(v, client):
    """No switch is configured but an earlier one left markers: the node goes back to normal
    operation only while nothing destructive has happened, and its markers are set aside so
    that a later switch starts afresh (a stale 'stopped' or 'backed up' must not be skipped)."""
    done = [step for step in ALL_STEPS if v.marker(step)]
    if not done or (client == "reth" and v.step_marker("s14-verify", "l14-verify")):
        return  # no switch, or a completed one (its markers stay for cleanup)
    if client == "geth" and not v.step_marker("s06-delete-geth", "l11-units"):
        for job in ("export", "import"):
            name = f"nodefleet-{job}-{v.node}"
            if unit_props(name, "ActiveState").get("ActiveState") in ("active", "activating"):
                raise Failed(f"an earlier switch's {name} is still running: wait for it, or stop it (systemctl stop {name}), then re-run")
        history = v.archive_markers("abandoned")
        say(f"an earlier switch stopped after {done[-1]} with the geth datadir intact: geth stays; its markers are set aside in {history}")
        return
    raise Failed(f"validator {v.node}: a switch to reth stopped after {done[-1]}"
                 f"{' and the geth datadir was deleted' if v.marker('s06-delete-geth') else ''}: "
                 "set switch: migrate to finish it, or switch: rollback to restore geth from the backup")


def init_datadir(v, client):
    s = v.s
    if client == "geth":
        run([v.release_bin("geth"), "init", "--datadir", s["gethDir"], s["genesis"]], user=None)
        chown_tree(s["gethDir"], v.op)
    else:
        v.install_reth()
        os.makedirs(s["rethDir"], exist_ok=True)
        chown_tree(s["rethDir"], v.op)
        run([s["rethBinary"], "init", "--chain", s["genesis"], "--datadir", s["rethDir"]], user=v.op)
    say(f"initialized the {client} datadir with {s['genesis']}")


def prefix_jwt(path):
    """A JWT file of 64 hex digits without 0x (nodefleet wrote them so before it knew BeaconKit)
    gets the prefix: the same secret, so the execution client need not restart. Anything else is
    left alone (check_jwt and the daemon's own error speak for it)."""
    with open(path) as f:
        text = f.read()
    if not re.fullmatch(r"[0-9a-fA-F]{64}\s*", text):
        return False
    st = os.stat(path)
    put(path, "0x" + text.strip() + "\n", st.st_mode & 0o777, owner=(st.st_uid, st.st_gid))
    say(f"{path}: added the 0x prefix BeaconKit's beacond requires (the secret is unchanged)")
    return True
