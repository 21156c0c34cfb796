"""rpcproxy: a plain JSON-RPC forwarder, so the dev chain has a second, independent endpoint URL
for the storage node's RPC failover tests. Not a simulator of anything.

  rpcproxy --listen 127.0.0.1:8546 --to http://127.0.0.1:8545
"""
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import common


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    flags, _ = common.parse_flags(argv, {"listen", "to"})
    host, _, port = flags["listen"].rpartition(":")
    target = flags["to"]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            req = urllib.request.Request(target, data=body, headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    data, status = resp.read(), resp.status
            except urllib.error.HTTPError as e:
                data, status = e.read(), e.code
            except OSError:
                data, status = b'{"error": "upstream unreachable"}', 502
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer((host, int(port)), Handler).serve_forever()


if __name__ == "__main__":
    sys.exit(main())
