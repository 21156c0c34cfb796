"""The chain export as a job of its own, and the trim of a verified export: the pieces both switch
modes run (the ordered switch's steps 5 and 8, the low-downtime switch's live and final exports)."""
import os
import shutil

from .chain import trim, verify_export
from .host import Failed, dispose, say, tail, tree_bytes
from .jobs import Meter, attach, count_blocks, job_state, long_unit


def check_free_disk(v, who, what):
    """Free disk on the data root >= 2x the geth datadir (measured from metadata): (size, free)."""
    size = tree_bytes(v.s["gethDir"])
    st = os.statvfs(v.s["dataRoot"])
    free = st.f_bavail * st.f_frsize
    if free < 2 * size:
        raise Failed(f"free disk on {v.s['dataRoot']}: {free} bytes, {who} needs 2x the geth datadir ({2 * size} bytes: {what})")
    return size, free


def export_job(v, argv, path, first, last):
    """Runs an export of blocks first..last into path (argv writes it) as the transient unit
    nodefleet-export-<node>, or attaches to the one running; verifies the file by the walk that
    showed its progress. A failed or vanished export is started afresh."""
    os.makedirs(v.mig, exist_ok=True)
    shutil.chown(v.mig, v.op, v.op)
    name = f"nodefleet-export-{v.node}"
    log = os.path.join(v.mig, "export.log")
    for attempt in (1, 2):
        if job_state(v, name) in ("none", "failed"):  # a failed export is run again
            if os.path.exists(path):
                os.unlink(path)  # geth export appends, and admin_exportChain refuses an existing file
                say(f"removed a partial {os.path.basename(path)} before exporting again")
            long_unit(v, name, argv, log, "export-hold")
        meter = Meter(last - first + 1)  # its walk, for progress, is also the export's verification below
        status = attach(v, name, meter.progress("exported", lambda: count_blocks(path, meter)))
        if status is None:
            say(f"{name} is gone (host restarted?): exporting again")
            continue
        dispose(name)
        if status != 0:
            raise Failed(f"the export failed (exit {status}): {tail(log)}")
        break
    else:
        raise Failed("the export did not complete")
    count_blocks(path, meter)  # the tail written since the last progress line
    info = verify_export(path, last, walked=meter, first=first)
    say(f"export verified ({info['checked']}): blocks {info['first']}..{info['last']} ({info['blocks']} blocks, {info['bytes']} bytes), no truncated tail")
    return info


def trim_verified(v, export_step):
    """docs/spec.md §4.5 step 8 on the export that export_step verified (linked, not walked again, when its
    marker has the file's size and mtime; an older tool's marker has not)."""
    exp = v.marker(export_step)
    path = trim(v, 1, verified=exp if "mtimeNs" in exp else None)
    return {"file": path, "bytes": os.path.getsize(path)}
