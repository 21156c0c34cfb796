"""The chain export on the host: verified whole, and trimmed (trim_export.py, installed beside
the package) into the file reth imports."""
import mmap
import os
import shutil

import trim_export
from .host import Failed, say


def verify_export(path, head, walked=None, first=1):
    """docs/spec.md §4.5 step 6 precondition: the export is whole: every block complete, no truncated tail,
    blocks first (1: the whole chain) to the noted head. walked: a jobs.Meter that already walked the file
    while it was written (the export's progress); when its walk ended exactly at the end of the
    file, only the first and last headers are read here, else the file is walked again."""
    try:
        st = os.stat(path)
    except OSError:
        raise Failed(f"{path} does not exist: export first") from None
    size = st.st_size
    if size == 0:
        raise Failed(f"{path} is empty")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if walked is not None and walked.offset == size and walked.last is not None:
            blocks, last, how = walked.count, walked.last, "walked while exported"
        else:
            try:
                end, blocks, last = trim_export.skip(mm, 0, size, 1 << 62, {"count": 0, "log": lambda m: None})
            except trim_export.BadInput as e:
                raise Failed(f"{path}: {e}") from None
            how = "walked"
        first_n, last_n = trim_export.number_of(mm, 0), trim_export.number_of(mm, last)
    if first_n != first or last_n != head or blocks != head - first + 1:
        raise Failed(f"{path}: blocks {first_n}..{last_n} ({blocks} blocks) is not the export of {first}..{head}")
    return {"first": first_n, "last": last_n, "blocks": blocks, "bytes": size, "mtimeNs": st.st_mtime_ns, "lastOffset": last, "checked": how}


def export_unchanged(path, recorded):
    """The export still is the file step 5 verified: same size and mtime, same first and last
    block (read at their offsets): nothing is walked again."""
    try:
        st = os.stat(path)
    except OSError:
        raise Failed(f"{path} is gone since it was verified") from None
    if [st.st_size, st.st_mtime_ns] != [recorded["bytes"], recorded["mtimeNs"]]:
        raise Failed(f"{path} changed since it was verified (size/mtime {recorded['bytes']}/{recorded['mtimeNs']} -> {st.st_size}/{st.st_mtime_ns}): "
                     "it is not the export that was verified; roll back (switch: rollback) and migrate again in a new attempt")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        first_n, last_n = trim_export.number_of(mm, 0), trim_export.number_of(mm, recorded["lastOffset"])
    if (first_n, last_n) != (recorded["first"], recorded["last"]):
        raise Failed(f"{path}: blocks {first_n}..{last_n}, it was verified as {recorded['first']}..{recorded['last']}")
    return recorded


def trim(v, start, verified=None, source="chain-export.rlp"):
    """verified: the record of the export's verification (step 5, or the low-downtime exports),
    when it is known whole and contiguous from its first block: the export must still be that file
    (export_unchanged: an export that changed since is refused, never trimmed into what reth
    imports; the trimmed file may be a hard link of it), and with nothing to drop the output is
    linked without walking the file again. The output is <source without .rlp>-from-<start>.rlp
    beside it."""
    if verified and "mtimeNs" in verified:
        export_unchanged(os.path.join(v.mig, source), verified)
    path = trim_export.trim(start, v.mig, log=lambda m: say(f"trim: {m}"), verified=verified, source=source)
    shutil.chown(path, v.op, v.op)
    return path
