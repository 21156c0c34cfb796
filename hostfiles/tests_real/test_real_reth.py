"""Step 9's import (zgvalidator/importing.py) against the real reth, built from upstream source,
importing a chain real geth made (the dev genesis): the tool judges what reth really reports and
recovers from what it really wrote. Run by the e2e tier (scripts/test.sh):

    NODEFLEET_RETH=<reth> NODEFLEET_CHAIN=<chain.rlp> python3 -m unittest -v tests_real.test_real_reth

What stands in: the transient systemd unit is a child process (Units below: started, attached,
killed -9 like a host losing it); real systemd runs it in the e2e tier on the VMs. A wrapper
gives reth's import a small `--chunk-len` in the tests of a long file (reth's own flag; its
default chunk, 1 GB, would hold this whole chain), so that a fault can fall after chunks reth
has finished. The faults are real files and real kills: a gap cut out of the trimmed file, a
block whose state root the test forges, a kill -9 mid-import.
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
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "lab", "sim"))
from nodefleet_sim import common  # noqa: E402  (RLP walking and keccak for the forged block)
from zgvalidator import importing  # noqa: E402
from zgvalidator.host import Failed  # noqa: E402
from zgvalidator.node import Validator  # noqa: E402

RETH = os.environ.get("NODEFLEET_RETH")
CHAIN = os.environ.get("NODEFLEET_CHAIN")
GENESIS = os.path.join(ROOT, "lab", "sim", "release", "geth-genesis.json")


def blocks_of(path):
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos < len(data):
        b = common.Block(data, pos, len(data))
        out.append(b.raw)
        pos = b.offset + len(b.raw)
    return out


def forge_state_root(raw):
    """The block with one byte of its header's state root flipped (header field 3, after
    parentHash, uncleHash and coinbase): its hash changes, so only a last block can carry it."""
    def prefix(i):
        b = raw[i]
        if b >= 0xf8:
            n = b - 0xf7
            return 1 + n
        assert b >= 0xc0
        return 1
    header = prefix(0)
    at = header + prefix(header) + 33 + 33 + 21
    assert raw[at] == 0xa0, "a 32-byte state root"
    forged = bytearray(raw)
    forged[at + 1] ^= 0xff
    return bytes(forged)


class Units:
    """The transient unit nodefleet-import-<node> as a child process: its output appended to the
    log, its state as job_state sees it; kill_when(text) kills it -9 once its log shows text and
    the attach then finds it gone, as after a host restart."""

    def __init__(self):
        self.proc, self.kill_on, self.killed = None, None, 0

    def long_unit(self, v, name, argv, log, failpoint):
        self.log = log
        with open(log, "a") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)

    def job_state(self, v, name):
        if self.proc is None:
            return "none"
        if self.proc.poll() is None:
            return "running"
        return "exited" if self.proc.returncode == 0 else "failed"

    def attach(self, v, name, progress, every=5.0):
        while self.proc.poll() is None:
            if self.kill_on and self.kill_on in importing.read_from(self.log, 0):
                self.proc.kill()
                self.proc.wait()
                self.proc, self.kill_on = None, None
                self.killed += 1
                return None
            time.sleep(0.02)
        rc = self.proc.returncode
        return rc if rc >= 0 else -rc

    def dispose(self, name):
        self.proc = None


@unittest.skipUnless(RETH and CHAIN, "the e2e tier runs this with NODEFLEET_RETH and NODEFLEET_CHAIN")
class RealRethImport(unittest.TestCase):
    def setUp(self):
        for what, path in (("NODEFLEET_RETH", RETH), ("NODEFLEET_CHAIN", CHAIN)):
            self.assertTrue(os.path.exists(path), f"{what}={path}: no such file")
        self.root = tempfile.mkdtemp(prefix="nodefleet-real-reth-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.blocks = blocks_of(CHAIN)
        self.head = len(self.blocks)
        self.s = {"node": "realreth", "operator": "root", "dataRoot": self.root, "rethDir": os.path.join(self.root, "reth"),
                  "rethBinary": RETH, "genesis": GENESIS, "importRetries": 5, "ports": {"http": 1},
                  "services": {"geth": "geth-t.service", "reth": "reth-t.service", "consensus": "0gchaind-t.service"}}
        self.mig = os.path.join(self.root, "migration")
        os.makedirs(self.mig)
        self.write("chain-export.rlp", self.blocks)
        self.units = Units()
        for name in ("long_unit", "job_state", "attach", "dispose"):
            real = getattr(importing, name)
            setattr(importing, name, getattr(self.units, name))
            self.addCleanup(setattr, importing, name, real)
        self.addCleanup(lambda: self.units.proc and self.units.proc.kill())

    def validator(self, chunk_len=None):
        if chunk_len:
            wrapper = os.path.join(self.root, "reth-chunked")
            with open(wrapper, "w") as f:
                f.write(f'#!/bin/sh\nif [ "$1" = import ]; then shift; exec {RETH} import --chunk-len {chunk_len} "$@"; fi\nexec {RETH} "$@"\n')
            os.chmod(wrapper, 0o755)
            self.s["rethBinary"] = wrapper
        path = os.path.join(self.root, "validator.json")
        with open(path, "w") as f:
            json.dump(self.s, f)
        v = Validator(path)
        subprocess.run([RETH, "init", "--quiet", "--chain", GENESIS, "--datadir", self.s["rethDir"]], check=True, capture_output=True)
        return v

    def write(self, name, raws):
        with open(os.path.join(self.mig, name), "wb") as f:
            f.write(b"".join(raws))

    def checkpoints(self, v):
        cps = importing.stage_checkpoints(v)
        return cps["Headers"], cps["Execution"], cps["Finish"]

    def state(self):
        with open(os.path.join(self.root, ".nodefleet-switch", "migration", "s09-import.state.json")) as f:
            return json.load(f)

    def test_a_whole_import(self):
        v = self.validator()
        r = importing.import_chain(v, self.head, "s09-import")
        self.assertEqual((r["importedHeight"], r["attempts"]), (self.head, 1))
        self.assertEqual(self.checkpoints(v), (self.head, self.head, self.head))

    def test_a_gap_in_the_trimmed_file_writes_nothing_and_the_file_is_made_again_from_the_export(self):
        v = self.validator()
        self.write("chain-export-from-1.rlp", self.blocks[:999] + self.blocks[1010:])  # blocks 1000..1010 cut out
        r = importing.import_chain(v, self.head, "s09-import")
        self.assertEqual(r["attempts"], 2)
        self.assertRegex(r["history"][0]["result"], r"^mismatched parent hash: got 0x[0-9a-f]{64}, expected 0x[0-9a-f]{64}$")
        self.assertEqual(self.state()["start"], 1, "reth wrote nothing of the chunk: the import starts again from block 1")
        self.assertEqual(self.checkpoints(v), (self.head, self.head, self.head))

    def test_a_gap_late_in_a_long_file_keeps_the_chunks_before_it(self):
        v = self.validator(chunk_len=200_000)  # a few hundred blocks a chunk
        cut = self.head - 300
        self.write("chain-export-from-1.rlp", self.blocks[:cut] + self.blocks[cut + 10:])
        r = importing.import_chain(v, self.head, "s09-import")
        self.assertEqual(r["attempts"], 2)
        start = self.state()["start"]
        self.assertGreater(start, 1, "the chunks reth finished before the gap are kept")
        self.assertLessEqual(start, cut)
        self.assertEqual(self.checkpoints(v), (self.head, self.head, self.head))

    def test_a_kill_mid_import_resumes_from_what_every_stage_finished(self):
        v = self.validator(chunk_len=200_000)
        # Killed while a later chunk is imported, once the first one is finished.
        self.units.kill_on = "Finished stage pipeline_stages=13/13 stage=Finish"
        r = importing.import_chain(v, self.head, "s09-import")
        self.assertEqual(self.units.killed, 1)
        self.assertEqual(r["importedHeight"], self.head)
        self.assertEqual(r["history"][0]["result"], "unit gone (host restarted?)")
        self.assertGreater(self.state()["start"], 1, "resumed after the chunk reth had finished")
        self.assertEqual(self.checkpoints(v), (self.head, self.head, self.head))

    def test_a_kill_before_any_chunk_finished_imports_again_from_the_start(self):
        v = self.validator()
        self.units.kill_on = "stage=Bodies checkpoint="  # headers (and maybe bodies) written, nothing executed
        r = importing.import_chain(v, self.head, "s09-import")
        self.assertEqual(self.units.killed, 1)
        self.assertEqual(self.state()["start"], 1)
        self.assertEqual(self.checkpoints(v), (self.head, self.head, self.head))
        self.assertEqual(r["attempts"], 2)

    def test_a_forged_state_root_stops_the_switch_with_a_report(self):
        v = self.validator(chunk_len=200_000)
        forged = self.blocks[:-1] + [forge_state_root(self.blocks[-1])]
        self.write("chain-export-from-1.rlp", forged)
        with self.assertRaises(Failed) as e:
            importing.import_chain(v, self.head, "s09-import")
        self.assertRegex(str(e.exception), rf"mismatched block state root at block {self.head} \(got 0x[0-9a-f]{{64}}, expected 0x[0-9a-f]{{64}}\)")
        self.assertIn("a block is never skipped", str(e.exception))
        report = self.state()["stateRootMismatch"]
        self.assertEqual(report["block"], self.head)
        headers, _, finish = self.checkpoints(v)
        self.assertLess(finish, self.head, "the bad block's chunk was unwound")
        self.assertEqual(headers, finish)
        # A re-run stops the same way without running reth again.
        self.units.proc = None
        with self.assertRaises(Failed):
            importing.import_chain(v, self.head, "s09-import")


if __name__ == "__main__":
    unittest.main()
