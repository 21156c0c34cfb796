#!/usr/bin/env -S python3 -S
"""Roll the consensus height of a stopped 0gchaind back until it is not ahead of the execution
client (docs/spec.md §4.4 "Roll back consensus height", docs/spec.md §4.5 step 13, docs/spec.md §7 remedy of -38002).

    consensus-height-rollback.py <consensus_home> <execution_http_url>
        [--service <0gchaind unit>] [--height N] [--max N] [--binary PATH] [--user USER] [--dry-run]

The consensus height is the last `Committed state` height in the daemon's journal (--service),
or --height when given; the execution height is eth_blockNumber at the URL. While the consensus
height is ahead, `0gchaind rollback --hard --home <home>` moves it back one height per run, as
--user when given (the owner of the home). --hard, because CometBFT's rollback without it goes
back one height once: a second run finds the state one below the last block and changes nothing;
with it each run also drops the block above, which the node fetches again from its peers (and
replays to the execution client) when it starts. A run that prints the height it reached is held
to it; BeaconKit's beacond v1.1 prints "Rolled back state to height %d and hash %X" without the
numbers, and counts as one height lower. At most --max runs (default 64): a consensus that is further
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
ROLLED = re.compile(r"Rolled back state to height (\d+)?")


class Refused(Exception):
    pass


def committed_height(service):
    out = subprocess.run(["journalctl", "-u", service, "-o", "cat", "--no-pager", "-n", "20000"],
                         capture_output=True, text=True, check=False).stdout
    heights = COMMITTED.findall(out)
    if not heights:
        raise Refused(f"no 'Committed state' line in the journal of {service}: cannot tell the consensus height (give --height)")
    return int(heights[-1])


# How many recent application states each Cosmos SDK pruning strategy keeps (app.toml `pruning`).
KEPT = {"everything": 2, "default": 362880, "nothing": None}


def read_app_toml(home):
    """The consensus home's app.toml, parsed: (document, None), or (None, why it cannot be read)."""
    import tomllib
    try:
        with open(os.path.join(home, "config", "app.toml"), "rb") as f:
            return tomllib.load(f), None
    except (OSError, tomllib.TOMLDecodeError) as e:
        return None, str(e)


def kept_states(doc):
    """The application states app.toml's pruning keeps (None: all, or no app.toml to read). A
    rollback by N heights needs the state N heights back: BeaconKit's stops with "version does not
    exist" after CometBFT has already gone back, which leaves the node unable to start."""
    if doc is None:
        return None
    strategy = str(doc.get("pruning", "default"))
    if strategy == "custom":
        try:
            return int(doc.get("pruning-keep-recent", 0))
        except (TypeError, ValueError):
            return None
    return KEPT.get(strategy)


def beacond_app_files(doc, error):
    """What beacond's rollback would miss in app.toml: the pruning strategy and the JWT and
    trusted-setup files it loads (a missing one panics before anything is rolled back)."""
    if doc is None:
        return [f"cannot be read ({error})"]
    kit = doc.get("beacon-kit", {})
    out = []
    if doc.get("pruning") not in ("default", "everything", "nothing", "custom"):
        # Its start takes the SDK's default; its rollback panics: "unknown pruning strategy".
        out.append(f"pruning is {doc.get('pruning')!r}, not one of default, everything, nothing, custom")
    for section, key in (("engine", "jwt-secret-path"), ("kzg", "trusted-setup-path")):
        value = (kit.get(section) or {}).get(key)
        if not isinstance(value, str) or not os.path.isabs(value) or not os.path.isfile(value):
            out.append(f"[beacon-kit.{section}] {key} is {value!r}, not the absolute path of a file")
    return out


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
    app, app_error = read_app_toml(home)
    missing = beacond_app_files(app, app_error) if os.path.basename(opts["binary"]) == "beacond" else []
    if missing:
        raise Refused(f"{home}/config/app.toml: {'; '.join(missing)}: beacond rollback builds the node from app.toml alone "
                      "(not from the unit's flags) and stops on it; set it there. Nothing was changed")
    kept = kept_states(app)
    if kept is not None and ahead >= kept:
        raise Refused(f"consensus height {consensus} is {ahead} ahead of the execution client ({execution}), but {home}/config/app.toml "
                      f"keeps the last {kept} application state(s) (pruning): a rollback to {execution} would stop half-way, CometBFT "
                      "rolled back and the application not. Nothing was changed. Let the execution client catch up from its peers; "
                      "for the future set pruning = \"default\" (or custom with pruning-keep-recent above rollbackMax) there")
    if opts["dry"]:
        out(f"dry run: would roll back {ahead} height(s), {consensus} -> {execution}")
        report["wouldRollBack"] = ahead
        return report
    height = consensus
    while height > execution:
        cmd = [opts["binary"], "rollback", "--hard", "--home", home]
        if opts["user"]:
            cmd = ["runuser", "-u", opts["user"], "--"] + cmd
        # errors="replace": beacond v1.1 writes the rolled-back hash as raw bytes after its message.
        done = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace", check=False)
        text = (done.stdout + done.stderr).strip()
        m = ROLLED.search(text)
        if done.returncode != 0 or not m:
            raise Refused(f"{os.path.basename(opts['binary'])} rollback at height {height} failed (exit {done.returncode}): {text[-300:]}")
        new = int(m.group(1)) if m.group(1) else height - 1
        if new >= height:
            raise Refused(f"{os.path.basename(opts['binary'])} rollback did not lower the height ({height} -> {new})")
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
