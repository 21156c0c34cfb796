"""Helpers shared by the simulator tests."""
import socket
import time

from nodefleet_sim import common


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(f, timeout=10.0, every=0.1):
    """f's first truthy value within timeout; errors from a service still starting count as not yet."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            v = f()
            if v:
                return v
        except (OSError, common.RpcError, ValueError, KeyError):
            pass
        time.sleep(every)
    raise AssertionError("condition not met in time")
