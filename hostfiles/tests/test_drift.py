"""drift.py (the drift check `pulumi refresh` sends to each host) on records written here as the
steps write them on a host: files, a release's file list and link. What it cannot prove here: units
and the nftables table (this machine's systemd and nft are not a host's; the dev VMs show them in
test/e2e/dev-stack.test.ts), and that the steps write these records (the same e2e test).

    cd hostfiles && python3 -m unittest tests.test_drift
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "drift.py")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class DriftCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="nodefleet-drift-test-")
        self.records = os.path.join(self.tmp, "drift")
        os.makedirs(self.records)
        me = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        group = subprocess.run(["id", "-gn"], capture_output=True, text=True).stdout.strip()
        self.owner = f"{me}:{group}"

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def record(self, group, entry, *fields):
        os.makedirs(os.path.join(self.records, group), exist_ok=True)
        with open(os.path.join(self.records, group, entry), "w") as f:
            f.write("\t".join(fields) + "\n")

    def put(self, group, name, text, mode=0o644):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        self.record(group, f"f.{name}", "file", path, digest(path), f"{mode:o} {self.owner}")
        return path

    def check(self):
        r = subprocess.run([sys.executable, "-S", SCRIPT, self.records], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_a_host_as_recorded_has_no_drift(self):
        self.put("storage-1.configure", "config.toml", "network_dir = \"x\"\n", 0o600)
        self.put("storage-1.key", "miner.key", "aa" * 32 + "\n", 0o600)
        self.assertEqual(self.check(), {"records": 2, "drift": []})

    def test_each_change_of_a_file_is_named_without_its_content(self):
        secret = "bb" * 32
        config = self.put("storage-1.configure", "config.toml", "blockchain_rpc_endpoint = \"http://a\"\n", 0o600)
        key = self.put("storage-1.key", "miner.key", secret + "\n", 0o600)
        gone = self.put("storage-1.configure", "log_config", "info\n")
        with open(config, "a") as f:
            f.write("# edited by hand\n")
        os.chmod(key, 0o644)
        os.remove(gone)
        out = self.check()
        self.assertEqual(sorted((d["group"], d["item"], d["change"]) for d in out["drift"]), [
            ("storage-1.configure", config, "content changed"),
            ("storage-1.configure", gone, "missing"),
            ("storage-1.key", key, "mode 644, nodefleet left 600"),
        ])
        text = json.dumps(out)
        self.assertNotIn(secret, text)
        self.assertNotIn(digest(key), text, "no digest either")

    def test_a_swapped_release_binary_and_a_moved_link_are_named(self):
        release = os.path.join(self.tmp, "releases", "zgs-0123456789abcdef")
        os.makedirs(os.path.join(release, "bin"))
        for rel, text in (("bin/zgs_node", "real binary"), ("README", "docs")):
            with open(os.path.join(release, rel), "w") as f:
                f.write(text)
        # The install step's list: `sha256sum` lines of every file, paths relative to the release.
        listing = subprocess.run("find . -type f -print0 | sort -z | xargs -0 sha256sum | sed 's#  \\./#  #'", shell=True, cwd=release, capture_output=True, text=True).stdout
        with open(os.path.join(release, ".nodefleet-files.sha256"), "w") as f:
            f.write(listing)
        link = os.path.join(self.tmp, "zgs")
        os.symlink(release, link)
        self.record("release.zgs", "t.release", "tree", release, link)
        self.assertEqual(self.check()["drift"], [])
        with open(os.path.join(release, "bin/zgs_node"), "w") as f:
            f.write("another binary")
        os.remove(link)
        os.symlink(self.tmp, link)
        self.assertEqual([(d["item"], d["change"]) for d in self.check()["drift"]], [
            (os.path.join(release, "bin/zgs_node"), "differs from the release nodefleet installed"),
            (link, f"points at {self.tmp}, nodefleet left {release}"),
        ])

    def test_a_part_directory_counts_for_its_group_and_a_broken_record_is_reported(self):
        path = self.put("storage-1.configure+endpoint", "config.toml", "x\n")
        with open(path, "w") as f:
            f.write("y\n")
        self.record("firewall", "nft", "nft", "only-two-fields")
        drift = self.check()["drift"]
        self.assertEqual([(d["group"], d["change"]) for d in drift], [("firewall", "unreadable drift record"), ("storage-1.configure", "content changed")])

    def test_a_value_nodefleet_sets_in_a_file_edited_in_place_is_named_when_changed_and_nothing_else_is(self):
        # The consensus home's app.toml as the validator's setup leaves it, recorded by its own
        # recorder (zgvalidator.host.record_toml): the drift check reads the same digests.
        from zgvalidator import host
        app = os.path.join(self.tmp, "app.toml")
        text = ('# written by beacond init\n[beacon-kit]\nchain-spec = "devnet"\n\n[beacon-kit.engine]\n'
                'rpc-dial-url = "http://127.0.0.1:56551"\njwt-secret-path = "/data/validator-1/jwt.hex"\n')
        with open(app, "w") as f:
            f.write(text)
        saved = dict(host.DRIFT)
        host.DRIFT.update(dir=os.path.join(self.records, "validator-1.units"))
        try:
            host.record_toml(app, ("rpc-dial-url", "jwt-secret-path", "not-in-the-file"))
        finally:
            host.DRIFT.clear()
            host.DRIFT.update(saved)
        self.assertEqual(self.check(), {"records": 2, "drift": []}, "a key the file lacks is not recorded")
        # A comment, another key, another layout: the operator's, not named.
        with open(app, "w") as f:
            f.write(text.replace("# written by beacond init", "# tuned by hand on 2026-11-29").replace('chain-spec = "devnet"', 'chain-spec = "devnet"\nextra = 1') + "\n# the end\n")
        self.assertEqual(self.check()["drift"], [])
        # A managed value changed by hand: named, by its key, never its value.
        with open(app, "w") as f:
            f.write(text.replace("56551", "56999"))
        drift = self.check()["drift"]
        self.assertEqual(drift, [{"group": "validator-1.units", "item": app, "change": "beacon-kit.engine.rpc-dial-url changed (nodefleet sets it)"}])
        self.assertNotIn("56999", json.dumps(drift))
        # Gone, or the file no longer TOML.
        with open(app, "w") as f:
            f.write(text.replace('jwt-secret-path = "/data/validator-1/jwt.hex"\n', ""))
        self.assertEqual([d["change"] for d in self.check()["drift"]], ["beacon-kit.engine.jwt-secret-path is gone (nodefleet sets it)"])
        with open(app, "w") as f:
            f.write(text + "[broken\n")
        self.assertEqual({d["change"] for d in self.check()["drift"]}, {"is not TOML any more, so beacon-kit.engine.rpc-dial-url cannot be read", "is not TOML any more, so beacon-kit.engine.jwt-secret-path cannot be read"})

    def test_no_records_no_drift(self):
        shutil.rmtree(self.records)
        self.assertEqual(self.check(), {"records": 0, "drift": []})


if __name__ == "__main__":
    unittest.main()
