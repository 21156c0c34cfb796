"""The watch after a height rollback (zgvalidator/stall.py) against an HTTP server that answers
/status and /dump_consensus_state with the fields CometBFT's RPC gives, the way the lab network's
halt showed them (docs/roles.md, "Its start after a height rollback"): a daemon stalled at the
prevote step with two thirds of the prevotes is restarted once, and the watch ends when it commits;
one that commits, one in a halted network (less than two thirds), one still in block sync, a
passing prevote step, a daemon without the dump, one that stopped, are left alone. What it cannot
prove: that the real daemon stalls so, and that a restart replays its WAL and cures it (the lab's
hosts run the real daemon through height rollbacks; a restart's replay is in their journals).

    cd hostfiles && python3 -m unittest tests.test_consensus_stall
"""
import http.server
import io
import json
import os
import sys
import threading
import time
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zgvalidator import comet, stall  # noqa: E402


def state(height, step, share="80000000000/80000000000", catching_up=False, rnd=2, peers=()):
    """(/status, /dump_consensus_state) of a daemon that committed `height` and works on the next
    one, its peers working on the heights given."""
    status = {"result": {"sync_info": {"latest_block_height": str(height), "catching_up": catching_up}}}
    votes = [{"round": r, "prevotes_bit_array": f"BA{{2:xx}} {share if r == rnd else '80000000000/80000000000'} = 1.00",
              "precommits_bit_array": "BA{2:x_} 48000000000/80000000000 = 0.60"} for r in range(rnd + 1)]
    dump = {"result": {"round_state": {"height": str(height + 1), "round": rnd, "step": step, "votes": votes},
                       "peers": [{"node_address": f"id{i}@10.0.2.{i}:26756", "peer_state": {"round_state": {"height": str(h), "round": 0, "step": 6}}}
                                 for i, h in enumerate(peers)]}}
    return status, dump


