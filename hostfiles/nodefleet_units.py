"""What systemd says of a node's services, for the tools that wait on them (installed beside them).

A unit whose Restart= makes systemd start it again after it exits counts each such start in its
NRestarts. A unit that systemd keeps restarting while a tool waits for the node is in a crash loop
(a release that exits at start, a flag or setting the binary refuses): waiting longer shows
nothing new, so the waiting tools stop there and say so.
"""
import subprocess

# Restarts by systemd itself since the wait began that make it a crash loop. The units restart 3 s
# to 10 s after an exit (their RestartSec), so a binary that exits at start is seen within about
# half a minute; a node that recovers after a restart or two is not one.
LOOP_RESTARTS = 3


def restart_count(unit):
    """How often systemd restarted `unit` on its own (NRestarts), or None when systemctl cannot
    say (unknown: never 0, which taken as a base would count every earlier restart as new)."""
    try:
        r = subprocess.run(["systemctl", "show", "--property=NRestarts", "--value", unit], capture_output=True, text=True, timeout=10)
        return int(r.stdout.strip()) if r.returncode == 0 else None
    except (ValueError, OSError, subprocess.TimeoutExpired):
        return None


def looping(base, now):
    """(unit, restarts) of the first unit of `now` ({unit: count}) restarted LOOP_RESTARTS times
    since `base` (the same, updated in place), else None. An unknown count (None) judges nothing
    this round; a unit with no known base takes its first known count as the base; a count below
    its base (an explicit restart resets it) becomes the new base."""
    for unit, n in now.items():
        if n is None:
            continue
        if base.get(unit) is None or n < base[unit]:
            base[unit] = n
        if n - base[unit] >= LOOP_RESTARTS:
            return unit, n - base[unit]
    return None


class RestartWatch:
    """The restarts of `units` since it was made. `count` is for the tests."""

    def __init__(self, units, count=restart_count):
        self.count = count
        self.base = {unit: count(unit) for unit in units}

    def looping(self):
        """looping() over the units' counts now, against the counts when the watch was made."""
        return looping(self.base, {unit: self.count(unit) for unit in self.base})
