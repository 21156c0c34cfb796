"""nodefleet_health.py: the rows of failed and unreached checks, and the rows as node_exporter
textfile metrics (each series once, hostile label values escaped, what a row does not know left
out). The diagnoses themselves are held to status/diagnose.ts on every recorded answer by the
unit tier's status tests; promtool and node_exporter read the metrics in the cli tier.

    cd hostfiles && python3 -m unittest tests.test_health_metrics
"""
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import nodefleet_health as health  # noqa: E402
import nodefleet_metrics as metrics_module  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "test", "fixtures", "status")


def answers(role):
    with open(os.path.join(FIXTURES, f"{role}.json"), encoding="utf-8") as f:
        return json.load(f)


def series(text):
    """{'name{labels}': value} of the exposition text; every sample line once."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        key, value = line.rsplit(" ", 1)
        assert key not in out, f"{key} twice"
        out[key] = value
    return out


class Rows(unittest.TestCase):
    def test_a_failed_check_and_an_unreached_host_are_unhealthy_with_their_fault(self):
        failed, unreached = health.rows([
            {"node": "s-1", "role": "storage", "host": "h-1", "failed": "zgs-health.py exited 1"},
            {"node": "s-2", "role": "storage", "host": "h-2", "unreachable": "ssh: timed out"},
        ])
        self.assertEqual([d["fault"] for d in failed["diagnoses"]], ["check-failed"])
        self.assertFalse(failed["healthy"])
        self.assertEqual(unreached["diagnoses"][0]["detail"], "host h-2: ssh: timed out")

    def test_an_answer_that_is_not_an_object_is_facts_unknown(self):
        for answer in (None, [], "x", 3):
            row, = health.rows([{"node": "v-1", "role": "validator", "host": "h", "answer": answer}])
            self.assertFalse(row["healthy"])
            self.assertEqual(row["diagnoses"][0]["fault"], "no-execution-client")

    def test_javascript_string_of_json_values(self):
        self.assertEqual([health.js(v) for v in (None, True, 3, 3.0, 0.5, [1, None, "a"], {"a": 1})], ["null", "true", "3", "3", "0.5", "1,,a", "[object Object]"])


class Metrics(unittest.TestCase):
    def test_a_storage_node_behind_without_peers(self):
        rows = health.rows([{"node": "storage-1", "role": "storage", "host": "dev-1", "answer": answers("storage")["peers-0"]}])
        got = series(metrics_module.metrics(rows, 1764230000))
        self.assertEqual(got["nodefleet_health_last_run_timestamp_seconds"], "1764230000")
        self.assertEqual(got['nodefleet_node_service_up{node="storage-1",role="storage"}'], "1")
        self.assertEqual(got['nodefleet_node_peers{node="storage-1",role="storage"}'], "0")
        self.assertEqual(got['nodefleet_diagnosis{node="storage-1",role="storage",code="storage-peers-0",severity="warning"}'], "1")
        self.assertEqual(got['nodefleet_node_healthy{node="storage-1",role="storage"}'], "1", "a warning leaves it healthy, as status says")

    def test_every_recorded_answer_gives_each_series_once_with_help_and_type_first(self):
        items = [{"node": f"{role}-{i}", "role": role, "host": "h", "answer": a} for role in ("storage", "sequencer", "validator") for i, a in enumerate(answers(role).values())]
        text = metrics_module.metrics(health.rows(items), 1.5)
        seen = series(text)  # asserts each series once
        self.assertGreater(len(seen), 100)
        declared = re.findall(r"^# TYPE (\S+) gauge$", text, re.M)
        self.assertEqual(len(declared), len(set(declared)))
        self.assertTrue(set(declared) <= set(metrics_module.METRICS))
        for key in seen:
            self.assertIn(key.split("{")[0], declared)

    def test_a_validator_with_both_units_down_is_one_service_down_series(self):
        answer = {"client": "reth", "units": {"reth": "reth-v.service", "consensus": "0gchaind-v.service"}, "services": {"reth-v.service": "failed", "0gchaind-v.service": "inactive"}}
        rows = health.rows([{"node": "v", "role": "validator", "host": "h", "answer": answer}])
        self.assertEqual([d["fault"] for d in rows[0]["diagnoses"]], ["service-down", "service-down"])
        got = series(metrics_module.metrics(rows, 0))
        self.assertEqual([k for k in got if k.startswith("nodefleet_diagnosis")], ['nodefleet_diagnosis{node="v",role="validator",code="service-down",severity="error"}'])

    def test_label_values_from_an_answer_are_escaped(self):
        answer = {"client": 'reth"} 1\nnodefleet_node_healthy{node="v"', "units": {}, "services": {}}
        text = metrics_module.metrics(health.rows([{"node": "v", "role": "validator", "host": "h", "answer": answer}]), 0)
        line = [l for l in text.splitlines() if l.startswith("nodefleet_validator_execution_client")]
        self.assertEqual(line, ['nodefleet_validator_execution_client{node="v",role="validator",client="reth\\"} 1\\nnodefleet_node_healthy{node=\\"v\\""} 1'])

    def test_the_catalogue_names_each_metric_with_its_labels(self):
        out = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "nodefleet_metrics.py"), "catalogue"], capture_output=True, text=True, check=True)
        catalogue = json.loads(out.stdout)
        self.assertEqual(catalogue["nodefleet_diagnosis"]["labels"], ["node", "role", "code", "severity"])
        self.assertIsNone(catalogue["nodefleet_health_last_run_timestamp_seconds"]["labels"])


class Collect(unittest.TestCase):
    """The health timer's run, with stand-in health commands: one answers, one fails, one hangs."""

    def test_every_check_at_once_each_in_its_time_its_rows_written_whole(self):
        import tempfile
        import time
        d = tempfile.mkdtemp()
        answer = json.dumps(answers("storage")["healthy"])
        checks = {"host": "dev-1", "timeout": 2, "checks": [
            {"node": "storage-1", "role": "storage", "argv": [sys.executable, "-c", f"print('progress'); print({answer!r})"]},
            {"node": "storage-2", "role": "storage", "argv": [sys.executable, "-c", "import sys; sys.exit('zgs-health: no such node')"]},
            {"node": "storage-3", "role": "storage", "argv": [sys.executable, "-c", "import time; time.sleep(30)"]},
            {"node": "storage-4", "role": "storage", "argv": ["/nonexistent/health-tool"]},
        ]}
        with open(os.path.join(d, "checks.json"), "w") as f:
            json.dump(checks, f)
        out = os.path.join(d, "nodefleet.prom")
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "nodefleet_metrics.py"), "collect", os.path.join(d, "checks.json"), out], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertLess(time.monotonic() - t0, 10, "the hung check is cut at its time limit")
        self.assertEqual(done.stdout.strip(), "4 nodes, 3 unhealthy: storage-2, storage-3, storage-4")
        with open(out) as f:
            got = series(f.read())
        self.assertEqual(got['nodefleet_node_healthy{node="storage-1",role="storage"}'], "1")
        for node in ("storage-2", "storage-3", "storage-4"):
            self.assertEqual(got[f'nodefleet_diagnosis{{node="{node}",role="storage",code="check-failed",severity="error"}}'], "1")
            self.assertEqual(got[f'nodefleet_node_check_ok{{node="{node}",role="storage"}}'], "0")
        self.assertEqual(oct(os.stat(out).st_mode & 0o777), "0o644")
        self.assertEqual([f for f in os.listdir(d) if f.endswith(".tmp")], [])

    def test_a_failed_run_names_why_as_status_does(self):
        self.assertEqual(health.from_result(["python3", "/x/zgs-health.py", "s-1", "more"], {"exit": 1, "stdout": "", "stderr": "line\nTraceback: boom\n"}), ("failed", "python3 /x/zgs-health.py s-1… exited 1 without a JSON answer: Traceback: boom"))
        self.assertEqual(health.from_result([], {"timeout": 24}), ("failed", "its health check did not end within 24 s"))
        self.assertEqual(health.from_result([], None), ("failed", "the host gave no result for it"))
        self.assertEqual(health.from_result(["a"], {"exit": 0, "stdout": "NaN", "stderr": ""})[0], "failed", "NaN is not JSON")
        self.assertEqual(health.from_result(["a"], {"exit": 0, "stdout": "x\n{\"active\": true}\n", "stderr": ""}), ("answer", {"active": True}))


class OneFaultTable(unittest.TestCase):
    """status's remedy for a code is the fault table's, the one the alert rules are made from
    (test/unit/monitoring.test.ts holds each alert to the same table)."""

    def test_every_code_is_reported_with_the_tables_severity_and_remedy(self):
        from nodefleet_faults import FAULTS
        for code, entry in FAULTS.items():
            d = health.diag(code, "what was seen")
            self.assertEqual((d["severity"], d["remedy"]), (entry["severity"], entry["remedy"]), code)

    def test_a_unit_and_a_port_are_filled_in_and_nothing_else_changes(self):
        self.assertEqual(health.diag("service-down", "x", unit="zgs-a.service")["remedy"], "systemctl start zgs-a.service; journalctl -u zgs-a.service says why it stopped")
        self.assertIn("make sure 56303 is open on TCP and UDP", health.diag("reth-no-peers", "x", p2p="56303")["remedy"])
        self.assertIn("with the content {}", health.diag("missing-priv-validator-state", "x")["remedy"])


if __name__ == "__main__":
    unittest.main()
