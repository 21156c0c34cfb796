"""setup's edit of an existing consensus home's config.toml when the fleet is monitored: CometBFT's
[instrumentation] prometheus on, at nodefleet's address; only those values change, and a file it
cannot edit right is refused and left untouched."""
import os
import shutil
import stat
import sys
import tempfile
import tomllib
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from zgvalidator.host import Failed  # noqa: E402
from zgvalidator.setup import ensure_instrumentation, instrumentation_edit  # noqa: E402

LISTEN = ":56660"
# The shape `beacond init` writes (CometBFT's template): the table last, two more keys in it.
INIT = """# This is a TOML config file.
proxy_app = "tcp://127.0.0.1:26658"

[rpc]
laddr = "tcp://127.0.0.1:26657"

#######################################################
###       Instrumentation Configuration Options     ###
#######################################################
[instrumentation]

# When true, Prometheus metrics are served under /metrics on
# PrometheusListenAddr.
prometheus = false  # off by default

# Address to listen for Prometheus collector(s) connections
prometheus_listen_addr = ":26660"
max_open_connections = 3
namespace = "cometbft"
"""


def instrumentation(text):
    return tomllib.loads(text)["instrumentation"]


class InstrumentationEdit(unittest.TestCase):
    def test_the_init_shape_changes_in_its_two_values_alone(self):
        new = instrumentation_edit(INIT, LISTEN, "config.toml")
        self.assertEqual(instrumentation(new), {"prometheus": True, "prometheus_listen_addr": LISTEN, "max_open_connections": 3, "namespace": "cometbft"})
        changed = [(a, b) for a, b in zip(INIT.splitlines(), new.splitlines()) if a != b]
        self.assertEqual(changed, [("prometheus = false  # off by default", "prometheus = true  # off by default"),
                                   ('prometheus_listen_addr = ":26660"', 'prometheus_listen_addr = ":56660"')])
        self.assertEqual(len(new.splitlines()), len(INIT.splitlines()))

    def test_nodefleets_own_file_gets_the_table_at_its_end(self):
        text = '[rpc]\nladdr = "tcp://127.0.0.1:56657"\n\n[p2p]\nladdr = "tcp://0.0.0.0:56656"\n'
        new = instrumentation_edit(text, LISTEN, "config.toml")
        self.assertTrue(new.startswith(text))
        self.assertEqual(instrumentation(new), {"prometheus": True, "prometheus_listen_addr": LISTEN})
        self.assertEqual(tomllib.loads(new)["p2p"], {"laddr": "tcp://0.0.0.0:56656"})
        # No newline at the end of the file: the table still starts on a line of its own.
        self.assertEqual(instrumentation(instrumentation_edit(text.rstrip("\n"), LISTEN, "config.toml"))["prometheus"], True)

    def test_a_table_without_the_keys_gets_them_under_its_header(self):
        text = '[instrumentation]\nnamespace = "cometbft"\n\n[p2p]\nladdr = "tcp://0.0.0.0:56656"\n'
        new = instrumentation_edit(text, LISTEN, "config.toml")
        self.assertEqual(instrumentation(new), {"prometheus": True, "prometheus_listen_addr": LISTEN, "namespace": "cometbft"})
        self.assertNotIn("prometheus", str(tomllib.loads(new)["p2p"]))

    def test_a_file_that_has_them_is_left_alone(self):
        done = instrumentation_edit(INIT, LISTEN, "config.toml")
        self.assertIsNone(instrumentation_edit(done, LISTEN, "config.toml"))

    def test_crlf_line_endings_stay(self):
        new = instrumentation_edit(INIT.replace("\n", "\r\n"), LISTEN, "config.toml")
        self.assertNotIn("\n", new.replace("\r\n", ""))
        self.assertEqual(instrumentation(new)["prometheus"], True)

    def test_refuses_what_it_cannot_edit_right_naming_the_file(self):
        with self.assertRaisesRegex(Failed, r"^/h/config.toml is not TOML \(.*\): nodefleet does not edit it"):
            instrumentation_edit("[rpc\nladdr = 1\n", LISTEN, "/h/config.toml")
        # The keys as dotted keys at the top: a second [instrumentation] table would clash.
        with self.assertRaisesRegex(Failed, r"^/h/config.toml: nodefleet could not set \[instrumentation\] prometheus = true"):
            instrumentation_edit("instrumentation.prometheus = false\n[p2p]\nladdr = \"x\"\n", LISTEN, "/h/config.toml")
        # A quoted key it does not rewrite.
        with self.assertRaisesRegex(Failed, r"could not set"):
            instrumentation_edit('[instrumentation]\n"prometheus" = false\n', LISTEN, "/h/config.toml")


class Ensure(unittest.TestCase):
    class Validator:
        def __init__(self, settings):
            self.s = settings

    def setUp(self):
        self.home = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.home)
        os.makedirs(os.path.join(self.home, "config"))
        self.path = os.path.join(self.home, "config", "config.toml")
        with open(self.path, "w") as f:
            f.write(INIT)
        os.chmod(self.path, 0o640)

    def test_monitored_edits_once_keeping_mode_and_owner(self):
        v = self.Validator({"consensusHome": self.home, "metrics": {"prometheusListenAddr": LISTEN}})
        before = os.stat(self.path)
        self.assertTrue(ensure_instrumentation(v))
        after = os.stat(self.path)
        self.assertEqual((stat.S_IMODE(after.st_mode), after.st_uid, after.st_gid), (0o640, before.st_uid, before.st_gid))
        with open(self.path) as f:
            self.assertEqual(instrumentation(f.read())["prometheus_listen_addr"], LISTEN)
        self.assertFalse(ensure_instrumentation(v), "the second run changes nothing")

    def test_unmonitored_touches_nothing(self):
        self.assertFalse(ensure_instrumentation(self.Validator({"consensusHome": self.home})))
        with open(self.path) as f:
            self.assertEqual(f.read(), INIT)

    def test_a_refused_file_is_left_as_it_was(self):
        with open(self.path, "w") as f:
            f.write("[instrumentation\n")
        with self.assertRaises(Failed):
            ensure_instrumentation(self.Validator({"consensusHome": self.home, "metrics": {"prometheusListenAddr": LISTEN}}))
        with open(self.path) as f:
            self.assertEqual(f.read(), "[instrumentation\n")


if __name__ == "__main__":
    unittest.main()
