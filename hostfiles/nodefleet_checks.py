"""Running nodes' health commands on a host: each an argv (no shell), all at once, each with its own
time limit. The one runner both of its callers use: the health timer (nodefleet_metrics.collect)
imports it, and `nodefleet status` sends this file over SSH to `python3 -S -` with a call of
`print_results` appended (status/probe.ts), so hosts without the timer are checked the same way.

A result: {"exit": n, "stdout": ..., "stderr": ..., "seconds": s} | {"timeout": s} | {"error": ...}.
"""
import json
import subprocess
import threading
import time


def run_check(argv, timeout):
    """One run of a node's health command."""
    t0 = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return {"exit": done.returncode, "stdout": done.stdout[-65536:], "stderr": done.stderr[-4096:], "seconds": round(time.monotonic() - t0, 2)}
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    except OSError as e:
        return {"error": f"{argv[0]}: {e.strerror or e}"}


def run_all(checks):
    """Every check ({node, argv, timeout}) at once: {node: result}."""
    results = {}
    threads = [threading.Thread(target=lambda c=c: results.__setitem__(c["node"], run_check(c["argv"], c["timeout"]))) for c in checks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def print_results(checks):
    """What `nodefleet status` reads back: {"results": {node: result}} on one line."""
    print(json.dumps({"results": run_all(checks)}))
    return 0
