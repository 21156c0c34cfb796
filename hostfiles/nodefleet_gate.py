#!/usr/bin/env python3
"""A rollout's gate (docs/rollouts.md): waits until a node just restarted is healthy, as `nodefleet status`
and the health metrics call it (nodefleet_health: the role's health tool's answer with the spec's
error table applied: no diagnosis of severity error), and stays so for the soak; else fails with
the node's diagnoses.

    python3 nodefleet_gate.py ROLE NODE --within SECONDS --soak SECONDS [--every SECONDS]
                              [--timeout SECONDS] [--marker FILE] [--unit UNIT...] -- HEALTH-COMMAND...

HEALTH-COMMAND is the role's health tool as the health timer runs it (zgs-health.py NODE,
aztec-health.py NODE, zg-validator.py <validator.json> status), run without a shell every --every
seconds, each run given --timeout seconds. The node must be healthy within --within seconds of
the start; from its first healthy answer every answer for --soak seconds must be healthy too. An
unhealthy answer in the soak starts the soak again, as long as --within allows (the soak must
begin by then). A validator's soak also needs a height committed in it, by --within at the latest
(`not-committing`: its answers do not show a network that halted). The result is one JSON object on stdout's last line: {node, role, healthy, waited,
soaked, checks, diagnoses}; exit 0 when the gate passed, 1 when it did not (stderr then names the
node and each diagnosis with its remedy), 2 on bad arguments.

--unit UNIT (repeatable): the node's services. One that systemd has restarted on its own (its
NRestarts) LOOP_RESTARTS times since the gate began, while the node answers unhealthy, is in a
crash loop (a release that exits at start, a flag the binary does not take): the gate fails then,
with that unit's last journal lines, rather than at the end of --within. With --marker, restarts
are counted from an earlier start when the node's health step left its record (FILE.restarts:
the counts it read when it began, right after the configure step restarted the node; see
handed_base): restarts since the change was applied are the change's, whichever step saw them.

--marker FILE: the node's first deploy is not gated. With no FILE the gate only writes it and
passes ({..., "firstDeploy": true}): a node just made is not yet in service, and a storage node
syncing from scratch is hours from healthy. Every later gate (a change that restarted the node)
waits as above.

--keep DIR --file PATH... --restart UNIT... (with --marker): `onFailure: rollback`. DIR holds the
node's files (each --file, the ones the node reads) as they were when it last passed its gate (or
at its first deploy): each pass keeps them anew. A gate that fails puts them back (a file absent
then is removed), reloads systemd, restarts each --restart unit, and waits again as above; it fails
either way (the change did not pass), saying whether the node is healthy on what it ran before,
and writes FILE.rolled-back. While that file is there (the node's configure step removes it when
it runs: a new change was applied) the gate fails at once: the node still runs what it ran before.

--await-port PORT (with --keep and two --restart units or more): the last --restart unit is
restarted only once 127.0.0.1:PORT answers (a validator: the consensus daemon after its execution
client's engine port). A rollback writes FILE.rolled-back before it puts anything back; a file it
cannot put back is named there and on stderr, and the rest still go back.

--pin PATH (repeatable, with --keep): a file a rollback never puts back (a key, its endpoints) and
that must be as it was when the files were kept (its sha256 is kept): else the node is not rolled
back and the gate fails as with `halt`, naming the file (docs/rollouts.md says why).
"""
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nodefleet_checks as checks  # noqa: E402  (installed beside this script)
import nodefleet_health as health  # noqa: E402
from nodefleet_rpc import cut_urls  # noqa: E402
from nodefleet_units import looping, restart_count  # noqa: E402  (a crash loop, as the health tools see one)

ROLES = ("storage", "sequencer", "validator")
# How long a rollback waits for --await-port before the last --restart unit (an execution client
# opens its engine port within seconds of a start on a real host).
AWAIT_PORT_SECONDS = 90
UNIT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@._:-")


def usage(why):
    sys.stderr.write(f"nodefleet_gate: {why}\n{__doc__}")
    return 2


