"""nodefleet_units.py: a crash loop as the waiting tools see it (RestartWatch over NRestarts), and
zgs-health.py --wait stopping at one instead of waiting out its deadline, with a recording
`systemctl` on PATH standing in for systemd (its restart counts are the test's). What this cannot
prove: that systemd counts a Restart= start in NRestarts (the e2e tier's rollout scenario sees the
health step of a release that exits at start end in seconds on a real host).

    cd hostfiles && python3 -m unittest tests.test_units
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import nodefleet_units as units  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(HERE), "zgs-health.py")
NODE = "nodefleet-test-units"


class Watch(unittest.TestCase):
    def test_a_crash_loop_is_three_restarts_since_the_watch_began(self):
        counts = {"a.service": 7, "b.service": None}
        watch = units.RestartWatch(counts, count=lambda u: counts[u])
        counts["a.service"] = 9
        self.assertIsNone(watch.looping(), "two restarts: not yet")
        counts["a.service"] = 10
        self.assertEqual(watch.looping(), ("a.service", 3))

    def test_an_unknown_count_takes_its_first_known_one_as_base_and_a_reset_rebases(self):
        counts = {"a.service": None}
        watch = units.RestartWatch(counts, count=lambda u: counts[u])
        counts["a.service"] = 40  # first known: the restarts before it are not new
        self.assertIsNone(watch.looping())
        counts["a.service"] = 1  # an explicit restart reset it
        self.assertIsNone(watch.looping())
        counts["a.service"] = 4
        self.assertEqual(watch.looping(), ("a.service", 3))

    def test_restart_count_is_none_when_systemctl_cannot_say(self):
        self.assertIsNone(units.restart_count("nodefleet-no-such-unit-\n.service"))


class HealthWait(unittest.TestCase):
    """zgs-health.py --wait on a node that never answers: its endpoint and RPC are dead ports."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nodefleet-units-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.etc = f"/etc/nodefleet/{NODE}"
        os.makedirs(self.etc, exist_ok=True)
        self.addCleanup(shutil.rmtree, self.etc, True)
        self.addCleanup(lambda: os.path.exists(f"/run/nodefleet/{NODE}-health.json") and os.remove(f"/run/nodefleet/{NODE}-health.json"))
        config = os.path.join(self.dir, "config.toml")
        with open(config, "w") as f:
            f.write(f'blockchain_rpc_endpoint = "http://127.0.0.1:9"\nlog_directory = "{self.dir}/log"\n[rpc]\nlisten_address = "127.0.0.1:9"\n')
        with open(os.path.join(self.etc, "storage.json"), "w") as f:
            json.dump({"config": config, "service": f"zgs-{NODE}.service"}, f)
        os.makedirs(os.path.join(self.dir, "bin"))
        self.calls = os.path.join(self.dir, "calls")

    def systemctl(self, restarts_per_show):
        """A systemctl whose unit is activating (a restart pending) and whose NRestarts grows by
        `restarts_per_show` at each `show` (0: a unit that never restarts)."""
        path = os.path.join(self.dir, "bin", "systemctl")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> {self.calls}\ncase \"$1\" in\n"
                    f"is-active) echo activating; exit 3 ;;\n"
                    f"show) n=$(grep -c '^show' {self.calls}); echo $(( 5 + n * {restarts_per_show} )) ;;\n"
                    f"esac\n")
        os.chmod(path, 0o755)

    def health(self, wait):
        env = {**os.environ, "PATH": f"{self.dir}/bin:{os.environ['PATH']}"}
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, SCRIPT, NODE, "--wait", str(wait)], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout.strip().splitlines()[-1]), time.monotonic() - t0

    def test_a_service_systemd_keeps_restarting_ends_the_wait_at_once_named(self):
        self.systemctl(restarts_per_show=1)
        out, took = self.health(60)
        self.assertEqual(out["crashLoop"], {"unit": f"zgs-{NODE}.service", "restarts": 3})
        self.assertLess(took, 20, "stopped at the crash loop, not at --wait's 60 s")
        self.assertEqual(out["state"], "activating")

    def test_a_service_that_does_not_restart_is_waited_for_until_the_deadline(self):
        self.systemctl(restarts_per_show=0)
        out, took = self.health(5)
        self.assertNotIn("crashLoop", out)
        self.assertGreaterEqual(took, 5)


if __name__ == "__main__":
    unittest.main()
