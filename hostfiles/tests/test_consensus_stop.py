"""consensus-stop.py run for real, as systemd runs it, against an HTTP server that answers
/dump_consensus_state with the fields CometBFT's RPC gives (the real daemon's answer is read by
tests_real/test_real_beacond.py): no peer behind returns at once, saying so; a peer one height
behind holds the stop until it catches up, or until --within, and says which; a peer further behind
(syncing) holds nothing, nor a daemon that has exited (no MAINPID); a daemon that does not answer, or answers what it cannot read, is stopped
at once with the reason, one that answers past the tool's timeout is asked again until --within; bad arguments. What it cannot prove: that the held stop keeps a network
from halting (the race it closes lasts a gossip tick; the lab's hosts stop the real daemon under it).

    cd hostfiles && python3 -m unittest tests.test_consensus_stop
"""
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "consensus-stop.py")


def dump(ours, *peers):
    return {"jsonrpc": "2.0", "id": -1, "result": {
        "round_state": {"height": str(ours), "round": 0, "step": 1},
        "peers": [{"node_address": f"id{i}@10.0.2.{i}:26756", "peer_state": {"round_state": {"height": str(h), "round": 0, "step": 6}}} for i, h in enumerate(peers)],
    }}


class Daemon:
    """An RPC that answers the i-th request with answers[min(i, last)] (a dict as JSON, or bytes as
    they are; ("late", SECONDS, answer): that answer after SECONDS)."""

    def __init__(self, answers):
        self.answers, self.asked = answers, 0
        daemon = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                answer = daemon.answers[min(daemon.asked, len(daemon.answers) - 1)]
                daemon.asked += 1
                if isinstance(answer, tuple):  # ("late", seconds, answer): answered after that long
                    time.sleep(answer[1])
                    answer = answer[2]
                body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                try:
                    self.send_response(200 if self.path == "/dump_consensus_state" else 404)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a late answer the tool gave up on

            def log_message(self, *_):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def run(*args, mainpid=str(os.getpid())):
    """The tool as systemd runs it for a daemon that runs (MAINPID set), or that has exited (None)."""
    env = {k: v for k, v in os.environ.items() if k != "MAINPID"}
    if mainpid is not None:
        env["MAINPID"] = mainpid
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-S", SCRIPT, *args], capture_output=True, text=True, timeout=60, env=env)
    return done, time.monotonic() - t0


