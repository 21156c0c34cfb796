"""What the validator tool asks of the host: processes, systemd units and their journal, ports,
and files written atomically. Nothing here knows about validators."""
import datetime
import hashlib
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
