#!/bin/sh
# nodefleet: configure 0G storage node storage-1 on host h-storage: its files, the snapshot guard
# (seed 2.2), the RPC endpoint choice (seed 7), then start it, or restart it when something it
# reads changed. Safe to run again: unchanged files are left alone and nothing restarts.
set -eu
node=storage-1
service=zgs-storage-1.service
data=/data/storage-1
db=/data/storage-1/db
operator=nodefleet
changed=""

# put PATH MODE OWNER < content: replace PATH only when the content differs (its mode and owner
# are set either way).
put() {
	tmp="$1.nodefleet-new"
	cat > "$tmp"
	chmod "$2" "$tmp"
	chown "$3" "$tmp"
	if cmp -s "$tmp" "$1"; then
		rm -f "$tmp"
		chmod "$2" "$1"
		chown "$3" "$1"
	else
		mv "$tmp" "$1"
		changed="$changed $1"
	fi
	record_file "$1"
}

# The drift record of this step (read by `pulumi refresh` through nodefleet's drift check): what it
# put on the host, as digests, modes, owners and wanted unit states, never contents. Written anew
# each run, so it holds what the last run applied.
record=/var/lib/nodefleet/drift/storage-1.configure
rm -rf "$record"
install -d -m 0700 "$record"
# record_file PATH: its sha256, mode and owner as this step left them.
record_file() {
	printf 'file\t%s\t%s\t%s\n' "$1" "$(sha256sum "$1" | cut -c1-64)" "$(stat -c '%a %U:%G' "$1")" > "$record/f.$(printf '%s' "$1" | sha256sum | cut -c1-16)"
}
# record_unit NAME: the unit is meant to be enabled and running.
record_unit() {
	printf 'unit\t%s\n' "$1" > "$record/u.$1"
}

if [ ! -x /opt/nodefleet/zgs/zgs_node ]; then
	echo "storage $node: /opt/nodefleet/zgs/zgs_node is missing: the release was not installed" >&2
	exit 1
fi

# Seed 2.2: snapshots are never used. A flow_db or data_db this node did not create (no marker,
# or another node's) is refused before the service can start on it.
marker="$db/.nodefleet-node"
if [ -f "$marker" ]; then
	if [ "$(cat "$marker")" != "$node" ]; then
		echo "storage $node: refusing to start: $db was created by storage node '$(cat "$marker")', not by $node (a node must sync its own data; another operator's data_db mines for that operator). Move $db away to let $node sync from scratch." >&2
		exit 1
	fi
elif [ -e "$db/flow_db" ] || [ -e "$db/data_db" ]; then
	echo "storage $node: refusing to start: $db holds flow_db/data_db that $node did not create (a snapshot?). Snapshots are not used for storage nodes: a flow_db-only snapshot looks synced by height but lacks the data PoRA needs, and another operator's data_db mines for that operator. Move $db away to let $node sync from scratch." >&2
	exit 1
else
	install -d -o "$operator" -g "$operator" -m 0750 "$db"
	printf '%s\n' "$node" > "$marker"
	chown "$operator:$operator" "$marker"
fi

# The failover timer must not rewrite config.toml while this script does (it starts again below).
systemctl stop zgs-storage-1-failover.timer zgs-storage-1-failover.service >/dev/null 2>&1 || true

install -d -o "$operator" -g "$operator" -m 0750 "$data/run" "$data/log" "$data/network"
install -d -m 0755 /etc/nodefleet /usr/local/lib/nodefleet
install -d -m 0700 /etc/nodefleet/storage-1

