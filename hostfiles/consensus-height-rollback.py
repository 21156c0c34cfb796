#!/usr/bin/env -S python3 -S
"""Roll the consensus height of a stopped 0gchaind back until it is not ahead of the execution
client (seed 4.4 "Roll back consensus height", seed 4.5 step 13, seed 7 remedy of -38002).

    consensus-height-rollback.py <consensus_home> <execution_http_url>
        [--service <0gchaind unit>] [--height N] [--max N] [--binary PATH] [--user USER] [--dry-run]

The consensus height is the last `Committed state` height in the daemon's journal (--service),
or --height when given; the execution height is eth_blockNumber at the URL. While the consensus
height is ahead, `0gchaind rollback --home <home>` moves it back one height per run (each run
prints the height it reached), as --user when given (the owner of the home). At most --max runs (default 64): a consensus that is further
ahead than that is not rolled back blindly; the script stops and says so. --dry-run prints the
plan and changes nothing. The daemon must be stopped (its database is locked while it runs).
The last line of output is a JSON report. Exit codes: 0 done (or nothing to do), 1 refused or
failed, 2 usage.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodefleet_rpc import RpcFailure, block_number  # noqa: E402

COMMITTED = re.compile(r"Committed state.*?\bheight=(\d+)")
ROLLED = re.compile(r"Rolled back state to height (\d+)")


class Refused(Exception):
    pass


def committed_height(service):
    out = subprocess.run(["journalctl", "-u", service, "-o", "cat", "--no-pager", "-n", "20000"],
                         capture_output=True, text=True, check=False).stdout
    heights = COMMITTED.findall(out)
    if not heights:
        raise Refused(f"no 'Committed state' line in the journal of {service}: cannot tell the consensus height (give --height)")
    return int(heights[-1])


def parse(argv):
    opts = {"max": 64, "dry": False, "service": None, "height": None, "binary": "0gchaind", "user": None}
    pos = []
    it = iter(argv)
    for a in it:
        if a == "--dry-run":
            opts["dry"] = True
        elif a in ("--service", "--height", "--max", "--binary", "--user"):
            value = next(it, None)
            if value is None:
                raise Refused(f"{a} needs a value")
            if a in ("--height", "--max"):
                if not value.isdigit():
                    raise Refused(f"{a}: {value!r} is not a number")
                value = int(value)
            opts[a[2:]] = value
        elif a.startswith("--"):
            raise Refused(f"unknown option {a}")
        else:
            pos.append(a)
    if len(pos) != 2:
        raise Refused("usage: consensus-height-rollback.py <consensus_home> <execution_http_url> [options]")
    if opts["height"] is None and opts["service"] is None:
        raise Refused("give --service (to read the height from the journal) or --height")
    return pos[0], pos[1], opts


def run(home, url, opts, out=print):
    if not os.path.isdir(os.path.join(home, "config")):
        raise Refused(f"{home}: not a consensus home (no config directory)")
    consensus = opts["height"] if opts["height"] is not None else committed_height(opts["service"])
    execution = block_number(url)
    ahead = consensus - execution
    report = {"consensusHeight": consensus, "executionHeight": execution, "rolledBack": 0, "dryRun": opts["dry"]}
    if ahead <= 0:
        out(f"consensus height {consensus} is not ahead of the execution client ({execution}): nothing to roll back")
        return report
    if ahead > opts["max"]:
        raise Refused(f"consensus height {consensus} is {ahead} ahead of the execution client ({execution}), more than --max {opts['max']}: "
                      "not rolling back blindly; let the execution client catch up first")
    if opts["dry"]:
        out(f"dry run: would roll back {ahead} height(s), {consensus} -> {execution}")
        report["wouldRollBack"] = ahead
        return report
    height = consensus
    while height > execution:
        cmd = [opts["binary"], "rollback", "--home", home]
        if opts["user"]:
            cmd = ["runuser", "-u", opts["user"], "--"] + cmd
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        text = (done.stdout + done.stderr).strip()
        m = ROLLED.search(text)
        if done.returncode != 0 or not m:
            raise Refused(f"0gchaind rollback at height {height} failed (exit {done.returncode}): {text[-300:]}")
        new = int(m.group(1))
        if new >= height:
            raise Refused(f"0gchaind rollback did not lower the height ({height} -> {new})")
        height = new
        report["rolledBack"] += 1
        out(f"rolled back to height {height}")
    report["consensusHeight"] = height
    return report


def main(argv):
    try:
        home, url, opts = parse(argv[1:])
        report = run(home, url, opts)
    except (Refused, RpcFailure) as e:
        print(f"consensus-height-rollback: {e}", file=sys.stderr)
        return 1 if not str(e).startswith("usage") else 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
