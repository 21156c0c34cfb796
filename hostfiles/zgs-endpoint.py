#!/usr/bin/env python3
"""RPC endpoint failover for a 0G storage node (installed by nodefleet).

    zgs-endpoint.py <node> [--restart]

Reads /etc/nodefleet/<node>/storage.json ({"template", "config", "endpoints", "service"}), asks
each candidate endpoint, in order, for eth_blockNumber, and renders config.toml from the template
with the first one that answers. Exit 0: config unchanged; 10: config rewritten (with --restart
the service is restarted if it was running); 2: no candidate answers (config left as it is).
"""
import json
import os
import subprocess
import sys
import urllib.request

PLACEHOLDER = '"@NODEFLEET_RPC_ENDPOINT@"'


def healthy(url):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
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
    chosen = next((u for u in spec["endpoints"] if healthy(u)), None)
    if chosen is None:
        print(f"zgs-endpoint {node}: no candidate answers eth_blockNumber: {', '.join(spec['endpoints'])}; config left as it is", file=sys.stderr)
        if os.path.exists(spec["config"]):
            return 2
        chosen = spec["endpoints"][0]  # first start: the node logs the outage itself
    with open(spec["template"]) as f:
        text = f.read().replace(PLACEHOLDER, json.dumps(chosen))  # a JSON string is a TOML basic string
    try:
        with open(spec["config"]) as f:
            if f.read() == text:
                return 0
    except FileNotFoundError:
        pass
    tmp = spec["config"] + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, spec["config"])
    print(f"zgs-endpoint {node}: blockchain_rpc_endpoint = {chosen}")
    if restart and subprocess.run(["systemctl", "is-active", "--quiet", spec["service"]]).returncode == 0:
        subprocess.run(["systemctl", "restart", spec["service"]], check=True)
        print(f"zgs-endpoint {node}: restarted {spec['service']}")
    return 10


if __name__ == "__main__":
    sys.exit(main(sys.argv))
