"""`rollback` (back to geth from the verified backup, from any point after it) and `cleanup` (the
export files, and optionally geth and the backup, after 24 h of reth running)."""
import glob
import os
import re
import shutil
import time

from .stall import start_after_rollback
from .switch import switch_mode
from .host import Failed, active, copy_tree, install_unit, journal, listening, now, put, say, systemctl, tree_diff, tree_stat, unit_props, wait

# Where units that may start the release's geth are: installed, and staged by each node's configure
# step (a validator's geth unit after its switch, which its rollback installs again).
UNIT_GLOBS = ("/etc/systemd/system/*.service", "/etc/nodefleet/*/*.service")
# The release's list of its files, which its install and the drift check verify (install-release.sh).
RELEASE_FILES = ".nodefleet-files.sha256"


def rollback(v):
    s = v.s
    geth, reth, cl = v.units["geth"], v.units["reth"], v.units["consensus"]
    if not os.path.isdir(v.markers) or not os.listdir(v.markers):
        if v.host_client() == "reth":
            raise Failed("this validator runs reth and no switch is recorded on the host: there is no geth backup to roll back to")
        say("no switch in progress: nothing to roll back")
        return {"node": v.node, "rolledBack": False}
    if switch_mode(v) == "lowDowntime" and not v.marker("l07-cutover"):
        return rollback_before_cutover(v)
    backup = v.verify_backup() if v.marker("s04-backup") else None
    started = now()
    for unit in (f"nodefleet-import-{v.node}", f"nodefleet-export-{v.node}", f"nodefleet-rethcheck-{v.node}"):
        systemctl("stop", unit, check=False)
    v.stop(cl)
    v.stop(reth)
    # geth too: a re-run of a rollback that already started it must not restore under a live database.
    v.stop(geth)
    if v.consensus_processes():
        raise Failed(f"a 0gchaind with this key still runs: {v.consensus_processes()}")
    if os.path.exists(f"/etc/systemd/system/{reth}"):
        os.unlink(f"/etc/systemd/system/{reth}")
    trash = s["gethDir"] + ".deleting"
    if v.marker("s06-delete-geth") or os.path.exists(trash) or not os.path.isdir(s["gethDir"]):
        if backup is None:
            raise Failed("the geth datadir is gone and there is no verified backup: cannot roll back")
        restoring = s["gethDir"] + ".restoring"
        for stale in (restoring, trash, s["gethDir"]):
            if os.path.exists(stale):
                shutil.rmtree(stale)
        how = copy_tree(os.path.join(backup, "geth"), restoring)
        diff = tree_diff(tree_stat(os.path.join(backup, "geth")), tree_stat(restoring))
        if diff:
            raise Failed(f"the restored geth datadir differs from the backup {backup}: {diff}")
        say(f"copied the backup's geth datadir ({how})")
        os.rename(restoring, s["gethDir"])
        say(f"restored the geth datadir from {backup}")
        restored = True
    else:
        say("the geth datadir was never deleted: kept as it is")
        restored = False
    install_unit(s["etcDir"], geth)
    systemctl("daemon-reload")
    v.check_jwt(geth)
    v.set_dial_url()
    geth_start = time.time()
    systemctl("enable", "--now", geth)
    wait(f"{geth} to listen on {s['ports']['engine']}", lambda: listening(s["ports"]["engine"]), 120)
    v.set_client("geth")
    # geth is back at its head of the switch (the backup); blocks made on reth since are not
    # in it, so the consensus height is expected to be that many heights ahead.
    committed = [int(h) for h in re.findall(r"Committed state.*?\bheight=(\d+)", journal(cl))]
    gap = (committed[-1] - v.noted_head()) if committed and v.step_marker(*v.NOTED) else 0
    rolled = v.height_rollback(expected_gap=gap)
    start_after_rollback(v)
    verified = v.verify_running(geth, int(geth_start * 1e6), ["Chain head was updated", "Forkchoice requested sync", "Syncing beacon headers"])
    if os.path.exists(s["rethDir"]):
        shutil.rmtree(s["rethDir"])
    history = v.archive_markers("rolled-back")
    say(f"rolled back to geth; the switch's markers are kept in {history}")
    return {"node": v.node, "rolledBack": True, "restoredFromBackup": restored, "backupDir": backup, "heightRollback": rolled,
            "started": started, "ended": now(), **verified}


