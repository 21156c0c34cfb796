"""JSON-RPC over HTTP for nodefleet's host scripts (installed beside them).

rpc(url, method, params) returns the result or raises RpcFailure with a message that names the
URL, the method and what was wrong: no answer, not JSON, no result, or the JSON-RPC error.
block_number(url) is eth_blockNumber as an int, refusing an answer that is not a hex number;
block_hash(url, n) the hash of block n (eth_getBlockByNumber); peer_count(url) net_peerCount.
ipc(path, method, params) is rpc() over a node's IPC socket (geth's admin namespace is served
there only), with no timeout unless given: an admin_exportChain answers when the export is done.

    python3 -S nodefleet_rpc.py ipc <socket> <method> [<params as JSON>]

prints the result as JSON (exit 0) or the failure (exit 1).
"""
import base64
import json
import re
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request


class RpcFailure(Exception):
    pass


def rpc_request(url, body):
    """A JSON-RPC POST to url; a user:password@ in it becomes Basic authentication (urllib would take
    it for part of the host)."""
    u = urllib.parse.urlsplit(url)
    headers = {"Content-Type": "application/json"}
    if "@" in u.netloc:
        user, _, password = u.netloc.rpartition("@")[0].partition(":")
        token = base64.b64encode(f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        url = urllib.parse.urlunsplit((u.scheme, u.netloc.rpartition("@")[2], u.path, u.query, u.fragment))
    return urllib.request.Request(url, data=body, headers=headers)


def url_label(url):
    """How a URL is named in messages: scheme, host and port only (a hosted endpoint's path, query or
    user part may hold an API key)."""
    try:
        u = urllib.parse.urlsplit(url)
        origin = f"{u.scheme}://{u.hostname}" + (f":{u.port}" if u.port else "")
    except ValueError:
        return "(an unparsable URL)"
    if not u.scheme or not u.hostname:
        return "(an unparsable URL)"
    return origin if u.path in ("", "/") and not u.query else f"{origin}/…"


# A URL in free text (a log line): its scheme up to the next blank or quote, less a closing
# punctuation mark.
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>)]*[^\s\"'<>).,;:]")


def cut_urls(text):
    """`text` (journal lines) with each URL named by url_label: a node logs the endpoints it could
    not reach whole, and a hosted endpoint's path, query or user part may hold an API key."""
    return URL_IN_TEXT.sub(lambda m: url_label(m.group(0)), text)


def rpc(url, method, params=None, timeout=5, optional=False):
    """The result of `method` at url. optional: an answer without a result is None (an Aztec node
    leaves the result out when a call found nothing) instead of a failure."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    req = rpc_request(url, body)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        raise RpcFailure(f"{method} at {url_label(url)}: HTTP {e.code}") from None
    except OSError as e:
        raise RpcFailure(f"{method} at {url_label(url)}: no answer ({getattr(e, 'reason', e)})") from None
    try:
        answer = json.loads(raw)
    except ValueError:
        raise RpcFailure(f"{method} at {url_label(url)}: the answer is not JSON: {raw[:80]!r}") from None
    if not isinstance(answer, dict):
        raise RpcFailure(f"{method} at {url_label(url)}: the answer is not a JSON-RPC object")
    if answer.get("error") is not None:
        err = answer["error"]
        text = err.get("message", err) if isinstance(err, dict) else err
        raise RpcFailure(f"{method} at {url_label(url)}: JSON-RPC error: {text}")
    if "result" not in answer:
        if optional:
            return None
        raise RpcFailure(f"{method} at {url_label(url)}: the answer has no result")
    return answer["result"]


def block_number(url):
    """eth_blockNumber at url as an int; RpcFailure when the answer is not a hex number."""
    value = rpc(url, "eth_blockNumber")
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", value):
        raise RpcFailure(f"eth_blockNumber at {url_label(url)}: {value!r} is not a hex block number")
    return int(value, 16)


def block_hash(url, number):
    """The hash of block `number` at url (0x + 64 lowercase hex); RpcFailure when the node has no
    such block or answers something else."""
    block = rpc(url, "eth_getBlockByNumber", [hex(number), False])
    if block is None:
        raise RpcFailure(f"eth_getBlockByNumber at {url_label(url)}: no block {number}")
    value = block.get("hash") if isinstance(block, dict) else None
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]{64}", value):
        raise RpcFailure(f"eth_getBlockByNumber at {url_label(url)}: block {number} has no hash (got {str(value)[:80]!r})")
    return value.lower()


def peer_count(url):
    """net_peerCount at url as an int."""
    value = rpc(url, "net_peerCount")
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]+", value):
        raise RpcFailure(f"net_peerCount at {url_label(url)}: {value!r} is not a hex number")
    return int(value, 16)


def ipc(path, method, params=None, timeout=None):
    """One JSON-RPC call over the Unix socket at path."""
    where = f"{method} at {path}"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode())
            decoder, raw = json.JSONDecoder(), b""
            while True:
                chunk = s.recv(1 << 16)
                if not chunk:
                    raise RpcFailure(f"{where}: the connection closed before an answer ({raw[:80]!r})")
                raw += chunk
                try:
                    answer, _ = decoder.raw_decode(raw.decode())
                    break
                except ValueError:
                    continue
    except OSError as e:
        raise RpcFailure(f"{where}: no answer ({e})") from None
    if not isinstance(answer, dict):
        raise RpcFailure(f"{where}: the answer is not a JSON-RPC object")
    if answer.get("error") is not None:
        err = answer["error"]
        raise RpcFailure(f"{where}: JSON-RPC error: {err.get('message', err) if isinstance(err, dict) else err}")
    if "result" not in answer:
        if optional:
            return None
        raise RpcFailure(f"{where}: the answer has no result")
    return answer["result"]


def main(argv):
    if len(argv) not in (4, 5) or argv[1] != "ipc":
        print("usage: nodefleet_rpc.py ipc <socket> <method> [<params as JSON>]", file=sys.stderr)
        return 2
    try:
        params = json.loads(argv[4]) if len(argv) == 5 else []
        print(json.dumps(ipc(argv[2], argv[3], params)), flush=True)
    except ValueError as e:
        print(f"params: not JSON ({e})", file=sys.stderr)
        return 2
    except RpcFailure as e:
        print(str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
