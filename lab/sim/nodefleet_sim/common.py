"""Shared parts of nodefleet's node simulators: logging, JSON-RPC over HTTP, JWT (HS256) for the
engine API, keccak-256, RLP, strict flag parsing and fault switches.

The simulators stand in for node software that cannot run on the dev hosts (see lab/sim/README.md).
They are test fixtures: small, standard library only, and faithful to the CLI, RPC shapes, log
lines and failures that nodefleet depends on.
"""
import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SIMULATOR_NOTE = "nodefleet simulator (test fixture, not the real software)"


def stop_on_sigterm():
    """An Event set when the process gets SIGTERM (systemctl stop). Set from a thread of its own:
    a handler runs in the main thread between two bytecodes, and when it interrupts the main thread
    inside Event.wait(), which holds the event's lock, an Event.set() there waits for that lock
    forever (measured: 19 of 40 SIGTERMs hung a loop of wait(0)). The simulators hung so under
    load: the 0gchaind simulator past its test's 30 s (CI, 2026-11-28) and the sequencer past
    systemd's stop timeout (killed, its unit failed)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=stop.set, daemon=True).start())
    return stop


# ---- faults ----------------------------------------------------------------------------------
# A fault is switched on by an environment variable NODEFLEET_SIM_<NAME> or by a file
# <fault dir>/<name> (default /run/nodefleet-sim, override NODEFLEET_SIM_FAULT_DIR); the value
# (file content) is the fault's parameter, e.g. a block number.

def fault(name):
    env = os.environ.get("NODEFLEET_SIM_" + name.upper().replace("-", "_"))
    if env is not None:
        return env.strip()
    path = os.path.join(os.environ.get("NODEFLEET_SIM_FAULT_DIR", "/run/nodefleet-sim"), name)
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def consume_fault(name):
    """Removes a fault file (faults given by env variables stay)."""
    try:
        os.unlink(os.path.join(os.environ.get("NODEFLEET_SIM_FAULT_DIR", "/run/nodefleet-sim"), name))
    except OSError:
        pass


def fault_int(name):
    v = fault(name)
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None


# ---- logging ---------------------------------------------------------------------------------

def utc_now():
    return dt.datetime.now(dt.timezone.utc)


class Log:
    """Writes 'TIMESTAMP  LEVEL target: message key=value' lines to stream (and a file)."""

    def __init__(self, target, stream=None, path=None):
        self.target = target
        self.stream = stream if stream is not None else sys.stdout
        self.path = path
        self.lock = threading.Lock()

    def line(self, level, message, **fields):
        ts = utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        extra = "".join(f" {k}={v}" for k, v in fields.items())
        text = f"{ts} {level:>5} {self.target}: {message}{extra}\n"
        with self.lock:
            self.stream.write(text)
            self.stream.flush()
            if self.path:
                with open(self.path, "a") as f:
                    f.write(text)

    def info(self, message, **fields):
        self.line("INFO", message, **fields)

    def warn(self, message, **fields):
        self.line("WARN", message, **fields)

    def error(self, message, **fields):
        self.line("ERROR", message, **fields)


# ---- strict flags ------------------------------------------------------------------------------

class FlagError(Exception):
    pass


def parse_flags(argv, known, switches=()):
    """--name value / --name=value for names in `known`, bare --name for `switches`.
    Anything else is an error worded like clap's (reth) and commander's (aztec)."""
    out, rest, i = {}, [], 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in switches and not eq:
                out[name] = True
            elif name in known:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise FlagError(f"a value is required for '--{name} <{name.upper()}>' but none was supplied")
                    value = argv[i]
                out[name] = value
            else:
                raise FlagError(f"unexpected argument '--{name}' found")
        else:
            rest.append(a)
        i += 1
    return out, rest


# ---- keccak-256 (Ethereum's, not SHA3-256): keccak.py --------------------------------------------

from .keccak import keccak256, keccak256_pure  # noqa: E402,F401  (the simulators call common.keccak256)


# ---- RLP ---------------------------------------------------------------------------------------

class RlpError(Exception):
    pass


def rlp_item(buf, pos, end=None):
    """(kind, payload_start, payload_end) of the item at pos; kind 'b' (bytes) or 'l' (list)."""
    end = len(buf) if end is None else end
    if pos >= end:
        raise RlpError(f"input too short at offset {pos}")
    p = buf[pos]
    if p < 0x80:
        return "b", pos, pos + 1
    if p < 0xB8:
        start, length, kind = pos + 1, p - 0x80, "b"
    elif p < 0xC0:
        n = p - 0xB7
        if pos + 1 + n > end:
            raise RlpError(f"input too short at offset {pos}")
        start, length, kind = pos + 1 + n, int.from_bytes(buf[pos + 1:pos + 1 + n], "big"), "b"
    elif p < 0xF8:
        start, length, kind = pos + 1, p - 0xC0, "l"
    else:
        n = p - 0xF7
        if pos + 1 + n > end:
            raise RlpError(f"input too short at offset {pos}")
        start, length, kind = pos + 1 + n, int.from_bytes(buf[pos + 1:pos + 1 + n], "big"), "l"
    if start + length > end:
        raise RlpError(f"item at offset {pos} needs {start + length - pos} bytes, {end - pos} left")
    return kind, start, start + length


def rlp_list_items(buf, start, end):
    """The (kind, start, end, raw_start) of each item of a list payload."""
    items, pos = [], start
    while pos < end:
        kind, s, e = rlp_item(buf, pos, end)
        items.append((kind, s, e, pos))
        pos = e
    return items


def rlp_encode(value) -> bytes:
    if isinstance(value, list):
        payload = b"".join(rlp_encode(v) for v in value)
        return _rlp_len(len(payload), 0xC0) + payload
    if isinstance(value, int):
        value = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    if len(value) == 1 and value[0] < 0x80:
        return bytes(value)
    return _rlp_len(len(value), 0x80) + bytes(value)


def _rlp_len(n, offset):
    if n < 56:
        return bytes([offset + n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(b)]) + b


class Block:
    """A block of an RLP chain export: its bytes and the header fields nodefleet reads."""

    __slots__ = ("offset", "raw", "number", "parent_hash", "state_root", "hash", "tx_count", "timestamp")

    def __init__(self, buf, offset, end):
        kind, s, e = rlp_item(buf, offset)
        if kind != "l" or e > end:
            raise RlpError(f"block at offset {offset} is not a list")
        parts = rlp_list_items(buf, s, e)
        if len(parts) < 3 or parts[0][0] != "l":
            raise RlpError(f"block at offset {offset} has no header")
        _, hs, he, hraw = parts[0]
        header = rlp_list_items(buf, hs, he)
        if len(header) < 9:  # number is field 8 of an Ethereum block header
            raise RlpError(f"header at offset {hraw} has {len(header)} fields, needs at least 9")
        self.offset, self.raw = offset, bytes(buf[offset:e])
        self.parent_hash = bytes(buf[header[0][1]:header[0][2]])
        self.state_root = bytes(buf[header[3][1]:header[3][2]])
        self.number = int.from_bytes(buf[header[8][1]:header[8][2]], "big")
        self.timestamp = int.from_bytes(buf[header[11][1]:header[11][2]], "big") if len(header) > 11 else 0
        self.hash = keccak256(bytes(buf[hraw:he]))
        self.tx_count = len(rlp_list_items(buf, parts[1][1], parts[1][2])) if parts[1][0] == "l" else 0


def read_blocks(path):
    """Yields the blocks of an RLP chain file in order; raises RlpError naming the offset."""
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0
    while pos < len(buf):
        block = Block(buf, pos, len(buf))
        yield block
        pos = block.offset + len(block.raw)


def hx(b: bytes) -> str:
    return "0x" + b.hex()


# ---- JWT (engine API) ----------------------------------------------------------------------------

def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def read_jwt_secret(path):
    with open(path) as f:
        text = f.read().strip()
    if text.startswith("0x"):
        text = text[2:]
    secret = bytes.fromhex(text)
    if len(secret) != 32:
        raise ValueError(f"{path}: JWT secret must be 32 bytes of hex, got {len(secret)}")
    return secret


def jwt_token(secret: bytes, now=None) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64url(json.dumps({"iat": int(now if now is not None else time.time())}).encode())
    sig = hmac.new(secret, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64url(sig)}"


def jwt_check(secret: bytes, authorization: str):
    """None when valid, else the reason (the engine API answers 401 with it)."""
    if not authorization or not authorization.startswith("Bearer "):
        return "missing token"
    try:
        header, claims, sig = authorization[7:].split(".")
        want = hmac.new(secret, f"{header}.{claims}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(b64url(want), sig):
            return "signature invalid"
        iat = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["iat"]
    except Exception:  # noqa: BLE001 - any malformed token is simply invalid
        return "malformed token"
    if abs(time.time() - iat) > 60:
        return "stale token"
    return None


# ---- JSON-RPC over HTTP ----------------------------------------------------------------------------

class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def serve_jsonrpc(host, port, methods, jwt_secret=None, get_routes=None, log=None):
    """Serves POST JSON-RPC (and GET routes) on host:port in a daemon thread; returns the server."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            route = (get_routes or {}).get(self.path.split("?")[0])
            if route is not None:
                self._send(200, route())
                return
            self._send(404, {"error": "not found"})

        def do_POST(self):
            if jwt_secret is not None:
                reason = jwt_check(jwt_secret, self.headers.get("Authorization", ""))
                if reason:
                    if log:
                        log.warn("Invalid JWT", reason=reason)
                    self._send(401, {"error": reason})
                    return
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            except ValueError:
                self._send(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
                return
            if isinstance(req, list):  # a batch, answered in order (as geth and reth do)
                if not req:
                    self._send(200, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "empty batch"}})
                    return
                self._send(200, [answer(r) for r in req])
            else:
                self._send(200, answer(req))

    def answer(req):
        if not isinstance(req, dict):
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}}
        rid = req.get("id")
        fn = methods.get(req.get("method"))
        if fn is None:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"the method {req.get('method')} does not exist/is not available"}}
        try:
            return {"jsonrpc": "2.0", "id": rid, "result": fn(*(req.get("params") or []))}
        except RpcError as e:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": e.code, "message": e.message}}
        except (TypeError, ValueError) as e:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"Invalid params: {e}"}}

    server = ThreadingHTTPServer((host, int(port)), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def rpc_call(url, method, params=None, jwt_secret=None, timeout=5):
    """One JSON-RPC call; returns result, raises RpcError (JSON-RPC error) or OSError (HTTP/network)."""
    import urllib.error
    import urllib.request
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    headers = {"Content-Type": "application/json"}
    if jwt_secret is not None:
        headers["Authorization"] = "Bearer " + jwt_token(jwt_secret)
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            answer = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raise OSError(f"HTTP {e.code} {e.reason}") from None
    if "error" in answer:
        raise RpcError(answer["error"].get("code"), answer["error"].get("message"))
    return answer["result"]


def rpc_batch(url, calls, jwt_secret=None, timeout=10):
    """A JSON-RPC batch: [(method, params), ...] -> their results in order; raises RpcError on the
    first error answer, OSError on HTTP/network failures or an answer that is not the batch's."""
    import urllib.error
    import urllib.request
    body = json.dumps([{"jsonrpc": "2.0", "id": i, "method": m, "params": p or []} for i, (m, p) in enumerate(calls)]).encode()
    headers = {"Content-Type": "application/json"}
    if jwt_secret is not None:
        headers["Authorization"] = "Bearer " + jwt_token(jwt_secret)
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=timeout) as resp:
            answers = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raise OSError(f"HTTP {e.code} {e.reason}") from None
    if not isinstance(answers, list) or len(answers) != len(calls):
        raise OSError(f"batch of {len(calls)}: the answer is not a batch of {len(calls)}")
    by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
    out = []
    for i in range(len(calls)):
        a = by_id.get(i)
        if a is None:
            raise OSError(f"batch: no answer for call {i}")
        if "error" in a:
            raise RpcError(a["error"].get("code"), a["error"].get("message"))
        out.append(a["result"])
    return out


def wait_forever(stop=None):
    try:
        while stop is None or not stop.is_set():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