put /data/storage-1/run/config.toml.nodefleet 0644 root:root <<'NODEFLEET_EOF'
# 0G storage node storage-1: config.toml rendered by nodefleet from the fleet config; edits are
# replaced. blockchain_rpc_endpoint is filled in on the host by zgs-endpoint with the first
# candidate that answers eth_blockNumber (RPC failover, seed 7), and miner_key with the key from a
# root-only file: this template holds neither, the node's copy (0600, its user's) both.
network_dir = "/data/storage-1/network"
network_listen_address = "0.0.0.0"
network_libp2p_port = 1234
network_discovery_port = 1234
network_enr_address = "198.51.100.4"
network_enr_tcp_port = 1234
network_enr_udp_port = 1234
network_boot_nodes = ["/ip4/203.0.113.10/udp/1234/p2p/16Uiu2HAmLhLvBoYaoZfaMUKuibM6ac163GwKY74c5kiSLg5KvLpY"]
blockchain_rpc_endpoint = "@NODEFLEET_RPC_ENDPOINT@"
log_contract_address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
mine_contract_address = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
miner_key = "@NODEFLEET_MINER_KEY@"
log_sync_start_block_number = 0
# The node's default: it syncs the log up to the chain head less this many blocks.
confirmation_block_count = 3
db_dir = "/data/storage-1/db"
log_config_file = "/data/storage-1/run/log_config"
log_directory = "/data/storage-1/log"

[rpc]
listen_address = "127.0.0.1:5678"
listen_address_admin = "127.0.0.1:5679"
# The node's default for gRPC is 0.0.0.0:50051: local only, like the other two.
listen_address_grpc = "127.0.0.1:50051"
NODEFLEET_EOF
put /data/storage-1/run/log_config 0644 root:root <<'NODEFLEET_EOF'
info
NODEFLEET_EOF
put /etc/nodefleet/storage-1/storage.json 0644 root:root <<'NODEFLEET_EOF'
{
  "template": "/data/storage-1/run/config.toml.nodefleet",
  "config": "/data/storage-1/run/config.toml",
  "urls": "/etc/nodefleet/storage-1/urls.json",
  "minerKey": "/etc/nodefleet/storage-1/miner.key",
  "service": "zgs-storage-1.service",
  "driftRecord": "/var/lib/nodefleet/drift/storage-1.configure+endpoint"
}
NODEFLEET_EOF
put /usr/local/lib/nodefleet/nodefleet_rpc.py 0644 root:root <<'NODEFLEET_EOF'
"""JSON-RPC over HTTP for nodefleet's host scripts (installed beside them).

rpc(url, method, params) returns the result or raises RpcFailure with a message that names the
URL, the method and what was wrong: no answer, not JSON, no result, or the JSON-RPC error.
block_number(url) is eth_blockNumber as an int, refusing an answer that is not a hex number;
block_hash(url, n) the hash of block n (eth_getBlockByNumber); peer_count(url) net_peerCount.
ipc(path, method, params) is rpc() over a node's IPC socket (geth's admin namespace is served
there only), with no timeout unless given: an admin_exportChain answers when the export is done.

    python3 -S nodefleet_rpc.py ipc <socket> <method> [<params as JSON>]

prints the result as JSON (exit 0) or the failure (exit 1).
"""
import base64
import json
import re
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request


class RpcFailure(Exception):
    pass


