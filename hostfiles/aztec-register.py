#!/usr/bin/env python3
"""Validator registration of an Aztec sequencer (installed by nodefleet; docs/spec.md §2.5, 4.3).

    aztec-register.py <node> < registration.json

Reads what to register from stdin (JSON: dialect, runtime, binary, image, versionFile, dataDir,
l1ChainId, validatorAddress, registerEnvFile, argvPreload, args, and per dialect registryAddress +
stakingAssetHandler or rollupAddress). Two dialects, chosen by the sequencer's version:

- staking-asset-handler (2.0.x, the spec): asks the validator registry getInfo(validatorAddress); the
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
