"""`health`: what the stack output `health` shows for a validator, read on the host now."""
import os

from .host import Failed, active
from .switch import migration_report
from nodefleet_rpc import RpcFailure


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
    report["consensusProcessesWithThisKey"] = len(v.consensus_processes())
    if os.path.isdir(v.markers) and os.listdir(v.markers):
        report["migration"] = migration_report(v)
    return report
