"""Step 9 of the switch: `reth import` of the trimmed export, as a transient unit, judged by what
reth reports and recovered from what it wrote.

reth imports a file in chunks (1 GB by default): each chunk is checked whole (every block against
its parent, the first against the database's last block) before its pipeline runs, and a chunk
that fails the check writes nothing. Each finished chunk logs `stage=Finish checkpoint=N`.
- `Chain was fully imported` (exit 0): done.
- `mismatched block state root: got G, expected E ... bad_block=N` (a validation error of the
  Merkle stage; reth unwinds the chunk, logs `Stopped at last valid block L due to invalid block N`
  and exits 0): the switch stops with a report; a block is never skipped. Any other invalid block
  stops it the same way.
- Anything else (`Error: mismatched parent hash: got …, expected …` with exit 1 when the file does
  not continue the database, a kill, a host restart): the database is brought back to a block
  every stage finished (`reth stage unwind to-block`, which also repairs what a kill left half
  written), the trimmed file is made again from the verified export from the next block, and
  the import runs again; at most importRetries times.
Older reth (and the spec) said `block number X does not match parent block number Y`: the same
recovery applies, as it reads the database, not the message."""
import json
import os
import re

from .chain import trim
from .host import Failed, dispose, now, read_from, run, save_json, say, tail
from .jobs import Meter, attach, job_state, last_imported, long_unit

# Every stage of reth's import pipeline (reth db list StageCheckpoints); Era and
# PruneSenderRecovery do not run on an import.
PIPELINE = ("Headers", "Bodies", "SenderRecovery", "Execution", "MerkleUnwind", "AccountHashing", "StorageHashing",
            "MerkleExecute", "TransactionLookup", "IndexStorageHistory", "IndexAccountHistory", "Prune", "Finish")
STATE_ROOT = (r"mismatched block state root: got (?P<got>0x[0-9a-fA-F]+), expected (?P<expected>0x[0-9a-fA-F]+)\S*[ \t].*?bad_block=(?P<block>\d+)",  # reth 1.11
              r"mismatched block state root\D*(?P<block>\d+)\D*?got (?P<got>0x[0-9a-fA-F]+)\D*?expected (?P<expected>0x[0-9a-fA-F]+)")  # the spec's
INVALID = r"Stopped at last valid block (\d+) due to invalid block (\d+)"


def step_import(v):
    return import_chain(v, v.noted_head(), "s09-import", verified=v.marker("s05-export"))


def import_chain(v, head, step, source="chain-export.rlp", first=1, verified=None):
    """Imports blocks first..head of <migration>/<source> into reth (step: the step's name, for
    its state file): trimmed to <source>-from-<start>.rlp, started again from what reth wrote."""
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
    stop_if_invalid(st, state_path)
    while True:
        file = os.path.join(v.mig, f"{stem}-from-{st['start']}.rlp")
        job = job_state(v, name)  # an ended import (exited or failed) is judged by its log below
        if job == "none" and st.get("pending"):
            st["history"].append({"start": st["start"], "result": "unit gone (host restarted?)"})
            st["pending"], st["recover"] = False, True
            save_json(state_path, st)
            say(f"{name} of attempt {st['attempts']} is gone (host restarted?): importing again from what reth wrote")
        if job == "none":
            if st.get("recover"):
                written = recover(v, st, read_from(log, st["logOffset"]))
                if written >= head:
                    say(f"the database holds every block up to the head {head}: import complete")
                    return {"importedHeight": head, "attempts": st["attempts"], "history": st["history"], "file": file}
                if os.path.exists(file):
                    os.unlink(file)  # made again from the verified export, whatever happened to it
                st["start"], st["recover"] = written + 1, False
                save_json(state_path, st)
                say(f"the database holds blocks up to {written}: importing from {written + 1}")
                continue
            if st["attempts"] > s["importRetries"]:
                raise Failed(f"the import did not complete in {st['attempts']} attempts ({st['history']}): roll back with switch: rollback")
            st["attempts"] += 1
            st["logOffset"] = os.path.getsize(log) if os.path.exists(log) else 0
            st["pending"] = True
            save_json(state_path, st)
            if not os.path.exists(file):
                trim(v, st["start"], verified=verified, source=source)
            long_unit(v, name, reth(v, "import", file), log, "import-hold")
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
        judge_invalid(st, text, state_path)  # raises when reth found an invalid block
        errors = re.findall(r"^(?:Error: )?(.*(?:mismatched|does not match|partially imported|rror).*)$", text, re.M)
        why = errors[-1].strip()[:300] if errors else f"exit {status}"
        st["history"].append({"start": st["start"], "result": why})
        st["recover"] = True
        save_json(state_path, st)
        say(f"the import stopped ({why}): recovering from what reth wrote")


