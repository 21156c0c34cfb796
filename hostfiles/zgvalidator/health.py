"""`health` (the stack output `health`, at the end of each `up`) and `status` (`nodefleet status`,
any time): a validator read on the host now. The faults only its logs and RPCs show are its
`findings` (a code and the facts); its `diagnoses` are what the host's diagnosis table
(nodefleet_health.py) makes of the whole report, each with the fault table's remedy:
- 0gchaind's head not on the execution client since it started (docs/spec.md §7's -38002 Invalid
  forkchoice state, or beacon-kit's "EL syncing" for the SYNCING real reth and geth answer):
  `health` remedies it (stop it, wait for the execution client, roll the height back, start it),
  at most remedyRetries times; `status` changes nothing and reports it (fault forkchoice-38002,
  a name kept for monitoring rules);
- the execution client and 0gchaind reading different JWT files: reported (never started over);
- reth with no peers: expected at first (it cannot peer with geth nodes), or its p2p port closed;
- the consensus daemon not reaching the engine API (BeaconKit's "Waiting for execution client to
  start", every 3 s, for a stopped execution client, a wrong port and a refused JWT alike).
`status` adds the facts a live table shows: priv_validator_state.json present, the network's
head (referenceRpcUrl) and the switch's progress (its steps and a running export or import).
An upgrade at a height is reported by both (upgrade.py): pending with its blocks left and whether
the node is ready, not ready, or overdue."""
import json
import os
import time

from .host import Failed, active, mono_to_realtime_usec, now, parse_time, say, unit_props, units_snapshot, wait
from .jobs import progress_path
from .node import FORKCHOICE_FAULT
from .switch import migration_report
from .upgrade import findings as upgrade_findings
from nodefleet_health import validator_row
from nodefleet_rpc import RpcFailure, block_number, peer_count


# BeaconKit retries the engine API every 3 s: this many tries without a commit is not a slow start.
ENGINE_WAITS = 5


# How long after its start a consensus daemon gets to answer /status before health reports it
# down: the real beacond loads its KZG trusted setup and opens its stores first (seconds natively,
# about a minute on the lab's emulated VMs, where the up's health step ran before it answered).
CONSENSUS_START_SECONDS = 120


def health(v):
    await_consensus_rpc(v)
    return judged(v, observe(v, remedy_forkchoice=True))


def judged(v, report):
    """The report with the diagnosis table's verdict on it: the one wording of every fault."""
    report["diagnoses"] = validator_row(v.node, None, report)["diagnoses"]
    return report


def await_consensus_rpc(v):
    """Waits, within CONSENSUS_START_SECONDS of the consensus unit's start, for its /status to
    answer; a daemon that does not is reported by observe (consensusError: consensus-rpc-down)."""
    unit = v.units["consensus"]
    p = unit_props(unit, "ActiveState", "ActiveEnterTimestampMonotonic")
    if p.get("ActiveState") != "active":
        return
    left = int(p.get("ActiveEnterTimestampMonotonic") or 0) / 1e6 + CONSENSUS_START_SECONDS - time.monotonic()
    if left <= 0:
        return

    def answers():
        try:
            v.cl_status()
            return True
        except Failed:
            return False
    try:
        wait(f"{unit} to answer /status", answers, left, every=2)
    except Failed:
        pass


def status(v):
    """Read-only: what `health` reports, nothing restarted, plus the live table's facts."""
    jobs_units = [f"nodefleet-{kind}-{v.node}" for kind in ("export", "import")]
    with units_snapshot([*v.units.values(), *jobs_units]):
        return status_now(v)


def status_now(v):
    report = observe(v, remedy_forkchoice=False)
    state = os.path.join(v.s["consensusHome"], "data", "priv_validator_state.json")
    report["privValidatorState"] = {"path": state, "exists": os.path.exists(state)}
    ref = v.s.get("referenceRpcUrl")
    if ref:
        try:
            report["networkHeight"] = block_number(ref)
        except RpcFailure as e:
            report["networkError"] = str(e)
    jobs = {}
    for kind in ("export", "import"):
        unit = f"nodefleet-{kind}-{v.node}"
        p = unit_props(unit, "ActiveState", "SubState", "ActiveEnterTimestampMonotonic")
        if p.get("ActiveState") in ("active", "activating") and p.get("SubState") != "exited":
            started = int(p.get("ActiveEnterTimestampMonotonic") or 0)
            jobs[kind] = {"unit": unit, "started": now(mono_to_realtime_usec(started) / 1e6) if started else None}
    if jobs:
        try:
            with open(progress_path(v)) as f:
                progress = json.load(f)
        except (OSError, ValueError):
            progress = {}
        for job in jobs.values():
            # The figures of this run of the job only (`pulumi up` writes them while it is attached;
            # "at" says how fresh they are), never those of an earlier run of the same unit.
            if isinstance(progress, dict) and progress.get("job") == job["unit"] and fresh(progress.get("at"), job["started"]):
                job.update(progress)
        report["running"] = jobs
    return judged(v, report)


def fresh(at, started):
    try:
        return started is None or parse_time(at) >= parse_time(started)
    except (TypeError, ValueError):
        return False


def observe(v, remedy_forkchoice):
    client = v.host_client()
    report = {"node": v.node, "client": client, "services": {}, "units": dict(v.units)}
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
    found = []
    if "jwtError" in report:
        found.append({"fault": "jwt-mismatch", "detail": report["jwtError"]})
    if client == "reth" and active(v.units["reth"]):
        try:
            report["peers"] = peer_count(v.el_url)
        except RpcFailure as e:
            report["peersError"] = str(e)
        if report.get("peers") == 0:
            p2p = v.s["ports"]["p2p"]
            found.append({"fault": "reth-no-peers", "detail": f"{v.units['reth']} has no peers", "p2pPort": p2p})
    if client in ("geth", "reth") and active(v.units[client]):
        errors = v.forkchoice_errors()
        if errors and remedy_forkchoice:
            # remedied: how many times 0gchaind was stopped, its height rolled back and started again
            found.append({"fault": "forkchoice-38002", "detail": errors[-1][:200], "remedied": remedy(v)})
        elif errors:
            found.append({"fault": "forkchoice-38002", "detail": errors[-1][:200], "remedied": 0})
    waits = v.engine_waits()
    if len(waits) >= ENGINE_WAITS:
        found.append({"fault": "engine-unreachable", "detail": waits[-1].strip()[:200], "dialUrl": v.s["dialUrl"], "tries": len(waits)})
    upgrade, faults = upgrade_findings(v, (report.get("consensus") or {}).get("height"))
    if upgrade is not None:
        report["upgrade"] = upgrade
        found.extend(faults)
    report["findings"] = found
    report["consensusProcessesWithThisKey"] = len(v.consensus_processes())
    if os.path.isdir(v.markers) and os.listdir(v.markers):
        report["migration"] = migration_report(v)
    return report


def remedy(v):
    """The forkchoice remedy, repeated while 0gchaind logs the fault again, at most remedyRetries times: how many ran."""
    for n in range(1, v.s["remedyRetries"] + 1):
        say(f"{FORKCHOICE_FAULT}: remedy {n} of {v.s['remedyRetries']}")
        v.remedy_forkchoice()
        time.sleep(v.s.get("remedySettleSeconds", 5))
        if not v.forkchoice_errors():
            return n
    raise Failed(f"{FORKCHOICE_FAULT} after {v.s['remedyRetries']} remedies: "
                 "stop it, let the execution client reach the chain head, roll back the height")
