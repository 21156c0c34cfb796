"""nodeapi: beacond's node API (the beacon API) with the one call beacond v1.1.0 cannot answer
SIMULATED; every other request goes to beacond unchanged.

The call: GET /eth/v1/beacon/headers (the list, no block id). beacond v1.1.0's handler panics on it
("Undefined validation function 'hex' on field 'ParentRoot'": its request type validates
parent_root with a tag its validator never registers) and the connection closes empty. An Aztec
node asks exactly that to test its blob sources at start and exits ("No blob sources are
reachable") without an answer. This answers it with the list of one: beacond's own header of the
head (headers/head), which is what the call returns on a beacon node without filters.

  nodeapi --listen 127.0.0.1:3500 --to http://127.0.0.1:3501
"""
import json
import sys
import urllib.error
import urllib.request
from . import common
from .rpcproxy import serve

LIST_HEADERS = "/eth/v1/beacon/headers"


def fetch(url):
    """(status, body bytes) of a GET; 502 with a JSON error when beacond does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 502, json.dumps({"code": 502, "message": f"beacond's node API does not answer: {e}"}).encode()


def answer(target, path):
    """The (status, body) for GET path: the list of headers made of headers/head, the rest forwarded."""
    if path.split("?")[0].rstrip("/") != LIST_HEADERS:
        return fetch(target + path)
    status, body = fetch(target + LIST_HEADERS + "/head")
    if status != 200:
        return status, body
    head = json.loads(body)
    return 200, json.dumps({**head, "data": [head["data"]]}).encode()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    flags, _ = common.parse_flags(argv, {"listen", "to"})
    serve(flags["listen"], "GET", lambda path, _body: answer(flags["to"].rstrip("/"), path))


if __name__ == "__main__":
    sys.exit(main())
