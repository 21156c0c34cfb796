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


class RestartWatch:
    """The restarts of `units` since it was made. `count` is for the tests."""

    def __init__(self, units, count=restart_count):
        self.count = count
        self.base = {unit: count(unit) for unit in units}

    def looping(self):
        """(unit, restarts) of the first unit restarted LOOP_RESTARTS times since the base, else
        None. A unit with no known count takes its first known one as its base; a count below its
        base (an explicit restart resets it) becomes the new base."""
        for unit in self.base:
            n = self.count(unit)
            if n is None:
                continue
            if self.base[unit] is None or n < self.base[unit]:
                self.base[unit] = n
            if n - self.base[unit] >= LOOP_RESTARTS:
                return unit, n - self.base[unit]
        return None
