#!/usr/bin/env -S python3 -S
"""Trim a geth chain export for `reth import` (docs/spec.md §4.4 "Trim export", 4.5 steps 8 and 9).

    trim_export.py <start_block> [<base_dir>]      (python3 -S: no site packages needed)

Reads <base_dir>/chain-export.rlp (base_dir defaults to the working directory) and writes
<base_dir>/chain-export-from-<start_block>.rlp holding exactly the bytes of every block whose
number is >= start_block, in file order, byte-identical to the input's blocks.

How: the file is a concatenation of RLP lists, one per block. The tool walks the list
prefixes (a few bytes per block, which also proves the file has no truncated tail) and reads
a header's number field (header field 8, after the fixed-size fields and the difficulty) only
where it needs one; it never decodes bodies. A geth export is contiguous and ascending: the cut
is computed from the first block's number, the blocks on both sides of it are checked, the
kernel copies the kept range (copy_file_range, in a thread) while the walk goes on to the end,
and the last block's number must match the count. A file that is not one such run is handled
exactly: every header is read and kept blocks are copied as merged ranges. When nothing needs
dropping, no data is copied at all: the output is a reflink (copy-on-write clone) where the
filesystem supports it, else a hard link of the input.

Guarantees:
- progress every 100000 blocks on stderr;
- a block whose header cannot be parsed is written unchanged, with a warning naming its offset,
  wherever it sits, below the start block too (in a contiguous export only the first, last and
  cut blocks are parsed, but the walk checks every block's structure, a list whose first item
  is a list, one byte each; a block that fails it or cannot be parsed sends the file down the
  exact path, which reads every header);
- a truncated or corrupt tail (a block whose declared length runs past the end of the file, or
  bytes that are not a block) is never passed on silently: exit 1 naming the offset, and no
  output file is left behind (an output of an earlier run is removed first);
- the output is written under a temporary name and renamed when complete.
Exit codes: 0 done, 1 bad input (message names the offset), 2 usage.
"""
import errno
import fcntl
import mmap
import os
import sys
import threading
from array import array

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


def number_of(mm, pos, end=None):
    """The number of the block starting at pos (its end taken from its prefix when not given)."""
    p = mm[pos]
    n = p - 0xF7 if p >= 0xF8 else 0
    body = pos + 1 + n
    if end is None:
        end = body + (int.from_bytes(mm[pos + 1:body], "big") if n else p - 0xC0)
    if end > len(mm):
        return None
    return block_number(mm, body, end)


def skip(mm, pos, size, blocks, seen):
    """Walk over up to `blocks` blocks from pos without storing anything (the fast path's
    loop). `seen` = {"count": blocks walked so far in the file, "log": log}; progress is logged
    every PROGRESS_EVERY blocks. Returns (pos after them, blocks walked, start of the last
    one). Raises BadInput on bytes that are not a block or on a truncated tail. A block that is a
    list but whose first item is not (no header list: it cannot be parsed) is noted in
    seen["odd"] by its offset: a structural check, one byte per block, that decodes nothing."""
    from_bytes = int.from_bytes
    odd = seen.setdefault("odd", [])
    walked, last = 0, pos
    while walked < blocks and pos < size:
        chunk = min(blocks - walked, PROGRESS_EVERY - seen["count"] % PROGRESS_EVERY)
        done = 0
        # The hot loop: one iteration per block; the common long-list prefixes (2 and 3 length
        # bytes: blocks of 256 B to 16 MB) are decoded inline.
        try:
            for done in range(1, chunk + 1):
                p = mm[pos]
                last = pos
                if p == 0xF9:
                    if mm[pos + 3] < 0xC0:
                        odd.append(pos)
                    pos += 3 + ((mm[pos + 1] << 8) | mm[pos + 2])
                elif p == 0xFA:
                    if mm[pos + 4] < 0xC0:
                        odd.append(pos)
                    pos += 4 + ((mm[pos + 1] << 16) | (mm[pos + 2] << 8) | mm[pos + 3])
                elif p >= 0xF8:
                    n = p - 0xF7
                    if pos + 1 + n >= size or mm[pos + 1 + n] < 0xC0:
                        odd.append(pos)
                    pos += 1 + n + from_bytes(mm[pos + 1:pos + 1 + n], "big")
                elif p >= 0xC0:
                    if p == 0xC0 or mm[pos + 1] < 0xC0:
                        odd.append(pos)
                    pos += 1 + p - 0xC0
                else:
                    raise BadInput(f"offset {pos}: not a block (RLP list expected, found prefix 0x{p:02x})")
                if pos >= size:
                    break
        except IndexError:  # a prefix cut off by the end of the file
            raise BadInput(f"offset {last}: truncated block (the file ends inside its prefix)") from None
        if pos > size:  # only the last block can run past the end: the walk stops there
            raise BadInput(f"offset {last}: truncated block (needs {pos - last} bytes, {size - last} left in the file)")
        walked += done
        seen["count"] += done
        if seen["count"] % PROGRESS_EVERY == 0:
            seen["log"](f"progress: {seen['count']} blocks read, offset {pos} of {size} ({100 * pos // size}%)")
    return pos, walked, last


