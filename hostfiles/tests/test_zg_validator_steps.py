"""The validator tool's step table and command line: the names come from steps.json (the list
nodefleet's program reads too) and each is paired with the function of that step; the entry
point installed on hosts (zg-validator.py) runs the package from its own directory.

    cd hostfiles && python3 -m unittest discover -s tests -t .
"""
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

HOSTFILES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HOSTFILES)
from zgvalidator import switch  # noqa: E402
from zgvalidator.cli import COMMANDS  # noqa: E402


class StepTable(unittest.TestCase):
    def test_the_tables_are_steps_json_in_order(self):
        with open(os.path.join(HOSTFILES, "zgvalidator", "steps.json")) as f:
            names = json.load(f)
        self.assertEqual(sorted(names), ["lowDowntime", "ordered"])
        self.assertEqual(list(switch.STEPS), names["ordered"])
        self.assertEqual(list(switch.LOW_STEPS), names["lowDowntime"])
        self.assertEqual(sorted(switch.MODES), ["lowDowntime", "ordered"])
        for mode, steps in switch.MODES.items():
            self.assertEqual(len(steps), 14, mode)
        self.assertEqual(len(set(switch.ALL_STEPS)), 28)  # no name in both: a marker says which switch wrote it

    def test_each_step_runs_the_function_of_its_name(self):
        for steps in switch.MODES.values():
            for name, fn in steps.items():
                self.assertEqual(fn.__name__, "step_" + name.split("-", 1)[1].replace("-", "_"), name)

    def test_an_unknown_step_is_refused(self):
        with self.assertRaisesRegex(Exception, r"unknown step s15-extra"):
            switch.migrate(None, "s15-extra", "x")


class CommandLine(unittest.TestCase):
    def run_tool(self, *args):
        return subprocess.run([sys.executable, "-S", os.path.join(HOSTFILES, "zg-validator.py"), *args], capture_output=True, text=True)

    def test_usage_names_every_command(self):
        r = self.run_tool()
        self.assertEqual(r.returncode, 2)
        for cmd in ["setup", "migrate <step> <inputs-hash>", "rollback", "cleanup", "health", "status", "handover", "upgrade-watch"]:
            self.assertIn(f"zg-validator.py <settings.json> {cmd}", r.stderr)
        self.assertEqual(sorted(COMMANDS), ["cleanup", "handover", "health", "rollback", "setup", "status", "upgrade-watch"])

    def test_a_wrong_command_prints_the_usage(self):
        with tempfile.TemporaryDirectory() as root:
            settings = os.path.join(root, "validator.json")
            with open(settings, "w") as f:
                json.dump({"node": "validator-1", "operator": "nodefleet", "dataRoot": root, "ports": {"http": 56545}, "services": {}}, f)
            for args in (["frobnicate"], ["migrate", "s01-install-reth"], ["setup", "extra"]):
                r = self.run_tool(settings, *args)
                self.assertEqual(r.returncode, 2, args)
                self.assertIn("zg-validator.py <settings.json> setup", r.stderr)

    def test_the_last_step_of_either_mode_prints_the_whole_switch_report(self):
        for mode, steps in switch.MODES.items():
            with tempfile.TemporaryDirectory() as root, self.subTest(mode=mode):
                settings = os.path.join(root, "validator.json")
                with open(settings, "w") as f:
                    json.dump({"node": "validator-1", "operator": "nodefleet", "dataRoot": root, "ports": {"http": 56545}, "services": {}}, f)
                markers = os.path.join(root, ".nodefleet-switch", "migration")
                os.makedirs(markers)
                for step in steps:  # a finished switch: the last step is skipped and reports
                    with open(os.path.join(markers, step + ".json"), "w") as f:
                        json.dump({"inputs": "h", "started": "a", "ended": "b", "seconds": 1.0, "head": 9, "liveHead": 9,
                                   "importedHeight": 9, "attempts": 1, "downtimeSeconds": 5.0}, f)
                r = self.run_tool(settings, "migrate", list(steps)[-1], "h")
                self.assertEqual(r.returncode, 0, r.stderr)
                report = json.loads(r.stdout.strip().splitlines()[-1])
                self.assertEqual((report["mode"], report["complete"], list(report["steps"])), (mode, True, list(steps)))


class UnitsSnapshot(unittest.TestCase):
    """status asks about five units several times: one `systemctl show` answers them all."""

    SHOW = ("Id=geth-v.service\nActiveState=active\nSubState=running\nActiveEnterTimestampMonotonic=5\n\n"
            "Id=nodefleet-import-v.service\nActiveState=inactive\nSubState=dead\nActiveEnterTimestampMonotonic=0\n")

    def test_one_systemctl_show_answers_active_and_unit_props_inside_and_nothing_is_kept_after(self):
        from unittest import mock
        from zgvalidator import host
        calls = []

        def run(cmd, check=True, **kw):
            calls.append(cmd)
            if cmd[:2] == ["systemctl", "show"] and len(cmd) > 5:
                return types.SimpleNamespace(returncode=0, stdout=self.SHOW, stderr="")
            return types.SimpleNamespace(returncode=3, stdout="ActiveState=failed\n", stderr="")
        with mock.patch.object(host, "run", run):
            with host.units_snapshot(["geth-v.service", "nodefleet-import-v"]):
                self.assertTrue(host.active("geth-v.service"))
                self.assertFalse(host.active("nodefleet-import-v"))  # named without .service, as the jobs are
                self.assertEqual(host.unit_props("geth-v.service", "ActiveState", "ActiveEnterTimestampMonotonic"),
                                 {"ActiveState": "active", "ActiveEnterTimestampMonotonic": "5"})
                self.assertEqual(len(calls), 1)
                self.assertEqual(host.unit_props("geth-v.service", "Result"), {"ActiveState": "failed"})  # not in the snapshot: asked
                self.assertEqual(len(calls), 2)
            self.assertFalse(host.active("geth-v.service"))  # after: asked again (exit 3 here)
            self.assertEqual(len(calls), 3)


if __name__ == "__main__":
    unittest.main()