def rollback_before_cutover(v):
    """A low-downtime switch before its cutover: the validator still runs on geth (it is started
    again if an interrupted cutover stopped it); only the switch's own work goes: its jobs, reth's
    database and the export files."""
    s = v.s
    geth, cl = v.units["geth"], v.units["consensus"]
    started = now()
    for unit in (f"nodefleet-import-{v.node}", f"nodefleet-export-{v.node}", f"nodefleet-rethcheck-{v.node}"):
        systemctl("stop", unit, check=False)
    kept_running = active(geth) and active(cl)
    if not active(geth):
        systemctl("enable", "--now", geth)
        wait(f"{geth} to listen on {s['ports']['engine']}", lambda: listening(s["ports"]["engine"]), 120)
        say(f"started {geth} again (its datadir was never touched)")
    if not active(cl):
        v.height_rollback()
        start_after_rollback(v)
        say(f"started {cl} again")
    removed = []
    if os.path.exists(s["rethDir"]):
        shutil.rmtree(s["rethDir"])
        removed.append(s["rethDir"])
    removed += remove_exports(v)
    v.set_client("geth")
    history = v.archive_markers("rolled-back")
    say(f"rolled back a low-downtime switch before its cutover: the validator {'never stopped' if kept_running else 'runs on geth again'}; "
        f"removed {', '.join(removed) or 'nothing'}; the markers are kept in {history}")
    return {"node": v.node, "rolledBack": True, "beforeCutover": True, "validatorKeptRunning": kept_running, "removed": removed,
            "started": started, "ended": now()}


def geth_users(v):
    """Units of other nodes (installed or staged) that start the release's geth: by its link or
    by the version's directory it points at."""
    link = os.path.join(v.s["releaseDir"], "bin", "geth")
    names = {link, os.path.join(os.path.realpath(v.s["releaseDir"]), "bin", "geth")}
    # This node's own geth unit, staged (and installed, should it still be) goes with its switch.
    own = {os.path.realpath(os.path.join(d, v.units["geth"])) for d in (v.s["etcDir"], os.path.dirname(UNIT_GLOBS[0]))}
    users = []
    for pattern in UNIT_GLOBS:
        for path in sorted(glob.glob(pattern)):
            if os.path.realpath(path) in own:
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            if any(re.search(re.escape(n) + r"(\s|$)", text) for n in names):
                users.append(path)
    return users


def remove_release_geth(v):
    """Removes the release version's geth and takes it off the release's list of files, so that
    neither its install nor the drift check takes the removal for damage (which would install the
    release again and restart the daemons that start from it)."""
    directory = os.path.realpath(v.s["releaseDir"])
    path = os.path.join(directory, "bin", "geth")
    listing = os.path.join(directory, RELEASE_FILES)
    if os.path.exists(listing):
        with open(listing, encoding="utf-8") as f:
            lines = f.read().splitlines()
        kept = [line for line in lines if line.partition("  ")[2] != "bin/geth"]
        if kept != lines:
            put(listing, "".join(line + "\n" for line in kept), os.stat(listing).st_mode & 0o7777)
    if os.path.exists(path):
        os.unlink(path)
        return [path]
    return []


def remove_exports(v):
    """The RLP export files (whole, trimmed, partial) in the migration directory: their paths."""
    removed = []
    if os.path.isdir(v.mig):
        for name in sorted(os.listdir(v.mig)):
            if name.endswith(".rlp") or name.endswith(".rlp.partial"):
                os.unlink(os.path.join(v.mig, name))
                removed.append(os.path.join(v.mig, name))
    return removed


def cleanup(v, clock=time.monotonic):
    s = v.s
    reth = v.units["reth"]
    if not v.step_marker("s14-verify", "l14-verify"):
        raise Failed("the switch to reth has not completed on this host: nothing to clean up")
    if not active(reth):
        raise Failed(f"{reth} is not running: cleanup waits for 24 hours of stable running")
    since = int(unit_props(reth, "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"] or 0) / 1e6
    hours = (clock() - since) / 3600
    need = s["cleanupAfterHours"]
    if hours < need:
        raise Failed(f"{reth} has been active for {hours:.1f} h (from systemd); cleanup waits until {need} h (24 to 48 hours of stable running before the way back is removed)")
    if s["cleanup"].get("removeGethBinary"):
        others = geth_users(v)
        if others:
            raise Failed(f"the release's geth is still started by {', '.join(others)}: not removed (nothing was); "
                         "set cleanup.removeGethBinary to false for this node, or clean up the other node first")
    removed = remove_exports(v)
    if s["cleanup"].get("removeGethBinary"):
        removed += remove_release_geth(v)
    if s["cleanup"].get("removeBackup"):
        # The ordered switch's backup; the low-downtime switch keeps geth's datadir whole instead.
        backup = v.marker("s04-backup")["backupDir"] if v.marker("s04-backup") else s["gethDir"]
        if os.path.exists(backup):
            shutil.rmtree(backup)
            removed.append(backup)
    for path in removed:
        say(f"removed {path}")
    return {"node": v.node, "rethActiveHours": round(hours, 1), "removed": removed}
