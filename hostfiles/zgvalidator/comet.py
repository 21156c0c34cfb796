"""The consensus daemon's CometBFT RPC on the host's loopback (GET): its status and its consensus dump."""
import json
import re
import urllib.request

from .host import Failed


def result(rpc, path, timeout=3):
    """The JSON-RPC `result` of GET rpc+path; urllib's errors (an HTTPError for a status) and JSON's as raised."""
    with urllib.request.urlopen(f"{rpc}{path}", timeout=timeout) as r:
        return json.load(r)["result"]


def status(rpc):
    """/status as {"height", "catchingUp"}; Failed naming what is wrong with the answer."""
    url = f"{rpc}/status"
    try:
        info = result(rpc, "/status")["sync_info"]
        height = int(info.get("latest_block_height", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise Failed(f"GET {url}: no usable result.sync_info ({e})") from None
    catching_up = info.get("catching_up")
    if not isinstance(catching_up, bool):
        raise Failed(f"GET {url}: result.sync_info.catching_up is {catching_up!r}, not true or false")
    return {"height": height, "catchingUp": catching_up}


# CometBFT's RoundStepType, as /dump_consensus_state numbers it.
STEPS = {1: "NewHeight", 2: "NewRound", 3: "Propose", 4: "Prevote", 5: "PrevoteWait", 6: "Precommit", 7: "PrecommitWait", 8: "Commit"}


def hrs(rs):
    """`height/round/step` of a round state, its step named."""
    step = rs.get("step")
    return f"{rs.get('height')}/{rs.get('round')}/{STEPS.get(step, step)}"


def brief(rpc):
    """Where the daemon's consensus stands, in one line for an error that must say why it did not
    commit: its height/round/step, its round's prevotes and precommits (the bit array and the share
    of the power), and where it sees each peer. Never raises: what it could not read is said."""
    try:
        dump = result(rpc, "/dump_consensus_state")
        rs = dump["round_state"]
        held = next((v for v in rs.get("votes") or [] if v.get("round") == rs.get("round")), {})
        votes = ", ".join(f"{kind} {shares(held.get(f'{kind}_bit_array'))}" for kind in ("prevotes", "precommits"))
        peers = ", ".join(f"{str(p.get('node_address', '?')).split('@')[-1]} at {hrs(p['peer_state']['round_state'])}" for p in dump.get("peers") or [])
        return f"at {hrs(rs)}, {votes}; peers: {peers or 'none'}"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return f"no consensus dump at {rpc} ({e})"


def shares(bits):
    """`BA{2:x_} 48000000000/80000000000 = 0.60` as `x_ 0.60`; `?` when it is not one."""
    m = re.match(r"BA\{\d+:([x_]*)\} \S+ = ([0-9.]+)", str(bits or ""))
    return f"{m.group(1)} {m.group(2)}" if m else "?"
