#!/usr/bin/env python3
"""Health of a 0G storage node (installed by nodefleet), as one JSON object on stdout.

    zgs-health.py <node> [--wait SECONDS]

endpoint: the endpoint in config.toml as scheme://host[:port] (its path and query, where hosted
endpoints keep API keys, are never shown); chainHead: its eth_blockNumber (hex -> decimal); logSyncHeight and
connectedPeers: zgs_getStatus of the node; confirmations: config.toml's confirmation_block_count
(the node syncs the log only up to chainHead - confirmations: its height is never closer); behind:
chainHead - confirmations - logSyncHeight; synced: behind < 5 (docs/spec.md §8);
logFile: today's UTC log file <log_directory>/zgs.log.<YYYY-MM-DD> and whether it exists;
increasing: whether logSyncHeight grew since the previous check (sampleSeconds before); active:
the service's systemd state (state: is-active's word, "activating" in a restart loop);
endpointError / statusError: why eth_blockNumber or zgs_getStatus did not answer; startError: why
the node's last start failed, from its log ("Failed to start zgs node reason=…": zgs_node v1.1.0
exits at start when its endpoint does not answer, when its miner account cannot pay for its miner
id registration, …; systemd then restarts it every 5 s), with URLs cut to scheme://host[:port];
diagnoses: docs/spec.md §7's failure modes these facts show, as the host's diagnosis table
(nodefleet_health.py) finds them: fault code, severity, detail and the fault table's remedy.
--wait waits up to SECONDS for the node to answer and sync, and stops early when systemd keeps
restarting its service (crashLoop: the unit and how often: nodefleet_units.py).
"""
import datetime
import json
import os
import re
import subprocess
import sys
import time
import tomllib
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodefleet_health import storage_row  # noqa: E402  (installed beside this script)
from nodefleet_rpc import rpc_request, url_label  # noqa: E402
from nodefleet_units import RestartWatch  # noqa: E402


def rpc(url, method, params=None):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    req = rpc_request(url, body)
    with urllib.request.urlopen(req, timeout=5) as resp:
        answer = json.loads(resp.read())
    if "error" in answer:
        raise OSError(answer["error"].get("message", "JSON-RPC error"))
    return answer["result"]


def check(node):
    with open(f"/etc/nodefleet/{node}/storage.json") as f:
        spec = json.load(f)
    with open(spec["config"], "rb") as f:
        cfg = tomllib.load(f)
    endpoint = cfg["blockchain_rpc_endpoint"]
    confirmations = cfg.get("confirmation_block_count", 3)  # zgs_node's own default
    out = {"node": node, "endpoint": url_label(endpoint), "chainHead": None, "logSyncHeight": None, "behind": None, "confirmations": confirmations,
           "synced": False, "connectedPeers": None, "increasing": None, "sampleSeconds": None}
    state = subprocess.run(["systemctl", "is-active", spec["service"]], capture_output=True, text=True).stdout.strip()
    out["service"], out["active"], out["state"] = spec["service"], state == "active", state or "unknown"
    try:
        out["chainHead"] = int(rpc(endpoint, "eth_blockNumber"), 16)
    except (OSError, ValueError) as e:
        out["endpointError"] = str(e).replace(endpoint, url_label(endpoint))
    listen = cfg.get("rpc", {}).get("listen_address", "127.0.0.1:5678").replace("0.0.0.0", "127.0.0.1")
    try:
        status = rpc(f"http://{listen}", "zgs_getStatus")
        out["logSyncHeight"], out["connectedPeers"] = status["logSyncHeight"], status["connectedPeers"]
    except (OSError, ValueError, KeyError) as e:
        out["statusError"] = str(e)
    if out["chainHead"] is not None and out["logSyncHeight"] is not None:
        out["behind"] = max(0, out["chainHead"] - confirmations - out["logSyncHeight"])
        out["synced"] = out["behind"] < 5
    state = f"/run/nodefleet/{node}-health.json"
    try:
        with open(state) as f:
            previous = json.load(f)
        before = previous["logSyncHeight"]
        if isinstance(previous.get("at"), (int, float)):
            out["sampleSeconds"] = round(time.time() - previous["at"], 1)
        if out["logSyncHeight"] is not None and before is not None:
            out["increasing"] = out["logSyncHeight"] > before
    except (OSError, ValueError, KeyError):
        pass
    # The sample is shared by every caller on the host (the health timer, status, the health step,
    # a gate), which may run at once: written whole under a name of this run's, then renamed over
    # it, so a reader gets one sample or the one before, never half of one (sampleSeconds says how
    # old it was).
    os.makedirs("/run/nodefleet", exist_ok=True)
    tmp = f"{state}.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump({"logSyncHeight": out["logSyncHeight"], "at": time.time()}, f)
    os.replace(tmp, state)
    log_dir = cfg.get("log_directory", "log")
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    out["logFile"] = os.path.join(log_dir, f"zgs.log.{today}")
    out["logFileExists"] = os.path.exists(out["logFile"])
    reason = last_start_failure(out["logFile"])
    if reason is not None:
        out["startError"] = reason
    out["diagnoses"] = storage_row(node, None, out)["diagnoses"]
    return out


START = "zgs_node: Starting services..."
FAILED = re.compile(r"zgs_node: Failed to start zgs node reason=(.*)$")


def last_start_failure(log_file, tail_bytes=256 * 1024):
    """The reason of the last start's failure in the node's log, or None if it started (or is starting)."""
    try:
        with open(log_file, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - tail_bytes))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    starts = [i for i, line in enumerate(lines) if START in line]
    if not starts:
        return None
    for line in lines[starts[-1]:]:
        m = FAILED.search(line)
        if m:
            return redact(m.group(1))
    return None


def redact(reason):
    """The node prints a request's whole URL (path and query: where an API key sits): only scheme://host[:port] stays."""
    reason = re.sub(r"Url \{.*?host: Some\((?:Domain|Ipv4|Ipv6)\(([^)]*)\)\), port: (?:Some\((\d+)\)|None).*?fragment: [^}]*\}",
                    lambda m: "url " + m.group(1).strip('"') + (f":{m.group(2)}" if m.group(2) else ""), reason)
    reason = re.sub(r"https?://[^\s\"')]+", lambda m: url_label(m.group(0)), reason)
    # Whatever URL form the pattern above missed: its secret-bearing fields go.
    reason = re.sub(r'\b(path|username): "[^"]*"', r'\1: "…"', reason)
    reason = re.sub(r'\b(query|password|fragment): Some\("[^"]*"\)', r'\1: Some("…")', reason)
    return reason[:400]


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    wait = float(argv[argv.index("--wait") + 1]) if "--wait" in argv else 0
    deadline = time.time() + wait
    watch = None
    while True:
        out = check(argv[1])
        if out["synced"] and out["logFileExists"] or time.time() >= deadline:
            break
        watch = watch or RestartWatch([out["service"]])
        loop = watch.looping()
        if loop:
            out["crashLoop"] = {"unit": loop[0], "restarts": loop[1]}
            break
        time.sleep(2)
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
