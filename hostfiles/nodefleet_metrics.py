"""nodefleet's health as node_exporter textfile metrics: the rows of the one diagnosis table
(nodefleet_health.rows) written as gauges, and the health timer's run that writes them (its checks
run by nodefleet_checks); installed beside both.

    python3 nodefleet_metrics.py metrics    stdin: {"rows": [...], "at": Unix time} as nodefleet_health.py
                                            takes them; stdout: the rows as textfile metrics
    python3 nodefleet_metrics.py catalogue  the metrics it writes: {name: {help, labels}}
    python3 nodefleet_metrics.py collect CHECKS OUT
        the health timer: runs every node's health command of CHECKS ({host, timeout, checks:
        [{node, role, argv}]}) at once and writes their rows as metrics to OUT, replaced whole
"""
import json
import math
import os
import sys
import time

import nodefleet_checks as checks
import nodefleet_health as health


# The metrics the health timer writes (node_exporter's textfile collector), in the order written:
# name -> (help, labels besides node and role; None: per host, without them). Prometheus adds the
# scrape target's `host`. The alert rules and the dashboard use these names (a test holds them to it).
METRICS = {
    "nodefleet_health_last_run_timestamp_seconds": ("When the host's health timer last wrote these metrics (Unix time).", None),
    "nodefleet_node_check_ok": ("1 when the node's health tool answered; 0 when it failed (the diagnosis check-failed) or the host was not reached.", ()),
    "nodefleet_node_service_up": ("1 when the node's service is active (a validator: its consensus daemon and its execution client).", ()),
    "nodefleet_node_healthy": ("1 when the node has no diagnosis of severity error (what nodefleet status calls healthy).", ()),
    "nodefleet_node_height": ("Storage: log sync height; sequencer: proven L2 block; validator: execution client height.", ()),
    "nodefleet_node_head": ("The network head the lag is measured against (storage: the chain head less confirmations; validator: referenceRpcUrl's).", ()),
    "nodefleet_node_lag_blocks": ("Blocks behind the network head.", ()),
    "nodefleet_node_peers": ("Connected peers (storage: connectedPeers; validator: the execution client's).", ()),
    "nodefleet_storage_synced": ("1 when the storage node is fewer than 5 blocks behind (docs/spec.md §8).", ()),
    "nodefleet_sequencer_latest_block": ("The newest L2 block the sequencer has.", ()),
    "nodefleet_sequencer_sibling_path_ok": ("1 when the archive gives a sibling path for the proven block.", ()),
    "nodefleet_sequencer_peer_id_known": ("1 when this boot's journal names the sequencer's P2P peerId.", ()),
    "nodefleet_validator_consensus_height": ("The consensus daemon's latest block height (/status).", ()),
    "nodefleet_validator_catching_up": ("1 while the consensus daemon reports catching_up true.", ()),
    "nodefleet_validator_execution_client": ("1 for the execution client the validator runs.", ("client",)),
    "nodefleet_switch_steps_done": ("Steps of the geth -> reth switch on record that are done.", ("mode",)),
    "nodefleet_switch_steps": ("Steps of the switch in its mode.", ("mode",)),
    "nodefleet_switch_complete": ("1 when the switch on record has run all its steps.", ("mode",)),
    "nodefleet_switch_job_done_blocks": ("Blocks a running export or import of the switch has done.", ("job",)),
    "nodefleet_diagnosis": ("1 per active diagnosis, with the code and severity nodefleet status prints.", ("code", "severity")),
}


