#!/usr/bin/env python3
"""RPC endpoint failover for a 0G storage node (installed by nodefleet).

    zgs-endpoint.py <node> [--restart]

Reads /etc/nodefleet/<node>/storage.json ({"template", "config", "urls", "service"}) and the
candidate endpoints from its root-only "urls" file ({"rpcEndpoints": [...]}, written by the key
step: an endpoint may carry an API key), asks each, in order, for eth_blockNumber, and renders
config.toml from the template with the first one that answers, readable by the node's user only.
Endpoints are named by scheme://host[:port] in what it prints, never in full. Exit 0: config unchanged; 10: config rewritten (with --restart
the service is restarted if it was running); 2: no candidate answers (config left as it is).
"""
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodefleet_rpc import rpc_request, url_label  # noqa: E402  (installed beside this script)

PLACEHOLDER = '"@NODEFLEET_RPC_ENDPOINT@"'


def healthy(url):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}).encode()
    req = rpc_request(url, body)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            result = json.loads(resp.read()).get("result")
        return isinstance(result, str) and result.startswith("0x") and int(result, 16) >= 0
    except (OSError, ValueError):
        return False


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    node, restart = argv[1], "--restart" in argv[2:]
    with open(f"/etc/nodefleet/{node}/storage.json") as f:
        spec = json.load(f)
    with open(spec["urls"]) as f:
        endpoints = json.load(f)["rpcEndpoints"]
    chosen = next((u for u in endpoints if healthy(u)), None)
    if chosen is None:
        print(f"zgs-endpoint {node}: no candidate answers eth_blockNumber: {', '.join(map(url_label, endpoints))}; config left as it is", file=sys.stderr)
        if os.path.exists(spec["config"]):
            return 2
        chosen = endpoints[0]  # first start: the node logs the outage itself
    with open(spec["template"]) as f:
        text = f.read().replace(PLACEHOLDER, json.dumps(chosen))  # a JSON string is a TOML basic string
    try:
        with open(spec["config"]) as f:
            if f.read() == text:
                return 0
    except FileNotFoundError:
        pass
    # The endpoint may carry an API key: the file is the node's user's alone (the owner of its run directory).
    tmp = spec["config"] + ".new"
    owner = os.stat(os.path.dirname(spec["config"]))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        os.fchown(f.fileno(), owner.st_uid, owner.st_gid)
        f.write(text)
    os.replace(tmp, spec["config"])
    print(f"zgs-endpoint {node}: blockchain_rpc_endpoint = {url_label(chosen)}")
    if restart and subprocess.run(["systemctl", "is-active", "--quiet", spec["service"]]).returncode == 0:
        subprocess.run(["systemctl", "restart", spec["service"]], check=True)
        print(f"zgs-endpoint {node}: restarted {spec['service']}")
    return 10


if __name__ == "__main__":
    sys.exit(main(sys.argv))