def fast_path(mm, size, start_block, src, tmp, log):
    """For a contiguous ascending export (what geth writes): block i is number first+i. Walks
    to the cut, checks the blocks on both sides of it, starts the kernel copy of the rest, and
    walks on to the end to prove the tail whole and the run contiguous. None when the file is
    not such a run (nothing is left written then)."""
    first = number_of(mm, 0)
    if first is None:
        return None
    seen = {"count": 0, "log": log}
    cut = max(start_block - first, 0)
    copier = None
    if cut == 0:
        _, total, last = skip(mm, 0, size, 1 << 62, seen)
        cut_off = 0
    else:
        cut_off, walked, prev = skip(mm, 0, size, cut, seen)
        if walked < cut:  # every block is below start_block
            total, last = walked, prev
        else:
            if cut_off < size and (number_of(mm, prev) != start_block - 1 or number_of(mm, cut_off) != start_block):
                return None
            if cut_off < size:
                copier = Copier(src, tmp, [[cut_off, size]])
                copier.start()
            try:
                _, rest, last = skip(mm, cut_off, size, 1 << 62, seen) if cut_off < size else (size, 0, prev)
            except BaseException:
                if copier is not None:
                    copier.join()
                raise
            total = walked + rest
    last_number = number_of(mm, last)
    if seen["odd"]:
        log(f"note: {len(seen['odd'])} block(s) without a header list, the first at offset {seen['odd'][0]}")
    if seen["odd"] or last_number is None or last_number - first + 1 != total:
        if copier is not None:
            copier.join()
            if os.path.lexists(tmp):
                os.unlink(tmp)
        return None
    kept = max(total - cut, 0)
    return ([[cut_off, size]] if kept else []), kept, total, [], copier


def boundaries(mm, size, log):
    """The offset of every block (the exact path's walk)."""
    offsets = array("Q")
    seen = {"count": 0, "log": log}
    pos = 0
    while pos < size:
        offsets.append(pos)
        pos, _, _ = skip(mm, pos, size, 1, seen)
    return offsets


def exact_plan(mm, size, start_block, log):
    """Every header read: for files that are not one contiguous ascending run."""
    offsets = boundaries(mm, size, log)
    ranges, kept, unparsed = [], 0, []
    total = len(offsets)
    for i in range(total):
        pos = offsets[i]
        end = offsets[i + 1] if i + 1 < total else size
        number = number_of(mm, pos, end)
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


class Copier(threading.Thread):
    """copy_file_range of byte ranges of src into a new dst, in the background: the kernel
    copies while the walk verifies the rest of the file (os.copy_file_range releases the GIL)."""

    def __init__(self, src, dst, ranges):
        super().__init__(daemon=True)
        self.src, self.dst, self.ranges, self.error = src, dst, ranges, None

    def run(self):
        try:
            copy_ranges(self.src, self.dst, self.ranges)
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller after join
            self.error = e


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


def trim(start_block, base_dir, log=lambda m: print(m, file=sys.stderr, flush=True), verified=None, source="chain-export.rlp"):
    """verified (for callers that proved the export whole and contiguous already, nodefleet's
    step 5): {"first", "last", "bytes", "mtimeNs"} of the source. When the file still has that
    size and mtime and nothing is below start_block, the output is linked with no walk. source:
    the input's name in base_dir (the output is <its name without .rlp>-from-<start_block>.rlp)."""
    src = os.path.join(base_dir, source)
    dst = os.path.join(base_dir, f"{source.removesuffix('.rlp')}-from-{start_block}.rlp")
    tmp = dst + ".partial"
    for stale in (tmp, dst):  # an output of an earlier run must not outlive a failed one
        if os.path.lexists(stale):
            os.unlink(stale)
    size = os.path.getsize(src)
    if size == 0:
        raise BadInput("offset 0: the export is empty")
    if verified and start_block <= verified["first"]:
        st = os.stat(src)
        if [st.st_size, st.st_mtime_ns] == [verified["bytes"], verified["mtimeNs"]]:
            how = clone_or_link(src, tmp)
            os.replace(tmp, dst)
            blocks = verified["last"] - verified["first"] + 1
            log(f"done: {blocks} of {blocks} blocks written to {dst} ({how}); nothing below block {start_block} "
                "(the export was verified whole and contiguous when it was written: not walked again)")
            return dst
    copier = None
    try:
        with open(src, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            result = fast_path(mm, size, start_block, src, tmp, log)
            if result is None:
                log("note: block numbers are not one contiguous run; reading every header")
                ranges, kept, total, unparsed = exact_plan(mm, size, start_block, log)
                result = (ranges, kept, total, unparsed, None)
            ranges, kept, total, unparsed, copier = result
        if copier is not None:
            copier.join()
            if copier.error is not None:
                raise copier.error
            how = "kernel copy"
        elif ranges == [[0, size]]:
            how = clone_or_link(src, tmp)
        else:
            copy_ranges(src, tmp, ranges)
            how = "kernel copy"
        os.replace(tmp, dst)
    except BaseException:
        if copier is not None and copier.is_alive():
            copier.join()
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
