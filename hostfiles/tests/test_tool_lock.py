"""The node's lock (zgvalidator/lock.py) with real processes and flock: a run takes over from an
earlier one left running (a killed pulumi's), stopping it and whatever it runs; it never signals
a process that is not a run of the tool. What it cannot prove: the SSH session of a killed
`pulumi up` (the E2E tier kills one during the export and checks that the export ran once)."""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from zgvalidator import lock  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402


def holder(d, name, child=False):
    """A process named `name` that holds the lock (through lock.take) and, with child, runs a
    `sleep` of its own; it prints its child's pid, then "held"."""
    script = os.path.join(d, name)
    with open(script, "w") as f:
        f.write(textwrap.dedent(f"""\
            import subprocess, sys, time
            sys.path.insert(0, {os.path.dirname(HERE)!r})
            from zgvalidator import lock
            fd = lock.take({d!r}, "migrate s05-export")
            c = subprocess.Popen(["sleep", "300"]) if {child!r} else None
            print(c.pid if c else 0, flush=True)
            print("held", flush=True)
            time.sleep(300)
            """))
    p = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    kid = int(p.stdout.readline())
    assert p.stdout.readline().strip() == "held"
    return p, kid


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


class ToolLock(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-lock-")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
        shutil.rmtree(self.dir)

    def test_a_free_lock_is_taken_and_names_its_holder(self):
        fd = lock.take(self.dir, "migrate s05-export")
        with open(os.path.join(self.dir, "tool.lock")) as f:
            self.assertRegex(f.read(), rf"^{os.getpid()} migrate s05-export since \d{{4}}-")
        os.close(fd)

    def test_an_earlier_run_and_its_commands_are_stopped_and_the_lock_taken_over(self):
        p, kid = holder(self.dir, "zg-validator.py", child=True)
        self.procs.append(p)
        t0 = time.monotonic()
        fd = lock.take(self.dir, "migrate s05-export")
        self.assertLess(time.monotonic() - t0, 5, "SIGTERM sufficed")
        self.assertIsNotNone(p.wait(timeout=5))
        deadline = time.monotonic() + 5
        while alive(kid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(alive(kid), "the holder's own command stopped with it (its process group)")
        with open(os.path.join(self.dir, "tool.lock")) as f:
            self.assertTrue(f.read().startswith(f"{os.getpid()} "))
        os.close(fd)

    def test_a_holder_that_is_not_the_tool_is_never_signalled(self):
        p, _ = holder(self.dir, "something-else.py")
        self.procs.append(p)
        with self.assertRaises(Failed) as e:
            lock.take(self.dir, "rollback", term_wait=0.3, kill_wait=0.3)
        self.assertIn("is still held", str(e.exception))
        self.assertIsNone(p.poll(), "the other process runs on")

    def test_a_stale_pid_in_the_file_is_harmless(self):
        with open(os.path.join(self.dir, "tool.lock"), "w") as f:
            f.write("1 migrate s05-export since 2026-01-01T00:00:00Z\n")
        fd = lock.take(self.dir, "health")  # nobody holds the flock: pid 1 is never looked at
        os.close(fd)


if __name__ == "__main__":
    unittest.main()
