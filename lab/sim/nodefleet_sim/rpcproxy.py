"""rpcproxy: a plain JSON-RPC forwarder, so the dev chain has a second, independent endpoint URL
for the storage node's RPC failover tests. Not a simulator of anything.

  rpcproxy --listen 127.0.0.1:8546 --to http://127.0.0.1:8545
"""
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import common


def serve(listen, method, answer):
    """Serves `method` (GET or POST) on listen (host:port) until killed: answer(path, body) gives
    (status, bytes), sent as JSON. Also the dev chain's node API forwarder's (nodeapi.py)."""
    host, _, port = listen.rpartition(":")

    def handle(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))) if method == "POST" else b""
        status, data = answer(self.path, body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    handler = type("Handler", (BaseHTTPRequestHandler,), {"log_message": lambda self, *args: None, f"do_{method}": handle})
    ThreadingHTTPServer((host, int(port)), handler).serve_forever()


def forward(target, body):
    """(status, bytes) of a JSON-RPC POST to target; 502 when it does not answer."""
    req = urllib.request.Request(target, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 502, b'{"error": "upstream unreachable"}'


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    flags, _ = common.parse_flags(argv, {"listen", "to"})
    serve(flags["listen"], "POST", lambda _path, body: forward(flags["to"], body))


if __name__ == "__main__":
    sys.exit(main())
