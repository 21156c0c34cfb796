"""Long jobs (geth export, reth import) as transient systemd units: started afresh or attached to,
with progress lines (blocks, percent, rate, ETA), so a dropped SSH session loses nothing. The
latest progress is also kept in <dataRoot>/.nodefleet-switch/progress.json for `status`.

Failpoints for the fault tests: while /run/nodefleet/failpoints/<export|import>-hold exists,
the job's unit waits before it starts (it is already running, so a test can kill `pulumi up` or
reboot the host at that point). /run is emptied on reboot."""
import json
import os
import re
import time

from .host import dispose, now, put, read_from, run, say, unit_props

FAILPOINTS = "/run/nodefleet/failpoints"


def job_state(v, name):
    """A transient job unit: "running", "exited" (ended, result kept), "failed" or "none"."""
    p = unit_props(name, "ActiveState", "SubState")
    state, sub = p.get("ActiveState"), p.get("SubState")
    if state in ("active", "activating") and sub != "exited":
        say(f"{name} is already running: attaching")
        return "running"
    if state == "active":
        return "exited"
    return "failed" if state == "failed" else "none"


def long_unit(v, name, argv, log, failpoint):
    """Starts `argv` afresh as transient unit `name`, as the operator."""
    dispose(name)
    cmd = ["systemd-run", f"--unit={name}", f"--uid={v.op}", f"--gid={v.op}", "-p", f"WorkingDirectory={v.mig}",
           "-p", "RemainAfterExit=yes", "-p", f"StandardOutput=append:{log}", "-p", f"StandardError=append:{log}",
           "-p", "LimitNOFILE=65535"]
    hold = os.path.join(FAILPOINTS, failpoint)
    if os.path.exists(hold):
        cmd += ["-p", f"ExecStartPre=/bin/sh -c 'while [ -e {hold} ]; do sleep 0.2; done'"]
        say(f"failpoint {hold}: {name} waits until it is removed")
    run(cmd + ["--", *argv])
    say(f"started {name}: {' '.join(argv)} (log {log})")


def progress_path(v):
    return os.path.join(v.state_dir, "progress.json")


def keep_progress(v, figures):
    """For `status`; a progress file that cannot be written (a full disk, say) never stops the job."""
    try:
        put(progress_path(v), json.dumps(figures) + "\n", 0o644)
    except OSError as e:
        say(f"progress not kept for status ({e}); the job goes on")


def attach(v, name, progress, every=5.0):
    """Waits for transient unit `name` to end, printing progress() and keeping its figures in
    progress.json (the Meter's snapshot); returns its exit status."""
    last = 0.0
    meter = getattr(progress, "meter", None)
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
                if meter is not None and meter.snapshot:
                    keep_progress(v, dict(meter.snapshot, job=name, at=now()))
            last = time.monotonic()
        time.sleep(0.5)


class Meter:
    """blocks done, percent, rate and ETA for progress lines; `snapshot` holds the last line's figures."""

    def __init__(self, total):
        self.total, self.t0, self.first = total, time.monotonic(), None
        self.offset, self.count, self.last = 0, 0, None  # count_blocks: bytes walked, blocks, last block's offset
        self.snapshot = None

    def line(self, verb, done):
        if done is None:
            return None
        if self.first is None:
            self.first = done
        dt = time.monotonic() - self.t0
        rate = (done - self.first) / dt if dt > 0 else 0
        eta = round((self.total - done) / rate) if rate > 0 else None
        percent = round(100 * done / self.total, 1) if self.total > 0 else None
        self.snapshot = {"verb": verb, "done": done, "total": self.total, "percent": percent, "rate": round(rate, 1), "etaSeconds": eta}
        return (f"{verb} {done} of {self.total} blocks ({percent if percent is not None else '?'}%), {rate:.0f} blocks/s, "
                f"ETA {f'{eta} s' if eta is not None else 'unknown'}")

    def progress(self, verb, done):
        """A progress() for attach: the line for `done()` now, with this meter's snapshot kept."""
        def progress():
            return self.line(verb, done())
        progress.meter = self
        return progress


def count_blocks(path, meter):
    """Complete blocks in a growing export, walked on from where the last call stopped (the walk
    that shows progress is also the one that proves the finished export whole: chain.verify_export)."""
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
        meter.last = meter.offset + pos
        pos += size
        meter.count += 1
    meter.offset += pos
    return meter.count


def last_imported(log, offset):
    """The highest block the import has executed: reth's `stage=Execution checkpoint=N` (and
    Finish), the simulator's `tip=N`."""
    found = re.findall(r"tip=(\d+)|number=(\d+)|stage=(?:Execution|Finish) checkpoint=(\d+)", read_from(log, offset))
    return max((int(a or b or c) for a, b, c in found), default=None)
