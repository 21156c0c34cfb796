"""The chain export on the host: verified whole, and trimmed (trim_export.py, installed beside
the package) into the file reth imports."""
import mmap
import os
import shutil

import trim_export
from .host import Failed, say


def verify_export(path, head):
    """Seed 4.5 step 6 precondition: the export is whole: every block complete, no truncated tail,
    first block 1 and last block the noted head."""
    try:
        size = os.path.getsize(path)
    except OSError:
        raise Failed(f"{path} does not exist: export first") from None
    if size == 0:
        raise Failed(f"{path} is empty")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        try:
            end, blocks, last = trim_export.skip(mm, 0, size, 1 << 62, {"count": 0, "log": lambda m: None})
        except trim_export.BadInput as e:
            raise Failed(f"{path}: {e}") from None
        first_n, last_n = trim_export.number_of(mm, 0), trim_export.number_of(mm, last)
    if first_n != 1 or last_n != head or blocks != head:
        raise Failed(f"{path}: blocks {first_n}..{last_n} ({blocks} blocks) is not the export of 1..{head}")
    return {"first": first_n, "last": last_n, "blocks": blocks, "bytes": size}


def trim(v, start):
    path = trim_export.trim(start, v.mig, log=lambda m: say(f"trim: {m}"))
    shutil.chown(path, v.op, v.op)
    return path
