# Sent by `nodefleet status` over SSH to `python3 -S -` (as root): runs the health command of each
# node on this host at once, each with its own time limit, and prints one JSON object:
# {"results": {<node>: {"exit": n, "stdout": ..., "stderr": ..., "seconds": s} | {"timeout": s} | {"error": ...}}}.
# The checks come base64-encoded (a JSON list of {node, argv, timeout}): nothing from the config
# is ever parsed by a shell here, and argv runs without one.
import base64
import json
import subprocess
import sys
import threading
import time

CHECKS = json.loads(base64.b64decode("__CHECKS__"))


def run(check, results):
    t0 = time.monotonic()
    try:
        done = subprocess.run(check["argv"], capture_output=True, text=True, timeout=check["timeout"], stdin=subprocess.DEVNULL)
        results[check["node"]] = {"exit": done.returncode, "stdout": done.stdout[-65536:], "stderr": done.stderr[-4096:], "seconds": round(time.monotonic() - t0, 2)}
    except subprocess.TimeoutExpired:
        results[check["node"]] = {"timeout": check["timeout"]}
    except OSError as e:
        results[check["node"]] = {"error": f"{check['argv'][0]}: {e.strerror or e}"}


def main():
    results = {}
    threads = [threading.Thread(target=run, args=(c, results)) for c in CHECKS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
