"""`health`: what the stack output `health` shows for a validator, read on the host now, with a
diagnosis (and the advice of the switch's error table) for each known fault it finds:
- 0gchaind logging -38002 Invalid forkchoice state since it started: remedied (stop it, wait for
  the execution client, roll the height back, start it), at most remedyRetries times;
- the execution client and 0gchaind reading different JWT files: reported (never started over);
- reth with no peers: expected at first (it cannot peer with geth nodes), or its p2p port closed."""
import os
import time

from .host import Failed, active, say
from .switch import migration_report
from nodefleet_rpc import RpcFailure, peer_count


def health(v):
    client = v.host_client()
    report = {"node": v.node, "client": client, "services": {}}
    for key in ("geth", "reth", "consensus"):
        report["services"][v.units[key]] = "active" if active(v.units[key]) else "inactive"
    try:
        report["executionHeight"] = v.el_height()
    except (RpcFailure, Failed) as e:
        report["executionError"] = str(e)
    try:
        report["consensus"] = v.cl_status()
    except Failed as e:
        report["consensusError"] = str(e)
    if client in ("geth", "reth") and active(v.units[client]):
        try:
            report["jwtSameFile"] = v.check_jwt(v.units[client])
        except Failed as e:
            report["jwtError"] = str(e)
    diagnoses = []
    if "jwtError" in report:
        diagnoses.append({"fault": "jwt-mismatch", "detail": report["jwtError"],
                          "advice": "give the execution client and 0gchaind the same JWT file (pulumi up re-renders both units), then restart both"})
    if client == "reth" and active(v.units["reth"]):
        try:
            report["peers"] = peer_count(v.el_url)
        except RpcFailure as e:
            report["peersError"] = str(e)
        if report.get("peers") == 0:
            p2p = v.s["ports"]["p2p"]
            diagnoses.append({"fault": "reth-no-peers", "detail": f"{v.units['reth']} has no peers",
                              "advice": f"expected at first (reth cannot peer with geth nodes): wait; make sure {p2p}/tcp and {p2p}/udp are open"})
    if client in ("geth", "reth") and active(v.units[client]):
        errors = v.forkchoice_errors()
        if errors:
            remedied = remedy(v)
            diagnoses.append({"fault": "forkchoice-38002", "detail": errors[-1][:200], "remedied": remedied,
                              "advice": "0gchaind started ahead of the execution client: stopped it, waited for the execution client, rolled the height back, started it"})
    report["diagnoses"] = diagnoses
    report["consensusProcessesWithThisKey"] = len(v.consensus_processes())
    if os.path.isdir(v.markers) and os.listdir(v.markers):
        report["migration"] = migration_report(v)
    return report


def remedy(v):
    """The -38002 remedy, repeated while 0gchaind logs it again, at most remedyRetries times: how many ran."""
    for n in range(1, v.s["remedyRetries"] + 1):
        say(f"0gchaind logs -38002 Invalid forkchoice state: remedy {n} of {v.s['remedyRetries']}")
        v.remedy_forkchoice()
        time.sleep(v.s.get("remedySettleSeconds", 5))
        if not v.forkchoice_errors():
            return n
    raise Failed(f"0gchaind still logs -38002 Invalid forkchoice state after {v.s['remedyRetries']} remedies: "
                 "stop it, let the execution client reach the chain head, roll back the height")
