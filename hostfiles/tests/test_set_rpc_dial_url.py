"""set-rpc-dial-url.py on a realistic 0gchaind app.toml and on every input it must refuse: only
the one value changes, every other byte stays, and a refused file is left untouched."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "set-rpc-dial-url.py")
FIXTURE = os.path.join(HERE, "fixtures", "app.toml")
URL = "http://localhost:56551"


class SetRpcDialUrl(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = os.path.join(self.dir, "app.toml")

    def write(self, text, mode=0o640):
        with open(self.path, "w", newline="") as f:
            f.write(text)
        os.chmod(self.path, mode)

    def read(self):
        with open(self.path, newline="") as f:
            return f.read()

    def run_it(self, url=URL, *extra):
        r = subprocess.run([sys.executable, SCRIPT, self.path, url, *extra], capture_output=True, text=True)
        return r, (json.loads(r.stdout) if r.returncode == 0 else None)

    def test_realistic_app_toml_changes_one_value_and_keeps_every_other_byte(self):
        with open(FIXTURE) as f:
            original = f.read()
        self.write(original, 0o640)
        r, out = self.run_it()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(out, {"file": self.path, "old": "http://localhost:8551", "new": URL, "changed": True, "line": out["line"]})
        after = self.read()
        before_lines, after_lines = original.splitlines(True), after.splitlines(True)
        self.assertEqual(len(before_lines), len(after_lines))
        diff = [i for i, (a, b) in enumerate(zip(before_lines, after_lines)) if a != b]
        self.assertEqual(diff, [out["line"] - 1])
        self.assertEqual(after_lines[diff[0]], f'rpc-dial-url    =   "{URL}"   # geth\'s authrpc, for now\n')
        doc = tomllib.loads(after)
        self.assertEqual(doc["beacon-kit"]["engine"]["rpc-dial-url"], URL)
        self.assertEqual(doc["beacon-kit"]["engine"]["jwt-secret-path"], "/data/validator-1/jwt.hex")
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o640)
        self.assertEqual(os.listdir(self.dir), ["app.toml"], "no temporary file is left")
        # Again: nothing to do, nothing written.
        mtime = os.stat(self.path).st_mtime_ns
        r, out = self.run_it()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(out["changed"])
        self.assertEqual(os.stat(self.path).st_mtime_ns, mtime)

    def test_crlf_line_endings_and_literal_strings_are_kept(self):
        self.write("[beacon-kit.engine]\r\nrpc-dial-url = 'http://localhost:8551'\r\nrpc-retries = 3\r\n")
        r, _ = self.run_it()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.read(), f'[beacon-kit.engine]\r\nrpc-dial-url = "{URL}"\r\nrpc-retries = 3\r\n')

    def test_top_level_key_when_the_file_has_no_engine_table(self):
        self.write('# old layout\nrpc-dial-url = "http://localhost:8551"\n\n[api]\nenable = false\n')
        r, out = self.run_it()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.read(), f'# old layout\nrpc-dial-url = "{URL}"\n\n[api]\nenable = false\n')

    def test_dry_run_writes_nothing(self):
        with open(FIXTURE) as f:
            original = f.read()
        self.write(original)
        r, out = self.run_it(URL, "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(out["changed"])
        self.assertEqual(self.read(), original)

    def test_refusals_name_the_file_line_and_reason_and_leave_it_untouched(self):
        cases = [
            ("[beacon-kit.engine]\nrpc-retries = 3\n[api]\nrpc-dial-url = \"http://x:1\"\n", URL, "no rpc-dial-url under [beacon-kit.engine]"),
            ("[beacon-kit.engine]\nrpc-dial-url = \"http://a:1\"\n[beacon-kit.engine.x]\n[beacon-kit.engine]\n", URL, "not valid TOML"),
            ("[beacon-kit.engine]\nrpc-dial-url = \"\"\"\nhttp://a:1\"\"\"\n", URL, "app.toml:2: the value of rpc-dial-url is not a one-line TOML string"),
            ("[beacon-kit.engine]\nrpc-dial-url = 8551\n", URL, "app.toml:2: the value of rpc-dial-url is not a one-line TOML string"),
            ("[beacon-kit.engine\nrpc-dial-url = \"http://a:1\"\n", URL, "not valid TOML"),
            ("[beacon-kit.engine]\nrpc-dial-url = \"http://a:1\"\n", "localhost:56551", "'localhost:56551' is not an http(s) URL"),
            ("[beacon-kit.engine]\nrpc-dial-url = \"http://a:1\"\n", 'http://a:1"\nx = "', "is not an http(s) URL"),
        ]
        for text, url, message in cases:
            self.write(text)
            r, _ = self.run_it(url)
            self.assertEqual(r.returncode, 1, (text, r.stdout))
            self.assertIn(message, r.stderr, text)
            self.assertEqual(self.read(), text, "a refused file is untouched")
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(self.dir, "missing.toml"), URL], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing.toml: cannot read: No such file or directory", r.stderr)


if __name__ == "__main__":
    unittest.main()
