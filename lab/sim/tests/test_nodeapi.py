"""nodeapi.py, the forwarder in front of beacond's node API, against an upstream that behaves as
beacond v1.1.0 does (checked on the real one by the e2e tier's Aztec node): the list of headers
closes the connection empty, headers/<id> and blob_sidecars/<id> answer, an unknown id is an error.
What this cannot show: that the real Aztec node starts and reads blobs through it (the e2e tier)."""
import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from nodefleet_sim import nodeapi

HEAD = {"execution_optimistic": False, "finalized": False,
        "data": {"root": "0x" + "ab" * 32, "canonical": True, "header": {"message": {"slot": "42"}, "signature": ""}}}


class Beacond(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/eth/v1/beacon/headers":
            self.close_connection = True  # v1.1.0's handler panics: an empty reply
            return
        routes = {"/eth/v1/beacon/headers/head": (200, HEAD), "/eth/v1/beacon/blob_sidecars/42": (200, {"data": []})}
        status, body = routes.get(self.path, (400, {"code": 400, "message": "invalid request"}))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class NodeApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Beacond)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.addClassCleanup(cls.server.shutdown)
        cls.target = f"http://127.0.0.1:{cls.server.server_address[1]}"

    def test_the_list_of_headers_is_beacond_s_head_as_a_list(self):
        status, body = nodeapi.answer(self.target, "/eth/v1/beacon/headers")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), {**HEAD, "data": [HEAD["data"]]})
        # The same with a query or a trailing slash: still the list, never the panicking call.
        self.assertEqual(nodeapi.answer(self.target, "/eth/v1/beacon/headers/?slot=1")[0], 200)

    def test_every_other_call_is_beacond_s_answer_unchanged(self):
        self.assertEqual(nodeapi.answer(self.target, "/eth/v1/beacon/headers/head"), (200, json.dumps(HEAD).encode()))
        self.assertEqual(nodeapi.answer(self.target, "/eth/v1/beacon/blob_sidecars/42"), (200, b'{"data": []}'))
        status, body = nodeapi.answer(self.target, "/eth/v1/beacon/blob_sidecars/0x00")
        self.assertEqual((status, json.loads(body)["message"]), (400, "invalid request"))

    def test_beacond_gone_is_a_502_that_says_so(self):
        status, body = nodeapi.answer("http://127.0.0.1:9", "/eth/v1/beacon/headers")
        self.assertEqual(status, 502)
        self.assertIn("beacond's node API does not answer", json.loads(body)["message"])


if __name__ == "__main__":
    unittest.main()