def rpc_request(url, body):
    """A JSON-RPC POST to url; a user:password@ in it becomes Basic authentication (urllib would take
    it for part of the host)."""
    u = urllib.parse.urlsplit(url)
    headers = {"Content-Type": "application/json"}
    if "@" in u.netloc:
        user, _, password = u.netloc.rpartition("@")[0].partition(":")
        token = base64.b64encode(f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        url = urllib.parse.urlunsplit((u.scheme, u.netloc.rpartition("@")[2], u.path, u.query, u.fragment))
    return urllib.request.Request(url, data=body, headers=headers)


def url_label(url):
    """How a URL is named in messages: scheme, host and port only (a hosted endpoint's path, query or
    user part may hold an API key)."""
    try:
        u = urllib.parse.urlsplit(url)
        origin = f"{u.scheme}://{u.hostname}" + (f":{u.port}" if u.port else "")
    except ValueError:
        return "(an unparsable URL)"
    if not u.scheme or not u.hostname:
        return "(an unparsable URL)"
    return origin if u.path in ("", "/") and not u.query else f"{origin}/…"


def rpc(url, method, params=None, timeout=5, optional=False):
    """The result of `method` at url. optional: an answer without a result is None (an Aztec node
    leaves the result out when a call found nothing) instead of a failure."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    req = rpc_request(url, body)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        raise RpcFailure(f"{method} at {url_label(url)}: HTTP {e.code}") from None
    except OSError as e:
        raise RpcFailure(f"{method} at {url_label(url)}: no answer ({getattr(e, 'reason', e)})") from None
    try:
        answer = json.loads(raw)
    except ValueError:
        raise RpcFailure(f"{method} at {url_label(url)}: the answer is not JSON: {raw[:80]!r}") from None
    if not isinstance(answer, dict):
        raise RpcFailure(f"{method} at {url_label(url)}: the answer is not a JSON-RPC object")
    if answer.get("error") is not None:
        err = answer["error"]
        text = err.get("message", err) if isinstance(err, dict) else err
        raise RpcFailure(f"{method} at {url_label(url)}: JSON-RPC error: {text}")
    if "result" not in answer:
        if optional:
            return None
        raise RpcFailure(f"{method} at {url_label(url)}: the answer has no result")
    return answer["result"]


def block_number(url):
    """eth_blockNumber at url as an int; RpcFailure when the answer is not a hex number."""
    value = rpc(url, "eth_blockNumber")
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", value):
        raise RpcFailure(f"eth_blockNumber at {url_label(url)}: {value!r} is not a hex block number")
    return int(value, 16)


def block_hash(url, number):
    """The hash of block `number` at url (0x + 64 lowercase hex); RpcFailure when the node has no
    such block or answers something else."""
    block = rpc(url, "eth_getBlockByNumber", [hex(number), False])
    if block is None:
        raise RpcFailure(f"eth_getBlockByNumber at {url_label(url)}: no block {number}")
    value = block.get("hash") if isinstance(block, dict) else None
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]{64}", value):
        raise RpcFailure(f"eth_getBlockByNumber at {url_label(url)}: block {number} has no hash (got {str(value)[:80]!r})")
    return value.lower()


def peer_count(url):
    """net_peerCount at url as an int."""
    value = rpc(url, "net_peerCount")
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", value):
        raise RpcFailure(f"net_peerCount at {url_label(url)}: {value!r} is not a hex number")
    return int(value, 16)


def ipc(path, method, params=None, timeout=None):
    """One JSON-RPC call over the Unix socket at path."""
    where = f"{method} at {path}"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode())
            decoder, raw = json.JSONDecoder(), b""
            while True:
                chunk = s.recv(1 << 16)
                if not chunk:
                    raise RpcFailure(f"{where}: the connection closed before an answer ({raw[:80]!r})")
                raw += chunk
                try:
                    answer, _ = decoder.raw_decode(raw.decode())
                    break
                except ValueError:
                    continue
    except OSError as e:
        raise RpcFailure(f"{where}: no answer ({e})") from None
    if not isinstance(answer, dict):
        raise RpcFailure(f"{where}: the answer is not a JSON-RPC object")
    if answer.get("error") is not None:
        err = answer["error"]
        raise RpcFailure(f"{where}: JSON-RPC error: {err.get('message', err) if isinstance(err, dict) else err}")
    if "result" not in answer:
        if optional:
            return None
        raise RpcFailure(f"{where}: the answer has no result")
    return answer["result"]


def main(argv):
    if len(argv) not in (4, 5) or argv[1] != "ipc":
        print("usage: nodefleet_rpc.py ipc <socket> <method> [<params as JSON>]", file=sys.stderr)
        return 2
    try:
        params = json.loads(argv[4]) if len(argv) == 5 else []
        print(json.dumps(ipc(argv[2], argv[3], params)), flush=True)
    except ValueError as e:
        print(f"params: not JSON ({e})", file=sys.stderr)
        return 2
    except RpcFailure as e:
        print(str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
NODEFLEET_EOF
put /usr/local/lib/nodefleet/zgs-endpoint.py 0755 root:root <<'NODEFLEET_EOF'
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
config rewritten (with --restart the service is restarted if it was running); 2: no candidate
answers and config unchanged; 3: the miner key file is missing or malformed.
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


def record(spec):
    """The drift record of config.toml as written (its digest, mode, owner; never its content)."""
    directory = spec.get("driftRecord")
    if not directory:
        return
    import grp
    import hashlib
    import pwd
    st = os.stat(spec["config"])
    with open(spec["config"], "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
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
        record(spec)
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
    record(spec)
    print(f"zgs-endpoint {node}: config.toml written, blockchain_rpc_endpoint = {url_label(chosen)}")
    if restart and subprocess.run(["systemctl", "is-active", "--quiet", spec["service"]]).returncode == 0:
        subprocess.run(["systemctl", "restart", spec["service"]], check=True)
        print(f"zgs-endpoint {node}: restarted {spec['service']}")
    return 10


if __name__ == "__main__":
    sys.exit(main(sys.argv))
NODEFLEET_EOF
put /usr/local/lib/nodefleet/zgs-health.py 0755 root:root <<'NODEFLEET_EOF'
#!/usr/bin/env python3
"""Health of a 0G storage node (installed by nodefleet), as one JSON object on stdout.

    zgs-health.py <node> [--wait SECONDS]

endpoint: the endpoint in config.toml as scheme://host[:port] (its path and query, where hosted
endpoints keep API keys, are never shown); chainHead: its eth_blockNumber (hex -> decimal); logSyncHeight and
connectedPeers: zgs_getStatus of the node; confirmations: config.toml's confirmation_block_count
(the node syncs the log only up to chainHead - confirmations: its height is never closer); behind:
chainHead - confirmations - logSyncHeight; synced: behind < 5 (seed 8);
logFile: today's UTC log file <log_directory>/zgs.log.<YYYY-MM-DD> and whether it exists;
increasing: whether logSyncHeight grew since the previous check (sampleSeconds before); active:
the service's systemd state (state: is-active's word, "activating" in a restart loop);
endpointError / statusError: why eth_blockNumber or zgs_getStatus did not answer; startError: why
the node's last start failed, from its log ("Failed to start zgs node reason=…": zgs_node v1.1.0
exits at start when its endpoint does not answer, when its miner account cannot pay for its miner
id registration, …; systemd then restarts it every 5 s), with URLs cut to scheme://host[:port];
diagnoses: seed 7's failure modes found, each with its remedy. --wait waits up to SECONDS for the
node to answer and sync.
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
from nodefleet_rpc import rpc_request, url_label  # noqa: E402  (installed beside this script)


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
           "synced": False, "connectedPeers": None, "increasing": None, "sampleSeconds": None, "diagnoses": []}
    state = subprocess.run(["systemctl", "is-active", spec["service"]], capture_output=True, text=True).stdout.strip()
    out["service"], out["active"], out["state"] = spec["service"], state == "active", state or "unknown"
    try:
        out["chainHead"] = int(rpc(endpoint, "eth_blockNumber"), 16)
    except (OSError, ValueError) as e:
        out["endpointError"] = str(e).replace(endpoint, url_label(endpoint))
        out["diagnoses"].append(f"blockchain_rpc_endpoint {url_label(endpoint)} does not answer eth_blockNumber ({e}): the local height cannot increase; "
                                "check it, switch to another endpoint and restart (the failover timer does this every minute)")
    listen = cfg.get("rpc", {}).get("listen_address", "127.0.0.1:5678").replace("0.0.0.0", "127.0.0.1")
    try:
        status = rpc(f"http://{listen}", "zgs_getStatus")
        out["logSyncHeight"], out["connectedPeers"] = status["logSyncHeight"], status["connectedPeers"]
    except (OSError, ValueError, KeyError) as e:
        out["statusError"] = str(e)
        out["diagnoses"].append(f"zgs_getStatus on {listen} does not answer ({e}): is {spec['service']} running? journalctl -u {spec['service']}")
    if out["chainHead"] is not None and out["logSyncHeight"] is not None:
        out["behind"] = max(0, out["chainHead"] - confirmations - out["logSyncHeight"])
        out["synced"] = out["behind"] < 5
        if not out["synced"]:
            out["diagnoses"].append(f"not synced: {out['behind']} blocks behind the chain head less its {confirmations} confirmations (synced means < 5)")
    if out["connectedPeers"] == 0:
        out["diagnoses"].append("connectedPeers is 0: set network_boot_nodes (with network_enr_address) and restart; often ignorable")
    state = f"/run/nodefleet/{node}-health.json"
    try:
        with open(state) as f:
            previous = json.load(f)
        before = previous["logSyncHeight"]
        if isinstance(previous.get("at"), (int, float)):
            out["sampleSeconds"] = round(time.time() - previous["at"], 1)
        if out["logSyncHeight"] is not None and before is not None:
            out["increasing"] = out["logSyncHeight"] > before
            if not out["increasing"] and not out["synced"]:
                out["diagnoses"].append("the local height does not increase: the RPC endpoint is probably down; check it with eth_blockNumber and switch")
    except (OSError, ValueError, KeyError):
        pass
    os.makedirs("/run/nodefleet", exist_ok=True)
    with open(state, "w") as f:
        json.dump({"logSyncHeight": out["logSyncHeight"], "at": time.time()}, f)
    log_dir = cfg.get("log_directory", "log")
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    out["logFile"] = os.path.join(log_dir, f"zgs.log.{today}")
    out["logFileExists"] = os.path.exists(out["logFile"])
    reason = last_start_failure(out["logFile"])
    if reason is not None:
        out["startError"] = reason
        out["diagnoses"].append(f"the node's last start failed: {reason}")
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
    while True:
        out = check(argv[1])
        if out["synced"] and out["logFileExists"] or time.time() >= deadline:
            break
        time.sleep(2)
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
NODEFLEET_EOF
put /etc/systemd/system/zgs-storage-1.service 0644 root:root <<'NODEFLEET_EOF'
# 0G storage node storage-1, rendered by nodefleet.
[Unit]
Description=0G storage node storage-1 (zgs_node)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/storage-1/run
# The miner key is in config.toml (0600, this user's): zgs_node v1.1.0 reads it from there alone.
ExecStart=/opt/nodefleet/zgs/zgs_node --config /data/storage-1/run/config.toml
Restart=on-failure
RestartSec=5
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
put /etc/systemd/system/zgs-storage-1-failover.service 0644 root:root <<'NODEFLEET_EOF'
# RPC failover for 0G storage node storage-1 (seed 7: "local block does not increase"),
# rendered by nodefleet: keeps blockchain_rpc_endpoint on the first candidate that answers.
[Unit]
Description=RPC endpoint failover for 0G storage node storage-1
After=network-online.target

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 /usr/local/lib/nodefleet/zgs-endpoint.py storage-1 --restart
NODEFLEET_EOF
put /etc/systemd/system/zgs-storage-1-failover.timer 0644 root:root <<'NODEFLEET_EOF'
# Runs the RPC failover check of 0G storage node storage-1 every minute. Rendered by nodefleet.
[Unit]
Description=RPC endpoint failover check for 0G storage node storage-1

