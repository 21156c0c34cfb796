"""JSON-RPC over HTTP for nodefleet's host scripts (installed beside them).

rpc(url, method, params) returns the result or raises RpcFailure with a message that names the
URL, the method and what was wrong: no answer, not JSON, no result, or the JSON-RPC error.
block_number(url) is eth_blockNumber as an int, refusing an answer that is not a hex number.
"""
import json
import re
import urllib.error
import urllib.request


class RpcFailure(Exception):
    pass


def rpc(url, method, params=None, timeout=5):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        raise RpcFailure(f"{method} at {url}: HTTP {e.code}") from None
    except OSError as e:
        raise RpcFailure(f"{method} at {url}: no answer ({getattr(e, 'reason', e)})") from None
    try:
        answer = json.loads(raw)
    except ValueError:
        raise RpcFailure(f"{method} at {url}: the answer is not JSON: {raw[:80]!r}") from None
    if not isinstance(answer, dict):
        raise RpcFailure(f"{method} at {url}: the answer is not a JSON-RPC object")
    if answer.get("error") is not None:
        err = answer["error"]
        text = err.get("message", err) if isinstance(err, dict) else err
        raise RpcFailure(f"{method} at {url}: JSON-RPC error: {text}")
    if "result" not in answer:
        raise RpcFailure(f"{method} at {url}: the answer has no result")
    return answer["result"]


def block_number(url):
    """eth_blockNumber at url as an int; RpcFailure when the answer is not a hex number."""
    value = rpc(url, "eth_blockNumber")
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", value):
        raise RpcFailure(f"eth_blockNumber at {url}: {value!r} is not a hex block number")
    return int(value, 16)
