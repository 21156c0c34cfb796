"""Step 9 of the switch: `reth import` of the trimmed export, as a transient unit, recovering from
what reth reports: `block number X does not match parent block number Y` (or a mismatched
parent hash) re-trims from Y+1 and imports again, at most importRetries times; an import cut off
(host restart, crash) is started again; a mismatched block state root stops the switch with a
report (a block is never skipped)."""
import json
import os
import re

from .chain import trim
from .host import Failed, dispose, now, read_from, save_json, say, tail
from .jobs import Meter, attach, job_state, last_imported, long_unit


def step_import(v):
    return import_chain(v, v.noted_head(), "s09-import")


def import_chain(v, head, step, source="chain-export.rlp", first=1, verified=None):
    """Imports blocks first..head of <migration>/<source> into reth (step: the step's name, for
    its state file): trimmed to <source>-from-<start>.rlp, started again from where reth stopped."""
    s = v.s
    name = f"nodefleet-import-{v.node}"
    log = os.path.join(v.mig, "import.log")
    state_path = os.path.join(v.markers, f"{step}.state.json")
    stem = source.removesuffix(".rlp")
    try:
        with open(state_path) as f:
            st = json.load(f)
    except (OSError, ValueError):
        st = {"start": first, "attempts": 0, "logOffset": 0, "history": []}
    if st.get("stateRootMismatch"):
        r = st["stateRootMismatch"]
        raise Failed(f"mismatched block state root at block {r['block']} (got {r['got']}, expected {r['expected']}): reported in "
                     f"{state_path}; a block is never skipped; roll back with switch: rollback")
    while True:
        file = os.path.join(v.mig, f"{stem}-from-{st['start']}.rlp")
        job = job_state(v, name)  # an ended import (exited or failed) is judged by its log below
        if job == "none" and st.get("pending"):
            st["history"].append({"start": st["start"], "result": "unit gone (host restarted?)"})
            st["pending"] = False
            save_json(state_path, st)
            say(f"{name} of attempt {st['attempts']} is gone (host restarted?): importing again; the import recovery finds where it stopped")
        if job == "none":
            if st["attempts"] > s["importRetries"]:
                raise Failed(f"the import did not complete in {st['attempts']} attempts ({st['history']}): roll back with switch: rollback")
            st["attempts"] += 1
            st["logOffset"] = os.path.getsize(log) if os.path.exists(log) else 0
            st["pending"] = True
            save_json(state_path, st)
            if not os.path.exists(file):
                trim(v, st["start"], verified=verified, source=source)
            long_unit(v, name, [s["rethBinary"], "import", "--chain", s["genesis"], "--datadir", s["rethDir"], file], log, "import-hold")
        meter = Meter(head)
        status = attach(v, name, meter.progress("imported", lambda: last_imported(log, st["logOffset"])))
        text = read_from(log, st["logOffset"])
        if status is None:
            continue  # gone while attached: reported at the top of the loop
        dispose(name)
        st["pending"] = False
        if status == 0 and "Chain was fully imported" in text:
            say(f"import complete: {os.path.basename(file)}")
            return {"importedHeight": head, "attempts": st["attempts"], "history": st["history"], "file": file}
        root = re.search(r"mismatched block state root\D*(\d+)\D*?got (0x[0-9a-fA-F]+)\D*?expected (0x[0-9a-fA-F]+)", text)
        if root:
            st["stateRootMismatch"] = {"block": int(root.group(1)), "got": root.group(2), "expected": root.group(3), "at": now()}
            save_json(state_path, st)
            return import_chain(v, head, step, source, first, verified)  # raises with the report
        parent = re.search(r"block number (\d+) does not match parent block number (\d+)", text)
        if parent:
            written = int(parent.group(2))
        else:
            decoded = re.findall(r"total_(?:decoded|imported)_blocks=(\d+)", text)
            if "mismatched parent hash" in text and decoded:
                written = st["start"] - 1 + int(decoded[-1])
            elif "partially imported" in text or status != 0:
                written = None  # interrupted: import the same file again; reth says where it stopped
            else:
                raise Failed(f"reth import ended (exit {status}) without 'Chain was fully imported': {tail(log)}")
        if written is not None and written >= head:
            say(f"the database already holds every block up to the head {head}: import complete")
            return {"importedHeight": head, "attempts": st["attempts"], "history": st["history"], "file": file}
        if written is not None:
            say(f"import stopped: the database holds blocks up to {written}; re-trimming from {written + 1}")
            st["history"].append({"start": st["start"], "result": f"stopped, database at {written}"})
            st["start"] = written + 1
        else:
            st["history"].append({"start": st["start"], "result": f"exit {status}, interrupted"})
            say(f"import interrupted (exit {status}): importing {os.path.basename(file)} again")
        save_json(state_path, st)
