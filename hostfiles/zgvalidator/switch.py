"""The geth -> reth switch: its 14 steps, in order, each a function of the validator found
through STEPS.

`migrate <step> <inputs>` runs one step: it checks that every earlier step has its completion
marker (<data root>/.nodefleet-switch/migration/<step>.json), skips a step whose marker is there,
refuses a marker written with other inputs (finish with the settings the switch started with, or
roll back), and writes the marker when the step is done. So a re-run after any interruption
resumes at the first unfinished step."""
import datetime
import json
import os
import re
import shutil
import time

from .chain import export_unchanged, verify_export
from .host import Failed, active, chown_tree, dispose, exec_start, install_unit, listening, now, parse_time, run, say, systemctl, copy_tree, tree_diff, tree_stat, wait
from .importing import step_import
from .stall import start_after_rollback
from .node import hashes_agree
from .exporting import check_free_disk, export_job, trim_verified
from . import lowdowntime as _low
from nodefleet_rpc import RpcFailure, block_hash, block_number, url_label

MIN_RELEASE = (1, 0, 6)


def migrate(v, step, inputs):
    mode = next((m for m, steps in MODES.items() if step in steps), None)
    if mode is None:
        raise Failed(f"unknown step {step}")
    other = [s for m, steps in MODES.items() if m != mode for s in steps if v.marker(s)]
    if other:
        raise Failed(f"{step}: a switch in the other mode is on record on this host (its step {other[-1]} is done): finish it with "
                     "the settings it started with, or roll back (switch: rollback)")
    names = list(MODES[mode])
    for before in names[:names.index(step)]:
        if not v.marker(before):
            raise Failed(f"{step}: step {before} has not completed (the steps run in order)")
    done = v.marker(step)
    if done:
        if done.get("inputs") != inputs:
            raise Failed(f"{step} completed with other inputs ({done.get('inputs')}, now {inputs}): finish the switch with "
                         "the settings it started with, or roll back (switch: rollback)")
        say(f"{step}: already done at {done['ended']}: skipped")
        return dict(done, skipped=True)
    started, t0 = now(), time.time()
    say(f"{step}: started {started}")
    data = MODES[mode][step](v)
    record = dict(data, step=step, inputs=inputs, started=started, ended=now(), seconds=round(time.time() - t0, 2))
    v.write_marker(step, record)
    say(f"{step}: done {record['ended']}")
    return record


def step_install_reth(v):
    if v.daemon == "beacond":
        # BeaconKit's beacond built from its module prints no version (`beacond version`: an empty
        # line): the Go build information in the binary names the module it was built from. The
        # 1.0.6 floor is 0G's release numbering, not BeaconKit's.
        with open(v.release_bin("beacond"), "rb") as f:
            m = re.search(rb"\nmod\tgithub\.com/berachain/beacon-kit\t(v\d+\.\d+\.\d+[^\t\n]*)\t", f.read())
        release = f"beacond {m.group(1).decode() if m else 'unknown'}"
    else:
        out = run([v.release_bin("0gchaind"), "version"]).stdout.strip()
        m = re.search(r"v?(\d+)\.(\d+)\.(\d+)", out)
        if not m or tuple(int(x) for x in m.groups()) < MIN_RELEASE:
            raise Failed(f"release package version {out!r}: the switch to reth needs 1.0.6 or later (the first release package with reth)")
        release = m.group(0)
    version = v.install_reth()
    say(f"installed {v.s['rethBinary']}: {version}")
    return {"releaseVersion": release, "rethVersion": version}


def step_note_head(v):
    geth = v.units["geth"]
    if not active(geth):
        raise Failed(f"{geth} is not running: the chain head is read from a running geth's log")
    size, free = check_free_disk(v, "the switch", "a backup and an export")
    head, logged = v.geth_head()
    say(f"noted chain head {head} (hash {logged}) from {geth}'s log; geth datadir {size} bytes, free {free} bytes")
    return {"head": head, "headHash": logged, "gethBytes": size, "freeBytes": free}