class ConsensusStop(unittest.TestCase):
    def daemon(self, *answers):
        d = Daemon(list(answers))
        self.addCleanup(d.close)
        return d

    def test_no_peer_behind_returns_at_once_saying_so(self):
        d = self.daemon(dump(155, 155, 156))
        done, took = run("--rpc", d.url)
        self.assertEqual((done.returncode, done.stdout, done.stderr), (0, "", "consensus-stop: at height 155 no peer is a height behind: stopping the daemon\n"))
        self.assertEqual(d.asked, 1)
        self.assertLess(took, 5)

    def test_a_peer_one_height_behind_holds_the_stop_until_it_catches_up(self):
        d = self.daemon(dump(155, 154), dump(155, 154), dump(155, 154), dump(155, 155))
        done, _ = run("--rpc", d.url, "--within", "10")
        self.assertEqual(done.returncode, 0)
        self.assertEqual(d.asked, 4)
        self.assertRegex(done.stderr, r"^consensus-stop: peer 10\.0\.2\.0:26756 \(at 154, this daemon at 155: it may still need this daemon's precommit of 154\) caught up after \d+\.\d s: stopping the daemon at height 155\n$")

    def test_a_peer_still_behind_at_the_limit_is_said_and_the_stop_goes_on(self):
        d = self.daemon(dump(155, 155, 154))
        done, took = run("--rpc", d.url, "--within", "1")
        self.assertEqual(done.returncode, 0)
        self.assertGreaterEqual(took, 1)
        self.assertLess(took, 8)
        self.assertIn("peer 10.0.2.1:26756 (at 154, this daemon at 155", done.stderr)
        self.assertIn("still one height behind after 1 s: stopping the daemon anyway", done.stderr)

    def test_a_syncing_peer_further_behind_or_one_not_known_yet_holds_nothing(self):
        d = self.daemon(dump(155, 100, 0))
        done, _ = run("--rpc", d.url)
        self.assertEqual((done.returncode, done.stderr), (0, "consensus-stop: at height 155 no peer is a height behind: stopping the daemon\n"))

    def test_a_daemon_that_has_exited_has_nothing_to_hold(self):
        d = self.daemon(dump(155, 154))
        done, _ = run("--rpc", d.url, mainpid=None)
        self.assertEqual((done.returncode, done.stderr, d.asked), (0, "", 0))

    def test_a_daemon_that_does_not_answer_is_stopped_at_once(self):
        d = Daemon([dump(1)])
        d.close()  # nothing listens on its port any more
        done, took = run("--rpc", d.url)
        self.assertEqual(done.returncode, 0)
        self.assertRegex(done.stderr, r"^consensus-stop: the daemon's RPC does not answer \(.+\): stopping it now\n$")
        self.assertLess(took, 5)

    def test_an_answer_past_its_timeout_is_asked_again_and_the_peer_behind_still_holds_the_stop(self):
        # A loaded host: the daemon's RPC answers after 3 s (the tool waits 2 s for one), twice.
        d = self.daemon(("late", 3, dump(155, 154)), ("late", 3, dump(155, 154)), dump(155, 154), dump(155, 155))
        done, took = run("--rpc", d.url, "--within", "10")
        self.assertEqual(done.returncode, 0)
        self.assertEqual(d.asked, 4)
        self.assertRegex(done.stderr, r"^consensus-stop: peer 10\.0\.2\.0:26756 \(at 154, this daemon at 155: it may still need this daemon's precommit of 154\) caught up after \d+\.\d s: stopping the daemon at height 155\n$")
        self.assertGreaterEqual(took, 4)

    def test_an_rpc_that_answers_late_until_the_limit_is_said_and_the_stop_goes_on(self):
        d = self.daemon(("late", 3, dump(155, 154)))
        done, took = run("--rpc", d.url, "--within", "3")
        self.assertEqual(done.returncode, 0)
        self.assertRegex(done.stderr, r"^consensus-stop: the daemon's RPC does not answer \(.*timed out.*\) \(asked for \d+\.\d s\): stopping it now\n$")
        self.assertGreaterEqual(d.asked, 2)
        self.assertLess(took, 8)

    def test_an_answer_it_cannot_read_names_the_field_and_the_stop_goes_on(self):
        cases = [
            (b"<html>starting</html>", "/dump_consensus_state: not a JSON-RPC answer with a result"),
            ({"jsonrpc": "2.0", "result": {"peers": []}}, "/dump_consensus_state: no result.round_state"),
            ({"result": {"round_state": {"height": "tall"}, "peers": []}}, "/dump_consensus_state: result.round_state.height is not a height: 'tall'"),
            ({"result": {"round_state": {"height": "9"}, "peers": [{"peer_state": {"round_state": {"height": None}}}]}}, "result.peers[0].peer_state.round_state.height is not a height: 'None'"),
            ({"result": {"round_state": {"height": "9"}, "peers": ["id@10.0.2.2:26756"]}}, "result.peers[0] has no peer_state.round_state"),
        ]
        for answer, said in cases:
            with self.subTest(said=said):
                d = self.daemon(answer)
                done, _ = run("--rpc", d.url)
                self.assertEqual(done.returncode, 0)
                self.assertRegex(done.stderr, r"^consensus-stop: /dump_consensus_state: .+: stopping it now\n$")
                self.assertIn(said, done.stderr)

    def test_bad_arguments(self):
        for args, said in [
            ([], "the following arguments are required: --rpc"),
            (["--rpc", "http://10.0.2.2:26657"], "--rpc: 'http://10.0.2.2:26657' is not the daemon's local RPC"),
            (["--rpc", "https://127.0.0.1:26657"], "is not the daemon's local RPC"),
            (["--rpc", "http://127.0.0.1:26657", "--within", "61"], "--within: 61 is not between 0 and 60 seconds"),
        ]:
            with self.subTest(args=args):
                done, _ = run(*args)
                self.assertEqual(done.returncode, 2)
                self.assertIn(said, done.stderr)


if __name__ == "__main__":
    unittest.main()
