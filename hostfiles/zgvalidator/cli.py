"""The command line: zg-validator.py <settings.json> <command> [args]; see the package docstring."""
import json
import sys

from . import __doc__ as USAGE
from .handover import handover
from .health import health, status
from .host import Failed
from .lock import take
from .node import Validator
from .rollback import cleanup, rollback
from .setup import setup
from .switch import MODES, migrate, migration_report
from .upgrade import watch
from nodefleet_rpc import RpcFailure

COMMANDS = {"setup": setup, "rollback": rollback, "cleanup": cleanup, "health": health, "status": status, "handover": handover, "upgrade-watch": watch}
# Every other command holds the node's lock (lock.py); the upgrade's watcher takes it at the height only.
UNLOCKED = {"status", "upgrade-watch"}


def main(argv):
    if len(argv) < 3:
        print(USAGE, file=sys.stderr)
        return 2
    v = Validator(argv[1])
    cmd = argv[2]
    try:
        if cmd not in UNLOCKED:
            lock = take(v.state_dir, " ".join(argv[2:4]))  # noqa: F841 (held until the process ends)
        if cmd == "migrate" and len(argv) == 5:
            record = migrate(v, argv[3], argv[4])
            last = {list(steps)[-1] for steps in MODES.values()}  # the final step of either mode reports the whole switch
            report = migration_report(v) if argv[3] in last else record
        elif cmd in COMMANDS and len(argv) == 3:
            report = COMMANDS[cmd](v)
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except (Failed, RpcFailure) as e:
        print(f"validator {v.node}: {cmd} {' '.join(argv[3:4])}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0
