"""What the validator tool asks of the host: processes, systemd units and their journal, ports,
and files written atomically. Nothing here knows about validators."""
import datetime
import json
import os
import shlex
import shutil
import socket
import stat
import subprocess
import time


class Failed(Exception):
    """A refused precondition or a failed action: the message says what and what to do."""


def say(msg):
    print(msg, flush=True)


def now(ts=None):
    """UTC time as the markers write it: now, or the epoch seconds ts."""
    when = datetime.datetime.now(datetime.timezone.utc) if ts is None else datetime.datetime.fromtimestamp(ts, datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def run(cmd, check=True, user=None, **kw):
    if user:
        cmd = ["runuser", "-u", user, "--"] + list(cmd)
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and done.returncode != 0:
        raise Failed(f"{' '.join(cmd)} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-400:]}")
    return done


# The drift record of the node's units (set from its settings by Validator): a unit this tool
# enables or starts is recorded as meant to be enabled and running; one it stops or disables is
# dropped. `pulumi refresh` compares the record with the host (components/hosts/drift.ts).
DRIFT = {"dir": None, "units": frozenset()}


def systemctl(*args, check=True):
    done = run(["systemctl", *args], check=check)
    if done.returncode == 0 and DRIFT["dir"] and args:
        record_units(args[0], [a for a in args[1:] if a in DRIFT["units"]])
    return done


def record_units(verb, units):
    if not units or verb not in ("enable", "start", "restart", "disable", "stop"):
        return
    os.makedirs(DRIFT["dir"], mode=0o700, exist_ok=True)
    for unit in units:
        entry = os.path.join(DRIFT["dir"], f"u.{unit}")
        if verb in ("disable", "stop"):
            try:
                os.remove(entry)
            except FileNotFoundError:
                pass
        else:
            with open(entry, "w") as f:
                f.write(f"unit\t{unit}\n")


# Unit properties read once for a read-only command (see units_snapshot): unit -> {property: value}.
_SNAPSHOT = {}
SNAPSHOT_PROPS = ("Id", "ActiveState", "SubState", "ActiveEnterTimestampMonotonic")


def unit_props(unit, *props):
    known = _SNAPSHOT.get(unit)
    if known is not None and all(p in known for p in props):
        return {p: known[p] for p in props}
    out = systemctl("show", unit, "-p", ",".join(props), check=False).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


class units_snapshot:
    """Within `with units_snapshot(units):`, active() and unit_props() of those units answer from one
    `systemctl show` of them all (each systemctl costs a process; `status` asks about five units
    several times). Only for commands that change no unit: the view is the one at entry."""

    def __init__(self, units):
        self.units = list(units)

    def __enter__(self):
        out = systemctl("show", *self.units, "-p", ",".join(SNAPSHOT_PROPS), check=False).stdout
        by_id = {}
        for block in out.split("\n\n"):
            props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
            if set(SNAPSHOT_PROPS) <= set(props):
                by_id[props["Id"]] = props
        for unit in self.units:  # systemd names a unit given without a suffix <name>.service
            props = by_id.get(unit) or by_id.get(unit + ".service")
            if props is not None:
                _SNAPSHOT[unit] = props
        return self

    def __exit__(self, *exc):
        _SNAPSHOT.clear()
        return False


def dispose(unit):
    """Stops a transient unit and forgets its result, so the next start is a fresh one."""
    systemctl("stop", unit, check=False)
    systemctl("reset-failed", unit, check=False)


def active(unit):
    known = _SNAPSHOT.get(unit)
    if known is not None:
        return known["ActiveState"] == "active"  # what `systemctl is-active` calls active
    return systemctl("is-active", "--quiet", unit, check=False).returncode == 0


def journal(unit, since_usec=None, lines=20000):
    """The unit's messages, oldest first: its newest `lines`, since `since_usec` when given. Read
    newest first (-r) and turned round: with --since, journalctl's -n keeps the first N entries
    after it (systemd 252), and a flood after a start (the real beacond replaying its consensus
    WAL: 14,630 lines in a second) left every later `Committed state` out."""
    cmd = ["journalctl", "-u", unit, "-o", "cat", "--no-pager", "-r", "-n", str(lines)]
    if since_usec:
        cmd += ["--since", f"@{int(since_usec // 1_000_000)}"]
    out = run(cmd, check=False).stdout.splitlines()
    return "".join(f"{line}\n" for line in reversed(out))


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


def tree_bytes(path):
    """The bytes of the regular files under path, from their metadata alone: no file is opened
    (a live datadir is measured without reading it), and a file removed meanwhile (a compaction)
    counts as gone."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def tree_stat(path):
    """{relative path: [size, mtime in ns]} of every regular file under path, from metadata alone
    (nothing is read): what a backup is checked against."""
    out = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                out[os.path.relpath(full, path)] = [st.st_size, st.st_mtime_ns]
    return out


def tree_diff(want, got):
    """The first difference between two tree_stat()s, in words, or None."""
    for rel in sorted(want):
        if rel not in got:
            return f"{rel} is missing"
        if got[rel] != want[rel]:
            return f"{rel} has size/mtime {got[rel]}, expected {want[rel]}"
    extra = sorted(set(got) - set(want))
    return f"{extra[0]} should not be there" if extra else None


FICLONE = 0x40049409  # ioctl(dst, FICLONE, src): a reflink (copy-on-write clone) on btrfs, XFS, ...


def can_reflink(src_dir, dst_dir):
    """Whether a file of src_dir can be cloned into dst_dir (one file tried, read-only on src)."""
    import fcntl
    for root, _dirs, files in os.walk(src_dir):
        for name in files:
            full = os.path.join(root, name)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            probe = os.path.join(dst_dir, ".nodefleet-reflink-probe")
            try:
                with open(full, "rb") as s, open(probe, "wb") as d:
                    fcntl.ioctl(d.fileno(), FICLONE, s.fileno())
                return True
            except OSError:
                return False
            finally:
                if os.path.exists(probe):
                    os.unlink(probe)
    return False


def copy_tree(src, dst):
    """`cp -a` of src to dst: a reflink copy (no data read or written, the blocks are shared
    copy-on-write) where the filesystem can, a plain copy elsewhere. Returns "reflink" or "copy"."""
    how = "reflink" if can_reflink(src, os.path.dirname(dst)) else "copy"
    run(["cp", "-a", "--reflink=always" if how == "reflink" else "--reflink=auto", src, dst])
    return how


def same_bytes(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


def put(path, text, mode, owner=None):
    """Replaces `path` with `text` whole (a temporary file renamed over it), the temporary file
    created with `mode` from the start (a secret is never readable by others, not even for a
    moment) and given `owner` (uid, gid) before it takes the name. The temporary file is made
    anew (O_EXCL, O_NOFOLLOW): in a directory the operator account owns, a file or link it left
    under that name is removed, never followed (this tool runs as root)."""
    tmp = path + ".nodefleet-new"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)  # the umask may have taken bits off
    if owner is not None:
        os.chown(tmp, *owner)
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
        record_unit_file(dst)
        return []
    shutil.copy(src, dst + ".nodefleet-new")
    os.chmod(dst + ".nodefleet-new", 0o644)
    os.replace(dst + ".nodefleet-new", dst)
    record_unit_file(dst)
    return [unit]


def record_unit_file(path):
    """The drift record of an installed unit file (digest, mode, owner; see record_units)."""
    if not DRIFT["dir"]:
        return
    import hashlib
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    os.makedirs(DRIFT["dir"], mode=0o700, exist_ok=True)
    with open(os.path.join(DRIFT["dir"], f"f.{os.path.basename(path)}"), "w") as f:
        f.write(f"file\t{path}\t{digest}\t644 root:root\n")


def key_path(doc, key, prefix=()):
    """The dotted path (tables, then the key) of the first `key` in a parsed TOML document, or None."""
    if key in doc:
        return ".".join((*prefix, key))
    for name, v in doc.items():
        if isinstance(v, dict):
            found = key_path(v, key, (*prefix, name))
            if found is not None:
                return found
    return None


def value_at(doc, dotted):
    """The value at a dotted path (tables, then the key) of a parsed TOML document, or None."""
    value = doc
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def record_toml(path, keys):
    """The drift record of values nodefleet sets in a file it edits in place (the consensus home's
    app.toml and config.toml): each key's dotted path and the sha256 of its value as JSON (the
    drift check's value_digest), never the value. A key the file lacks is not recorded."""
    if not DRIFT["dir"]:
        return
    import hashlib
    import tomllib
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    os.makedirs(DRIFT["dir"], mode=0o700, exist_ok=True)
    for key in keys:
        dotted = key_path(doc, key) if "." not in key else key
        value = None if dotted is None else value_at(doc, dotted)
        if value is None:
            continue
        digest = hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        name = "t." + hashlib.sha256(f"{path}\t{dotted}".encode()).hexdigest()[:16]
        with open(os.path.join(DRIFT["dir"], name), "w") as f:
            f.write(f"toml\t{path}\t{dotted}\t{digest}\n")


def find_key(doc, key):
    """The value of the first `key` in a parsed TOML document (as key_path finds it), or None."""
    dotted = key_path(doc, key)
    return None if dotted is None else value_at(doc, dotted)


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
        if "Committed state" in journal_message(entry):
            return int(entry["__REALTIME_TIMESTAMP"]) / 1e6
    return None


def journal_message(entry):
    """A journal entry's MESSAGE as text. journalctl -o json gives a message with control
    characters (BeaconKit's log colours, which it writes to a pipe too) as a list of byte values."""
    message = entry.get("MESSAGE", "")
    if isinstance(message, list):
        return bytes(b for b in message if isinstance(b, int) and 0 <= b < 256).decode(errors="replace")
    return str(message)


def parse_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
