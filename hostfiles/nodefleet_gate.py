#!/usr/bin/env python3
"""A rollout's gate (issue 42): waits until a node just restarted is healthy, as `nodefleet status`
and the health metrics call it (nodefleet_health: the role's health tool's answer with the seed's
error table applied: no diagnosis of severity error), and stays so for the soak; else fails with
the node's diagnoses.

    python3 nodefleet_gate.py ROLE NODE --within SECONDS --soak SECONDS [--every SECONDS]
                              [--timeout SECONDS] [--marker FILE] -- HEALTH-COMMAND...

HEALTH-COMMAND is the role's health tool as the health timer runs it (zgs-health.py NODE,
aztec-health.py NODE, zg-validator.py <validator.json> status), run without a shell every --every
seconds, each run given --timeout seconds. The node must be healthy within --within seconds of
the start; from its first healthy answer every answer for --soak seconds must be healthy too. An
unhealthy answer in the soak starts the soak again, as long as --within allows (the soak must
begin by then). The result is one JSON object on stdout's last line: {node, role, healthy, waited,
soaked, checks, diagnoses}; exit 0 when the gate passed, 1 when it did not (stderr then names the
node and each diagnosis with its remedy), 2 on bad arguments.

--marker FILE: the node's first deploy is not gated. With no FILE the gate only writes it and
passes ({..., "firstDeploy": true}): a node just made is not yet in service, and a storage node
syncing from scratch is hours from healthy. Every later gate (a change that restarted the node)
waits as above.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nodefleet_health as health  # noqa: E402  (installed beside this script)

ROLES = ("storage", "sequencer", "validator")


def usage(why):
    sys.stderr.write(f"nodefleet_gate: {why}\n{__doc__}")
    return 2


def parse(argv):
    """(role, node, options, health argv) from the command line, or a str saying what is wrong."""
    if "--" not in argv:
        return "the health command follows --"
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    if len(head) < 2 or not command:
        return "ROLE NODE and a health command are required"
    role, node, rest = head[0], head[1], head[2:]
    if role not in ROLES:
        return f"ROLE must be one of {', '.join(ROLES)}, not {role!r}"
    options = {"--within": None, "--soak": None, "--every": 10.0, "--timeout": 60.0, "--marker": None}
    if len(rest) % 2:
        return "each option takes a value"
    for flag, value in zip(rest[::2], rest[1::2]):
        if flag not in options:
            return f"unknown option {flag}"
        if flag == "--marker":
            if not os.path.isabs(value):
                return f"--marker: an absolute path, not {value!r}"
            options[flag] = value
            continue
        try:
            options[flag] = float(value)
        except ValueError:
            return f"{flag}: not a number: {value!r}"
        if options[flag] < 0:
            return f"{flag}: not a number of seconds: {value!r}"
    if options["--within"] is None or options["--soak"] is None:
        return "--within and --soak are required"
    return role, node, {k[2:]: v for k, v in options.items()}, command


def check(role, node, command, timeout):
    """One run of the health command, as its row (nodefleet_health.rows)."""
    result = health.run_check({"argv": command}, timeout)
    return health.rows([{"node": node, "role": role, "host": os.uname().nodename, "argv": command, "result": result}])[0]


def gate(role, node, command, within, soak, every, timeout, clock=time.monotonic, sleep=time.sleep, run=None):
    """Runs the gate; returns its result (a dict). `clock`, `sleep` and `run` are for the tests."""
    run = run or (lambda: check(role, node, command, timeout))
    start = clock()
    healthy_since = None
    checks = 0
    last = None
    while True:
        last = run()
        checks += 1
        now = clock()
        if last["healthy"]:
            if healthy_since is None:
                healthy_since = now
            if now - healthy_since >= soak:
                return {"node": node, "role": role, "healthy": True, "waited": round(healthy_since - start, 1), "soaked": round(now - healthy_since, 1), "checks": checks, "diagnoses": last["diagnoses"]}
        else:
            healthy_since = None
        # Past the deadline with no soak under way (or none that can finish): the gate fails.
        if healthy_since is None and now - start >= within:
            return {"node": node, "role": role, "healthy": False, "waited": round(now - start, 1), "soaked": 0, "checks": checks, "diagnoses": last["diagnoses"]}
        sleep(every)


def main(argv):
    parsed = parse(argv[1:])
    if isinstance(parsed, str):
        return usage(parsed)
    role, node, opts, command = parsed
    marker = opts["marker"]
    if marker is not None and not os.path.exists(marker):
        os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
        with open(marker + ".new", "w", encoding="utf-8") as f:
            f.write(f"{node}: deployed; later changes are gated\n")
        os.replace(marker + ".new", marker)
        sys.stderr.write(f"gate {node}: its first deploy, not gated (its health step reports it)\n")
        print(json.dumps({"node": node, "role": role, "healthy": None, "firstDeploy": True}))
        return 0
    sys.stderr.write(f"gate {node}: waiting up to {opts['within']:.0f} s for it to be healthy, then {opts['soak']:.0f} s of healthy answers\n")
    result = gate(role, node, command, opts["within"], opts["soak"], opts["every"], opts["timeout"])
    if not result["healthy"]:
        errors = [d for d in result["diagnoses"] if d["severity"] == "error"]
        sys.stderr.write(f"gate {node}: not healthy after {result['waited']:.0f} s ({result['checks']} checks); the rollout stops here\n")
        for d in errors:
            sys.stderr.write(f"  {d['fault']}: {d['detail']}\n    remedy: {d['remedy']}\n")
    else:
        sys.stderr.write(f"gate {node}: healthy after {result['waited']:.0f} s, and for {result['soaked']:.0f} s since\n")
    print(json.dumps(result))
    return 0 if result["healthy"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
