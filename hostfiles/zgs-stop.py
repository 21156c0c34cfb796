#!/usr/bin/env python3
"""Stops a 0G storage node for systemd: its unit's ExecStop (installed by nodefleet).

    zgs-stop.py [--grace SECONDS]        (the node's pid in MAINPID, as systemd sets it)

zgs_node v1.1.0 answers SIGTERM with its shutdown ("Shutting down..." in its log), then waits 15 s
(upstream's MAXIMUM_SHUTDOWN_TIME) for its runtime's tasks to end. Its pad task never yields, so that
wait always runs out, and the process then exits with the task cut wherever it was, its database
never closed (docs/roles.md, "Its stop"). This tool sends SIGTERM, gives the node GRACE seconds
(default 5) to do what its shutdown does, and ends it with SIGUSR2 if it still runs: a signal the
node does not handle, which its unit counts as a clean stop (SuccessExitStatus=SIGUSR2). It holds
the process by a pidfd, so that a pid used again after the node exited is never signalled.
Exit 0 whether the node ended by itself or by SIGUSR2, or was not running; 2 on bad arguments.
"""
import argparse
import os
import select
import signal
import sys


def main(argv):
    parser = argparse.ArgumentParser(prog="zgs-stop.py")
    parser.add_argument("--grace", type=float, default=5.0, help="seconds between SIGTERM and SIGUSR2")
    args = parser.parse_args(argv)
    if not 0 <= args.grace <= 60:
        parser.error(f"--grace: {args.grace} is not between 0 and 60 seconds")
    mainpid = os.environ.get("MAINPID", "")
    if mainpid == "":
        return 0  # systemd sets none when the node has already exited (a crash, a failed start)
    if not mainpid.isdigit() or int(mainpid) <= 1:
        parser.error(f"MAINPID: {mainpid!r} is not a process id")
    try:
        pidfd = os.pidfd_open(int(mainpid))
    except ProcessLookupError:
        return 0  # exited since systemd read it
    try:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        except ProcessLookupError:
            return 0
        # A pidfd turns readable when its process has exited.
        if select.select([pidfd], [], [], args.grace)[0]:
            return 0
        print(f"zgs-stop: zgs_node (pid {mainpid}) still runs {args.grace:g} s after SIGTERM (it waits 15 s on its pad task, which never ends): ending it with SIGUSR2", file=sys.stderr)
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGUSR2)
        except ProcessLookupError:
            return 0
        select.select([pidfd], [], [], 10)
        return 0
    finally:
        os.close(pidfd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