class Daemon:
    """/status and /dump_consensus_state from `states`, a pair a poll (the last one kept);
    `after_restart` replaces them when the watch restarts it."""

    def __init__(self, states, dump_status=200):
        self.states, self.polls, self.restarts, self.dump_status = list(states), 0, 0, dump_status
        daemon = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/status":  # a poll's first request: the next pair
                    daemon.current = daemon.states[min(daemon.polls, len(daemon.states) - 1)]
                    daemon.polls += 1
                    code, body = 200, daemon.current[0]
                else:
                    code, body = daemon.dump_status, daemon.current[1]
                self.send_response(code)
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

            def log_message(self, *_):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.after_restart = None

    def restart(self):
        self.restarts += 1
        if self.after_restart is not None:
            self.states, self.polls = self.after_restart, 0

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Watch(unittest.TestCase):
    def setUp(self):
        p = mock.patch.object(stall, "POLL_SECONDS", 0.05)
        p.start()
        self.addCleanup(p.stop)

    def daemon(self, *states, **kw):
        d = Daemon(states, **kw)
        self.addCleanup(d.close)
        return d

    def watch(self, d, within=5, stall_seconds=0.5, running=lambda: True, still=30):
        out = io.StringIO()
        t0 = time.monotonic()
        with redirect_stdout(out):
            got = stall.watch(d.url, d.restart, running, within, stall_seconds, still)
        return got, out.getvalue(), time.monotonic() - t0

    def test_a_stall_at_the_prevote_step_with_two_thirds_is_restarted_once_and_the_watch_ends_when_it_commits(self):
        d = self.daemon(state(222, 4))
        d.after_restart = [state(222, 1, catching_up=True), state(222, 4, share="48000000000/80000000000"), state(223, 1)]
        got, said, took = self.watch(d)
        self.assertEqual(d.restarts, 1)
        self.assertEqual(got, "consensus: committed height 223, where its peers were when it left block sync, after the restart")
        self.assertIn("consensus: stalled at height 223 round 2 in the prevote step with two thirds of the prevotes", said)
        self.assertTrue(said.endswith(got + "\n"), said)
        self.assertGreaterEqual(took, 0.5)

    def test_a_stall_that_a_restart_does_not_cure_is_restarted_once_only(self):
        d = self.daemon(state(222, 4))
        got, said, took = self.watch(d, within=2, stall_seconds=0.3)
        self.assertEqual(d.restarts, 1)
        self.assertEqual(got, "consensus: height 223, where its peers were when it left block sync, not committed within 2 s of its start and its restart")
        self.assertGreaterEqual(took, 2)

    def test_left_alone(self):
        cases = {
            "a daemon that commits": ([state(222, 4), state(223, 1)], "consensus: committed height 223, where its peers were when it left block sync"),
            # Out of block sync behind its peers, it catches up by their gossip; the height they were at is the one to commit.
            "caught up by gossip": ([state(200, 1, peers=(206, 0)), state(203, 1, peers=(206,)), state(205, 1, peers=(206,)), state(206, 1, peers=(207,))],
                                    "consensus: committed height 206, where its peers were when it left block sync"),
            # The step passes before the stall's seconds: CometBFT moves on as the last prevote lands.
            "a prevote step that passes": ([state(222, 4), state(222, 5), state(222, 4), state(222, 6), state(223, 1)], "consensus: committed height 223, where its peers were when it left block sync"),
            # Block sync's heights are not commits of its own; the first height out of it is the base.
            "block sync, then a commit": ([state(100, 1, catching_up=True), state(180, 1, catching_up=True), state(222, 3), state(223, 1)], "consensus: committed height 223, where its peers were when it left block sync"),
            # A halted network: the prevote step without two thirds (the other validator's 60 %) is a wait, not a stall.
            "a halted network": ([state(222, 4, share="48000000000/80000000000")], "consensus: height 223, where its peers were when it left block sync, not committed within 1.5 s of its start"),
            # Exactly two thirds is not more than two thirds (CometBFT's HasTwoThirdsAny).
            "exactly two thirds": ([state(222, 4, share="2/3")], "consensus: height 223, where its peers were when it left block sync, not committed within 1.5 s of its start"),
            "still in block sync": ([state(100, 1, catching_up=True)], "consensus: still in block sync after 1.5 s"),
        }
        for name, (states, want) in cases.items():
            with self.subTest(name):
                d = self.daemon(*states)
                got, _, _ = self.watch(d, within=1.5, stall_seconds=0.4)
                self.assertEqual((got, d.restarts), (want, 0))

    def test_no_step_taken_out_of_block_sync_is_restarted_once_and_the_watch_ends_when_it_commits(self):
        # At the precommit step with its own precommit only, for good: not the prevote stall, a stop all the same.
        d = self.daemon(state(222, 1, catching_up=True), state(222, 6, share="48000000000/80000000000", peers=(223,)))
        d.after_restart = [state(222, 3), state(223, 1)]
        got, said, took = self.watch(d, stall_seconds=0.3, still=0.6)
        self.assertEqual(d.restarts, 1)
        self.assertIn("consensus: no step taken for 0.6 s at 223/2/Precommit (height/round/step), out of block sync, its peers at 223", said)
        self.assertEqual(got, "consensus: committed height 223, where its peers were when it left block sync, after the restart")
        self.assertGreaterEqual(took, 0.6)
        # A step taken resets the count: rounds that move on are a network at work.
        moving = [state(222, step, rnd=r) for r in range(20) for step in (3, 4, 6)]
        d = self.daemon(*moving)
        got, _, _ = self.watch(d, within=1.2, stall_seconds=0.3, still=0.3)
        self.assertEqual((got, d.restarts), ("consensus: height 223, where its peers were when it left block sync, not committed within 1.2 s of its start", 0))
        # In block sync nothing is counted, however long it takes.
        d = self.daemon(state(100, 1, catching_up=True))
        got, _, _ = self.watch(d, within=1, still=0.2)
        self.assertEqual((got, d.restarts), ("consensus: still in block sync after 1 s", 0))

    def test_a_daemon_without_the_dump_or_not_running_or_not_answering_ends_the_watch(self):
        d = self.daemon(state(222, 4), dump_status=404)
        got, _, took = self.watch(d)
        self.assertEqual((got, d.restarts), ("consensus: its RPC has no /dump_consensus_state, nothing to watch", 0))
        self.assertLess(took, 2)
        d = self.daemon(state(222, 4))
        got, _, took = self.watch(d, running=lambda: False)
        self.assertEqual((got, d.restarts, d.polls), ("consensus: the daemon is not running, nothing to watch", 0, 0))
        self.assertLess(took, 1)
        gone = self.daemon(state(222, 4))
        gone.close()  # nothing listens on its port any more: a daemon still starting, asked again until the limit
        got, _, took = self.watch(gone, within=1)
        self.assertEqual(got, "consensus: still in block sync after 1 s")
        self.assertGreaterEqual(took, 1)

    def test_answers_it_cannot_read_are_asked_again_never_taken_for_a_stall(self):
        bad = [({"result": {}}, {"result": {}}), ({"result": {"sync_info": {"latest_block_height": "x", "catching_up": False}}}, state(1, 4)[1]),
               (state(222, 4)[0], {"result": {"round_state": {"height": "223", "round": 2, "step": "four"}}})]
        d = self.daemon(*bad, state(222, 4, share="48000000000/80000000000"))
        got, _, _ = self.watch(d, within=1, stall_seconds=0.2)
        self.assertEqual((got, d.restarts), ("consensus: height 223, where its peers were when it left block sync, not committed within 1 s of its start", 0))


