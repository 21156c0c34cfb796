#!/usr/bin/env python3
"""Health of an Aztec sequencer (installed by nodefleet), as one JSON object on stdout.

    aztec-health.py <node> [--wait SECONDS]

active: systemd state of the unit; provenBlock and latestBlock: node_getL2Tips's proven and newest
block number, in the shape the node's version answers (2.0.x: result.proven.number, a number or a
numeric string, docs/spec.md §2.3; 4.1.2: result.proven.block.number and result.proposed.number);
siblingPath: the archive's sibling path of the proven block (2.0.x: node_getArchiveSiblingPath with
that number twice, docs/spec.md §4.1; 4.1.2: node_getBlockHashMembershipWitness), whether it answered and
the length of what it returned; peerId: from the node's `Started P2P service` log line in the
journal, ANSI colour codes stripped; l1Unreachable: host[:port] of an L1 endpoint the node's log
says it failed to reach in the last 90 s; diagnoses: what these facts show is wrong, as the host's
diagnosis table (nodefleet_health.py) finds them, with the fault table's remedy; tipsError /
siblingPathError: why those calls failed; registration: what L1 says of the validator now
(status NONE/VALIDATING/…, or QUEUED with queuePosition; read only, as the registration step
looks it up). --wait waits up to SECONDS for all of them, and stops early when systemd keeps
restarting the unit (crashLoop: the unit and how often: nodefleet_units.py).
The version's shapes come from sequencer.json's `api` (2.0.x when absent).
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodefleet_health import sequencer_row  # noqa: E402
from nodefleet_rpc import RpcFailure, rpc, url_label  # noqa: E402
from nodefleet_units import RestartWatch  # noqa: E402

ETC = os.environ.get("NODEFLEET_ETC", "/etc/nodefleet")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PEER_ID = re.compile(r"""["']?peerId["']?\s*[:=]\s*["']?([1-9A-HJ-NP-Za-km-z]{20,})""")


# Where node_getL2Tips keeps a tip's block: 2.0.x (the spec, docs/spec.md §2.3) `{latest, proven, finalized}`,
# each `{number, hash}`; 4.1.2 `{proposed: {number, hash}, checkpointed, proven, finalized}`, the
# last three `{block: {number, hash}, checkpoint: {number, hash}}` (@aztec/stdlib L2TipsSchema).
TIPS = {"2.0.x": {"proven": ("proven",), "latest": ("latest",)},
        "4.1.2": {"proven": ("proven", "block"), "latest": ("proposed",)}}


def tip(tips, api, name):
    """A tip of node_getL2Tips as (number, hash) in the shape `api` answers; a clear error for any other."""
    where = TIPS[api][name]
    field = "result." + ".".join(where) + ".number"
    node = tips
    for key in where:
        node = node.get(key) if isinstance(node, dict) else None
    number = node.get("number") if isinstance(node, dict) else None
    if isinstance(number, bool) or number is None:
        raise ValueError(f"node_getL2Tips: {field} is missing or not a number: {json.dumps(tips)[:160]}")
    if isinstance(number, str) and re.fullmatch(r"[0-9]+", number):
        number = int(number)
    if not isinstance(number, int) or number < 0:
        raise ValueError(f"node_getL2Tips: {field} is {number!r}, not a number or numeric string")
    block_hash = node.get("hash")
    return number, block_hash if isinstance(block_hash, str) else None


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


# A failed L1 request as the node logs it (viem, through pino): "HTTP request failed." and the URL.
L1_FAILURE = re.compile(r"HTTP request failed\.?\s*(?:\\n|\s)*URL:\s*(\S+?)(?:\\n|\s|\"|$)")
# How recent an L1 failure in the log must be to count (the node retries every second or two).
L1_FAILURE_WINDOW_MS = 90_000


def l1_failure(lines, now_ms):
    """host[:port] of the L1 endpoint the node's current process most recently failed to reach within
    the window, or None. The current process is the pid of the newest JSON line: a failure of an
    earlier run (before a restart) no longer counts. The node logs the whole URL (an API key in it
    would be in the journal); only the origin leaves this function."""
    found, last_pid = {}, None
    for line in lines:
        if not line.startswith("{"):
            continue  # the node's own lines are JSON (LOG_JSON=1); a crash's raw stack trace repeats the line before it
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        last_pid = entry.get("pid", last_pid)
        when = entry.get("time")
        if "HTTP request failed" not in line or not isinstance(when, (int, float)) or now_ms - when > L1_FAILURE_WINDOW_MS:
            continue
        m = L1_FAILURE.search(line)
        found[entry.get("pid")] = url_label(m.group(1)) if m else "(an L1 endpoint)"
    return found.get(last_pid)


def journal(service):
    out = subprocess.run(["journalctl", "-u", service, "-b", "-o", "cat", "--no-pager"], capture_output=True, text=True)
    return out.stdout.splitlines()


def archive_witness(url, api, number, block_hash):
    """The archive's sibling path of the proven block: 2.0.x node_getArchiveSiblingPath(n, n)
    (docs/spec.md §4.1); 4.1.2 has no such method (it answers -32601) and gives the same path as
    node_getBlockHashMembershipWitness(n + 1, hash of n), read from the world state at block n.
    Returns what the node answered (None: it does not have that block)."""
    if api == "2.0.x":
        return rpc(url, "node_getArchiveSiblingPath", [str(number), str(number)])
    return rpc(url, "node_getBlockHashMembershipWitness", [number + 1, block_hash], optional=True)


def registration(node):
    """What L1 says of the validator now (aztec-register.py's read-only look-up, with the settings the
    registration step left on the host): {status, queuePosition, l1RpcUrl}, {error} when L1 did not
    answer it, or None before the first registration step."""
    path = os.path.join(ETC, node, "registration.json")
    if not os.path.exists(path):
        return None
    register = importlib.util.spec_from_file_location("aztec_register", os.path.join(os.path.dirname(os.path.abspath(__file__)), "aztec-register.py"))
    module = importlib.util.module_from_spec(register)
    register.loader.exec_module(module)
    try:
        with open(path) as f:
            return module.lookup(json.load(f))
    except (module.Failure, RpcFailure, OSError, ValueError, KeyError) as e:
        return {"error": str(e.args[0] if e.args else e)[:300]}


def check(node, spec):
    url = f"http://127.0.0.1:{spec['rpcPort']}"
    api = spec.get("api", "2.0.x")
    out = {"node": node, "service": spec["service"], "active": None, "provenBlock": None, "latestBlock": None,
           "siblingPath": None, "peerId": None, "l1Unreachable": None}
    state = subprocess.run(["systemctl", "is-active", spec["service"]], capture_output=True, text=True).stdout.strip()
    out["active"], out["state"] = state == "active", state or "unknown"
    proven_hash = None
    try:
        tips = rpc(url, "node_getL2Tips")
        out["provenBlock"], proven_hash = tip(tips, api, "proven")
    except (RpcFailure, ValueError) as e:
        out["tipsError"] = str(e)
    if out["provenBlock"] is not None:
        try:  # shown, not required: the spec names only the proven tip (2.3)
            out["latestBlock"] = tip(tips, api, "latest")[0]
        except ValueError:
            pass
        n = out["provenBlock"]
        try:
            path = archive_witness(url, api, n, proven_hash)
            out["siblingPath"] = {"ok": path is not None, "length": len(path) if isinstance(path, (str, list)) else None}
        except RpcFailure as e:
            out["siblingPath"] = {"ok": False, "length": None}
            out["siblingPathError"] = str(e)
    lines = journal(spec["service"])
    out["peerId"] = peer_id(lines)
    out["l1Unreachable"] = l1_failure(lines, time.time() * 1000)
    out["diagnoses"] = sequencer_row(node, None, out)["diagnoses"]
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
    watch = RestartWatch([spec["service"]]) if wait > 0 else None
    while True:
        out = check(node, spec)
        if not out["diagnoses"] or time.time() >= deadline:
            break
        loop = watch.looping()
        if loop:
            out["crashLoop"] = {"unit": loop[0], "restarts": loop[1]}
            break
        time.sleep(2)
    out["registration"] = registration(node)  # shown, not judged: asked of L1 once
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
