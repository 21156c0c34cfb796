#!/usr/bin/env python3
"""Health of an Aztec sequencer (installed by nodefleet), as one JSON object on stdout.

    aztec-health.py <node> [--wait SECONDS]

active: systemd state of the unit; provenBlock: node_getL2Tips result.proven.number (a number or
a numeric string, seed 2.3); siblingPath: node_getArchiveSiblingPath with that number twice
(seed 4.1), whether it answered and the length of what it returned; peerId: from the node's
`Started P2P service` log line in the journal, ANSI colour codes stripped; diagnoses: what is
wrong, with what to do; tipsError / siblingPathError: why those calls failed. --wait waits up to SECONDS for all of them.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodefleet_rpc import RpcFailure, rpc  # noqa: E402

ETC = os.environ.get("NODEFLEET_ETC", "/etc/nodefleet")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PEER_ID = re.compile(r"""["']?peerId["']?\s*[:=]\s*["']?([1-9A-HJ-NP-Za-km-z]{20,})""")


def proven_number(tips):
    """result.proven.number as an int; a clear error for any other shape."""
    proven = tips.get("proven") if isinstance(tips, dict) else None
    number = proven.get("number") if isinstance(proven, dict) else None
    if isinstance(number, bool) or number is None:
        raise ValueError(f"node_getL2Tips: result.proven.number is missing or not a number: {json.dumps(tips)[:120]}")
    if isinstance(number, int) and number >= 0:
        return number
    if isinstance(number, str) and re.fullmatch(r"[0-9]+", number):
        return int(number)
    raise ValueError(f"node_getL2Tips: result.proven.number is {number!r}, not a number or numeric string")


def peer_id(lines):
    """The peerId of the newest 'Started P2P service' line (pino JSON or coloured text)."""
    found = None
    for line in lines:
        plain = ANSI.sub("", line)
        if "Started P2P service" in plain or "peerId" in plain:
            m = PEER_ID.search(plain)
            if m:
                found = m.group(1)
    return found


def journal(service):
    out = subprocess.run(["journalctl", "-u", service, "-b", "-o", "cat", "--no-pager"], capture_output=True, text=True)
    return out.stdout.splitlines()


def check(node, spec):
    url = f"http://127.0.0.1:{spec['rpcPort']}"
    out = {"node": node, "service": spec["service"], "active": None, "provenBlock": None, "siblingPath": None, "peerId": None, "diagnoses": []}
    state = subprocess.run(["systemctl", "is-active", spec["service"]], capture_output=True, text=True).stdout.strip()
    out["active"], out["state"] = state == "active", state or "unknown"
    if not out["active"]:
        out["diagnoses"].append(f"{spec['service']} is {state or 'unknown'}: journalctl -u {spec['service']}")
    try:
        out["provenBlock"] = proven_number(rpc(url, "node_getL2Tips"))
    except (RpcFailure, ValueError) as e:
        out["tipsError"] = str(e)
        out["diagnoses"].append(f"{e}: the node's RPC is not answering as expected")
    if out["provenBlock"] is not None:
        n = str(out["provenBlock"])
        try:
            path = rpc(url, "node_getArchiveSiblingPath", [n, n])
            out["siblingPath"] = {"ok": path is not None, "length": len(path) if isinstance(path, (str, list)) else None}
            if path is None:
                out["diagnoses"].append(f"node_getArchiveSiblingPath({n}, {n}) returned null: the archiver has not synced that block")
        except RpcFailure as e:
            out["siblingPath"] = {"ok": False, "length": None}
            out["siblingPathError"] = str(e)
            out["diagnoses"].append(str(e))
    out["peerId"] = peer_id(journal(spec["service"]))
    if out["peerId"] is None:
        out["diagnoses"].append("no 'Started P2P service' line with a peerId in this boot's journal yet: the P2P service has not started")
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    node = argv[1]
    wait = float(argv[argv.index("--wait") + 1]) if "--wait" in argv else 0
    with open(os.path.join(ETC, node, "sequencer.json")) as f:
        spec = json.load(f)
    deadline = time.time() + wait
    while True:
        out = check(node, spec)
        if not out["diagnoses"] or time.time() >= deadline:
            break
        time.sleep(2)
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