def step_stop(v):
    geth, cl = v.units["geth"], v.units["consensus"]
    noted = v.marker("s02-note-head")["head"]
    stopped_at = now()
    if active(cl):
        v.stop(cl)
        say(f"stopped {cl}")
    if v.consensus_processes():
        raise Failed(f"a 0gchaind with this key still runs after {cl} stopped: {v.consensus_processes()}")
    noted_step = v.marker("s02-note-head")
    head, logged = noted, noted_step.get("headHash")
    source = "geth's log"
    if active(geth):
        # geth's head is final once the consensus daemon is stopped; its RPC gives the whole hash
        # of that block (the log may abbreviate it), which step 10 compares reth's with.
        last, last_logged = v.geth_head()
        if last >= noted:
            head, logged = last, last_logged
        try:
            whole = block_hash(v.el_url, head)
        except RpcFailure as e:
            say(f"the whole hash of block {head} from geth: {e}; keeping the logged {logged}")
        else:
            if logged and not hashes_agree(logged, whole):
                raise Failed(f"block {head}: geth's log says hash {logged}, its RPC {whole}: geth's chain changed under it; not switching over")
            logged, source = whole, "geth's RPC"
        v.stop(geth)
        say(f"stopped {geth}; its last chain head {head}, hash {logged} ({source})")
    return {"head": head, "headHash": logged, "headHashFrom": source, "headNoted": noted, "consensusStoppedAt": stopped_at}


