"""What a node's health answer means: its row, with the spec's error table applied (docs/spec.md §7:
condition -> remedy); nodefleet_metrics.py (installed beside it, importing this module) writes
the rows as node_exporter textfile metrics.

The answer is what the role's health tool prints (zgs-health.py, aztec-health.py, zg-validator.py
status). This module is the one place diagnoses are decided: the health timer on each host writes
its rows as metrics for Prometheus (nodefleet_diagnosis{code}, the alerts' source), `nodefleet
status` shows the same rows, and the role tools put their row's diagnoses in their own answer (the
stack output `health`): a tool reports facts and fault codes, never words of its own. Pure
functions of the answer; an answer of the wrong shape is facts unknown, never a crash or a false
"healthy".

    python3 nodefleet_health.py rows      stdin: {"rows": [{node, role, host, answer | failed | unreachable}]}
                                          stdout: {"rows": [row, ...]}

The metrics, their catalogue and the health timer's run are nodefleet_metrics.py's commands.
"""
import decimal
import json
import math
import os
import re
import sys

from nodefleet_faults import FAULTS, remedy

SYNCED_WITHIN = 5  # storage: synced means fewer than this many blocks behind the head (docs/spec.md §8)
INCREASING_OVER_SECONDS = 10  # storage: a height that did not grow over at least this long is "not increasing"
VALIDATOR_LAG_WARNING = 5  # validator: this far behind the reference endpoint is a warning

_MISSING = object()


