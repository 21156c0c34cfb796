"""trim_export.py (the trim tool of the geth -> reth switch): exact bytes kept, edge numbers, long forms, blocks > 64 KB,
unparseable blocks, truncated tails, and no data copied when nothing is dropped."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(os.path.dirname(HERE), "trim_export.py")
sys.path.insert(0, os.path.dirname(HERE))
import trim_export  # noqa: E402
from tests.chainfile import block, rlp  # noqa: E402


class Trim(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def export(self, blocks):
        with open(os.path.join(self.dir, "chain-export.rlp"), "wb") as f:
            f.write(b"".join(blocks))

    def run_tool(self, start):
        return subprocess.run([sys.executable, TOOL, str(start), self.dir], capture_output=True, text=True)

    def out(self, start):
        with open(os.path.join(self.dir, f"chain-export-from-{start}.rlp"), "rb") as f:
            return f.read()

    def test_keeps_exactly_the_blocks_at_or_above_start(self):
        numbers = [0, 1, 2, 0x7F, 0x80, 0x81, 0xFF, 0x100, 0x10000, 0x1000000]
        blocks = [block(n, txs=n % 3) for n in numbers]
        self.export(blocks)
        for start in (0, 1, 0x80, 0x100, 0x1000001):
            r = self.run_tool(start)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.out(start), b"".join(b for n, b in zip(numbers, blocks) if n >= start), f"start {start}")

    def test_contiguous_export_cut_in_the_middle(self):
        blocks = [block(n, txs=n % 4) for n in range(1, 301)]
        self.export(blocks)
        for start in (1, 2, 150, 300, 301, 5000):
            r = self.run_tool(start)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.out(start), b"".join(blocks[start - 1:]), f"start {start}")
            self.assertNotIn("warning", r.stderr)

    def test_gap_at_the_cut_falls_back_to_reading_every_header(self):
        numbers = list(range(1, 50)) + list(range(60, 111))  # 100 blocks spanning 1..110
        blocks = [block(n) for n in numbers]
        self.export(blocks)
        r = self.run_tool(55)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.out(55), b"".join(b for n, b in zip(numbers, blocks) if n >= 55))

    def test_long_form_lengths_and_blocks_over_64k(self):
        blocks = [block(1, txs=2), block(2, txs=700, tx_size=120), block(3, extra=b"x" * 40)]
        self.assertGreater(len(blocks[1]), 65536)
        self.assertEqual(blocks[1][0], 0xF8 + 2)  # a list with a 3-byte length
        self.export(blocks)
        self.assertEqual(self.run_tool(2).returncode, 0)
        self.assertEqual(self.out(2), blocks[1] + blocks[2])

    def test_pre_merge_difficulty_and_multibyte_numbers(self):
        blocks = [block(n, difficulty=131072 + n) for n in (999_999, 1_000_000, 1_000_001)]
        self.export(blocks)
        self.assertEqual(self.run_tool(1_000_000).returncode, 0)
        self.assertEqual(self.out(1_000_000), blocks[1] + blocks[2])

    def test_nothing_to_drop_copies_no_data(self):
        blocks = [block(n) for n in range(1, 50)]
        self.export(blocks)
        r = self.run_tool(1)
        self.assertEqual(r.returncode, 0, r.stderr)
        src = os.stat(os.path.join(self.dir, "chain-export.rlp"))
        dst = os.stat(os.path.join(self.dir, "chain-export-from-1.rlp"))
        self.assertEqual(self.out(1), b"".join(blocks))
        # a hard link shares the inode; a reflink shares extents (checked by the message)
        self.assertTrue(src.st_ino == dst.st_ino or "reflink" in r.stderr, r.stderr)

    def test_unparseable_block_is_written_unchanged_with_a_warning(self):
        odd = rlp([[b"\x01"], [], []])  # a list, but its header has no number field
        blocks = [block(1), block(2), odd, block(3)]
        self.export(blocks)
        r = self.run_tool(2)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"warning: block at offset {len(blocks[0]) + len(blocks[1])} could not be parsed; written unchanged", r.stderr)
        self.assertEqual(self.out(2), blocks[1] + odd + blocks[3])

    def test_unparseable_block_below_the_start_is_kept_with_a_warning(self):
        # The numbering still adds up (the bad block stands where block 2 was), so only the
        # structural check of every block can see it: a list whose first item is not a list.
        for bad in (rlp([b"not a header", [], []]), rlp([b"\x09" * 300, [], []]), rlp([b"\x09" * 70_000, [], []])):
            with self.subTest(size=len(bad)):
                blocks = [block(1), bad, block(3), block(4), block(5)]
                self.export(blocks)
                r = self.run_tool(4)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"warning: block at offset {len(blocks[0])} could not be parsed; written unchanged", r.stderr)
                self.assertEqual(self.out(4), bad + blocks[3] + blocks[4])

    def test_prefix_cut_off_by_the_end_of_the_file(self):
        blocks = [block(1), block(2)]
        self.export(blocks + [bytes([0xF9, 0x01])])
        r = self.run_tool(1)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"offset {len(blocks[0]) + len(blocks[1])}: truncated block", r.stderr)

    def test_truncated_tail_fails_naming_the_offset_and_leaves_no_output(self):
        blocks = [block(n, txs=3) for n in range(1, 6)]
        data = b"".join(blocks)
        self.export(blocks)
        self.assertEqual(self.run_tool(3).returncode, 0)  # an earlier good run's output...
        with open(os.path.join(self.dir, "chain-export.rlp"), "wb") as f:
            f.write(data[:-10])
        r = self.run_tool(3)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"offset {len(data) - len(blocks[-1])}: truncated block", r.stderr)
        self.assertEqual([n for n in os.listdir(self.dir) if n != "chain-export.rlp"], [])  # ...is gone too

    def test_garbage_is_not_a_block(self):
        self.export([block(1), b"\x85hello"])
        r = self.run_tool(1)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"offset {len(block(1))}: not a block", r.stderr)

    def test_progress_every_100000_blocks(self):
        self.export([block(1)])
        lines = []
        blocks = b"".join(block(n) for n in range(1, 200_002))
        with open(os.path.join(self.dir, "chain-export.rlp"), "wb") as f:
            f.write(blocks)
        trim_export.trim(150_000, self.dir, log=lines.append)
        progress = [l for l in lines if l.startswith("progress:")]
        self.assertEqual(len(progress), 2)
        self.assertTrue(progress[0].startswith("progress: 100000 blocks read"), progress[0])

    def test_usage(self):
        r = subprocess.run([sys.executable, TOOL], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: trim_export.py <start_block> [<base_dir>]", r.stderr)


if __name__ == "__main__":
    unittest.main()
