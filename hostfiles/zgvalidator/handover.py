"""A validator moving to another host: one key must never sign on two machines.

`handover` runs on the host the validator leaves, before anything starts with the key on the new
one: it stops and disables 0gchaind and the execution client and removes their unit files (their
data and /etc/nodefleet/<node> are kept), checks that no 0gchaind with this key still runs,
moves priv_validator_key.json aside
(priv_validator_key.json.handed-over-<UTC time>, 0600) and reports the signing state
(priv_validator_state.json) for the new host to carry on. Run again, it finds the key already set
aside and reports the same state.

`carry_signing_state` runs on the new host (from setup, before 0gchaind starts): the carried
state replaces the local one when it is further on (height, then round, then step), so the new
host cannot sign a height the old one signed."""
import datetime
import glob
import json
import os
import shutil

from .host import Failed, active, put, say, systemctl, wait

UNIT_DIR = "/etc/systemd/system"


def key_file(v):
    return os.path.join(v.s["consensusHome"], "config", "priv_validator_key.json")


def state_file(v):
    return os.path.join(v.s["consensusHome"], "data", "priv_validator_state.json")


def handover(v):
    stopped = []
    for unit in (v.units["consensus"], v.units["reth"], v.units["geth"]):
        enabled = systemctl("is-enabled", "--quiet", unit, check=False).returncode == 0
        if enabled or active(unit):
            systemctl("disable", "--now", unit, check=False)
            wait(f"{unit} to stop", lambda u=unit: not active(u), 120)
            stopped.append(unit)
            say(f"stopped and disabled {unit}")
    removed = []
    for unit in (v.units["consensus"], v.units["reth"], v.units["geth"]):
        path = os.path.join(UNIT_DIR, unit)
        if os.path.exists(path):
            os.unlink(path)
            removed.append(path)
    if removed:
        systemctl("daemon-reload", check=False)
        say(f"removed {', '.join(removed)}")
    key = key_file(v)
    if os.path.exists(key):
        others = v.consensus_processes()
        if others:
            raise Failed(f"a 0gchaind with this validator key still runs after {v.units['consensus']} stopped ({others}): "
                         "stop it by hand; the key is not handed over while it signs here")
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        aside = f"{key}.handed-over-{stamp}"
        os.rename(key, aside)
        say(f"moved the validator key aside: {aside}")
    else:
        earlier = sorted(glob.glob(f"{key}.handed-over-*"))
        if not earlier:
            raise Failed(f"{key} is missing and was never handed over from this host: nothing to hand over; "
                         "if this host never ran the validator, set validator.abandonHost to it")
        aside = earlier[-1]
        say(f"the validator key was already set aside: {aside}")
    state = read_state(state_file(v))
    return {"node": v.node, "handedOver": True, "stopped": stopped, "unitsRemoved": removed, "keySetAside": aside, "signingState": state}


def read_state(path):
    try:
        with open(path) as f:
            state = json.load(f)
    except FileNotFoundError:
        return None
    except ValueError:
        raise Failed(f"{path} is not JSON: the signing state cannot be carried over; repair it before moving the validator") from None
    return state if isinstance(state, dict) else None


def position(state):
    """(height, round, step) of a priv_validator_state.json; (0, 0, 0) when it holds none."""
    try:
        return (int((state or {}).get("height") or 0), int((state or {}).get("round") or 0), int((state or {}).get("step") or 0))
    except (TypeError, ValueError):
        raise Failed(f"signing state {json.dumps(state)[:120]}: height, round and step must be numbers") from None


def carry_signing_state(v):
    """Applies settings.carriedSigningState (what the old host reported) when it is further on."""
    carried = v.s.get("carriedSigningState")
    if not carried:
        return None
    path = state_file(v)
    local = read_state(path)
    if position(carried) <= position(local):
        say(f"signing state: this host's {position(local)} is not behind the carried {position(carried)}: kept")
        return {"carried": False, "at": list(position(local))}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    put(path, json.dumps(carried) + "\n", 0o600)
    shutil.chown(path, v.op, v.op)
    say(f"signing state carried over from the previous host: height {position(carried)[0]}, round {position(carried)[1]}, step {position(carried)[2]}")
    return {"carried": True, "at": list(position(carried))}
