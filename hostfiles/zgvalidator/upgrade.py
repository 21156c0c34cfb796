"""An upgrade at an agreed height (docs/rollouts.md, "Upgrades at a height"). The configure step
installs the new release beside the running one and stages its units (settings `upgrade.units`);
setup arms a watcher, nodefleet-upgrade-<node>.service (`zg-validator.py upgrade-watch`), and
restarts nothing. The watcher reads the consensus daemon's committed height on its loopback RPC;
at the upgrade height it stops the daemon, installs the staged units and starts the execution
client, then the daemon, on the new release. BeaconKit v1.1.0 parses `halt-height` (app.toml and
flag) but nothing in it acts on the value: the watcher is the halt.

The host's record, <dataRoot>/.nodefleet-switch/upgrade.json: the upgrade (release, height), the
release it leaves (`from`) and its state: `pending` (armed), `swapping` (the daemon stopped at the
height, units being replaced: whoever runs next finishes it), `done`, or `missed` (the daemon was
seen past the height on the old release: nodefleet starts neither release on that state)."""
import json
import os
import time

from .host import Failed, active, install_unit, now, save_json, say, systemctl
from .lock import take
from .starting import start_in_order

POLL_SECONDS = 0.2  # CometBFT waits at least timeout_commit (BeaconKit: 500 ms or more) after a commit
SYSTEMD_DIR = "/etc/systemd/system"


def watcher_unit(node):
    """The watcher's unit; the configure step stages it under this name (validator.ts)."""
    return f"nodefleet-upgrade-{node}.service"


def record_path(v):
    return os.path.join(v.state_dir, "upgrade.json")


def record(v):
    try:
        with open(record_path(v)) as f:
            rec = json.load(f)
        return rec if isinstance(rec, dict) else None
    except (OSError, ValueError):
        return None


def save(v, rec):
    save_json(record_path(v), rec)


def running_release(v):
    """The release the settings name (their release link's name)."""
    return os.path.basename(v.s["releaseDir"].rstrip("/"))


def same(rec, up):
    return rec is not None and rec.get("release") == up["release"] and rec.get("height") == up["height"]


def local_height(v):
    """The consensus daemon's committed height, or None while it does not answer."""
    try:
        return v.cl_status()["height"]
    except Failed:
        return None


def prepare(v):
    """setup's part: the directory whose staged units setup installs, the watcher armed or
    disarmed. Refuses a second upgrade while one is pending, a node at or past the height on the
    old release, and the old release again once the node left it at the height."""
    up, rec = v.s.get("upgrade"), record(v)
    if up is None:
        disarm(v)
        if rec is not None and rec.get("state") == "pending":
            save(v, {**rec, "state": "cancelled", "at": now()})
            say(f"upgrade to {rec.get('release')} at height {rec.get('height')}: cancelled (no longer in the config)")
        if rec is not None and rec.get("state") == "done" and rec.get("from") == running_release(v):
            raise Failed(f"this node moved from release {rec['from']} to {rec['release']} at height {rec['height']}; the config names {rec['from']} again, "
                         f"which the chain left at that height: nodefleet does not start it on this state. Name {rec['release']} in the node's release")
        return v.s["etcDir"]
    if rec is not None and rec.get("state") in ("pending", "swapping") and rec.get("release") != up["release"]:
        raise Failed(f"an upgrade to {rec['release']} at height {rec['height']} is pending on this host: one upgrade at a time. "
                     f"Let it happen, or remove `upgrade` from the config to cancel it, before asking for {up['release']}")
    if same(rec, up) and rec.get("state") == "swapping":
        swap(v, rec)
        return up["units"]
    if same(rec, up) and rec.get("state") == "done":
        disarm(v)
        return up["units"]
    if same(rec, up) and rec.get("state") == "missed":
        raise Failed(missed_message(v, rec))
    height = local_height(v)
    if height is not None and height >= up["height"]:
        raise Failed(f"the node is at height {height}, at or past the upgrade height {up['height']}, on release {running_release(v)}: "
                     f"an upgrade is scheduled ahead of the chain (nothing was restarted). If the network already upgraded, roll the node back to height {up['height']} "
                     f"and name {up['release']} in its release")
    rescheduled = rec is not None and rec.get("state") == "pending" and not same(rec, up)
    save(v, {"release": up["release"], "height": up["height"], "from": running_release(v), "state": "pending", "at": now()})
    arm(v, restart=rescheduled)
    say(f"upgrade to {up['release']} at height {up['height']}: armed ({up['height'] - height} blocks left)" if height is not None
        else f"upgrade to {up['release']} at height {up['height']}: armed (the node's height not known yet)")
    return v.s["etcDir"]


