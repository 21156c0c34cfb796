"""aztec SIMULATOR: the Aztec 2.0.x CLI's registration command, as far as nodefleet drives it.
The unit tier's registration tests (hostfiles/tests/test_aztec_scripts.py) run it as the CLI in
seconds, before anything is built; the real 4.1.2 CLI and node run in the cli and e2e tiers and
on the dev hosts (lab/aztec.sh, lab/aztec/release.sh).

  aztec add-l1-validator --l1-rpc-urls URL [--private-key 0x..] --attester 0x.. --proposer-eoa 0x..
              --staking-asset-handler 0x.. --l1-chain-id 11155111
              (like the real CLI, --private-key defaults to $PRIVATE_KEY)

Fault: validator-quota-filled-until=<unix time> (add-l1-validator reverts with
ValidatorQuotaFilledUntil(uint256)).
"""
import os
import re
import sys
import time

from . import common

VERSION = "2.0.2"
HEX_KEY = re.compile(r"^0x[0-9a-fA-F]{64}$")
ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")


class Refused(Exception):
    pass


def urls(name, value):
    parts = [u.strip() for u in value.split(",") if u.strip()]
    if not parts or not all(re.match(r"^https?://[^\s/]+", u) for u in parts):
        raise Refused(f"--{name}: expected a comma-separated list of http(s) URLs, got {value!r}")
    return parts


def cmd_add_l1_validator(flags):
    # As the CLI's options do: --private-key from PRIVATE_KEY, --l1-rpc-urls from ETHEREUM_HOSTS.
    for flag, env in (("private-key", "PRIVATE_KEY"), ("l1-rpc-urls", "ETHEREUM_HOSTS")):
        if not flags.get(flag) and os.environ.get(env):
            flags = {**flags, flag: os.environ[env]}
    need = ("l1-rpc-urls", "private-key", "attester", "proposer-eoa", "staking-asset-handler", "l1-chain-id")
    for n in need:
        if not flags.get(n):
            raise Refused(f"--{n} is required")
    urls("l1-rpc-urls", flags["l1-rpc-urls"])
    if not HEX_KEY.match(flags["private-key"]):
        raise Refused("--private-key: expected 0x followed by 64 hex characters")
    for n in ("attester", "proposer-eoa", "staking-asset-handler"):
        if not ADDRESS.match(flags[n]):
            raise Refused(f"--{n}: expected a 0x-prefixed 20-byte address")
    if flags["l1-chain-id"] != "11155111":
        raise Refused(f"--l1-chain-id: expected 11155111 (Sepolia), got {flags['l1-chain-id']}")
    until = common.fault_int("validator-quota-filled-until")
    if until is not None and until > time.time():
        print(f"Error: execution reverted: ValidatorQuotaFilledUntil(uint256 {until})", file=sys.stderr)
        return 1
    tx = "0x" + common.keccak256(f"{flags['attester']}{time.time()}".encode()).hex()
    print(f"Adding validator {flags['attester']} via staking asset handler {flags['staking-asset-handler']}")
    print(f"Transaction hash: {tx}")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("--version", "-V"):
        print(f"{VERSION} ({common.SIMULATOR_NOTE})")
        return 0
    sub, rest = argv[0], argv[1:]
    try:
        if sub == "add-l1-validator":
            flags, extra = common.parse_flags(rest, {"l1-rpc-urls", "private-key", "attester", "proposer-eoa", "staking-asset-handler", "l1-chain-id"})
            if extra:
                raise Refused(f"unknown argument {extra[0]!r}")
            return cmd_add_l1_validator(flags)
        raise Refused(f"unknown command '{sub}'")
    except (common.FlagError, Refused) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
