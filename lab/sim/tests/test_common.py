"""The simulators' shared parts: keccak-256 vectors, RLP round trips and block walking, JWT."""
import os
import tempfile
import time
import unittest

from nodefleet_sim import common
from nodefleet_sim.common import keccak256_pure, rlp_encode


def make_block(number, parent, txs=0, pad=0, state_root=b"\x11" * 32):
    """A block shaped like geth's export: [header(>= 15 fields), txs, uncles]."""
    header = [parent, b"\x1d" * 32, b"\x00" * 20, state_root, b"\x22" * 32, b"\x33" * 32,
              b"\x00" * 256, 0, number, 30_000_000, 21_000 * txs, 1_700_000_000 + number, b"x" * pad,
              b"\x00" * 32, b"\x00" * 8]
    transactions = [[i, 1, 21000, b"\x44" * 20, 1, b"", 27, 1, 1] for i in range(txs)]
    return rlp_encode([header, transactions, []])


def chain(n, start=1, genesis_hash=b"\x00" * 32, **kw):
    out, parent = [], genesis_hash
    for number in range(start, start + n):
        raw = make_block(number, parent, **kw)
        out.append(raw)
        parent = common.Block(raw, 0, len(raw)).hash
    return out


class Keccak(unittest.TestCase):
    def test_vectors(self):
        for impl in (common.keccak256, keccak256_pure):
            self.assertEqual(impl(b"").hex(), "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
            self.assertEqual(impl(b"abc").hex(), "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45")

    def test_the_c_keccak_is_used_where_debian_python3_pycryptodome_is_installed(self):
        # Debian's package (in the hosts' image; scripts/setup.sh installs it on the runner) names its
        # module Cryptodome: the simulators once looked for pip's Crypto only and hashed in pure
        # Python on the hosts. Checked with Debian's own interpreter, as on the hosts (this
        # machine's python3 may be another one).
        import os
        import subprocess
        installed = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "python3-pycryptodome"], capture_output=True, text=True).stdout
        if "install ok installed" not in installed or not os.path.exists("/usr/bin/python3"):
            self.fail("Debian's python3-pycryptodome is not installed on this machine (scripts/setup.sh installs it)")
        sim = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        r = subprocess.run(["/usr/bin/python3", "-c", f"import sys; sys.path.insert(0, {sim!r}); from nodefleet_sim import common, keccak; "
                            "print(keccak._fast_keccak.__name__, common.keccak256(b'abc').hex())"], capture_output=True, text=True)
        self.assertEqual(r.stdout.split(), ["Cryptodome.Hash.keccak", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"], r.stderr)

    def test_multi_block_input_matches(self):
        data = bytes(range(256)) * 3  # longer than the 136-byte rate
        self.assertEqual(common.keccak256(data), keccak256_pure(data))


class Rlp(unittest.TestCase):
    def test_lengths_and_numbers(self):
        self.assertEqual(rlp_encode(0), b"\x80")
        self.assertEqual(rlp_encode(0x7F), b"\x7f")
        self.assertEqual(rlp_encode(0x80), b"\x81\x80")
        self.assertEqual(rlp_encode(b"a" * 56)[:2], b"\xb8\x38")
        self.assertEqual(rlp_encode([b"a" * 60])[:2], b"\xf8\x3e")

    def test_blocks_walk_with_long_forms_and_edge_numbers(self):
        numbers = [0, 1, 0x7F, 0x80, 0x100, 0x10000]
        raws = [make_block(n, b"\x00" * 32, txs=2, pad=70_000 if n == 0x80 else 0) for n in numbers]
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(b"".join(raws))
        try:
            blocks = list(common.read_blocks(f.name))
        finally:
            os.unlink(f.name)
        self.assertEqual([b.number for b in blocks], numbers)
        self.assertEqual([b.raw for b in blocks], raws)
        self.assertGreater(len(raws[3]), 65536)
        self.assertEqual(blocks[1].tx_count, 2)

    def test_truncated_tail_names_its_offset(self):
        raws = chain(3)
        data = b"".join(raws)[:-5]
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(data)
        try:
            with self.assertRaisesRegex(common.RlpError, f"offset {len(raws[0]) + len(raws[1])}"):
                list(common.read_blocks(f.name))
        finally:
            os.unlink(f.name)


class Jwt(unittest.TestCase):
    def test_round_trip_and_rejections(self):
        secret = bytes(range(32))
        token = common.jwt_token(secret)
        self.assertIsNone(common.jwt_check(secret, "Bearer " + token))
        self.assertEqual(common.jwt_check(bytes(32), "Bearer " + token), "signature invalid")
        self.assertEqual(common.jwt_check(secret, ""), "missing token")
        old = common.jwt_token(secret, now=time.time() - 120)
        self.assertEqual(common.jwt_check(secret, "Bearer " + old), "stale token")

    def test_secret_file_shape(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("0x" + "ab" * 32 + "\n")
        try:
            self.assertEqual(common.read_jwt_secret(f.name), b"\xab" * 32)
            with open(f.name, "w") as g:
                g.write("abcd")
            with self.assertRaisesRegex(ValueError, "32 bytes"):
                common.read_jwt_secret(f.name)
        finally:
            os.unlink(f.name)


class Flags(unittest.TestCase):
    def test_strict(self):
        flags, rest = common.parse_flags(["--a", "1", "--b=2", "--on", "file"], {"a", "b"}, {"on"})
        self.assertEqual(flags, {"a": "1", "b": "2", "on": True})
        self.assertEqual(rest, ["file"])
        with self.assertRaisesRegex(common.FlagError, "unexpected argument '--nope' found"):
            common.parse_flags(["--nope"], {"a"})
        with self.assertRaisesRegex(common.FlagError, "a value is required"):
            common.parse_flags(["--a"], {"a"})


if __name__ == "__main__":
    unittest.main()


class StopOnSigterm(unittest.TestCase):
    """A simulator's stop on SIGTERM, under the worst timing: a loop of wait(0), which holds the
    event's lock most of the time (Event.set() called in the handler itself deadlocked there on
    about half of the SIGTERMs). Each process must print "stopped" and exit within 5 s."""

    def test_every_sigterm_stops_the_loop(self):
        import signal
        import subprocess
        import sys
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        loop = ("import sys; from nodefleet_sim import common\n"
                "stop = common.stop_on_sigterm()\n"
                "print('ready', flush=True)\n"
                "while not stop.wait(0):\n    pass\n"
                "print('stopped', flush=True)\n")
        for _ in range(20):
            p = subprocess.Popen([sys.executable, "-c", loop], cwd=here, stdout=subprocess.PIPE, text=True)
            self.assertEqual(p.stdout.readline().strip(), "ready")
            time.sleep(0.05)
            p.send_signal(signal.SIGTERM)
            try:
                out, _ = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                self.fail("the process did not stop within 5 s of SIGTERM")
            self.assertEqual((p.returncode, out.strip()), (0, "stopped"))