def parse(argv):
    """(role, node, options, health argv) from the command line, or a str saying what is wrong."""
    if "--" not in argv:
        return "the health command follows --"
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    if len(head) < 2 or not command:
        return "ROLE NODE and a health command are required"
    role, node, rest = head[0], head[1], head[2:]
    if role not in ROLES:
        return f"ROLE must be one of {', '.join(ROLES)}, not {role!r}"
    options = {"--within": None, "--soak": None, "--every": 10.0, "--timeout": 60.0, "--marker": None, "--keep": None, "--file": [], "--restart": [], "--unit": [], "--pin": [], "--await-port": None}
    if len(rest) % 2:
        return "each option takes a value"
    for flag, value in zip(rest[::2], rest[1::2]):
        if flag not in options:
            return f"unknown option {flag}"
        if flag in ("--marker", "--keep", "--file", "--pin"):
            if not os.path.isabs(value):
                return f"{flag}: an absolute path, not {value!r}"
        if flag == "--unit" and (not value or not set(value) <= UNIT_CHARS or value.startswith("-")):
            return f"--unit: not a unit name: {value!r}"
        if flag in ("--file", "--restart", "--unit", "--pin"):
            options[flag].append(value)
            continue
        if flag in ("--marker", "--keep"):
            options[flag] = value
            continue
        if flag == "--await-port":
            if not value.isdigit() or not 0 < int(value) < 65536:
                return f"--await-port: not a port: {value!r}"
            options[flag] = int(value)
            continue
        try:
            options[flag] = float(value)
        except ValueError:
            return f"{flag}: not a number: {value!r}"
        if options[flag] < 0:
            return f"{flag}: not a number of seconds: {value!r}"
    if options["--within"] is None or options["--soak"] is None:
        return "--within and --soak are required"
    if options["--keep"] is not None and (options["--marker"] is None or not options["--file"] or not options["--restart"]):
        return "--keep needs --marker, at least one --file and at least one --restart"
    if options["--keep"] is None and (options["--file"] or options["--restart"] or options["--pin"] or options["--await-port"] is not None):
        return "--file, --restart, --pin and --await-port go with --keep"
    if options["--await-port"] is not None and len(options["--restart"]) < 2:
        return "--await-port needs two --restart units or more (the last is restarted once the port answers)"
    if set(options["--pin"]) & set(options["--file"]):
        return "a --pin file is never put back: not also a --file"
    return role, node, {k[2:]: v for k, v in options.items()}, command


def check(role, node, command, timeout):
    """One run of the health command, as its row (nodefleet_health.rows)."""
    result = checks.run_check(command, timeout)
    return health.rows([{"node": node, "role": role, "host": os.uname().nodename, "argv": command, "result": result}])[0]


def restart_counts(units):
    """{unit: how often systemd restarted it on its own} (nodefleet_units.restart_count: None when unknown)."""
    return {unit: restart_count(unit) for unit in units}


def rebase(base, now):
    """Takes every count read now as the base: the restarts before a healthy answer are no loop."""
    base.update({unit: n for unit, n in now.items() if n is not None})


