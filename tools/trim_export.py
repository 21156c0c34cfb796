#!/usr/bin/env python3
"""Trim a geth chain export for `reth import` (seed 4.4 "Trim export", 4.5 steps 8 and 9).

    trim_export.py <start_block> [<base_dir>]

Reads <base_dir>/chain-export.rlp (base_dir defaults to the working directory) and writes
<base_dir>/chain-export-from-<start_block>.rlp holding exactly the bytes of every block whose
number is >= start_block, in file order, byte-identical to the input's blocks.

How: the file is a concatenation of RLP lists, one per block. The tool walks the list
prefixes (a few bytes per block, which also proves the file has no truncated tail) and reads
a header's number field (header field 8, after the fixed-size fields and the difficulty) only
where it needs one; it never decodes bodies. A geth export is contiguous and ascending: when
the first and last numbers span exactly the blocks found, the cut is computed and the blocks on
both sides of it are checked; otherwise every header is read. Kept blocks are merged into byte
ranges and copied by the kernel (copy_file_range). When nothing needs dropping, no data is
copied at all: the output is a reflink (copy-on-write clone) where the filesystem supports it,
else a hard link of the input.

Guarantees:
- progress every 100000 blocks on stderr;
- a block whose header cannot be parsed is written unchanged, with a warning naming its offset
  (in a file whose ends are parseable and contiguous, only the blocks at the cut are parsed);
- a truncated or corrupt tail (a block whose declared length runs past the end of the file, or
  bytes that are not a block) is never passed on silently: exit 1 naming the offset, and no
  output file is left behind;
- the output is written under a temporary name and renamed when complete.
Exit codes: 0 done, 1 bad input (message names the offset), 2 usage.
"""
import errno
import fcntl
from array import array
import mmap
import os
import sys

PROGRESS_EVERY = 100_000
FICLONE = 0x40049409  # ioctl(dst, FICLONE, src): reflink on btrfs, XFS, ...
# Header field sizes before `difficulty` (field 7): parentHash, uncleHash (33 = 0xa0 + 32),
# coinbase (21), stateRoot, txRoot, receiptRoot (33 each), bloom (3 + 256).
FIXED_BEFORE_DIFFICULTY = ((0xA0, 33), (0xA0, 33), (0x94, 21), (0xA0, 33), (0xA0, 33), (0xA0, 33), (0xB9, 259))


class BadInput(Exception):
    pass


def _item(mm, pos, end):
    """(payload_start, payload_end, is_list) of the RLP item at pos, within end."""
    p = mm[pos]
    if p < 0x80:
        return pos, pos + 1, False
    if p < 0xB8:
        start, length, is_list = pos + 1, p - 0x80, False
    elif p < 0xC0:
        n = p - 0xB7
        start, length, is_list = pos + 1 + n, int.from_bytes(mm[pos + 1:pos + 1 + n], "big"), False
    elif p < 0xF8:
        start, length, is_list = pos + 1, p - 0xC0, True
    else:
        n = p - 0xF7
        start, length, is_list = pos + 1 + n, int.from_bytes(mm[pos + 1:pos + 1 + n], "big"), True
    if start + length > end:
        raise IndexError
    return start, start + length, is_list


def block_number(mm, start, end):
    """The number of the block whose list payload is mm[start:end], or None if unparseable."""
    try:
        hs, he, is_list = _item(mm, start, end)
        if not is_list:
            return None
        pos = hs
        for prefix, size in FIXED_BEFORE_DIFFICULTY:
            if mm[pos] != prefix:  # fast path for the canonical encoding
                _, pos, _ = _item(mm, pos, he)
            else:
                pos += size
        _, pos, _ = _item(mm, pos, he)  # difficulty
        ns, ne, is_list = _item(mm, pos, he)
        if is_list or ne - ns > 8 or pos >= he:
            return None
        return int.from_bytes(mm[ns:ne], "big")
    except IndexError:
        return None


def boundaries(mm, size, log):
    """The offset of every block, walking only the list prefixes. Raises BadInput on a
    truncated or corrupt tail."""
    offsets = array("Q")
    append = offsets.append
    pos = 0
    while pos < size:
        p = mm[pos]
        if p >= 0xF8:
            n = p - 0xF7
            if pos + 1 + n > size:
                raise BadInput(f"offset {pos}: truncated block (length prefix cut off at end of file)")
            end = pos + 1 + n + int.from_bytes(mm[pos + 1:pos + 1 + n], "big")
        elif p >= 0xC0:
            end = pos + 1 + (p - 0xC0)
        else:
            raise BadInput(f"offset {pos}: not a block (RLP list expected, found prefix 0x{p:02x})")
        if end > size:
            raise BadInput(f"offset {pos}: truncated block (needs {end - pos} bytes, {size - pos} left in the file)")
        append(pos)
        if len(offsets) % PROGRESS_EVERY == 0:
            log(f"progress: {len(offsets)} blocks read, offset {end} of {size} ({100 * end // size}%)")
        pos = end
    return offsets


