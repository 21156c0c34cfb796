#!/usr/bin/env python3
"""RPC endpoint failover for a 0G storage node (installed by nodefleet).

    zgs-endpoint.py <node> [--restart]

Reads /etc/nodefleet/<node>/storage.json ({"template", "config", "urls", "minerKey", "service"}),
the candidate endpoints from its root-only "urls" file ({"rpcEndpoints": [...]}, written by the key
step: an endpoint may carry an API key) and the miner key from its root-only "minerKey" file (64 hex
digits, written by the key step), asks each endpoint, in order, for eth_blockNumber, and renders
config.toml from the template with the first one that answers and the key, readable by the node's
user only (zgs_node v1.1.0 reads miner_key from its config file alone). Endpoints are named by
scheme://host[:port] in what it prints, never in full; the key never. When no candidate answers,
the endpoint config.toml has is kept (a changed key still goes in). Exit 0: config unchanged; 10:
config rewritten (with --restart the service is restarted if it was running: `systemctl
try-restart`, which never starts a unit the operator stopped, even one stopping at that moment; the
timer's unit takes 10 as success, since rewriting is what it is for); 2: no candidate answers and
config unchanged; 3: the miner key file is missing or malformed.
"""
import json
import os
import re
import subprocess
import sys
import tomllib
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodefleet_rpc import rpc_request, url_label  # noqa: E402  (installed beside this script)

PLACEHOLDER = '"@NODEFLEET_RPC_ENDPOINT@"'
KEY_PLACEHOLDER = '"@NODEFLEET_MINER_KEY@"'
HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def healthy(url):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}).encode()
    req = rpc_request(url, body)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            result = json.loads(resp.read()).get("result")
        return isinstance(result, str) and result.startswith("0x") and int(result, 16) >= 0
    except (OSError, ValueError):
        return False


def record(spec, text):
    """The drift record of config.toml as written (its digest, mode, owner; never its content).

    The digest is of `text`, what this run found or wrote, not of the file read again: a hand edit
    made after this run compared the file (while it asked the endpoints) stays drift."""
    directory = spec.get("driftRecord")
    if not directory:
        return
    import grp
    import hashlib
    import pwd
    st = os.stat(spec["config"])
    digest = hashlib.sha256(text.encode()).hexdigest()
    owner = f"{pwd.getpwuid(st.st_uid).pw_name}:{grp.getgrgid(st.st_gid).gr_name}"
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = os.path.join(directory, ".f.config.new")
    with open(tmp, "w") as f:
        f.write(f"file\t{spec['config']}\t{digest}\t{format(st.st_mode & 0o7777, 'o')} {owner}\n")
    os.replace(tmp, os.path.join(directory, "f.config"))


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    node, restart = argv[1], "--restart" in argv[2:]
    with open(f"/etc/nodefleet/{node}/storage.json") as f:
        spec = json.load(f)
    with open(spec["urls"]) as f:
        endpoints = json.load(f)["rpcEndpoints"]
    try:
        with open(spec["minerKey"]) as f:
            key = f.read().strip()
    except FileNotFoundError:
        print(f"zgs-endpoint {node}: the miner key file {spec['minerKey']} is missing (the key step of pulumi up writes it)", file=sys.stderr)
        return 3
    if not HEX64.fullmatch(key):
        print(f"zgs-endpoint {node}: the miner key file {spec['minerKey']} does not hold 64 hex digits", file=sys.stderr)
        return 3
    try:
        with open(spec["config"]) as f:
            current = f.read()
    except FileNotFoundError:
        current = None
    chosen = next((u for u in endpoints if healthy(u)), None)
    answered = chosen is not None
    if not answered:
        chosen = endpoints[0]  # first start: the node logs the outage itself
        if current is not None:
            try:
                chosen = tomllib.loads(current)["blockchain_rpc_endpoint"]
            except (tomllib.TOMLDecodeError, KeyError):
                pass
        print(f"zgs-endpoint {node}: no candidate answers eth_blockNumber: {', '.join(map(url_label, endpoints))}; keeping {url_label(chosen)}", file=sys.stderr)
    with open(spec["template"]) as f:
        # A JSON string is a TOML basic string; the key is 64 hex digits (checked above).
        text = f.read().replace(PLACEHOLDER, json.dumps(chosen)).replace(KEY_PLACEHOLDER, json.dumps(key))
    if current == text:
        record(spec, text)
        return 0 if answered else 2
    # The endpoint may carry an API key: the file is the node's user's alone (the owner of its run directory).
    tmp = spec["config"] + ".new"
    owner = os.stat(os.path.dirname(spec["config"]))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        os.fchown(f.fileno(), owner.st_uid, owner.st_gid)
        f.write(text)
    os.replace(tmp, spec["config"])
    record(spec, text)
    print(f"zgs-endpoint {node}: config.toml written, blockchain_rpc_endpoint = {url_label(chosen)}")
    if restart:
        # try-restart: a running node restarts on the new file; a stopped one (maintenance) stays stopped.
        subprocess.run(["systemctl", "try-restart", spec["service"]], check=True)
        print(f"zgs-endpoint {node}: restarted {spec['service']} if it was running")
    return 10


if __name__ == "__main__":
    sys.exit(main(sys.argv))