def num(v):
    """A finite JSON number (not a boolean), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v if math.isfinite(v) else None


def text(v):
    return v if isinstance(v, str) else None


def first(*values):
    """The first value that is not None (JavaScript's ??: an empty string counts)."""
    return next((v for v in values if v is not None), None)


def obj(v):
    return v if isinstance(v, dict) else None


def js(v):
    """A JSON value as JavaScript's String() writes it (the details the rows have always carried)."""
    if v is _MISSING:
        return "undefined"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return js_number(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ",".join("" if x is None else js(x) for x in v)
    return "[object Object]"


def js_number(x):
    """A float as JavaScript's Number.prototype.toString writes it (ECMA-262 Number::toString): the
    shortest digits that read back as x (Python's repr finds the same), placed as JavaScript places them."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, raw, exponent = decimal.Decimal(repr(abs(x))).as_tuple()
    raw = "".join(map(str, raw))
    n = exponent + len(raw)  # where the decimal point goes, counted from the first digit
    digits = raw.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def diag(fault, detail, unit=None, p2p=None):
    """A diagnosis: the fault's code, what was seen, and the table's severity and remedy."""
    return {"fault": fault, "severity": FAULTS[fault]["severity"], "detail": detail, "remedy": remedy(fault, unit, p2p)}


def row(**base):
    base["healthy"] = not any(d["severity"] == "error" for d in base["diagnoses"])
    return base


def unreachable_row(node, role, host, why):
    return row(node=node, role=role, host=host, service="unreachable", height=None, lag=None, peers=None,
               diagnoses=[diag("host-unreachable", f"host {host}: {why}")])


def check_failed_row(node, role, host, why):
    return row(node=node, role=role, host=host, service="unknown", height=None, lag=None, peers=None,
               diagnoses=[diag("check-failed", why)])


def diagnose(node, role, host, answer):
    a = answer if isinstance(answer, dict) else {}
    if role == "storage":
        return storage_row(node, host, a)
    if role == "sequencer":
        return sequencer_row(node, host, a)
    if role == "validator":
        return validator_row(node, host, a)
    raise ValueError(f"unknown role {role!r}")


def storage_row(node, host, a):
    d = []
    unit = first(text(a.get("service")), f"zgs-{node}.service")
    endpoint = text(a.get("endpoint"))
    active = a.get("active") is True
    # zgs_node v1.1.0 exits at start on what it cannot do (systemd restarts it every 5 s): the reason,
    # from its log, is the fault; the unit's state and the silent RPC follow from it.
    endpoint_down = "endpointError" in a
    start_error = text(a.get("startError"))
    start = None if start_error is None else start_fault(start_error, unit, endpoint_down)
    if a.get("active") is False and start is None:
        d.append(diag("service-down", f"{unit} is not active", unit=unit))
    if endpoint_down:
        # Seen here: systemd has just restarted the node, which has not yet logged its failure; its
        # RPC is silent for the same reason. Either way the endpoint is the one fault.
        if start_error is not None and re.search(r"Unable to get chain id", start_error):
            exits = f" (the node exits at start while it does not: {unit} is {first(text(a.get('state')), 'restarting')})"
        elif "statusError" in a and active:
            exits = " (zgs_getStatus is silent too: the node cannot start without it, and systemd restarts it every 5 s)"
        else:
            exits = ""
        d.append(diag("rpc-endpoint-down", f"blockchain_rpc_endpoint {first(endpoint, '?')} does not answer eth_blockNumber: {js(a.get('endpointError'))}{exits}"))
    if start is not None and start["fault"] != "rpc-endpoint-down":
        d.append(start)
    if "statusError" in a and active and start is None and not endpoint_down:
        d.append(diag("storage-rpc-down", f"{unit} is active but zgs_getStatus does not answer: {js(a.get('statusError'))}", unit=unit))
    head = num(a.get("chainHead"))
    height = num(a.get("logSyncHeight"))
    # zgs_node syncs the log only up to head - confirmation_block_count: that is its head.
    confirmations = num(a.get("confirmations"))
    confirmations = 0 if confirmations is None else confirmations
    lag = max(0, head - confirmations - height) if head is not None and height is not None else None
    synced = lag is not None and lag < SYNCED_WITHIN
    if lag is not None and not synced:
        d.append(diag("not-synced", f"{js(lag)} blocks behind the chain head {js(head)} less its {js(confirmations)} confirmations (synced means fewer than {SYNCED_WITHIN})"))
    sample = num(a.get("sampleSeconds"))
    if a.get("increasing") is False and not synced and not endpoint_down and sample is not None and sample >= INCREASING_OVER_SECONDS:
        d.append(diag("height-not-increasing", f"logSyncHeight {js(height)} did not grow in {js(sample)} s"))
    peers = num(a.get("connectedPeers"))
    if peers == 0:
        d.append(diag("storage-peers-0", "connectedPeers is 0"))
    service = "active" if a.get("active") is True else "inactive" if a.get("active") is False else "unknown"
    return row(node=node, role="storage", host=host, service=service, height=height, lag=lag, peers=peers,
               storage={"synced": synced, "endpoint": endpoint}, diagnoses=d)


def start_fault(reason, unit, endpoint_down):
    """The fault behind a failed start of zgs_node, from the reason it logged."""
    if re.search(r"Unable to get chain id", reason):
        if endpoint_down:
            return diag("rpc-endpoint-down", reason)
        return diag("storage-start-failed", f"its last start could not reach blockchain_rpc_endpoint (it answers now): {reason}", unit=unit)
    if re.search(r"insufficient funds", reason):
        return diag("miner-unfunded", f"the miner key's account cannot pay for the node's miner id registration: {reason}")
    if re.search(r"minerId", reason):
        return diag("miner-registration-failed", reason)
    return diag("storage-start-failed", reason, unit=unit)


def sequencer_row(node, host, a):
    d = []
    unit = first(text(a.get("service")), f"aztec-{node}.service")
    state = "active" if a.get("active") is True else first(text(a.get("state")), "inactive" if a.get("active") is False else "unknown")
    l1 = text(a.get("l1Unreachable"))
    proven = num(a.get("provenBlock"))
    sibling = obj(a.get("siblingPath"))
    sibling_ok = None if sibling is None else sibling.get("ok") is True
    peer_id = text(a.get("peerId"))
    latest = num(a.get("latestBlock"))
    reg = obj(a.get("registration"))
    # What L1 says of the validator (shown, not judged: a queued or pending registration is normal).
    if reg is None:
        registration = None
    elif text(reg.get("status")) is not None:
        position = num(reg.get("queuePosition"))
        registration = f"{reg['status']}{'' if position is None else ' #' + js(position)}"
    else:
        registration = "unknown"
    sequencer = {"provenBlock": proven, "latestBlock": latest, "siblingPath": sibling_ok, "peerId": peer_id, "registration": registration}
    # Stopped (by its operator, or killed at the end of a stop that hung), it is down, whatever its
    # last process logged: a stop cuts the node's L1 requests short, and they read as failed ones.
    stopped = state in ("inactive", "failed", "deactivating")
    if l1 is not None and not stopped:
        # The real 4.1.2 node runs on with its L1 gone and exits at start without it, which systemd
        # restarts: one fault, whatever else the answer shows follows from it.
        exits = a.get("active") is not True or "tipsError" in a
        tail = f"; it exits at start without it ({unit} is {state}, its RPC does not answer)" if exits else "; it runs on, neither syncing L1 nor proposing"
        d.append(diag("l1-endpoint-down", f'the node cannot reach its L1 RPC {l1} ("HTTP request failed" in its log){tail}'))
        return row(node=node, role="sequencer", host=host, service=state, height=proven, lag=None, peers=None, sequencer=sequencer, diagnoses=d)
    if a.get("active") is False:
        d.append(diag("service-down", f"{unit} is {state}", unit=unit))
    if "tipsError" in a:
        d.append(diag("sequencer-rpc-down", f"node_getL2Tips: {js(a.get('tipsError'))}", unit=unit))
    if proven is not None and sibling_ok is False:
        err = f": {js(a.get('siblingPathError'))}" if "siblingPathError" in a else ""
        d.append(diag("sibling-path-missing", f"node_getArchiveSiblingPath({js(proven)}, {js(proven)}) gave no path{err}"))
    if peer_id is None and a.get("active") is True:
        d.append(diag("no-peer-id", "no 'Started P2P service' line with a peerId in this boot's journal", unit=unit))
    return row(node=node, role="sequencer", host=host, service=state, height=proven, lag=None, peers=None, sequencer=sequencer, diagnoses=d)


def validator_row(node, host, a):
    d = []
    client = text(a.get("client"))
    services = obj(a.get("services")) or {}
    units = obj(a.get("units")) or {}
    consensus_unit = text(units.get("consensus"))
    el_unit = text(units.get(client)) if client in ("geth", "reth") else None
    watched = [u for u in (el_unit, consensus_unit) if u is not None]
    if client is None:
        d.append(diag("no-execution-client", "the host has no geth or reth datadir and no switch state: no execution client is set up"))
    down = [u for u in watched if services.get(u, _MISSING) != "active"]
    for unit in down:
        d.append(diag("service-down", f"{unit} is {js(services.get(unit, _MISSING))}", unit=unit))
    if "executionError" in a and el_unit is not None and el_unit not in down:
        d.append(diag("execution-rpc-down", js(a.get("executionError")), unit=el_unit))
    consensus = obj(a.get("consensus"))
    if "consensusError" in a and consensus_unit is not None and consensus_unit not in down:
        d.append(diag("consensus-rpc-down", js(a.get("consensusError")), unit=consensus_unit))
    for found in findings(a):
        f = obj(found)
        if f is None:
            continue
        detail = js(f.get("detail")) if f.get("detail") is not None else ""
        fault = f.get("fault")
        if fault == "forkchoice-38002" and "remedied" in f and num(f.get("remedied")) != 0:
            continue  # remedied by `health`: gone
        if fault == "forkchoice-38002":
            d.append(diag("forkchoice-38002", f"0gchaind's head is not on the execution client (-38002, or the EL answers SYNCING): {detail}"))
        elif fault == "jwt-mismatch":
            d.append(diag("jwt-mismatch", f"Engine API errors between the clients: {detail}"))
        elif fault == "engine-unreachable":
            tries, at = num(f.get("tries")), text(f.get("dialUrl"))
            if tries is not None and at is not None:
                detail = f"0gchaind has not reached the execution client's engine API at {at} ({js(tries)} tries; BeaconKit logs all three causes alike): {detail}"
            d.append(diag("engine-unreachable", detail))
        elif fault == "reth-no-peers":
            port = num(f.get("p2pPort"))
            d.append(diag("reth-no-peers", detail, p2p=js(port) if port is not None else "the p2p port (<prefix>303)"))
        elif fault == "upgrade-pending":
            d.append(diag("upgrade-pending", detail))
        elif fault == "upgrade-not-ready":
            d.append(diag("upgrade-not-ready", detail))
        elif fault == "upgrade-overdue":
            d.append(diag("upgrade-overdue", detail))
    state = obj(a.get("privValidatorState"))
    if state is not None and state.get("exists") is False:
        d.append(diag("missing-priv-validator-state", f"{js(state.get('path', _MISSING))} is missing: 0gchaind does not start without it"))
    catching_up = consensus.get("catchingUp") if consensus is not None and isinstance(consensus.get("catchingUp"), bool) else None
    consensus_height = num(consensus.get("height")) if consensus is not None else None
    if catching_up is True:
        d.append(diag("catching-up", f"0gchaind is catching up (height {'?' if consensus_height is None else js(consensus_height)}): it does not sign until it is caught up"))
    processes = num(a.get("consensusProcessesWithThisKey"))
    if processes is not None and processes > 1:
        d.append(diag("key-running-twice", f"{js(processes)} 0gchaind processes run with this validator key on this host"))
    height = num(a.get("executionHeight"))
    network = num(a.get("networkHeight"))
    lag = network - height if height is not None and network is not None else None
    if lag is not None and lag >= VALIDATOR_LAG_WARNING:
        d.append(diag("execution-behind", f"the execution client is {js(lag)} blocks behind the reference endpoint's {js(network)}"))
    if "networkError" in a:
        d.append(diag("reference-down", js(a.get("networkError"))))
    sw = switch_progress(a)
    if sw is not None and not sw["complete"] and len(sw["running"]) == 0:
        d.append(diag("switch-incomplete", f"the {sw['mode']} switch stopped after {first(sw['lastStep'], 'no step')} ({sw['stepsDone']} of {sw['steps']} steps) and nothing of it runs"))
    if not watched:
        service = "unknown"
    elif not down:
        service = "active"
    else:
        service = ", ".join(f"{re.sub(r'[.]service$', '', u)} {js(services.get(u, _MISSING))}" for u in down)
    return row(node=node, role="validator", host=host, service=service, height=height, lag=lag, peers=num(a.get("peers")),
               validator={"client": client, "consensusHeight": consensus_height, "catchingUp": catching_up, "switch": sw, **upgrade_facts(a)}, diagnoses=d)


def committed_height(row):
    """A validator row's last committed height (its consensus daemon's), or None (another role, or unknown)."""
    v = row.get("validator")
    h = v.get("consensusHeight") if isinstance(v, dict) else None
    return h if isinstance(h, int) and not isinstance(h, bool) else None


def upgrade_facts(a):
    """An upgrade at a height, as the tool reported it (pending, its blocks left, ready), when one is configured."""
    facts = obj(a.get("upgrade"))
    return {} if facts is None else {"upgrade": facts}


def findings(a):
    """The faults the validator tool found, each with its facts (`findings`; a tool older than this
    table listed them as `diagnoses`, with words of its own that are not read)."""
    found = a.get("findings", a.get("diagnoses"))
    return found if isinstance(found, list) else []


def _steps():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "zgvalidator", "steps.json"), encoding="utf-8") as f:
        return json.load(f)


def switch_progress(a):
    """The switch's state from the answer's migration report and running jobs, or None when none is on record."""
    m = obj(a.get("migration"))
    if m is None:
        return None
    steps = sorted((obj(m.get("steps")) or {}).keys())
    running = []
    for j in (obj(a.get("running")) or {}).values():
        job = obj(j) or {}
        running.append({"job": first(text(job.get("unit")), text(job.get("job")), "?"), "done": num(job.get("done")), "total": num(job.get("total")),
                        "percent": num(job.get("percent")), "rate": num(job.get("rate")), "etaSeconds": num(job.get("etaSeconds")),
                        "started": text(job.get("started")), "at": text(job.get("at"))})
    mode = first(text(m.get("mode")), "ordered")
    total = len(_steps()["lowDowntime" if mode == "lowDowntime" else "ordered"])
    return {"mode": mode, "stepsDone": len(steps), "steps": total, "lastStep": steps[-1] if steps else None, "complete": m.get("complete") is True, "running": running}


def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def last_json(stdout):
    """The last line of a tool's stdout as a JSON object (the tools print progress lines first), else None."""
    lines = stdout.strip().split("\n")
    try:
        value = json.loads(lines[-1], parse_constant=_no_constants)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def from_result(argv, result):
    """What one run of a health check gave: ("answer", the tool's JSON) or ("failed", why there is none).
    `result` is {exit, stdout, stderr} | {timeout} | {error}, or None when the host gave none."""
    if not isinstance(result, dict):
        return "failed", "the host gave no result for it"
    if "timeout" in result:
        return "failed", f"its health check did not end within {js(result['timeout'])} s"
    if "error" in result:
        return "failed", f"its health check could not run: {js(result['error'])}"
    answer = last_json(str(result.get("stdout", "")))
    code = result.get("exit")
    if code != 0 or answer is None:
        why = str(result.get("stderr", "")).strip().split("\n")[-1] or f"exit {js(code)}"
        return "failed", f"{' '.join(argv[:3])}… exited {js(code)}{' without a JSON answer' if answer is None else ''}: {why[:300]}"
    return "answer", answer


def rows(items):
    """One row per item: {node, role, host} with `answer`, `failed` (why the check gave none),
    `unreachable`, or `result` (a run of the check, with its `argv`)."""
    out = []
    for item in items:
        node, role, host = item["node"], item["role"], item["host"]
        if "result" in item:
            kind, value = from_result([str(a) for a in item.get("argv", [])], item["result"])
            item = {"node": node, kind: value}
        if "unreachable" in item:
            out.append(unreachable_row(node, role, host, item["unreachable"]))
        elif "failed" in item:
            out.append(check_failed_row(node, role, host, item["failed"]))
        else:
            try:
                out.append(diagnose(node, role, host, item.get("answer")))
            except Exception as e:  # an answer nobody foresaw: that node's check failed, the others stand
                out.append(check_failed_row(node, role, host, f"its answer could not be read ({type(e).__name__})"))
    return out



def main(argv):
    if len(argv) != 2 or argv[1] != "rows":
        sys.stderr.write(__doc__)
        return 2
    request = json.load(sys.stdin)
    json.dump({"rows": rows(request["rows"])}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
