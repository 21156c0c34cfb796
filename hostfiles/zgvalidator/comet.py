"""The consensus daemon's CometBFT RPC on the host's loopback (GET): its status and its consensus dump."""
import json
import urllib.request

from .host import Failed


def result(rpc, path, timeout=3):
    """The JSON-RPC `result` of GET rpc+path; urllib's errors (an HTTPError for a status) and JSON's as raised."""
    with urllib.request.urlopen(f"{rpc}{path}", timeout=timeout) as r:
        return json.load(r)["result"]


def status(rpc):
    """/status as {"height", "catchingUp"}; Failed naming what is wrong with the answer."""
    url = f"{rpc}/status"
    try:
        info = result(rpc, "/status")["sync_info"]
        height = int(info.get("latest_block_height", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise Failed(f"GET {url}: no usable result.sync_info ({e})") from None
    catching_up = info.get("catching_up")
    if not isinstance(catching_up, bool):
        raise Failed(f"GET {url}: result.sync_info.catching_up is {catching_up!r}, not true or false")
    return {"height": height, "catchingUp": catching_up}
