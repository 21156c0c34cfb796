"""zgs-stop.py run for real against real processes, as systemd runs it (MAINPID in its environment):
a stand-in for zgs_node v1.1.0's stop (on SIGTERM it says "Shutting down..." and then waits on a
task that never ends) is ended with SIGUSR2 after the grace; a process that exits at SIGTERM is
left to exit; no MAINPID, a pid that has gone, or bad arguments. What it cannot prove: systemd
taking SIGUSR2 as a clean stop (SuccessExitStatus) and the real node started again on the data
the stop left (the E2E tier stops and starts the real node under systemd).

    cd hostfiles && python3 -m unittest tests.test_zgs_stop
"""
import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "zgs-stop.py")

# Handles SIGTERM as zgs_node does (its shutdown, then a wait that does not end), or exits at it.
HANGS = """
import signal, sys, time
def term(*_):
    print("Shutting down...", flush=True)
    while True:
        time.sleep(1)
signal.signal(signal.SIGTERM, term)
print("ready", flush=True)
while True:
    time.sleep(1)
"""
EXITS = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def started(test, source):
    proc = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, text=True)
    test.addCleanup(lambda: (proc.kill(), proc.wait(), proc.stdout.close()))
    assert proc.stdout.readline().strip() == "ready"
    return proc


def stop(pid, *args):
    env = {k: v for k, v in os.environ.items() if k != "MAINPID"}
    if pid is not None:
        env["MAINPID"] = str(pid)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-S", SCRIPT, *args], env=env, capture_output=True, text=True, timeout=60)
    return r, time.monotonic() - t0


class ZgsStop(unittest.TestCase):
    def test_a_node_waiting_after_its_shutdown_is_ended_with_sigusr2_after_the_grace(self):
        proc = started(self, HANGS)
        r, took = stop(proc.pid, "--grace", "0.5")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(proc.wait(timeout=5), -signal.SIGUSR2)
        self.assertEqual(proc.stdout.read().strip(), "Shutting down...", "it had SIGTERM first")
        self.assertGreaterEqual(took, 0.5)
        self.assertLess(took, 5)
        self.assertIn(f"zgs_node (pid {proc.pid}) still runs 0.5 s after SIGTERM", r.stderr)
        self.assertIn("ending it with SIGUSR2", r.stderr)

    def test_a_node_that_exits_at_sigterm_is_left_to_exit(self):
        proc = started(self, EXITS)
        r, took = stop(proc.pid, "--grace", "10")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(proc.wait(timeout=5), 0)
        self.assertLess(took, 5, "it does not wait out its grace")
        self.assertEqual(r.stderr, "")

    def test_no_node_running(self):
        # systemd sets no MAINPID once the node has exited (a crash, a failed start).
        r, took = stop(None)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        # A pid that has gone since systemd read it.
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait()
        r, _ = stop(proc.pid)
        self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_bad_arguments_are_refused_naming_them(self):
        proc = started(self, EXITS)
        for pid, args, said in (
            ("12ab", [], "MAINPID: '12ab' is not a process id"),
            ("1", [], "MAINPID: '1' is not a process id"),
            (proc.pid, ["--grace", "-1"], "--grace: -1.0 is not between 0 and 60 seconds"),
            (proc.pid, ["--grace", "soon"], "argument --grace: invalid float value: 'soon'"),
        ):
            r, _ = stop(pid, *args)
            self.assertEqual(r.returncode, 2, (pid, args, r.stderr))
            self.assertIn(said, r.stderr)
        self.assertIsNone(proc.poll(), "nothing was signalled")


if __name__ == "__main__":
    unittest.main()
