"""One run of the tool at a time on a node: the commands that change the host hold an exclusive
lock (<state>/tool.lock, an flock: the kernel drops it when its holder dies, however it dies).

A run that finds the lock held takes over. The holder is an earlier run whose `pulumi up` was
killed or lost its SSH session: over SSH without a terminal nothing tells it so, and it goes on
attached to an export or import unit. Left alone, both runs would attach, the first to see the
unit end would dispose of it, and the other would take the vanished unit for a restarted host
and start the job again. The holder is stopped with SIGTERM (its process group when it leads
one: a command it runs stops with it), then SIGKILL; what it had started as a unit runs on, and
the new run attaches to it. Every step resumes from any interruption, so stopping the holder at
any point is what a reboot would do to it, minus the units."""
import fcntl
import os
import signal
import time

from .host import Failed, now, say


def _holder(path):
    try:
        with open(path) as f:
            pid, _, rest = f.read().partition(" ")
        return int(pid), rest.strip()
    except (OSError, ValueError):
        return None, ""


def _is_tool(pid):
    """pid is a run of this tool (not a process that reused the number of one that ended)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return any(a.endswith(b"zg-validator.py") for a in f.read().split(b"\0"))
    except OSError:
        return False


def _signal(pid, sig):
    """Signals pid's process group when pid leads one, else pid alone; never our own group."""
    if pid == os.getpid() or not _is_tool(pid):
        return
    try:
        pgid = os.getpgid(pid)
        if pgid == pid and pgid != os.getpgrp():
            os.killpg(pgid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _try(fd):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _wait(fd, seconds):
    deadline = time.monotonic() + seconds
    while not _try(fd):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def take(state_dir, what, term_wait=20.0, kill_wait=10.0):
    """Holds the node's lock until the process ends; returns the open file (keep it referenced)."""
    os.makedirs(state_dir, exist_ok=True)
    path = os.path.join(state_dir, "tool.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    if not _try(fd):
        pid, held_for = _holder(path)
        say(f"an earlier run of this tool still holds {path} (pid {pid}: {held_for or 'unknown'}), "
            "left running by a killed or disconnected pulumi: stopping it and taking over")
        for sig, wait in ((signal.SIGTERM, term_wait), (signal.SIGKILL, kill_wait)):
            if pid:
                _signal(pid, sig)
            if _wait(fd, wait):
                break
        else:
            os.close(fd)
            raise Failed(f"{path} is still held (pid {pid}) after SIGTERM and SIGKILL: see `fuser -v {path}`")
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {what} since {now()}\n".encode())
    return fd