def reth(v, command, *args):
    """reth <command> with the node's chain and datadir, then args. Its output (the unit's log, or
    captured) is the only log: no colour codes, no debug log files under the operator's home."""
    s = v.s
    return [s["rethBinary"], *command.split(), "--color", "never", "--log.file.max-files", "0", "--chain", s["genesis"], "--datadir", s["rethDir"], *args]


def stage_checkpoints(v):
    """reth's stage checkpoints: {stage: block}; opens the database read-only."""
    out = run(reth(v, "db", "--quiet", "list", "StageCheckpoints", "--json", "--len", "100"), user=v.op).stdout
    try:
        return {stage: int(cp["block_number"]) for stage, cp in json.loads(out)}
    except (ValueError, TypeError, KeyError) as e:
        raise Failed(f"reth db list StageCheckpoints: not the list of [stage, checkpoint] it prints ({e}): {out[:200]!r}") from None


def recover(v, st, text):
    """After an import that did not complete: brings reth's database back to the last block every
    stage finished and returns it. The floor is what the database held when this attempt began
    (the previous recovery's block); a chunk this attempt finished counts when its Finish stage
    is in the log and every stage of the database agrees."""
    floor = st["start"] - 1
    target = max([floor] + [int(n) for n in re.findall(r"stage=Finish checkpoint=(\d+)", text)])
    for _ in range(2):
        # Read-write: also repairs what a kill left half written (a read-only open refuses it).
        run(reth(v, "stage unwind", "to-block", str(target)), user=v.op)
        cps = stage_checkpoints(v)
        lowest = min(cps.get(stage, 0) for stage in PIPELINE)
        if lowest >= target:
            return target
        say(f"reth's stages stand at {lowest}..{max(cps.get(stage, 0) for stage in PIPELINE)}, not all at {target}: unwinding to {lowest}")
        target = lowest
    raise Failed(f"reth's stage checkpoints stay apart after unwinding to {target}: {cps}")


def judge_invalid(st, text, state_path):
    """reth found an invalid block: recorded, then the same stop on every re-run (never skipped)."""
    for pattern in STATE_ROOT:
        m = re.search(pattern, text)
        if m:
            st["stateRootMismatch"] = {"block": int(m["block"]), "got": m["got"], "expected": m["expected"], "at": now()}
            break
    else:
        m = re.search(INVALID, text)
        if not m:
            return
        lines = [ln for ln in text.splitlines() if "validation error" in ln or "Invalid block" in ln]
        st["invalidBlock"] = {"block": int(m[2]), "lastValid": int(m[1]), "error": (lines[0] if lines else m[0])[:300], "at": now()}
    save_json(state_path, st)
    stop_if_invalid(st, state_path)


def stop_if_invalid(st, state_path):
    if st.get("stateRootMismatch"):
        r = st["stateRootMismatch"]
        raise Failed(f"mismatched block state root at block {r['block']} (got {r['got']}, expected {r['expected']}): reported in "
                     f"{state_path}; a block is never skipped; roll back with switch: rollback")
    if st.get("invalidBlock"):
        r = st["invalidBlock"]
        raise Failed(f"reth found block {r['block']} invalid ({r['error']}): reported in {state_path}; a block is never skipped; "
                     "roll back with switch: rollback")
