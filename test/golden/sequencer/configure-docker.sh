#!/bin/sh
# nodefleet: configure Aztec sequencer sequencer-1 on host h-sequencer: its unit, the registration and
# health scripts, then start it, or restart it when its unit or its version changed. Safe to run
# again: unchanged files are left alone and nothing restarts.
set -eu
node=sequencer-1
service=aztec-sequencer-1.service
etc=/etc/nodefleet/sequencer-1
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
record=/var/lib/nodefleet/drift/sequencer-1.configure
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

if ! command -v docker >/dev/null 2>&1; then
	echo "sequencer $node: docker is not installed (runtime: docker); install it or use runtime: release" >&2
	exit 1
fi
for f in "$etc/aztec.env" "$etc/register.env" "$etc/version"; do
	if [ ! -f "$f" ]; then
		echo "sequencer $node: $f is missing: the key and version steps run first" >&2
		exit 1
	fi
done

install -d -o root -g root -m 0750 /data/sequencer-1 /data/sequencer-1/data
install -d -m 0755 /usr/local/lib/nodefleet

put "$etc/sequencer.json" 0644 root:root <<'NODEFLEET_EOF'
{
  "node": "sequencer-1",
  "service": "aztec-sequencer-1.service",
  "rpcPort": 8080,
  "api": "2.0.x"
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
put /usr/local/lib/nodefleet/aztec-register.py 0755 root:root <<'NODEFLEET_EOF'
#!/usr/bin/env python3
"""Validator registration of an Aztec sequencer (installed by nodefleet; seed 2.5, 4.3; issue 19).

    aztec-register.py <node> < registration.json

Reads what to register from stdin (JSON: dialect, runtime, binary, image, versionFile, dataDir,
l1ChainId, validatorAddress, registerEnvFile, argvPreload, args, and per dialect registryAddress +
stakingAssetHandler or rollupAddress). Two dialects, chosen by the sequencer's version:

- staking-asset-handler (2.0.x, the seed): asks the validator registry getInfo(validatorAddress); the
  last word of the answer is the status (NONE=0, VALIDATING, LIVING, EXITING).
- rollup-deposit (4.1.2): asks the rollup getStatus(validatorAddress) (NONE=0, VALIDATING, ZOMBIE,
  EXITING); while NONE, looks for the attester in the rollup's entry queue (a deposit waits there until
  flushEntryQueue adds it), the newest entries first. The L1 must answer eth_chainId = l1ChainId.

Each L1 RPC URL is asked in order until one answers. A non-NONE status, or the attester queued, means
registered: nothing is sent. Otherwise runs `add-l1-validator` with `args` (rendered by nodefleet).
No key is on a command line: the sender key is PRIVATE_KEY (the CLI's default for --private-key) and
4.x's BLS key is NODEFLEET_BLS_SECRET_KEY, which the argv preload (aztec-argv.mjs, NODE_OPTIONS
--import) appends to the CLI's in-process argv; both come from a root-only file. Without a sender key
nothing runs: the CLI would otherwise send from its public test mnemonic. A
ValidatorQuotaFilledUntil(t) revert becomes a message with the time to retry. A submission is recorded
in the node's data directory; while the L1 still says NONE after one, it is reported as pending and
not sent again.

The last line of stdout is a JSON summary. Exit 0: registered, pending or submitted now;
3: quota filled (retry after the time shown); 1: anything else, with the reason.
"""
import datetime
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodefleet_rpc import RpcFailure, rpc, url_label  # noqa: E402

# Function selectors (keccak256 of the signature, first 4 bytes); the test suite recomputes them.
GET_INFO = "ffdd5cf1"          # getInfo(address): the 2.x validator registry
GET_STATUS = "30ccebb5"        # getStatus(address): the 4.x rollup
QUEUE_LENGTH = "1b56a0e7"      # getEntryQueueLength()
QUEUE_AT = "9ca03702"          # getEntryQueueAt(uint256) -> DepositArgs, attester first
STATUS = {"staking-asset-handler": ["NONE", "VALIDATING", "LIVING", "EXITING"],
          "rollup-deposit": ["NONE", "VALIDATING", "ZOMBIE", "EXITING"]}
# How many of the newest entry-queue entries are searched for the attester.
QUEUE_SCAN = 512
KEY = re.compile(r"0x[0-9a-fA-F]{64}")
BLS_KEY = re.compile(r"0x[0-9a-fA-F]{1,64}")


class Failure(Exception):
    pass


def hex_result(url, what, result):
    if not isinstance(result, str) or not re.fullmatch(r"0x[0-9a-fA-F]*", result):
        raise Failure(f"{what} at {url_label(url)}: eth_call result is not hex data: {str(result)[:80]!r}")
    return result[2:]


def word(address_or_int):
    if isinstance(address_or_int, int):
        return format(address_or_int, "064x")
    return address_or_int.lower()[2:].rjust(64, "0")


def call(url, to, data):
    return rpc(url, "eth_call", [{"to": to, "data": "0x" + data}, "latest"])


def staking_handler_status(spec, url):
    """2.x: (status number, None) from the registry's getInfo(validatorAddress)."""
    body = hex_result(url, "getInfo", call(url, spec["registryAddress"], GET_INFO + word(spec["validatorAddress"])))
    words = len(body) // 64
    if words < 4:
        raise Failure(f"getInfo at {url_label(url)}: registry {spec['registryAddress']} returned {words} words, expected 4 "
                      f"(stake, withdrawer, proposer, status): is registryAddress the validator registry on chain {spec['l1ChainId']}?")
    return int(body[64 * 3: 64 * 4], 16), None


def rollup_status(spec, url):
    """4.x: (status number, queue position or None) from the rollup's getStatus and entry queue."""
    chain = rpc(url, "eth_chainId", [])
    if not isinstance(chain, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", chain):
        raise Failure(f"eth_chainId at {url_label(url)}: not a hex quantity: {str(chain)[:80]!r}")
    if int(chain, 16) != spec["l1ChainId"]:
        raise Failure(f"{url_label(url)} is L1 chain {int(chain, 16)}, not l1ChainId {spec['l1ChainId']}: nothing sent")
    rollup = spec["rollupAddress"]
    body = hex_result(url, "getStatus", call(url, rollup, GET_STATUS + word(spec["validatorAddress"])))
    if len(body) != 64:
        raise Failure(f"getStatus at {url_label(url)}: rollup {rollup} returned {len(body) // 2} bytes, expected one word: "
                      f"is rollupAddress the rollup on chain {spec['l1ChainId']}?")
    status = int(body, 16)
    if status != 0:
        return status, None
    length_body = hex_result(url, "getEntryQueueLength", call(url, rollup, QUEUE_LENGTH))
    if len(length_body) != 64:
        raise Failure(f"getEntryQueueLength at {url_label(url)}: expected one word, got {len(length_body) // 2} bytes")
    length = int(length_body, 16)
    attester = word(spec["validatorAddress"])
    for index in range(length - 1, max(-1, length - 1 - QUEUE_SCAN), -1):
        entry = hex_result(url, "getEntryQueueAt", call(url, rollup, QUEUE_AT + word(index)))
        if len(entry) < 64:
            raise Failure(f"getEntryQueueAt({index}) at {url_label(url)}: expected a DepositArgs tuple, got {len(entry) // 2} bytes")
        if entry[:64] == attester:
            return 0, index
    return 0, None


def registry_status(spec):
    """(status number, queue position or None, URL that answered)."""
    ask = rollup_status if spec["dialect"] == "rollup-deposit" else staking_handler_status
    what = "getStatus" if spec["dialect"] == "rollup-deposit" else "getInfo"
    names = STATUS[spec["dialect"]]
    errors = []
    for url in spec["l1RpcUrls"]:  # from the root-only env file (ETHEREUM_HOSTS): see register()
        try:
            status, queued = ask(spec, url)
        except RpcFailure as e:
            errors.append(str(e))
            continue
        if status >= len(names):
            raise Failure(f"{what} at {url_label(url)}: status {status} is not one of {', '.join(f'{n}={i}' for i, n in enumerate(names))}")
        return status, queued, url
    raise Failure(f"no L1 RPC URL answered {what}: " + "; ".join(errors))


def read_env_file(spec):
    path = spec["registerEnvFile"]
    env = {}
    try:
        with open(path) as f:
            for line in f:
                name, sep, value = line.rstrip("\n").partition("=")
                if sep:
                    env[name] = value
    except OSError as e:
        raise Failure(f"cannot read the sender key file {path}: {e.strerror}: nothing sent") from None
    # Never the CLI's fallback: without --private-key and PRIVATE_KEY it sends from the public test mnemonic.
    if not KEY.fullmatch(env.get("PRIVATE_KEY", "")):
        raise Failure(f"{path} holds no sender key (PRIVATE_KEY, 0x and 64 hex digits): nothing sent; "
                      "add-l1-validator would send from its public test mnemonic")
    if spec["dialect"] == "rollup-deposit" and not BLS_KEY.fullmatch(env.get("NODEFLEET_BLS_SECRET_KEY", "")):
        raise Failure(f"{path} holds no BLS secret key (NODEFLEET_BLS_SECRET_KEY): nothing sent")
    return env


def add_validator_command(spec):
    """(argv, extra env). The keys stay in the env file: docker reads it itself, the release gets them as variables."""
    env = read_env_file(spec)
    args = list(spec["args"])
    preload = spec.get("argvPreload")
    if spec["runtime"] == "docker":
        with open(spec["versionFile"]) as f:
            image = f"{spec['image']}:{f.read().strip()}"
        mount = ["-v", f"{preload}:{preload}:ro", "-e", f"NODE_OPTIONS=--import={preload}"] if preload else []
        return ["docker", "run", "--rm", "--network", "host", "--env-file", spec["registerEnvFile"], *mount, image, *args], {}
    extra = dict(env)
    if preload:
        extra["NODE_OPTIONS"] = (os.environ.get("NODE_OPTIONS", "") + f" --import={preload}").strip()
    return [spec["binary"], *args], extra


def quota_until(output):
    """The retry time of a ValidatorQuotaFilledUntil(uint256) revert, or None."""
    m = re.search(r"ValidatorQuotaFilledUntil\b[^0-9]*(?:uint256\s*)?[^0-9]*([0-9]{6,})", output)
    return int(m.group(1)) if m else None


def with_l1_urls(spec):
    """The settings with the L1 RPC URLs (they may carry an API key), which come from the root-only env
    file as ETHEREUM_HOSTS, the variable the CLI reads for --l1-rpc-urls; never from the settings."""
    env = read_env_file(spec)
    spec = {**spec, "l1RpcUrls": [u for u in env.get("ETHEREUM_HOSTS", "").split(",") if u]}
    if not spec["l1RpcUrls"]:
        raise Failure(f"{spec['registerEnvFile']} holds no L1 RPC URL (ETHEREUM_HOSTS): nothing sent")
    return spec


def lookup(spec):
    """What L1 says of the validator now, read only: {status, queuePosition, l1RpcUrl} (the health
    check shows it; status is the dialect's name, or QUEUED while the deposit waits in the queue)."""
    spec = with_l1_urls(spec)
    status, queued, url = registry_status(spec)
    name = "QUEUED" if status == 0 and queued is not None else STATUS[spec["dialect"]][status]
    return {"status": name, "queuePosition": queued, "l1RpcUrl": url_label(url)}


def register(node, spec):
    summary = {"node": node, "validatorAddress": spec["validatorAddress"], "dialect": spec["dialect"],
               "contract": spec["rollupAddress"] if spec["dialect"] == "rollup-deposit" else spec["registryAddress"]}
    spec = with_l1_urls(spec)
    status, queued, url = registry_status(spec)
    name = STATUS[spec["dialect"]][status]
    summary.update(status=name, l1RpcUrl=url_label(url))
    if status != 0:
        print(f"sequencer {node}: {spec['validatorAddress']} is registered (status {name}); add-l1-validator not needed")
        return {**summary, "action": "none: already registered"}
    if queued is not None:
        print(f"sequencer {node}: {spec['validatorAddress']} is in the rollup's entry queue (position {queued}); it becomes "
              f"VALIDATING when the queue is flushed. add-l1-validator not needed")
        return {**summary, "status": "QUEUED", "queuePosition": queued, "action": "none: queued"}
    record_path = os.path.join(spec["dataDir"], ".nodefleet-registration.json")
    try:
        with open(record_path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        record = None
    via = spec["rollupAddress"] if spec["dialect"] == "rollup-deposit" else spec["stakingAssetHandler"]
    if record and record.get("validatorAddress") == spec["validatorAddress"] and record.get("via") == via:
        print(f"sequencer {node}: registration of {spec['validatorAddress']} was submitted at {record['submittedAt']}; the registry "
              f"does not show it yet (status NONE). Not sending it again; remove {record_path} to force a new submission.")
        return {**summary, "action": "none: submitted earlier, pending", "submittedAt": record["submittedAt"]}
    command, extra_env = add_validator_command(spec)
    proc = subprocess.run(command, env={**os.environ, **extra_env}, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        until = quota_until(output)
        if until is not None:
            when = datetime.datetime.fromtimestamp(until, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            raise Failure(f"the staking asset handler's validator quota is filled until {when} (ValidatorQuotaFilledUntil({until})): "
                          f"registration was not sent; run `pulumi up` again after that time", 3)
        raise Failure(f"add-l1-validator failed (exit {proc.returncode}):\n{output.strip()}")
    sys.stdout.write(proc.stdout)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    tx = re.search(r"0x[0-9a-fA-F]{64}", proc.stdout)
    record = {"submittedAt": now, "validatorAddress": spec["validatorAddress"], "via": via,
              "transaction": tx.group(0) if tx else None}
    with open(record_path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(record_path + ".tmp", record_path)
    print(f"sequencer {node}: registration of {spec['validatorAddress']} submitted")
    return {**summary, "action": "submitted", "submittedAt": now, "transaction": record["transaction"]}


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    try:
        try:
            spec = json.load(sys.stdin)
        except ValueError as e:
            raise Failure(f"the registration settings on stdin are not JSON: {e}") from None
        summary = register(argv[1], spec)
    except Failure as e:
        print(f"sequencer {argv[1]}: registration: {e.args[0]}", file=sys.stderr)
        return e.args[1] if len(e.args) > 1 else 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
NODEFLEET_EOF
put /usr/local/lib/nodefleet/aztec-argv.mjs 0644 root:root <<'NODEFLEET_EOF'
// nodefleet: loaded into the Aztec CLI's node process with NODE_OPTIONS=--import=<this file> by
// aztec-register.py (issue 19). Aztec 4.x's add-l1-validator takes the attester's BLS secret key
// only as a flag (--bls-secret-key), and a flag is readable by every user in ps and
// /proc/<pid>/cmdline. This appends it to the process's own argv, which commander parses and no
// other process sees, from NODEFLEET_BLS_SECRET_KEY (read from a root-only file), and removes the
// variable so that nothing the CLI starts inherits it. It never prints the key.
const key = process.env.NODEFLEET_BLS_SECRET_KEY;
if (key !== undefined) {
    delete process.env.NODEFLEET_BLS_SECRET_KEY;
    if (key !== "" && !process.argv.includes("--bls-secret-key")) process.argv.push("--bls-secret-key", key);
}
NODEFLEET_EOF
put /usr/local/lib/nodefleet/aztec-health.py 0755 root:root <<'NODEFLEET_EOF'
#!/usr/bin/env python3
"""Health of an Aztec sequencer (installed by nodefleet), as one JSON object on stdout.

    aztec-health.py <node> [--wait SECONDS]

active: systemd state of the unit; provenBlock and latestBlock: node_getL2Tips's proven and newest
block number, in the shape the node's version answers (2.0.x: result.proven.number, a number or a
numeric string, seed 2.3; 4.1.2: result.proven.block.number and result.proposed.number);
siblingPath: the archive's sibling path of the proven block (2.0.x: node_getArchiveSiblingPath with
that number twice, seed 4.1; 4.1.2: node_getBlockHashMembershipWitness), whether it answered and
the length of what it returned; peerId: from the node's `Started P2P service` log line in the
journal, ANSI colour codes stripped; l1Unreachable: host[:port] of an L1 endpoint the node's log
says it failed to reach in the last 90 s; diagnoses: what is wrong, with what to do; tipsError /
siblingPathError: why those calls failed; registration: what L1 says of the validator now
(status NONE/VALIDATING/…, or QUEUED with queuePosition; read only, as the registration step
looks it up). --wait waits up to SECONDS for all of them.
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
from nodefleet_rpc import RpcFailure, rpc, url_label  # noqa: E402

ETC = os.environ.get("NODEFLEET_ETC", "/etc/nodefleet")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PEER_ID = re.compile(r"""["']?peerId["']?\s*[:=]\s*["']?([1-9A-HJ-NP-Za-km-z]{20,})""")


# Where node_getL2Tips keeps a tip's block: 2.0.x (the seed, 2.3) `{latest, proven, finalized}`,
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
    """The archive's sibling path of the proven block: 2.0.x node_getArchiveSiblingPath(n, n) (seed
    4.1); 4.1.2 has no such method (it answers -32601) and gives the same path as
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
           "siblingPath": None, "peerId": None, "l1Unreachable": None, "diagnoses": []}
    state = subprocess.run(["systemctl", "is-active", spec["service"]], capture_output=True, text=True).stdout.strip()
    out["active"], out["state"] = state == "active", state or "unknown"
    if not out["active"]:
        out["diagnoses"].append(f"{spec['service']} is {state or 'unknown'}: journalctl -u {spec['service']}")
    proven_hash = None
    try:
        tips = rpc(url, "node_getL2Tips")
        out["provenBlock"], proven_hash = tip(tips, api, "proven")
    except (RpcFailure, ValueError) as e:
        out["tipsError"] = str(e)
        out["diagnoses"].append(f"{e}: the node's RPC is not answering as expected")
    if out["provenBlock"] is not None:
        try:  # shown, not required: the seed names only the proven tip (2.3)
            out["latestBlock"] = tip(tips, api, "latest")[0]
        except ValueError:
            pass
        n = out["provenBlock"]
        try:
            path = archive_witness(url, api, n, proven_hash)
            out["siblingPath"] = {"ok": path is not None, "length": len(path) if isinstance(path, (str, list)) else None}
            if path is None:
                out["diagnoses"].append(f"the archive has no sibling path for block {n}: the archiver has not synced that block")
        except RpcFailure as e:
            out["siblingPath"] = {"ok": False, "length": None}
            out["siblingPathError"] = str(e)
            out["diagnoses"].append(str(e))
    lines = journal(spec["service"])
    out["peerId"] = peer_id(lines)
    if out["peerId"] is None:
        out["diagnoses"].append("no 'Started P2P service' line with a peerId in this boot's journal yet: the P2P service has not started")
    out["l1Unreachable"] = l1_failure(lines, time.time() * 1000)
    if out["l1Unreachable"]:
        out["diagnoses"].append(f"the node cannot reach its L1 RPC {out['l1Unreachable']} (HTTP request failed, in its log within {L1_FAILURE_WINDOW_MS // 1000} s)")
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
    out["registration"] = registration(node)  # shown, not judged: asked of L1 once
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
NODEFLEET_EOF
restart=""
put /etc/systemd/system/"$service" 0644 root:root <<'NODEFLEET_EOF'
# Aztec 2.0.x sequencer sequencer-1 (node, archiver, sequencer on alpha-testnet), rendered by nodefleet.
# The start flags are the ones Aztec 2.0.x reads (seed 2.4 for 2.0.x); the validator private key
# is the one value given by its environment variable (VALIDATOR_PRIVATE_KEY) from a root-only 0600
# file, never a command line.
[Unit]
Description=Aztec sequencer sequencer-1 (alpha-testnet)
Wants=network-online.target
After=network-online.target docker.service
Requires=docker.service

[Service]
Type=simple
# docker runs as root; the container reads the key from --env-file (the aztec wrapper would put
# it on docker's command line as -e VALIDATOR_PRIVATE_KEY=...).
User=root
WorkingDirectory=/data/sequencer-1
Environment=DATA_DIRECTORY=/data/sequencer-1/data
Environment=P2P_PORT=40400
Environment=AZTEC_PORT=8080
Environment=AZTEC_ADMIN_PORT=8880
Environment=LOG_JSON=1
ExecStartPre=-/usr/bin/docker rm -f aztec-sequencer-1
ExecStart=/usr/bin/docker run --rm --name aztec-sequencer-1 --network host --env-file /etc/nodefleet/sequencer-1/aztec.env -e DATA_DIRECTORY -e P2P_PORT -e AZTEC_PORT -e AZTEC_ADMIN_PORT -e LOG_JSON -v /data/sequencer-1:/data/sequencer-1 aztecprotocol/aztec:2.0.2 start --node --archiver --sequencer --network alpha-testnet --sequencer.coinbase 0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359 --p2p.p2pIp 198.51.100.20
ExecStop=/usr/bin/docker stop aztec-sequencer-1
# On SIGTERM (systemctl stop) 4.1.2 shuts down and exits 143 (128 + 15), as docker run does then:
# a clean stop, not a failure. 78 and 79 (a rollup or version upgrade) are failures: restarted.
SuccessExitStatus=143
Restart=on-failure
RestartSec=10
TimeoutStopSec=60
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
case "$changed" in *"$service"*) restart="unit" ;; esac
systemctl daemon-reload

# The version the running node was started with, against the one aztec-up installed last.
if ! cmp -s "$etc/version" "$etc/started-version"; then
	restart="${restart:+$restart, }version $(cat "$etc/version")"
fi

systemctl enable "$service" >/dev/null 2>&1
record_unit "$service"
if ! systemctl is-active --quiet "$service"; then
	systemctl start "$service"
	echo "sequencer $node: started $service"
elif [ -n "$restart" ]; then
	systemctl restart "$service"
	echo "sequencer $node: restarted $service (changed: $restart)"
else
	echo "sequencer $node: $service unchanged and running"
fi
cp "$etc/version" "$etc/started-version"
sleep 3
if ! systemctl is-active --quiet "$service"; then
	journalctl -u "$service" -n 20 --no-pager >&2 || true
	echo "sequencer $node: $service is not running" >&2
	exit 1
fi
