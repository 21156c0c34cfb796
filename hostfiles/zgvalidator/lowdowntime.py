"""The low-downtime switch (`lowDowntime: true`): the chain is exported from the running geth and
imported into reth while 0gchaind keeps committing on geth; only the cutover stops the validator:
0gchaind and geth stopped, the blocks made since the live export exported and imported, the
head's hash compared, the units switched and started. The validator is down for the blocks made
during the import, not for the whole chain.

    l01-install-reth   as s01
    l02-note-head      geth and 0gchaind running, geth's IPC socket there; free disk >= 2x the geth
                       datadir (the export and reth's database, with geth's datadir kept whole);
                       the head and its hash from geth's RPC
    l03-export-live    blocks 1..head exported by the running geth (admin_exportChain over its IPC
                       socket, in the transient unit nodefleet-export-<node>), verified
    l04-init-reth      as s07
    l05-trim           as s08
    l06-import         as s09, while 0gchaind commits on geth
    l07-cutover        0gchaind stopped and disabled (downtime starts), geth's final head and its
                       whole hash from its RPC, geth stopped and disabled
    l08-export-rest    blocks head+1..final exported by `geth export` from the stopped geth, verified
    l09-import-rest    imported into reth, which checks that they continue its chain
    l10..l14           as s10..s14: reth's hash at the final head must be geth's, units, dial URL,
                       start, verify

geth's datadir is never deleted here: it is the way back (rollback starts geth on it; before the
cutover the validator is not even stopped) until cleanup removes it with `removeBackup`."""
import json
import os

from .host import Failed, active, mono_to_realtime_usec, now, say, unit_props
from .importing import import_chain
from .exporting import check_free_disk, export_job, trim_verified
from .node import LIB
from nodefleet_rpc import RpcFailure, block_hash, block_number

REST = "chain-rest.rlp"


def ipc_path(v):
    return os.path.join(v.s["gethDir"], "geth.ipc")


def step_note_head(v):
    geth, cl = v.units["geth"], v.units["consensus"]
    for unit in (geth, cl):
        if not active(unit):
            raise Failed(f"{unit} is not running: the low-downtime switch exports while the validator runs (start it, or use the ordered switch)")
    if not os.path.exists(ipc_path(v)):
        raise Failed(f"{ipc_path(v)} does not exist: the live export needs geth's IPC socket (geth must run without --ipcdisable)")
    size, free = check_free_disk(v, "the low-downtime switch", "the export and reth's database, while geth's datadir stays whole as the way back")
    try:
        head = block_number(v.el_url)
        whole = block_hash(v.el_url, head)
    except RpcFailure as e:
        raise Failed(f"geth's head: {e}") from None
    say(f"noted geth's head {head} (hash {whole}) while it runs; geth datadir {size} bytes, free {free} bytes")
    return {"head": head, "headHash": whole, "gethBytes": size, "freeBytes": free}


def step_export_live(v):
    head = v.marker("l02-note-head")["head"]
    argv = ["python3", "-S", os.path.join(LIB, "nodefleet_rpc.py"), "ipc", ipc_path(v), "admin_exportChain", json.dumps([v.export_file, 1, head])]
    return export_job(v, argv, v.export_file, 1, head)


def step_trim(v):
    return trim_verified(v, "l03-export-live")


def step_import(v):
    return import_chain(v, v.marker("l02-note-head")["head"], "l06-import", verified=v.marker("l03-export-live"))


def step_cutover(v):
    geth, cl = v.units["geth"], v.units["consensus"]
    live = v.marker("l02-note-head")["head"]
    try:
        now_head = block_number(v.el_url) if active(geth) else None
    except RpcFailure as e:
        raise Failed(f"geth's head: {e}; re-run, or roll back (geth's datadir is whole)") from None
    if now_head is not None and now_head < live:  # before anything is stopped
        raise Failed(f"geth's head {now_head} is below the {live} exported live: its chain went back; roll back (switch: rollback)")
    if active(cl):
        stopped_at = now()
        v.stop(cl)
        say(f"stopped {cl}: the downtime starts")
    else:  # stopped by an earlier run of this step: the downtime started then
        since = int(unit_props(cl, "InactiveEnterTimestampMonotonic").get("InactiveEnterTimestampMonotonic") or 0)
        stopped_at = now(mono_to_realtime_usec(since) / 1e6) if since else now()
    if v.consensus_processes():
        raise Failed(f"a 0gchaind with this key still runs after {cl} stopped: {v.consensus_processes()}")
    if active(geth):
        # geth's head is final once the consensus daemon is stopped; its RPC gives the whole hash.
        try:
            head = block_number(v.el_url)
            whole = block_hash(v.el_url, head)
        except RpcFailure as e:
            raise Failed(f"geth's final head: {e}; re-run, or roll back (geth's datadir is whole)") from None
        source = "geth's RPC"
    else:  # stopped by an earlier run of this step: its log has the head (maybe abbreviated hash)
        head, whole = v.geth_head()
        source = "geth's log"
    if head < live:
        raise Failed(f"geth's head {head} is below the {live} exported live: its chain went back; roll back (switch: rollback)")
    if active(geth):
        v.stop(geth)
    say(f"stopped {geth}; its final head {head}, hash {whole} ({source}): {head - live} block(s) made since the live export")
    return {"head": head, "headHash": whole, "headHashFrom": source, "liveHead": live, "consensusStoppedAt": stopped_at}


def step_export_rest(v):
    cut = v.marker("l07-cutover")
    if active(v.units["geth"]):
        raise Failed(f"{v.units['geth']} is running: export only from a stopped geth")
    first, last = cut["liveHead"] + 1, cut["head"]
    path = os.path.join(v.mig, REST)
    if last < first:
        say("no block was made since the live export: nothing more to export")
        return {"first": first, "last": last, "blocks": 0}
    argv = [v.release_bin("geth"), "export", "--datadir", v.s["gethDir"], path, str(first), str(last)]
    return export_job(v, argv, path, first, last)


def step_import_rest(v):
    rest = v.marker("l08-export-rest")
    if rest["blocks"] == 0:
        return {"importedHeight": v.noted_head(), "attempts": 0, "history": [], "file": None}
    return import_chain(v, rest["last"], "l09-import-rest", source=REST, first=rest["first"], verified=rest)