def _label(value):
    """A label value in the text exposition format: backslash, double quote and newline escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _samples(r):
    """(metric, extra labels, value) of one row."""
    faults = {d["fault"] for d in r["diagnoses"]}
    yield "nodefleet_node_check_ok", {}, 0 if faults & {"check-failed", "host-unreachable"} else 1
    yield "nodefleet_node_service_up", {}, 1 if r["service"] == "active" else 0
    yield "nodefleet_node_healthy", {}, 1 if r["healthy"] else 0
    height, lag = r["height"], r["lag"]
    if height is not None:
        yield "nodefleet_node_height", {}, height
    if height is not None and lag is not None:
        yield "nodefleet_node_head", {}, height + lag
    if lag is not None:
        yield "nodefleet_node_lag_blocks", {}, lag
    if r["peers"] is not None:
        yield "nodefleet_node_peers", {}, r["peers"]
    if "storage" in r:
        yield "nodefleet_storage_synced", {}, 1 if r["storage"]["synced"] else 0
    s = r.get("sequencer")
    if s is not None:
        if s["latestBlock"] is not None:
            yield "nodefleet_sequencer_latest_block", {}, s["latestBlock"]
        if s["siblingPath"] is not None:
            yield "nodefleet_sequencer_sibling_path_ok", {}, 1 if s["siblingPath"] else 0
        yield "nodefleet_sequencer_peer_id_known", {}, 0 if s["peerId"] is None else 1
    v = r.get("validator")
    if v is not None:
        if v["consensusHeight"] is not None:
            yield "nodefleet_validator_consensus_height", {}, v["consensusHeight"]
        if v["catchingUp"] is not None:
            yield "nodefleet_validator_catching_up", {}, 1 if v["catchingUp"] else 0
        if v["client"] is not None:
            yield "nodefleet_validator_execution_client", {"client": v["client"]}, 1
        sw = v["switch"]
        if sw is not None:
            yield "nodefleet_switch_steps_done", {"mode": sw["mode"]}, sw["stepsDone"]
            yield "nodefleet_switch_steps", {"mode": sw["mode"]}, sw["steps"]
            yield "nodefleet_switch_complete", {"mode": sw["mode"]}, 1 if sw["complete"] else 0
            for job in sw["running"]:
                if job["done"] is not None:
                    yield "nodefleet_switch_job_done_blocks", {"job": job["job"]}, job["done"]
    for d in r["diagnoses"]:
        yield "nodefleet_diagnosis", {"code": d["fault"], "severity": d["severity"]}, 1


def _number(v):
    return health.js(v) if not isinstance(v, float) or math.isfinite(v) else "NaN"


def metrics(row_list, at):
    """The rows as node_exporter textfile metrics: each metric's HELP and TYPE, then its series, each once."""
    series = {name: {} for name in METRICS}
    series["nodefleet_health_last_run_timestamp_seconds"][""] = _number(at)
    for r in row_list:
        for name, extra, value in _samples(r):
            labels = {"node": r["node"], "role": r["role"], **extra}
            key = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            # One series per label set (node_exporter refuses a file that names one twice): the
            # first row's value stands (a validator's two stopped units are one service-down).
            series[name].setdefault("{" + key + "}", _number(value))
    out = []
    for name, (help_text, _) in METRICS.items():
        if not series[name]:
            continue
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} gauge")
        out.extend(f"{name}{labels} {value}" for labels, value in series[name].items())
    return "\n".join(out) + "\n"


def collect(checks_file, out_file):
    """The health timer's run: every node's health command on this host at once, their rows written
    as textfile metrics. The file is replaced whole (node_exporter never reads half of it)."""
    with open(checks_file, encoding="utf-8") as f:
        spec = json.load(f)
    timeout = spec.get("timeout", 20)
    results = checks.run_all([{"node": c["node"], "argv": c["argv"], "timeout": timeout} for c in spec["checks"]])
    items = [{"node": c["node"], "role": c["role"], "host": spec["host"], "argv": c["argv"], "result": results.get(c["node"])} for c in spec["checks"]]
    found = health.rows(items)
    text = metrics(found, round(time.time(), 3))
    tmp = f"{out_file}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out_file)
    unhealthy = [r["node"] for r in found if not r["healthy"]]
    print(f"{len(found)} nodes, {len(unhealthy)} unhealthy{': ' + ', '.join(unhealthy) if unhealthy else ''}")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "collect":
        return collect(argv[2], argv[3])
    if len(argv) != 2 or argv[1] not in ("metrics", "catalogue"):
        sys.stderr.write(__doc__)
        return 2
    if argv[1] == "catalogue":
        json.dump({name: {"help": h, "labels": None if labels is None else ["node", "role", *labels]} for name, (h, labels) in METRICS.items()}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    request = json.load(sys.stdin)
    sys.stdout.write(metrics(health.rows(request["rows"]), request["at"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