def arm(v, restart):
    """The watcher installed, enabled and running (restarted when it must read a new height)."""
    unit = watcher_unit(v.node)
    changed = install_unit(v.s["etcDir"], unit)
    systemctl("daemon-reload")
    systemctl("enable", unit, check=True)
    systemctl("restart" if (restart or changed) and active(unit) else "start", unit, check=True)


def disarm(v):
    unit = watcher_unit(v.node)
    path = os.path.join(SYSTEMD_DIR, unit)
    if not os.path.exists(path):
        return
    systemctl("disable", "--now", unit, check=False)
    os.remove(path)
    systemctl("daemon-reload")


def watch(v, sleep=time.sleep):
    """`upgrade-watch`, the watcher's process: waits for the height, then swaps (or records it missed)."""
    up = v.s.get("upgrade")
    if up is None:
        return {"node": v.node, "upgrade": None}
    while True:
        rec = record(v)
        if not same(rec, up) or rec.get("state") not in ("pending", "swapping"):
            return {"node": v.node, "upgrade": rec}
        height = None if rec["state"] == "swapping" else local_height(v)
        if rec["state"] == "swapping" or (height is not None and height >= up["height"]):
            lock = take(v.state_dir, "upgrade-watch")  # noqa: F841 (held until the process ends)
            rec = record(v)
            if same(rec, up) and rec.get("state") in ("pending", "swapping"):
                if rec["state"] == "pending" and height > up["height"]:
                    save(v, {**rec, "state": "missed", "seen": height, "at": now()})
                    say(missed_message(v, record(v)))
                else:
                    swap(v, rec if rec["state"] == "swapping" else {**rec, "stoppedAt": height})
            return {"node": v.node, "upgrade": record(v)}
        sleep(POLL_SECONDS)


def swap(v, rec):
    """At the height: the daemon stopped, the staged units of the new release installed, the
    execution client (restarted when its unit changed) and the daemon started on it."""
    up = v.s["upgrade"]
    t0 = time.monotonic()
    save(v, {**rec, "state": "swapping", "at": now()})
    cl = v.units["consensus"]
    if active(cl):
        v.stop(cl)
    el = v.units[v.host_client() or v.s["executionClient"]]
    changed = [*install_unit(up["units"], cl), *install_unit(up["units"], el)]
    systemctl("daemon-reload")
    # The daemon waits for the execution client's engine port, as in setup (starting.py).
    start_in_order(v, el, v.s["ports"]["engine"], changed)
    systemctl("disable", watcher_unit(v.node), check=False)
    seconds = round(time.monotonic() - t0, 1)
    save(v, {**rec, "state": "done", "at": now(), "seconds": seconds})
    say(f"upgrade to {up['release']} at height {rec.get('stoppedAt')}: done in {seconds:.1f} s ({', '.join(changed) or 'no unit'} changed)")


def missed_message(v, rec):
    return (f"the daemon was at height {rec.get('seen')}, past the upgrade height {rec['height']}, on release {rec['from']} before the watcher stopped it: "
            f"nodefleet starts neither release on that state (the old one must not go on, the new one must not start on the old one's blocks). "
            f"Stop it, roll its state back to height {rec['height']}, then run `pulumi up` again")


def findings(v, height):
    """The upgrade's facts for health and status (pending: height, blocks left, ready) and its fault, if any."""
    up = v.s.get("upgrade")
    if up is None:
        return None, []
    rec = record(v)
    state = rec["state"] if same(rec, up) else "not armed"
    staged = os.path.isdir(up["releaseDir"])
    watching = active(watcher_unit(v.node))
    facts = {"release": up["release"], "height": up["height"], "state": state, "blocksLeft": None if height is None else up["height"] - height,
             "ready": staged and watching}
    what = f"release {up['release']} at height {up['height']}"
    if state == "done":
        return facts, []
    if state == "missed" or (height is not None and height > up["height"]):
        return facts, [{"fault": "upgrade-overdue", "detail": f"{what}: the node is at {height}, past it, on release {running_release(v)} ({state})"}]
    if state == "swapping":
        return facts, [{"fault": "upgrade-pending", "detail": f"{what}: swapping releases now"}]
    if state == "pending" and staged and watching:
        left = "" if height is None else f": {facts['blocksLeft']} blocks left"
        return facts, [{"fault": "upgrade-pending", "detail": f"{what}{left}; ready (release staged, watcher running)"}]
    why = [w for w, bad in (("the release is not staged", not staged), ("the watcher is not running", not watching), ("not armed on the host: run pulumi up", state != "pending")) if bad]
    return facts, [{"fault": "upgrade-not-ready", "detail": f"{what}: not ready: {', '.join(why)}"}]