def number_at(mm, offsets, i, size):
    pos = offsets[i]
    end = offsets[i + 1] if i + 1 < len(offsets) else size
    p = mm[pos]
    body = pos + 1 + (p - 0xF7 if p >= 0xF8 else 0)
    return block_number(mm, body, end)


def plan(mm, size, start_block, log):
    """The byte ranges to keep, the block counts, and the unparseable offsets.

    A geth export is contiguous and ascending: when the first and last block numbers span
    exactly the number of blocks found, block i is number first+i, so only the blocks at the
    cut are parsed (and checked). Otherwise every header is read (the exact, slower path)."""
    offsets = boundaries(mm, size, log)
    total = len(offsets)
    first, last = number_at(mm, offsets, 0, size), number_at(mm, offsets, total - 1, size)
    if first is not None and last is not None and last - first + 1 == total:
        cut = min(max(start_block - first, 0), total)
        for i in (cut - 1, cut):
            if 0 <= i < total and number_at(mm, offsets, i, size) != first + i:
                break
        else:
            ranges = [[offsets[cut], size]] if cut < total else []
            return ranges, total - cut, total, []
        log("warning: block numbers are not contiguous at the cut; reading every header")
    return plan_every_block(mm, size, offsets, start_block, log)


def plan_every_block(mm, size, offsets, start_block, log):
    ranges, kept, unparsed = [], 0, []
    total = len(offsets)
    for i in range(total):
        pos = offsets[i]
        end = offsets[i + 1] if i + 1 < total else size
        number = number_at(mm, offsets, i, size)
        if number is None:
            unparsed.append(pos)
            log(f"warning: block at offset {pos} could not be parsed; written unchanged")
        if number is None or number >= start_block:
            if ranges and ranges[-1][1] == pos:
                ranges[-1][1] = end
            else:
                ranges.append([pos, end])
            kept += 1
    return ranges, kept, total, unparsed


def clone_or_link(src, dst):
    """Share the input's data: reflink if the filesystem can, else a hard link. Returns how."""
    try:
        with open(src, "rb") as s, open(dst, "wb") as d:
            fcntl.ioctl(d.fileno(), FICLONE, s.fileno())
        return "reflink"
    except OSError:
        try:
            os.unlink(dst)
        except FileNotFoundError:
            pass
    os.link(src, dst)
    return "hard link"


def copy_ranges(src, dst, ranges):
    with open(src, "rb") as s, open(dst, "wb") as d:
        out = 0
        for start, end in ranges:
            left, off = end - start, start
            while left > 0:
                try:
                    n = os.copy_file_range(s.fileno(), d.fileno(), left, off, out)
                except OSError as e:
                    if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                        raise
                    n = _copy_plain(s, d, off, out, left)
                if n == 0:
                    raise BadInput(f"offset {off}: input ended while copying")
                left, off, out = left - n, off + n, out + n


def _copy_plain(s, d, off, out, count):
    s.seek(off)
    d.seek(out)
    data = s.read(min(count, 1 << 24))
    d.write(data)
    return len(data)


def trim(start_block, base_dir, log=lambda m: print(m, file=sys.stderr, flush=True)):
    src = os.path.join(base_dir, "chain-export.rlp")
    dst = os.path.join(base_dir, f"chain-export-from-{start_block}.rlp")
    tmp = dst + ".partial"
    for stale in (tmp, dst):  # an output of an earlier run must not outlive a failed one
        if os.path.lexists(stale):
            os.unlink(stale)
    size = os.path.getsize(src)
    if size == 0:
        raise BadInput("offset 0: the export is empty")
    with open(src, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        ranges, kept, total, unparsed = plan(mm, size, start_block, log)
    try:
        if ranges == [[0, size]]:
            how = clone_or_link(src, tmp)
        else:
            copy_ranges(src, tmp, ranges)
            how = "kernel copy"
        os.replace(tmp, dst)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    log(f"done: {kept} of {total} blocks written to {dst} ({how}); {total - kept} dropped below block {start_block}"
        + (f"; {len(unparsed)} unparseable block(s) written unchanged" if unparsed else ""))
    return dst


def main(argv):
    if len(argv) not in (2, 3) or not argv[1].isdigit():
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        print("usage: trim_export.py <start_block> [<base_dir>]", file=sys.stderr)
        return 2
    try:
        trim(int(argv[1]), argv[2] if len(argv) == 3 else ".")
    except BadInput as e:
        print(f"error: chain-export.rlp: {e}; no output written", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
