"""RPC URLs that carry credentials, in nodefleet_rpc.py, which every host tool that calls
an endpoint uses (zgs-endpoint.py and zgs-health.py import it: checked): a user:password@ becomes
Basic authentication against a real local HTTP server, and no message names more of a URL than
scheme://host[:port]."""
import base64
import http.server
import importlib.util
import json
import os
import threading
import unittest

HOSTFILES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_").removesuffix(".py"), os.path.join(HOSTFILES, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOLS = [load(n) for n in ("nodefleet_rpc.py", "zgs-endpoint.py", "zgs-health.py")]
assert all(t.rpc_request.__module__ == "nodefleet_rpc" and t.url_label.__module__ == "nodefleet_rpc" for t in TOOLS)


class Server(http.server.ThreadingHTTPServer):
    def __init__(self):
        self.seen = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.seen.append((self.path, self.headers.get("Authorization")))
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": "0x2a"}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class RpcUrls(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def test_user_password_becomes_basic_authentication_and_leaves_the_host(self):
        url = f"http://ops%40corp:s3cr%3At@127.0.0.1:{self.server.server_address[1]}/v2/KEY0123456789abcdef?x=1"
        for tool in TOOLS:
            with self.subTest(tool=tool.__name__):
                with tool.urllib.request.urlopen(tool.rpc_request(url, b"{}"), timeout=5) as r:
                    self.assertEqual(json.loads(r.read())["result"], "0x2a")
                path, auth = self.server.seen[-1]
                self.assertEqual(path, "/v2/KEY0123456789abcdef?x=1")
                self.assertEqual(base64.b64decode(auth.removeprefix("Basic ")).decode(), "ops@corp:s3cr:t")

    def test_a_url_is_named_by_scheme_host_and_port_only(self):
        cases = {
            "http://10.0.2.2:8545": "http://10.0.2.2:8545",
            "https://eth.example.org/": "https://eth.example.org",
            "https://eth-sepolia.g.alchemy.com/v2/abcDEF0123456789": "https://eth-sepolia.g.alchemy.com/…",
            "https://u:p@rpc.example.org:8443/?apikey=zzz": "https://rpc.example.org:8443/…",
            "not a url": "(an unparsable URL)",
        }
        for tool in TOOLS:
            for url, label in cases.items():
                self.assertEqual(tool.url_label(url), label, (tool.__name__, url))

    def test_a_failing_endpoint_is_reported_without_its_key(self):
        rpc = TOOLS[0]
        dead = f"http://user:pw@127.0.0.1:9/v3/{'ab' * 16}"
        with self.assertRaises(rpc.RpcFailure) as e:
            rpc.rpc(dead, "eth_blockNumber", timeout=2)
        self.assertIn("eth_blockNumber at http://127.0.0.1:9/…: no answer", str(e.exception))
        for part in ("user", "pw", "ab" * 16):
            self.assertNotIn(part, str(e.exception))


if __name__ == "__main__":
    unittest.main()