def handed_base(path, max_age, now=time.time):
    """The restart counts the node's health step read when it began, right after the configure step
    restarted the node: its record `path` ("EPOCH-SECONDS" then "UNIT COUNT" lines), as {unit:
    count}. The record is removed: it serves the one gate after that step (a gate run again later,
    as after a halt, counts from its own start). {} when there is none, when it is older than
    `max_age` seconds (an up cut short between the two steps), or when its time cannot be read; a
    line that cannot be read names no unit (its count is unknown, never 0)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read(4096).splitlines()
    except OSError:
        return {}
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    try:
        age = now() - float(lines[0])
    except (ValueError, IndexError):
        return {}
    if not 0 <= age <= max_age:
        return {}
    counts = {}
    for line in lines[1:]:
        unit, _, n = line.partition(" ")
        if unit and set(unit) <= UNIT_CHARS and n.isdigit():
            counts[unit] = int(n)
    return counts


def commits(role, soaked_at, last):
    """Whether a validator committed a height since its soak began (one whose network halts answers
    healthy: running, caught up with a network that makes no block); true for the other roles."""
    now = health.committed_height(last)
    return role != "validator" or (soaked_at is not None and now is not None and now > soaked_at)


def not_committing(node, role, soaked_at, soaked, waited, checks, last):
    """A validator's gate that saw no height committed by the deadline: not-committing, then its answer's diagnoses."""
    at = "an unknown height" if soaked_at is None else f"height {soaked_at}"
    d = health.diag("not-committing", f"its consensus daemon committed no height in {soaked:.0f} s of otherwise healthy answers (at {at})")
    return {"node": node, "role": role, "healthy": False, "waited": round(waited, 1), "soaked": 0, "checks": checks, "diagnoses": [d, *last["diagnoses"]], "notCommitting": {"height": soaked_at, "seconds": soaked}}


def gate(role, node, command, within, soak, every, timeout, clock=time.monotonic, sleep=time.sleep, run=None, restarts=None, handed=None):
    """Runs the gate; returns its result (a dict). `restarts`: a function giving the node's units'
    restart counts (restart_counts over --unit), or None to watch none; `handed`: counts to start
    from instead of the first reading, for the units it names (handed_base). `clock`, `sleep`,
    `run` and `restarts` are for the tests."""
    run = run or (lambda: check(role, node, command, timeout))
    base = {**restarts(), **(handed or {})} if restarts else {}
    start = clock()
    healthy_since = None
    soaked_at = None  # a validator's committed height when its soak began
    checks = 0
    last = None
    while True:
        last = run()
        checks += 1
        now = clock()
        if last["healthy"]:
            if restarts:
                rebase(base, restarts())
            healthy_since = now if healthy_since is None else healthy_since
            soaked_at = health.committed_height(last) if soaked_at is None else soaked_at
            if now - healthy_since >= soak and commits(role, soaked_at, last):
                return {"node": node, "role": role, "healthy": True, "waited": round(healthy_since - start, 1), "soaked": round(now - healthy_since, 1), "checks": checks, "diagnoses": last["diagnoses"]}
            if now - healthy_since >= soak and now - start >= within:
                return not_committing(node, role, soaked_at, round(now - healthy_since, 1), now - start, checks, last)
        else:
            healthy_since = soaked_at = None
            loop = looping(base, restarts()) if restarts else None
            if loop:
                counted = {"unit": loop[0], "restarts": loop[1]}
                if loop[0] in (handed or {}) and base[loop[0]] == handed[loop[0]]:
                    counted["sinceHealthStep"] = True
                return {"node": node, "role": role, "healthy": False, "waited": round(now - start, 1), "soaked": 0, "checks": checks, "diagnoses": last["diagnoses"], "crashLoop": counted}
        # Past the deadline with no soak under way (or none that can finish): the gate fails.
        if healthy_since is None and now - start >= within:
            return {"node": node, "role": role, "healthy": False, "waited": round(now - start, 1), "soaked": 0, "checks": checks, "diagnoses": last["diagnoses"]}
        sleep(every)


def digest(path):
    """The sha256 of a file, or None when there is none."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def keep(directory, files, pins=()):
    """Keeps `files` as they are now in `directory`, replacing what it held: a copy of each (root's
    alone: config.toml carries the miner key) and manifest.json (path, present, mode, owner, sha256);
    of each of `pins` only its sha256 (`pinned`: never put back, only compared)."""
    new, old = directory + ".new", directory + ".old"
    shutil.rmtree(new, ignore_errors=True)
    os.makedirs(new, mode=0o700)
    manifest = []
    for i, path in enumerate(files):
        entry = {"path": path, "present": os.path.isfile(path)}
        if entry["present"]:
            st = os.stat(path)
            entry.update(copy=f"f{i}", mode=stat.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)
            shutil.copyfile(path, os.path.join(new, entry["copy"]))
            entry["sha256"] = digest(os.path.join(new, entry["copy"]))
        manifest.append(entry)
    manifest.extend({"path": path, "pinned": True, "sha256": digest(path)} for path in pins)
    with open(os.path.join(new, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(directory):
        os.rename(directory, old)
    os.rename(new, directory)
    shutil.rmtree(old, ignore_errors=True)


def kept(directory):
    """The manifest of what `directory` keeps, or None when nothing is kept there."""
    try:
        with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def pins_changed(manifest, pins):
    """The pinned files that differ from when `manifest` was kept (one kept with no record of a pin
    counts as changed: nothing says it is the same)."""
    recorded = {e["path"]: e.get("sha256") for e in manifest if e.get("pinned")}
    return [p for p in pins if p not in recorded or recorded[p] != digest(p)]


def restore(directory, manifest):
    """Puts the files kept in `directory` back (a file absent then is removed; a pinned one is left
    alone), each one whole (renamed into place). Goes on past a file it cannot put back, so that as
    much as it can is back; returns (the paths put back, [(path, why) of those it could not])."""
    done, failed = [], []
    for entry in (e for e in manifest if not e.get("pinned")):
        path = entry["path"]
        try:
            if entry["present"]:
                tmp = f"{path}.nodefleet-rollback.{os.getpid()}"
                try:
                    shutil.copyfile(os.path.join(directory, entry["copy"]), tmp)
                    os.chmod(tmp, entry["mode"])
                    os.chown(tmp, entry["uid"], entry["gid"])
                    os.replace(tmp, path)
                finally:
                    if os.path.lexists(tmp):
                        os.unlink(tmp)
            elif os.path.lexists(path):
                os.unlink(path)
            done.append(path)
        except OSError as e:
            failed.append((path, e.strerror or str(e)))
    return done, failed


def wait_port(port, seconds, clock=time.monotonic, sleep=time.sleep):
    """Whether 127.0.0.1:PORT accepts a connection within `seconds`."""
    import socket
    deadline = clock() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True
        except OSError:
            if clock() >= deadline:
                return False
            sleep(1)


def restart(units, await_port=None, wait=wait_port):
    """systemctl daemon-reload, then a restart of each unit in order; with `await_port`, the last
    unit is restarted only once that local port answers (a validator's consensus daemon after its
    execution client's engine port, as its configure step starts them). Returns what failed (empty
    when none did)."""
    failed = []
    for i, argv in enumerate((["systemctl", "daemon-reload"], *(["systemctl", "restart", u] for u in units))):
        if await_port is not None and units and i == len(units) and not wait(await_port, AWAIT_PORT_SECONDS):
            failed.append(f"port {await_port} did not answer within {AWAIT_PORT_SECONDS} s of the restarts before it; {units[-1]} restarted all the same")
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(f"{' '.join(argv)}: {(r.stderr or r.stdout).strip() or 'exit ' + str(r.returncode)}")
    return failed


def watch(opts):
    """The restart counts the gate watches for a crash loop (--unit), or None."""
    return (lambda: restart_counts(opts["unit"])) if opts["unit"] else None


def say_loop(result):
    """When the gate ended at a crash loop: which unit, how often, and its last journal lines."""
    loop = result.get("crashLoop")
    if not loop:
        return
    since = "its health step began (after the change's restart)" if loop.get("sinceHealthStep") else "the gate began"
    sys.stderr.write(f"  crash-loop: {loop['unit']} was restarted by systemd {loop['restarts']} times since {since}; its last lines:\n")
    r = subprocess.run(["journalctl", "-u", loop["unit"], "-n", "12", "--no-pager", "-o", "short"], capture_output=True, text=True)
    for line in (r.stdout or r.stderr).strip().splitlines()[-12:]:
        sys.stderr.write(f"    {cut_urls(line)[:300]}\n")


def say_diagnoses(diagnoses):
    for d in diagnoses:
        if d["severity"] == "error":
            sys.stderr.write(f"  {d['fault']}: {d['detail']}\n    remedy: {d['remedy']}\n")


def write_marker(path, text):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path + ".new", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".new", path)


def roll_back(role, node, opts, command, result):
    """`onFailure: rollback`, after a failed gate: the node's kept files back, its units restarted,
    then the gate again. Records the outcome in `result`."""
    rolled = opts["marker"] + ".rolled-back"
    manifest = kept(opts["keep"])
    if manifest is None:
        sys.stderr.write(f"gate {node}: nothing is kept to roll it back to (rollback was turned on with this change): it is left as it is\n")
        result["rolledBack"] = False
        return
    changed = pins_changed(manifest, opts["pin"])
    if changed:
        sys.stderr.write(f"gate {node}: not rolled back: {', '.join(changed)} changed since it last passed its gate (a key or endpoint file, never put back: the kept files were run with what it held then); it is left as it is\n")
        result["rolledBack"] = False
        result["pinsChanged"] = changed
        return
    codes = ", ".join(d["fault"] for d in result["diagnoses"] if d["severity"] == "error") or "unhealthy"
    at = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    # The mark first: a rollback cut short (a full disk, the gate killed) still holds the next gate.
    write_marker(rolled, f"{at}: a change did not pass its gate ({codes}); rolling back\n")
    restored, unrestored = restore(opts["keep"], manifest)
    if unrestored:
        write_marker(rolled, f"{at}: a change did not pass its gate ({codes}); rolled back in part: not put back: {', '.join(p for p, _ in unrestored)}\n")
        sys.stderr.write(f"gate {node}: rolled back in part: {len(restored)} files put back, {len(unrestored)} not:\n")
        for path, why in unrestored:
            sys.stderr.write(f"  not put back: {path}: {why}\n")
        result["notRestored"] = [p for p, _ in unrestored]
    else:
        write_marker(rolled, f"{at}: a change did not pass its gate ({codes}); rolled back\n")
    failed = restart(opts["restart"], opts["await-port"])
    sys.stderr.write(f"gate {node}: rolled back to what it ran before ({len(restored)} files put back; restarted {', '.join(opts['restart'])})\n")
    for f in failed:
        sys.stderr.write(f"  {f}\n")
    again = gate(role, node, command, opts["within"], opts["soak"], opts["every"], opts["timeout"], restarts=watch(opts))
    result["rolledBack"] = True
    result["afterRollback"] = {k: again[k] for k in ("healthy", "waited", "soaked", "checks", "diagnoses", "crashLoop") if k in again}
    if again["healthy"]:
        sys.stderr.write(f"gate {node}: healthy again on what it ran before, after {again['waited']:.0f} s and for {again['soaked']:.0f} s since\n")
    else:
        sys.stderr.write(f"gate {node}: still not healthy on what it ran before after {again['waited']:.0f} s:\n")
        say_loop(again)
        say_diagnoses(again["diagnoses"])


def main(argv):
    parsed = parse(argv[1:])
    if isinstance(parsed, str):
        return usage(parsed)
    role, node, opts, command = parsed
    marker = opts["marker"]
    # Taken (and removed) whichever way this run ends, so that no later gate counts from it.
    handed = handed_base(marker + ".restarts", opts["within"]) if marker is not None else {}
    if opts["keep"] is not None and os.path.exists(marker + ".rolled-back"):
        with open(marker + ".rolled-back", encoding="utf-8") as f:
            when = f.read().strip()
        sys.stderr.write(f"gate {node}: rolled back ({when}) and not changed since: it still runs what it ran before. Fix the change (the release or setting) and run up again: its configure step applies it and this gate checks it\n")
        print(json.dumps({"node": node, "role": role, "healthy": False, "rolledBack": True}))
        return 1
    if marker is not None and not os.path.exists(marker):
        write_marker(marker, f"{node}: deployed; later changes are gated\n")
        if opts["keep"] is not None:
            keep(opts["keep"], opts["file"], opts["pin"])
        sys.stderr.write(f"gate {node}: its first deploy, not gated (its health step reports it)\n")
        print(json.dumps({"node": node, "role": role, "healthy": None, "firstDeploy": True}))
        return 0
    sys.stderr.write(f"gate {node}: waiting up to {opts['within']:.0f} s for it to be healthy, then {opts['soak']:.0f} s of healthy answers\n")
    result = gate(role, node, command, opts["within"], opts["soak"], opts["every"], opts["timeout"], restarts=watch(opts), handed=handed)
    if result["healthy"]:
        if opts["keep"] is not None:
            keep(opts["keep"], opts["file"], opts["pin"])  # what it runs now is what a later failure rolls back to
        sys.stderr.write(f"gate {node}: healthy after {result['waited']:.0f} s, and for {result['soaked']:.0f} s since\n")
        print(json.dumps(result))
        return 0
    why = " (a crash loop: not waiting out the deadline)" if result.get("crashLoop") else ""
    sys.stderr.write(f"gate {node}: not healthy after {result['waited']:.0f} s ({result['checks']} checks){why}; the rollout stops here\n")
    say_loop(result)
    say_diagnoses(result["diagnoses"])
    if opts["keep"] is not None:
        roll_back(role, node, opts, command, result)
    print(json.dumps(result))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
