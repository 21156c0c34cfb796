"""Helpers shared by the simulator tests."""
import socket
import time

from nodefleet_sim import common


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(f, timeout=30.0, every=0.1):
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


def consensus_home(home, engine_port, jwt_path, rpc_port, validator_key="{}"):
    """A 0gchaind home as the simulator reads it: app.toml pointing at the engine endpoint,
    config.toml with the CometBFT RPC port, the validator key and an empty validator state."""
    import os
    os.makedirs(os.path.join(home, "config"))
    os.makedirs(os.path.join(home, "data"))
    files = {
        "config/app.toml": f'[beacon-kit.engine]\nrpc-dial-url = "http://localhost:{engine_port}"\njwt-secret-path = "{jwt_path}"\n',
        "config/config.toml": f'[rpc]\nladdr = "tcp://127.0.0.1:{rpc_port}"\n',
        "config/priv_validator_key.json": validator_key,
        "data/priv_validator_state.json": "{}",
    }
    for name, text in files.items():
        with open(os.path.join(home, name), "w") as f:
            f.write(text)
    return home
