#!/usr/bin/env python3
"""Validator registration of an Aztec sequencer (installed by nodefleet; seed 2.5, 4.3).

    aztec-register.py <node> < registration.json

Reads what to register from stdin (JSON: runtime, binary, image, versionFile, dataDir, l1RpcUrls, l1ChainId,
registryAddress, validatorAddress, stakingAssetHandler, registerEnvFile). First asks the L1 validator registry
getInfo(validatorAddress) with eth_call (each L1 RPC URL in order until one answers); the last
word of the answer is the status (NONE=0, VALIDATING, LIVING, EXITING). A non-NONE status means
registered: nothing is sent. Otherwise runs `add-l1-validator` with the flags of seed 2.5 except
--private-key: the key reaches it as PRIVATE_KEY (the variable the CLI reads when the flag is
absent) from a root-only file, so it is on no command line. A ValidatorQuotaFilledUntil(t) revert
becomes a message with the time to retry. A submission is recorded in the node's data directory;
while the registry still says NONE after one, it is reported as pending and not sent again.

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
from nodefleet_rpc import RpcFailure, rpc  # noqa: E402

# keccak256("getInfo(address)")[:4]; the test suite recomputes it.
GET_INFO = "ffdd5cf1"
STATUS = ["NONE", "VALIDATING", "LIVING", "EXITING"]

class Failure(Exception):
    pass


def registry_status(spec):
    """(status number, URL that answered) from getInfo(validatorAddress)."""
    address = spec["validatorAddress"].lower()
    data = "0x" + GET_INFO + address[2:].rjust(64, "0")
    errors = []
    for url in spec["l1RpcUrls"]:
        try:
            result = rpc(url, "eth_call", [{"to": spec["registryAddress"], "data": data}, "latest"])
        except RpcFailure as e:
            errors.append(str(e))
            continue
        if not isinstance(result, str) or not re.fullmatch(r"0x[0-9a-fA-F]*", result):
            raise Failure(f"getInfo at {url}: eth_call result is not hex data: {str(result)[:80]!r}")
        words = (len(result) - 2) // 64
        if words < 4:
            raise Failure(f"getInfo at {url}: registry {spec['registryAddress']} returned {words} words, expected 4 "
                          f"(stake, withdrawer, proposer, status): is registryAddress the validator registry on chain {spec['l1ChainId']}?")
        status = int(result[2 + 64 * 3: 2 + 64 * 4], 16)
        if status >= len(STATUS):
            raise Failure(f"getInfo at {url}: status {status} is not one of {', '.join(f'{n}={i}' for i, n in enumerate(STATUS))}")
        return status, url
    raise Failure("no L1 RPC URL answered getInfo: " + "; ".join(errors))


def read_env_file(path):
    env = {}
    with open(path) as f:
        for line in f:
            name, sep, value = line.rstrip("\n").partition("=")
            if sep:
                env[name] = value
    if not env.get("PRIVATE_KEY"):
        raise Failure(f"{path} holds no PRIVATE_KEY")
    return env


def add_validator_command(spec):
    flags = ["add-l1-validator", "--l1-rpc-urls", ",".join(spec["l1RpcUrls"]), "--attester", spec["validatorAddress"],
             "--proposer-eoa", spec["validatorAddress"], "--staking-asset-handler", spec["stakingAssetHandler"],
             "--l1-chain-id", str(spec["l1ChainId"])]
    if spec["runtime"] == "docker":
        # --env-file: docker reads the key from the file itself, so it is not in docker's argv either.
        with open(spec["versionFile"]) as f:
            image = f"{spec['image']}:{f.read().strip()}"
        return ["docker", "run", "--rm", "--network", "host", "--env-file", spec["registerEnvFile"], image, *flags], {}
    return [spec["binary"], *flags], read_env_file(spec["registerEnvFile"])


def quota_until(output):
    """The retry time of a ValidatorQuotaFilledUntil(uint256) revert, or None."""
    m = re.search(r"ValidatorQuotaFilledUntil\b[^0-9]*(?:uint256\s*)?[^0-9]*([0-9]{6,})", output)
    return int(m.group(1)) if m else None


def register(node, spec):
    summary = {"node": node, "validatorAddress": spec["validatorAddress"], "registryAddress": spec["registryAddress"]}
    status, url = registry_status(spec)
    summary.update(status=STATUS[status], l1RpcUrl=url)
    if status != 0:
        print(f"sequencer {node}: {spec['validatorAddress']} is registered (getInfo status {STATUS[status]}); add-l1-validator not needed")
        return {**summary, "action": "none: already registered"}
    record_path = os.path.join(spec["dataDir"], ".nodefleet-registration.json")
    try:
        with open(record_path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        record = None
    if record and record.get("validatorAddress") == spec["validatorAddress"] and record.get("stakingAssetHandler") == spec["stakingAssetHandler"]:
        print(f"sequencer {node}: registration of {spec['validatorAddress']} was submitted at {record['submittedAt']}; the registry "
              f"does not show it yet (status NONE). Not sending it again; remove {record_path} to force a new submission.")
        return {**summary, "action": "none: submitted earlier, pending", "submittedAt": record["submittedAt"]}
    command, extra_env = add_validator_command(spec)
    proc = subprocess.run(command, env={**os.environ, **extra_env}, capture_output=True, text=True, timeout=600)
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
    record = {"submittedAt": now, "validatorAddress": spec["validatorAddress"], "stakingAssetHandler": spec["stakingAssetHandler"],
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