[Timer]
OnBootSec=1min
OnUnitActiveSec=1min
AccuracySec=5s

[Install]
WantedBy=timers.target
NODEFLEET_EOF
systemctl daemon-reload

# The endpoint: the first candidate answering eth_blockNumber (exit 10: config.toml rewritten).
rc=0
python3 /usr/local/lib/nodefleet/zgs-endpoint.py "$node" || rc=$?
case "$rc" in
0) ;;
10) changed="$changed config.toml" ;;
2) echo "storage $node: warning: no RPC endpoint answers now; keeping the current one" >&2 ;;
*) exit "$rc" ;;
esac
# It holds the chosen endpoint, which may carry an API key: the node's user's alone.
chown "$operator:$operator" /data/storage-1/run/config.toml
chmod 0600 /data/storage-1/run/config.toml

systemctl enable "$service" zgs-storage-1-failover.timer >/dev/null 2>&1
record_unit "$service"
record_unit zgs-storage-1-failover.timer
systemctl start zgs-storage-1-failover.timer
if ! systemctl is-active --quiet "$service"; then
	systemctl start "$service"
	echo "storage $node: started $service"
elif [ -n "$changed" ]; then
	systemctl restart "$service"
	echo "storage $node: restarted $service (changed:$changed)"
else
	echo "storage $node: $service unchanged and running"
fi
sleep 2
if ! systemctl is-active --quiet "$service"; then
	journalctl -u "$service" -n 20 --no-pager >&2 || true
	echo "storage $node: $service is not running" >&2
	exit 1
fi
