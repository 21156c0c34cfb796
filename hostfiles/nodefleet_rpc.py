"""JSON-RPC over HTTP for nodefleet's host scripts (installed beside them).

rpc(url, method, params) returns the result or raises RpcFailure with a message that names the
URL, the method and what was wrong: no answer, not JSON, no result, or the JSON-RPC error.
block_number(url) is eth_blockNumber as an int, refusing an answer that is not a hex number;
block_hash(url, n) the hash of block n (eth_getBlockByNumber); peer_count(url) net_peerCount.
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


def block_hash(url, number):
    """The hash of block `number` at url (0x + 64 lowercase hex); RpcFailure when the node has no
    such block or answers something else."""
    block = rpc(url, "eth_getBlockByNumber", [hex(number), False])
    if block is None:
        raise RpcFailure(f"eth_getBlockByNumber at {url}: no block {number}")
    value = block.get("hash") if isinstance(block, dict) else None
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]{64}", value):
        raise RpcFailure(f"eth_getBlockByNumber at {url}: block {number} has no hash (got {str(value)[:80]!r})")
    return value.lower()


def peer_count(url):
    """net_peerCount at url as an int."""
    value = rpc(url, "net_peerCount")
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", value):
        raise RpcFailure(f"net_peerCount at {url}: {value!r} is not a hex number")
    return int(value, 16)