class NotCommitting(unittest.TestCase):
    """The words of an error about a daemon that did not commit: where its consensus stands, as its
    RPC answers (the scripted daemon above), its restarts, the watch's line, its last warnings."""

    def test_where_it_stands_its_restarts_the_watch_and_its_last_warnings(self):
        d = Daemon([state(222, 4, peers=(223,))])
        self.addCleanup(d.close)
        comet.status(d.url)  # the scripted daemon answers its dump after a /status
        self.assertEqual(comet.brief(d.url), "at 223/2/Prevote, prevotes xx 1.00, precommits x_ 0.60; peers: 10.0.2.0:26756 at 223/0/Precommit")
        log = "\n".join(["\x1b[90m5:01AM\x1b[0m \x1b[32mINF\x1b[0m Committed state height=222",
                         "\x1b[33mWRN\x1b[0m Suggested fee recipient is not configured",
                         "\x1b[31mERR\x1b[0m failed to prepare proposal err=\"received nil payload ID\"",
                         "E[2026-12-07|05:01:02] Failed signing vote module=consensus height=223 err=\"step regression\"",
                         "I[2026-12-07|05:01:03] Timed out module=consensus step=RoundStepPropose"])
        v = mock.Mock(units={"consensus": "0gchaind-validator-1.service"}, comet_rpc=d.url, watched="consensus: committed height 222, where its peers were when it left block sync")
        with mock.patch.object(stall, "unit_props", return_value={"NRestarts": "2"}) as props:
            said = stall.not_committing(v, log)
        props.assert_called_once_with("0gchaind-validator-1.service", "NRestarts")
        self.assertEqual(said, "consensus at 223/2/Prevote, prevotes xx 1.00, precommits x_ 0.60; peers: 10.0.2.0:26756 at 223/0/Precommit; "
                               "restarted by systemd 2 time(s); after its last start after a height rollback: consensus: committed height 222, where its peers were when it left block sync; "
                               "its last lines that warn or fail: ERR failed to prepare proposal err=\"received nil payload ID\" | "
                               "E[2026-12-07|05:01:02] Failed signing vote module=consensus height=223 err=\"step regression\"")

    def test_what_it_cannot_read_is_said_never_raised(self):
        gone = Daemon([state(222, 4)])
        gone.close()
        self.assertRegex(comet.brief(gone.url), r"^no consensus dump at http://127\.0\.0\.1:\d+ \(.*refused")
        odd = Daemon([({"result": {}}, {"result": {"round_state": {"height": "9", "round": 0, "step": 12, "votes": [{"round": 0, "prevotes_bit_array": "nil"}]}}})])
        self.addCleanup(odd.close)
        comet.result(odd.url, "/status")
        self.assertEqual(comet.brief(odd.url), "at 9/0/12, prevotes ?, precommits ?; peers: none")
        v = mock.Mock(units={"consensus": "u"}, comet_rpc=gone.url, watched=None)
        with mock.patch.object(stall, "unit_props", return_value={}):
            self.assertRegex(stall.not_committing(v, ""), r"restarted by systemd \? time\(s\); after its last start after a height rollback: not watched; its last lines that warn or fail: none$")


class PeersHeight(unittest.TestCase):
    def test_the_highest_height_a_peer_works_on_and_unreadable_peers_left_out(self):
        peers = [{"peer_state": {"round_state": {"height": "206"}}}, "id@10.0.2.2:26756", {"peer_state": None},
                 {"peer_state": {"round_state": {"height": "tall"}}}, {"peer_state": {"round_state": {"height": "207"}}}]
        self.assertEqual(stall.peers_height({"peers": peers}), 207)
        self.assertIsNone(stall.peers_height({"peers": peers[1:4]}))
        self.assertIsNone(stall.peers_height({"peers": None}))


class StartAfterRollback(unittest.TestCase):
    def test_it_starts_the_daemon_then_watches_it_unless_the_watch_is_off(self):
        for within, watched in ((0, []), (30, [("http://127.0.0.1:56657", 30)])):
            with self.subTest(within=within):
                order = []
                v = mock.Mock(units={"consensus": "0gchaind-validator-1.service"}, s={"stallWatchSeconds": within}, comet_rpc="http://127.0.0.1:56657", watched=None)
                v.start_consensus = lambda: order.append("start") or "a warning"
                with mock.patch.object(stall, "watch", lambda rpc, restart, running, w: order.append((rpc, w)) or "what it saw"), \
                        mock.patch.object(stall, "systemctl") as systemctl, mock.patch.object(stall, "active", return_value=True):
                    self.assertEqual(stall.start_after_rollback(v), "a warning")
                self.assertEqual(order, ["start", *watched])
                self.assertEqual(v.watched, "what it saw" if within else None)  # for an error that follows (not_committing)
                systemctl.assert_not_called()

    def test_the_restart_it_hands_the_watch_restarts_the_consensus_unit(self):
        v = mock.Mock(units={"consensus": "0gchaind-validator-1.service"}, s={}, comet_rpc="http://127.0.0.1:56657")
        v.start_consensus = lambda: None
        seen = {}

        def watch(rpc, restart, running, within):
            seen.update(within=within, running=running())
            restart()
        with mock.patch.object(stall, "watch", watch), mock.patch.object(stall, "systemctl") as systemctl, \
                mock.patch.object(stall, "active", return_value=True) as active:
            stall.start_after_rollback(v)
        systemctl.assert_called_once_with("restart", "0gchaind-validator-1.service")
        active.assert_called_once_with("0gchaind-validator-1.service")
        self.assertEqual(seen, {"within": stall.WATCH_SECONDS, "running": True})


if __name__ == "__main__":
    unittest.main()
