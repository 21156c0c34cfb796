"""How the validator tool reads a unit's journal (zgvalidator.host.journal): the newest lines since
a time, oldest first. journalctl here is a stand-in that keeps systemd 252's way with -n (seen on
the lab's hosts): with --since and without -r it gives the first N entries after that time, with -r
the newest N, newest first. What it cannot prove: that a real journal does so (the e2e tier's switch
reads real beacond's journal after its WAL replay, on the lab's hosts)."""
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zgvalidator import host  # noqa: E402

STAND_IN = """#!/usr/bin/env python3
import sys
args = sys.argv[1:]
n = int(args[args.index("-n") + 1])
since = int(args[args.index("--since") + 1][1:]) if "--since" in args else 0
with open(sys.argv[0] + ".log") as f:
    entries = [line.rstrip("\\n").split(" ", 1) for line in f]
kept = [text for at, text in entries if int(at) >= since]
if "-r" in args:
    kept = list(reversed(kept))[:n]
else:
    kept = kept[:n] if since else kept[-n:]
sys.stdout.write("".join(f"{text}\\n" for text in kept))
"""


class Journal(unittest.TestCase):
    def setUp(self):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d))
        path = os.path.join(d, "journalctl")
        with open(path, "w") as f:
            f.write(STAND_IN)
        os.chmod(path, 0o755)
        # Before the start: an old commit; after it, a replay of 30 lines, then two commits.
        lines = [(90, "Committed state height=1")] + [(100, f"Replay: Commit {i}") for i in range(30)]
        lines += [(101, "Committed state height=2"), (102, "Committed state height=3")]
        with open(path + ".log", "w") as f:
            f.writelines(f"{at} {text}\n" for at, text in lines)
        p = mock.patch.dict(os.environ, {"PATH": d + os.pathsep + os.environ["PATH"]})
        p.start()
        self.addCleanup(p.stop)

    def test_the_newest_lines_since_a_time_oldest_first(self):
        got = host.journal("x.service", since_usec=100 * 1_000_000, lines=10).splitlines()
        self.assertEqual(got[-2:], ["Committed state height=2", "Committed state height=3"])
        self.assertEqual(got[0], "Replay: Commit 22")
        self.assertEqual(len(got), 10)

    def test_all_lines_since_a_time_when_fewer_than_the_limit(self):
        got = host.journal("x.service", since_usec=100 * 1_000_000).splitlines()
        self.assertEqual(len(got), 32)
        self.assertEqual(got[0], "Replay: Commit 0")
        self.assertNotIn("Committed state height=1", got)

    def test_nothing_since_a_time_is_empty(self):
        self.assertEqual(host.journal("x.service", since_usec=200 * 1_000_000), "")


if __name__ == "__main__":
    unittest.main()
