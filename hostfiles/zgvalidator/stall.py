"""A validator's consensus daemon started after a height rollback, watched until it votes on.

After a height rollback the daemon catches up by block sync (or by its peers' gossip), and CometBFT
then enters the network's height without replaying its consensus WAL (it replays it only when block
sync applied no block). If the validator had voted in the round it comes back to, it signs that vote
again, CometBFT takes it for the one it already holds from its peers, and nothing moves its state
machine on: it sits at the prevote step with two thirds of the prevotes in hand, and where its vote
is needed its network with it (docs/roles.md, "Its start after a height rollback"). Started again
without a rollback, it replays the WAL, and where the replay holds the votes it signed before the
rollback it votes on (roles.md says when it does not). So after such a start this watches the
daemon's consensus state until it commits the height its network works on, and restarts it once if
it stalls so.
"""
import re
import time
import urllib.error

from . import comet
from .host import Failed, active, say, systemctl, unit_props

PREVOTE_STEP = 4  # CometBFT's RoundStepPrevote
WATCH_SECONDS = 90
STALL_SECONDS = 8  # the step never waits there with two thirds (CometBFT moves on as the vote lands): polls' margin
# Far above the timeout of any step in the rounds a network goes through after a validator's start
# (BeaconKit's config.toml: propose, prevote and precommit waits 2 s, each +0.5 s a round; the lab's
# validator-1 waits 4 s for a proposal, docs/development.md): at round 20 a step waits 14 s at most.
STILL_SECONDS = 30
POLL_SECONDS = 1.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # BeaconKit colours its log lines, in the journal too
WARNS = re.compile(r"(?i)\b(erro|warn|fail|panic)|\bERR\b|\bWRN\b")


def start_after_rollback(v):
    """v.start_consensus() after v.height_rollback(), then the watch below; start_consensus's warning."""
    warning = v.start_consensus()
    within = v.s.get("stallWatchSeconds", WATCH_SECONDS)
    if within > 0:
        unit = v.units["consensus"]
        v.watched = watch(v.comet_rpc, lambda: systemctl("restart", unit), lambda: active(unit), within)
    return warning


def not_committing(v, cl_log):
    """What an error says of v's consensus daemon that did not commit (cl_log: its journal since
    its start): where its consensus stands (comet.brief), its restarts by systemd, what the watch
    after its last start after a height rollback saw, and its last lines that warn or fail."""
    restarts = unit_props(v.units["consensus"], "NRestarts").get("NRestarts") or "?"
    plain = (ANSI.sub("", line).strip() for line in cl_log.splitlines())
    warns = [line[:200] for line in plain if WARNS.search(line) and "Suggested fee recipient" not in line][-3:]
    return (f"consensus {comet.brief(v.comet_rpc)}; restarted by systemd {restarts} time(s); after its last start after a height rollback: "
            f"{v.watched or 'not watched'}; its last lines that warn or fail: {' | '.join(warns) or 'none'}")


def watch(rpc, restart, running, within, stall=STALL_SECONDS, still=STILL_SECONDS):
    """Polls the daemon's RPC for `within` seconds at most: ends once it has committed the height its
    peers worked on when it left block sync (a stall holds it below), when it is not running, or when
    its RPC has no consensus dump (not CometBFT's). Restarted once through `restart`: a stall held
    `stall` seconds, or, out of block sync, no step taken for `still` seconds (a stop of another
    kind, a restart costing a few seconds of a network that is not committing anyway). Returns what
    it saw, in one line, also said."""
    deadline = time.monotonic() + within
    target = None
    stalled, unmoved, restarted = Held(), Held(), False
    while time.monotonic() < deadline:
        if not running():
            return told("consensus: the daemon is not running, nothing to watch")
        try:
            status = comet.status(rpc)
            height, catching_up = status["height"], status["catchingUp"]
            dump = comet.result(rpc, "/dump_consensus_state")
            rs, network = dump["round_state"], peers_height(dump)
            stuck, at = stall_of(rs), None if catching_up else comet.hrs(rs)
        except urllib.error.HTTPError as e:
            if e.code == 404:  # a daemon without CometBFT's consensus dump
                return told("consensus: its RPC has no /dump_consensus_state, nothing to watch")
            time.sleep(POLL_SECONDS)
            continue
        except (Failed, OSError, ValueError, KeyError, TypeError):
            time.sleep(POLL_SECONDS)  # not answering yet (starting), or an answer it cannot read: asked again
            continue
        if not catching_up:
            # The height its peers work on when it first left block sync: it may catch up to it by
            # the network's gossip, and the stall, if any, comes there.
            target = max(network or 0, height + 1) if target is None else target
            if height >= target:
                return told(f"consensus: committed height {height}, where its peers were when it left block sync{', after the restart' if restarted else ''}")
        if not restarted and stalled.seconds(stuck) >= stall:
            say(f"consensus: stalled at height {stuck[0]} round {stuck[1]} in the prevote step with two thirds of the prevotes, "
                "a vote it signed before the height rollback taken for its own (docs/roles.md): restarting it to replay its consensus WAL")
        elif not restarted and unmoved.seconds(at) >= still:
            say(f"consensus: no step taken for {still} s at {at} (height/round/step), out of block sync, its peers at {network} (docs/roles.md): restarting it once")
        else:
            time.sleep(POLL_SECONDS)
            continue
        restart()
        restarted, target = True, None
        time.sleep(POLL_SECONDS)
    return told(f"consensus: height {target}, where its peers were when it left block sync, not committed within {within} s of its start{' and its restart' if restarted else ''}"
                if target is not None else f"consensus: still in block sync after {within} s")


class Held:
    """How long a value polled again and again has stayed the same (None holds nothing)."""

    def __init__(self):
        self.value, self.since = None, 0.0

    def seconds(self, value):
        t = time.monotonic()
        if value is None or value != self.value:
            self.value, self.since = value, t
        return 0.0 if value is None else t - self.since


def told(line):
    say(line)
    return line


def peers_height(dump):
    """The highest height a peer works on, as the daemon sees it; None without a peer it can read."""
    heights = []
    for p in dump.get("peers") or []:
        try:
            heights.append(int(p["peer_state"]["round_state"]["height"]))
        except (KeyError, TypeError, ValueError):
            continue
    return max(heights, default=None)


def stall_of(rs):
    """(height, round) when the daemon sits at the prevote step holding more than two thirds of its
    round's prevotes (CometBFT leaves that step the moment it holds them); None otherwise."""
    if int(rs["step"]) != PREVOTE_STEP:
        return None
    for votes in rs.get("votes") or []:
        if int(votes.get("round", -1)) == int(rs["round"]):
            m = re.search(r"\} (\d+)/(\d+) = ", str(votes.get("prevotes_bit_array", "")))
            if m and 3 * int(m.group(1)) > 2 * int(m.group(2)):
                return int(rs["height"]), int(rs["round"])
    return None
