#!/usr/bin/env python3
"""Holds a validator's consensus daemon until its network has its last vote: its unit's ExecStop
(installed by nodefleet).

    consensus-stop.py --rpc http://127.0.0.1:PORT [--within SECONDS]   (MAINPID set, as systemd sets it)

A validator that commits height H moves on as soon as it holds two thirds of the precommits; its own
precommit reaches its peers a gossip tick later. Stopped in between, it restarts at H+1 with H's
commit as BeaconKit's CometBFT stores it, aggregated into one BLS signature: its own precommit of H
cannot be sent again, and a peer still at H waits for it for good (docs/roles.md, "Its stop"). A
network whose other validators hold less than two thirds of the power then halts.

So, before systemd sends the daemon its SIGTERM, this tool asks the daemon's own RPC for its height
and where it sees its peers (/dump_consensus_state), and waits while a peer is one height behind it,
at most --within seconds (default 10). With no MAINPID (systemd sets none once the daemon has
exited: a crash, a failed start) there is nothing to hold and it returns at once. It never holds a
stop longer: a daemon that does not answer (refused at once; one whose answer runs past its 2 s,
as on a loaded host, is asked again until the limit), an answer it cannot read, or a peer still
behind at the limit is said on stderr (the journal) and the stop goes on; a stop held for nothing says so in one
line too (the guard ran). Exit 0 always; 2 on bad arguments.
"""
import argparse
import http.client
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

POLL_SECONDS = 0.2


def consensus_dump(rpc, timeout=2):
    """The daemon's /dump_consensus_state result; raises ValueError naming what is wrong with it."""
    with urllib.request.urlopen(f"{rpc}/dump_consensus_state", timeout=timeout) as r:
        body = r.read()
    try:
        result = json.loads(body)["result"]
    except (ValueError, KeyError, TypeError):
        raise ValueError("/dump_consensus_state: not a JSON-RPC answer with a result") from None
    if not isinstance(result, dict) or not isinstance(result.get("round_state"), dict):
        raise ValueError("/dump_consensus_state: no result.round_state")
    return result


def height_of(value, where):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"/dump_consensus_state: {where} is not a height: {str(value)[:40]!r}") from None


def peers_behind(dump):
    """(this daemon's height, the peers one height behind it as (address, height))."""
    ours = height_of(dump["round_state"].get("height"), "result.round_state.height")
    behind = []
    for i, peer in enumerate(dump.get("peers") or []):
        state = ((peer if isinstance(peer, dict) else {}).get("peer_state") or {}).get("round_state")
        if not isinstance(state, dict):
            raise ValueError(f"/dump_consensus_state: result.peers[{i}] has no peer_state.round_state")
        theirs = height_of(state.get("height"), f"result.peers[{i}].peer_state.round_state.height")
        if theirs > 0 and theirs == ours - 1:
            behind.append((str(peer.get("node_address", "?")).split("@")[-1], theirs))
    return ours, behind


def timed_out(error):
    """Whether an RPC call failed by its timeout (the daemon listens but answered late), not a refusal."""
    reason = getattr(error, "reason", error)
    return isinstance(reason, (TimeoutError, socket.timeout)) or "timed out" in str(reason)


def say(line):
    print(line, file=sys.stderr, flush=True)


def hold(rpc, within):
    """Waits while a peer is one height behind the daemon, at most `within` seconds; says why it waited or stopped waiting."""
    start = time.monotonic()
    first, slow = None, False
    while True:
        try:
            ours, behind = peers_behind(consensus_dump(rpc))
        except (OSError, urllib.error.URLError, http.client.HTTPException) as e:
            waited = time.monotonic() - start
            if timed_out(e) and waited < within:
                slow = True
                continue  # a daemon busy on a loaded host answers late: it may be in the race all the same
            late = f" (asked for {waited:.1f} s)" if slow else ""
            say(f"consensus-stop: the daemon's RPC does not answer ({getattr(e, 'reason', e)}){late}: stopping it now")
            return
        except ValueError as e:
            say(f"consensus-stop: {e}: stopping it now")
            return
        waited = time.monotonic() - start
        if not behind:
            if first is None:
                say(f"consensus-stop: at height {ours} no peer is a height behind: stopping the daemon")
            else:
                say(f"consensus-stop: {first} caught up after {waited:.1f} s: stopping the daemon at height {ours}")
            return
        if first is None:
            first = ", ".join(f"peer {a} (at {h}, this daemon at {ours}: it may still need this daemon's precommit of {h})" for a, h in behind)
        if waited >= within:
            say(f"consensus-stop: {first} still one height behind after {within:g} s: stopping the daemon anyway")
            return
        time.sleep(POLL_SECONDS)


def main(argv):
    parser = argparse.ArgumentParser(prog="consensus-stop.py")
    parser.add_argument("--rpc", required=True, help="the daemon's CometBFT RPC, http://127.0.0.1:PORT")
    parser.add_argument("--within", type=float, default=10.0, help="the longest wait, in seconds")
    args = parser.parse_args(argv)
    url = urllib.parse.urlsplit(args.rpc)
    if url.scheme != "http" or url.hostname not in ("127.0.0.1", "localhost", "::1") or url.path not in ("", "/"):
        parser.error(f"--rpc: {args.rpc!r} is not the daemon's local RPC (http://127.0.0.1:PORT)")
    if not 0 <= args.within <= 60:
        parser.error(f"--within: {args.within:g} is not between 0 and 60 seconds")
    if not os.environ.get("MAINPID"):
        return 0
    hold(args.rpc.rstrip("/"), args.within)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