def step_backup(v):
    s = v.s
    for unit in (v.units["consensus"], v.units["geth"]):
        if active(unit):
            raise Failed(f"{unit} is running: the backup is taken only after both are stopped")
    for stale in os.listdir(s["dataRoot"]):
        if stale.startswith("backup-") and stale.endswith(".partial"):
            shutil.rmtree(os.path.join(s["dataRoot"], stale))
            say(f"removed the unfinished backup {stale}")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    dest = os.path.join(s["dataRoot"], f"backup-{stamp}")
    part = dest + ".partial"
    os.makedirs(part)
    # One pass: cp -a (a reflink where the filesystem can); the copy is then checked against the
    # source by metadata alone (every file there, same size and mtime), so nothing is read twice.
    manifest = {"format": 2}
    for name, src in (("geth", s["gethDir"]), ("0gchaind", s["consensusHome"])):
        copy = os.path.join(part, name)
        manifest.setdefault("method", {})[name] = copy_tree(src, copy)
        manifest[name] = tree_stat(src)
        diff = tree_diff(manifest[name], tree_stat(copy))
        if diff:
            raise Failed(f"backup of {src}: the copy differs from the source: {diff}")
    with open(os.path.join(part, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    os.rename(part, dest)
    files = sum(len(manifest[n]) for n in ("geth", "0gchaind"))
    size = sum(e[0] for n in ("geth", "0gchaind") for e in manifest[n].values())
    method = manifest["method"]["geth"]
    say(f"backed up the geth datadir and the consensus home to {dest} ({method}): {files} files, {size} bytes, "
        "every file checked present with its size and mtime")
    return {"backupDir": dest, "files": files, "bytes": size, "method": method}


def step_export(v):
    if active(v.units["geth"]):
        raise Failed(f"{v.units['geth']} is running: export only from a stopped geth")
    v.verify_backup()
    head = v.noted_head()
    argv = [v.release_bin("geth"), "export", "--datadir", v.s["gethDir"], v.export_file, "1", str(head)]
    return export_job(v, argv, v.export_file, 1, head)


def step_delete_geth(v):
    s = v.s
    trash = s["gethDir"] + ".deleting"
    backup = v.verify_backup()
    exp = v.marker("s05-export")
    if "mtimeNs" in exp:
        info = export_unchanged(v.export_file, exp)
    else:  # verified by an older tool: walked again
        info = verify_export(v.export_file, v.noted_head())
        if info["bytes"] != exp["bytes"]:
            raise Failed(f"{v.export_file} changed since it was verified ({exp['bytes']} -> {info['bytes']} bytes)")
    if os.path.exists(s["gethDir"]):
        os.rename(s["gethDir"], trash)
    if os.path.exists(trash):
        shutil.rmtree(trash)
    say(f"deleted the geth datadir {s['gethDir']} (backup {backup}, export {info['blocks']} blocks verified)")
    return {"deleted": s["gethDir"], "backupDir": backup}


def step_init_reth(v):
    s = v.s
    if os.path.exists(s["rethDir"]):
        shutil.rmtree(s["rethDir"])  # an unfinished init of an earlier run
    os.makedirs(s["rethDir"])
    chown_tree(s["rethDir"], v.op)
    out = run([s["rethBinary"], "init", "--chain", s["genesis"], "--datadir", s["rethDir"]], user=v.op)
    say((out.stdout + out.stderr).strip().splitlines()[-1] if (out.stdout + out.stderr).strip() else "reth init done")
    return {"rethDir": s["rethDir"]}


def step_trim(v):
    return trim_verified(v, "s05-export")


def transient_reth(v):
    """docs/spec.md §4.5 step 10 compares reth's height on <prefix>545 before its unit exists: reth runs
    once with the unit's own command line as a transient unit, and is stopped after."""
    argv = exec_start(os.path.join(v.s["etcDir"], v.units["reth"]))
    name = f"nodefleet-rethcheck-{v.node}"
    dispose(name)
    run(["systemd-run", f"--unit={name}", f"--uid={v.op}", f"--gid={v.op}", "-p", f"WorkingDirectory={v.s['dataRoot']}", "--", *argv])
    return name


def step_compare(v):
    """An integrity check of the imported chain: reth's block at the exported head must be the one
    geth had (its hash, noted at step 3), and, with a reference endpoint, the network's block at
    that height. The gap to the network's head is the catch-up 0gchaind drives once it starts."""
    head, want = v.noted_head(), v.noted_hash()
    ref_url = v.s.get("referenceRpcUrl")
    if not want and not ref_url:
        raise Failed(f"no hash of block {head} was noted at step 3 and no referenceRpcUrl is set: nothing to check reth's chain "
                     "against; roll back and migrate again (a new attempt notes it)")
    name = transient_reth(v)
    try:
        def height():
            try:
                return v.el_height() + 1  # +1: block 0 is a valid answer but falsy
            except (RpcFailure, Failed):
                return None
        reth = wait(f"reth to answer eth_blockNumber on {v.el_url}", height, 120) - 1
        if reth < head:
            raise Failed(f"reth holds blocks up to {reth}, the export ended at {head}: the import is incomplete; re-run, or roll back")
        got = block_hash(v.el_url, head)
    finally:
        systemctl("stop", name, check=False)
    if want and not hashes_agree(want, got):
        raise Failed(f"block {head}: reth has hash {got}, geth had {want}: the imported chain is not geth's; not switching over: roll back")
    report = {"head": head, "rethHeight": reth, "hash": got, "gethHash": want}
    if ref_url:
        try:
            theirs = block_hash(ref_url, head)
            network = block_number(ref_url)
        except RpcFailure as e:
            raise Failed(f"the reference endpoint: {e}; re-run when it answers (or unset referenceRpcUrl to check against geth's hash alone)") from None
        if theirs != got:
            raise Failed(f"block {head}: reth has hash {got}, the reference {url_label(ref_url)} has {theirs}: this chain is not the network's; not switching over: roll back")
        report.update(referenceHash=theirs, referenceHeight=network, catchUpBlocks=max(0, network - reth))
        say(f"block {head}: reth's hash {got} is geth's and the reference's; 0gchaind will catch up {report['catchUpBlocks']} blocks to the network's {network}")
    else:
        say(f"block {head}: reth's hash {got} is the one geth had")
    return report


def step_units(v):
    geth = v.units["geth"]
    if active(geth):
        raise Failed(f"{geth} is running: it must stay stopped during the switch")
    systemctl("disable", geth, check=False)
    path = f"/etc/systemd/system/{geth}"
    if os.path.exists(path):
        os.unlink(path)
    install_unit(v.s["etcDir"], v.units["reth"])
    say(f"removed {geth}; installed {v.units['reth']}")
    return {"removed": geth, "installed": v.units["reth"]}


def step_dial_url(v):
    r = v.set_dial_url()
    return {"appToml": r["file"], "rpcDialUrl": r["new"], "was": r["old"]}


def step_start(v):
    s = v.s
    reth, cl = v.units["reth"], v.units["consensus"]
    systemctl("stop", f"nodefleet-rethcheck-{v.node}", check=False)
    systemctl("daemon-reload")
    v.check_jwt(reth)
    reth_start = time.time()
    systemctl("enable", "--now", reth)
    wait(f"something listening on the engine port {s['ports']['engine']}", lambda: listening(s["ports"]["engine"]), 120)
    say(f"{reth} is listening on {s['ports']['engine']}")
    v.set_client("reth")
    rolled = {"skipped": "0gchaind already running"}
    if not active(cl):
        rolled = v.height_rollback()
        start_after_rollback(v)
        say(f"started {cl}")
    return {"rethStartedAt": reth_start, "heightRollback": rolled, "consensusStartedAt": now()}


def step_verify(v):
    since = int(v.step_marker("s13-start", "l13-start")["rethStartedAt"] * 1e6)
    verified = v.verify_running(v.units["reth"], since, ["Starting consensus engine", "syncing", "Syncing"])
    stopped = parse_time(v.step_marker("s03-stop", "l07-cutover")["consensusStoppedAt"])
    downtime = round(verified["committedAt"] - stopped, 1) if verified.get("committedAt") else None
    say(f"verified: reth at {verified['executionHeight']}, 0gchaind at {verified['consensus']['height']}, catching_up false; downtime {downtime} s")
    return dict(verified, downtimeSeconds=downtime)


def switch_mode(v):
    """The mode of the switch on record on this host ("ordered" or "lowDowntime"), or None."""
    return next((m for m, steps in MODES.items() if any(v.marker(s) for s in steps)), None)


def migration_report(v):
    mode = switch_mode(v) or "ordered"
    steps = {}
    for step in MODES[mode]:
        m = v.marker(step)
        if m:
            steps[step] = {"started": m["started"], "ended": m["ended"], "seconds": m.get("seconds")}
    report = {"node": v.node, "mode": mode, "steps": steps}
    if v.step_marker("s03-stop", "l07-cutover", "l02-note-head"):
        report["notedHead"] = v.noted_head()
    imported = v.step_marker("s09-import", "l09-import-rest", "l06-import")
    if imported:
        report["importedHeight"] = imported["importedHeight"]
        report["importAttempts"] = imported["attempts"]
    final = v.step_marker("s14-verify", "l14-verify")
    if final:
        report["downtimeSeconds"] = final["downtimeSeconds"]
        report["downtime"] = downtime_parts(report["downtimeSeconds"], steps, mode)
        report["complete"] = True
    return report


# What the downtime cannot do without, per mode: the ordered switch's backup, export and import;
# the low-downtime switch's export and import of the blocks made since its live export.
DOWNTIME_WORK = {
    "ordered": {"backup": "s04-backup", "export": "s05-export", "import": "s09-import"},
    "lowDowntime": {"export": "l08-export-rest", "import": "l09-import-rest"},
}


def downtime_parts(downtime, steps, mode="ordered"):
    """The downtime (0gchaind stopped -> its first block committed on reth) split into the work
    it cannot do without and the overhead: the rest."""
    parts = {k: (steps.get(s) or {}).get("seconds") for k, s in DOWNTIME_WORK[mode].items()}
    if downtime is None or None in parts.values():
        return dict(parts, total=downtime, overhead=None)
    return dict(parts, total=downtime, overhead=round(downtime - sum(parts.values()), 1))


# The step names, in order (one list per mode: steps.json, which nodefleet's program reads too),
# each with the function that runs it; tests/test_zg_validator_steps.py checks that they pair up.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "steps.json")) as f:
    _NAMES = json.load(f)
STEPS = dict(zip(_NAMES["ordered"], [
    step_install_reth, step_note_head, step_stop, step_backup, step_export, step_delete_geth, step_init_reth,
    step_trim, step_import, step_compare, step_units, step_dial_url, step_start, step_verify,
], strict=True))

LOW_STEPS = dict(zip(_NAMES["lowDowntime"], [
    step_install_reth, _low.step_note_head, _low.step_export_live, step_init_reth, _low.step_trim, _low.step_import,
    _low.step_cutover, _low.step_export_rest, _low.step_import_rest, step_compare, step_units, step_dial_url, step_start, step_verify,
], strict=True))
MODES = {"ordered": STEPS, "lowDowntime": LOW_STEPS}
ALL_STEPS = [*STEPS, *LOW_STEPS]
