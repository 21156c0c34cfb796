#!/bin/sh
nodefleet_secret_alertmanager='# Written by nodefleet from the fleet'"'"'s monitoring section: do not edit. It holds the receivers'"'"' secrets: root and the prometheus group only.
route:
  receiver: nodefleet-none
  group_by:
    - alertname
    - host
    - node
  group_wait: 30s
  group_interval: 5m
  repeat_interval: 4h
  routes:
    - receiver: ops-hook
      matchers:
        - severity=~"error|warning"
      continue: true
    - receiver: ops-slack
      matchers:
        - severity=~"error"
      continue: true
    - receiver: ops-telegram
      matchers:
        - severity=~"error|warning"
      continue: true
    - receiver: ops-discord
      matchers:
        - severity=~"error|warning"
      continue: true
    - receiver: ops-mail
      matchers:
        - severity=~"error|warning"
      continue: true
inhibit_rules:
  - source_matchers:
      - alertname=~"NodefleetHostDown|NodefleetHealthStale"
    target_matchers:
      - alertname!~"NodefleetHostDown|NodefleetHealthStale"
    equal:
      - host
receivers:
  - name: nodefleet-none
  - name: ops-hook
    webhook_configs:
      - url: "http://203.0.113.9:9099/alerts"
        send_resolved: true
  - name: ops-slack
    slack_configs:
      - api_url: "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX"
        send_resolved: true
        channel: "#node-alerts"
        title: "{{ .CommonAnnotations.summary }}"
        text: |-
          {{ range .Alerts }}{{ .Annotations.summary }}
          remedy: {{ .Annotations.remedy }}
          {{ .Annotations.status }}
          {{ end }}
  - name: ops-telegram
    telegram_configs:
      - bot_token: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
        chat_id: -1001234567890
        send_resolved: true
        parse_mode: ""
        message: |-
          {{ range .Alerts }}[{{ .Status }}] {{ .Annotations.summary }}
          remedy: {{ .Annotations.remedy }}
          {{ .Annotations.status }}
          {{ end }}
  - name: ops-discord
    discord_configs:
      - webhook_url: "https://discord.com/api/webhooks/1/abc"
        send_resolved: true
  - name: ops-mail
    email_configs:
      - to: ops@example.com
        from: nodefleet@example.com
        smarthost: smtp.example.com:587
        send_resolved: true
        auth_username: nodefleet
        auth_password: "pa\"ss: #word"'
# nodefleet: the monitoring stack on host h-storage: Debian's prometheus and
# prometheus-alertmanager, each run by nodefleet's drop-in (its config under /etc/prometheus/nodefleet,
# listening on 127.0.0.1 only, Alertmanager without its cluster port), the alert rules and
# the receivers. The new files are checked by the packages' own promtool and amtool before any
# replaces a file in use; a config change reloads the service (its data is kept), a flag change
# restarts it. alertmanager.yml holds the receivers' secrets: it arrives on stdin
# (nodefleet_secret_alertmanager), is root's and the prometheus group's only, and is never printed.
set -eu
export DEBIAN_FRONTEND=noninteractive
umask 022
changed=""

# put PATH MODE OWNER < content: replace PATH only when the content differs (its mode and owner
# are set either way). The content is staged in a file of this call's own beside PATH (several
# steps of a host run at once and put the same shared tools), then renamed over it: a reader sees
# the old file or the new one, and two writers never write into one staging file.
put() {
	tmp="$(mktemp "$1.nodefleet-new.XXXXXX")"
	cat > "$tmp"
	chmod "$2" "$tmp"
	chown "$3" "$tmp"
	if cmp -s "$tmp" "$1"; then
		rm -f "$tmp"
		chmod "$2" "$1"
		chown "$3" "$1"
	else
		mv "$tmp" "$1"
		changed="$changed $1"
	fi
	record_file "$1"
}

# put_tool PATH MODE OWNER DIGEST: put PATH from the host tools nodefleet copied to the SSH user's
# ~/.nodefleet/tools (components/hosts/tools.ts, HOST_TOOLS_DIR), from the file named by DIGEST,
# its sha256 checked first.
put_tool() {
	tool="$(getent passwd "${SUDO_USER:-root}" | cut -d: -f6)/.nodefleet/tools/$4"
	if [ ! -f "$tool" ] || [ "$(sha256sum < "$tool" | cut -c1-64)" != "$4" ]; then
		echo "nodefleet: $tool (for $1) is missing or altered on this host: the host's tools step copies it (pulumi up --replace on its urn, the one ending in -tools)" >&2
		exit 1
	fi
	put "$1" "$2" "$3" < "$tool"
}

# The drift record of this step (read by `pulumi refresh` through nodefleet's drift check): what it
# put on the host, as digests, modes, owners and wanted unit states, never contents. Written anew
# each run, so it holds what the last run applied.
record=/var/lib/nodefleet/drift/monitoring.server
rm -rf "$record"
install -d -m 0700 "$record"
# record_file PATH: its sha256, mode and owner as this step left them.
record_file() {
	printf 'file\t%s\t%s\t%s\n' "$1" "$(sha256sum "$1" | cut -c1-64)" "$(stat -c '%a %U:%G' "$1")" > "$record/f.$(printf '%s' "$1" | sha256sum | cut -c1-16)"
}
# record_unit NAME: the unit is meant to be enabled and running.
record_unit() {
	printf 'unit\t%s\n' "$1" > "$record/u.$1"
}

install -d -m 0755 /etc/systemd/system/prometheus.service.d /etc/systemd/system/prometheus-alertmanager.service.d /etc/nodefleet
put /etc/systemd/system/prometheus.service.d/nodefleet.conf 0644 root:root <<'NODEFLEET_EOF'
# Prometheus as nodefleet runs it on host h-storage: its config under /etc/prometheus/nodefleet,
# its web UI and API on one address. A drop-in for Debian's prometheus.service.
[Service]
ExecStart=
ExecStart=/usr/bin/prometheus --config.file=/etc/prometheus/nodefleet/prometheus.yml --web.listen-address=127.0.0.1:9090 --storage.tsdb.path=/var/lib/prometheus/metrics2/ --storage.tsdb.retention.time=15d
NODEFLEET_EOF
put /etc/systemd/system/prometheus-alertmanager.service.d/nodefleet.conf 0644 root:root <<'NODEFLEET_EOF'
# Alertmanager as nodefleet runs it on host h-storage: its config (with the receivers' secrets)
# under /etc/prometheus/nodefleet, its web UI and API on one address, no cluster port. A drop-in for
# Debian's prometheus-alertmanager.service.
[Service]
ExecStart=
ExecStart=/usr/bin/prometheus-alertmanager --config.file=/etc/prometheus/nodefleet/alertmanager.yml --web.listen-address=127.0.0.1:9093 --storage.path=/var/lib/prometheus/alertmanager/ --cluster.listen-address=
NODEFLEET_EOF
systemctl daemon-reload
for pkg in prometheus prometheus-alertmanager ; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		echo "monitoring h-storage: installing $pkg"
		[ -n "${updated:-}" ] || { apt-get update -qq; updated=1; }
		apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
		: > "/etc/nodefleet/.installed-$pkg"
	fi
done

config=/etc/prometheus/nodefleet
install -d -m 0750 -o root -g prometheus "$config"
stage="$(mktemp -d "$config/.nodefleet-new.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
umask 027
cat > "$stage/prometheus.yml" <<'NODEFLEET_EOF'
# Written by nodefleet from the fleet's monitoring section: do not edit (the next pulumi up puts it back).
global:
  scrape_interval: 30s
  scrape_timeout: 10s
  evaluation_interval: 30s
  external_labels:
    fleet: prod
rule_files:
  - nodefleet.rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets:
            - 127.0.0.1:9093
scrape_configs:
  - job_name: node
    file_sd_configs:
      - files:
          - targets/node.json
  - job_name: cometbft
    file_sd_configs:
      - files:
          - targets/cometbft.json
  - job_name: execution
    metrics_path: /debug/metrics/prometheus
    file_sd_configs:
      - files:
          - targets/execution.json
  - job_name: prometheus
    static_configs:
      - targets:
          - 127.0.0.1:9090
        labels:
          host: h-storage
NODEFLEET_EOF
cat > "$stage/nodefleet.rules.yml" <<'NODEFLEET_EOF'
# nodefleet's alert rules, generated by nodefleet (components/monitoring/rules.ts): do not edit.
groups:
  - name: nodefleet-nodes
    rules:
      - alert: NodefleetCheckFailed
        expr: nodefleet_diagnosis{code="check-failed"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: its health tool does not answer"
          remedy: "run `pulumi up` (it installs the host tools this nodefleet expects), then read the message (the health timer's journal: journalctl -u nodefleet-health.service)"
          status: nodefleet status --stack prod
          code: check-failed
      - alert: NodefleetServiceDown
        expr: nodefleet_diagnosis{code="service-down"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: its service is not active"
          remedy: systemctl start <unit>; journalctl -u <unit> says why it stopped
          status: nodefleet status --stack prod
          code: service-down
      - alert: NodefleetRpcEndpointDown
        expr: nodefleet_diagnosis{code="rpc-endpoint-down"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node's blockchain_rpc_endpoint does not answer"
          remedy: check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart (the failover timer moves to the next endpoint of rpcEndpoints that answers, every minute; add one if none does)
          status: nodefleet status --stack prod
          code: rpc-endpoint-down
      - alert: NodefleetMinerUnfunded
        expr: nodefleet_diagnosis{code="miner-unfunded"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node exits at start: its miner key's account cannot pay for its miner id registration"
          remedy: fund the miner key's account on the 0G chain (the node registers its miner id with a transaction at start, and exits until it can)
          status: nodefleet status --stack prod
          code: miner-unfunded
      - alert: NodefleetMinerRegistrationFailed
        expr: nodefleet_diagnosis{code="miner-registration-failed"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node's miner id registration found no miner id"
          remedy: set mineContractAddress (mine_contract_address) to the chain's PoRA mine contract and run `pulumi up` (the node reads its miner id from that contract's event)
          status: nodefleet status --stack prod
          code: miner-registration-failed
      - alert: NodefleetStorageStartFailed
        expr: nodefleet_diagnosis{code="storage-start-failed"} == 1
        for: 5m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node's last start failed"
          remedy: fix what its log names in config.toml (mineContractAddress, …) and run `pulumi up`; systemd starts it again within 5 s; journalctl -u <unit>
          status: nodefleet status --stack prod
          code: storage-start-failed
      - alert: NodefleetStorageRpcDown
        expr: nodefleet_diagnosis{code="storage-rpc-down"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node runs but zgs_getStatus does not answer"
          remedy: journalctl -u <unit>; restart it
          status: nodefleet status --stack prod
          code: storage-rpc-down
      - alert: NodefleetNotSynced
        expr: nodefleet_diagnosis{code="not-synced"} == 1
        for: 10m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node is 5 or more blocks behind the chain head (docs/spec.md §8: synced is fewer than 5)"
          remedy: wait while it catches up; if its height does not grow, the RPC endpoint is probably down (see rpc-endpoint-down)
          status: nodefleet status --stack prod
          code: not-synced
      - alert: NodefleetHeightNotIncreasing
        expr: nodefleet_diagnosis{code="height-not-increasing"} == 1
        for: 5m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node is behind and its log sync height does not grow"
          remedy: "the RPC endpoint is probably down: check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart"
          status: nodefleet status --stack prod
          code: height-not-increasing
      - alert: NodefleetStoragePeers0
        expr: nodefleet_diagnosis{code="storage-peers-0"} == 1
        for: 1h
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the storage node has no peers"
          remedy: set network_boot_nodes (networkBootNodes, with networkEnrAddress) and restart; a known issue, often ignorable
          status: nodefleet status --stack prod
          code: storage-peers-0
      - alert: NodefleetL1EndpointDown
        expr: nodefleet_diagnosis{code="l1-endpoint-down"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the sequencer cannot reach its L1 RPC"
          remedy: check it with eth_blockNumber; fix or replace it in l1RpcUrls (ETHEREUM_HOSTS in the node's env file) and run `pulumi up`
          status: nodefleet status --stack prod
          code: l1-endpoint-down
      - alert: NodefleetSequencerRpcDown
        expr: nodefleet_diagnosis{code="sequencer-rpc-down"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the sequencer's RPC (node_getL2Tips on 8080) does not answer"
          remedy: start <unit> if it is stopped; journalctl -u <unit> says why it does not answer (the RPC listens on port 8080)
          status: nodefleet status --stack prod
          code: sequencer-rpc-down
      - alert: NodefleetSiblingPathMissing
        expr: nodefleet_diagnosis{code="sibling-path-missing"} == 1
        for: 10m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the sequencer's archive has no sibling path for its proven block"
          remedy: "the archiver has not synced that block: wait, and check the L1 endpoints if it stays"
          status: nodefleet status --stack prod
          code: sibling-path-missing
      - alert: NodefleetNoPeerId
        expr: nodefleet_diagnosis{code="no-peer-id"} == 1
        for: 5m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the sequencer's P2P service has not started (no peerId in this boot's journal)"
          remedy: "the P2P service has not started: journalctl -u <unit>; port 40400 TCP and UDP must be open"
          status: nodefleet status --stack prod
          code: no-peer-id
      - alert: NodefleetNoExecutionClient
        expr: nodefleet_diagnosis{code="no-execution-client"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the validator has no execution client set up"
          remedy: run `pulumi up` (it sets the node up)
          status: nodefleet status --stack prod
          code: no-execution-client
      - alert: NodefleetExecutionRpcDown
        expr: nodefleet_diagnosis{code="execution-rpc-down"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the validator's execution client runs but its HTTP RPC does not answer"
          remedy: journalctl -u <unit>
          status: nodefleet status --stack prod
          code: execution-rpc-down
      - alert: NodefleetConsensusRpcDown
        expr: nodefleet_diagnosis{code="consensus-rpc-down"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the consensus daemon runs but its /status does not answer"
          remedy: journalctl -u <unit>
          status: nodefleet status --stack prod
          code: consensus-rpc-down
      - alert: NodefleetForkchoice38002
        expr: nodefleet_diagnosis{code="forkchoice-38002"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the consensus daemon's head is not on the execution client (-38002 Invalid forkchoice state, or the execution client answers SYNCING)"
          remedy: stop the consensus daemon, wait for the execution client to reach the chain head, run the height rollback script, start it again (`pulumi up` runs this remedy)
          status: nodefleet status --stack prod
          code: forkchoice-38002
      - alert: NodefleetJwtMismatch
        expr: nodefleet_diagnosis{code="jwt-mismatch"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: Engine API errors between the clients: their JWT secret files differ"
          remedy: use the same JWT file for both (`pulumi up` renders both units with one), then restart both
          status: nodefleet status --stack prod
          code: jwt-mismatch
      - alert: NodefleetEngineUnreachable
        expr: nodefleet_diagnosis{code="engine-unreachable"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the consensus daemon keeps waiting for the execution client's engine API"
          remedy: is the execution client running, on its engine port (<prefix>551), with the same JWT file? (jwt-mismatch tells the last apart)
          status: nodefleet status --stack prod
          code: engine-unreachable
      - alert: NodefleetMissingPrivValidatorState
        expr: nodefleet_diagnosis{code="missing-priv-validator-state"} == 1
        for: 0m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: data/priv_validator_state.json is missing in the consensus home: the consensus daemon does not start without it"
          remedy: create data/priv_validator_state.json in the consensus home with the content {} (`pulumi up` does, before it starts the consensus daemon)
          status: nodefleet status --stack prod
          code: missing-priv-validator-state
      - alert: NodefleetCatchingUp
        expr: nodefleet_diagnosis{code="catching-up"} == 1
        for: 10m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the consensus daemon is catching_up: it does not sign until it is caught up"
          remedy: wait; if it stays, check the execution client's height and peers
          status: nodefleet status --stack prod
          code: catching-up
      - alert: NodefleetKeyRunningTwice
        expr: nodefleet_diagnosis{code="key-running-twice"} == 1
        for: 0m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: more than one consensus daemon runs with this validator key on the host"
          remedy: "stop all but the service's own one now: one key must never sign twice"
          status: nodefleet status --stack prod
          code: key-running-twice
      - alert: NodefleetRethNoPeers
        expr: nodefleet_diagnosis{code="reth-no-peers"} == 1
        for: 2h
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: reth has no peers"
          remedy: "expected at first (reth cannot peer with geth nodes): wait; make sure <p2p port> is open on TCP and UDP"
          status: nodefleet status --stack prod
          code: reth-no-peers
      - alert: NodefleetExecutionBehind
        expr: nodefleet_diagnosis{code="execution-behind"} == 1
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the execution client is 5 or more blocks behind referenceRpcUrl"
          remedy: wait while it syncs; check its peers
          status: nodefleet status --stack prod
          code: execution-behind
      - alert: NodefleetReferenceDown
        expr: nodefleet_diagnosis{code="reference-down"} == 1
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: referenceRpcUrl does not answer: the validator's lag is unknown"
          remedy: "check referenceRpcUrl: without it the lag is unknown"
          status: nodefleet status --stack prod
          code: reference-down
      - alert: NodefleetUpgradePending
        expr: nodefleet_diagnosis{code="upgrade-pending"} == 1
        for: 0m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: an upgrade to a new release is scheduled at a height: the node stops there and starts it (the detail says the blocks left)"
          remedy: nothing to do while it is ready; keep the node up through the height. To cancel it, remove `upgrade` from the node's config and run `pulumi up` before the height
          status: nodefleet status --stack prod
          code: upgrade-pending
      - alert: NodefleetUpgradeNotReady
        expr: nodefleet_diagnosis{code="upgrade-not-ready"} == 1
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: an upgrade at a height is scheduled but the node is not ready for it: its release is not staged or its watcher does not run"
          remedy: run `pulumi up` (it stages the release and arms the watcher); then `systemctl status nodefleet-upgrade-<node>` on the host
          status: nodefleet status --stack prod
          code: upgrade-not-ready
      - alert: NodefleetUpgradeOverdue
        expr: nodefleet_diagnosis{code="upgrade-overdue"} == 1
        for: 0m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the chain passed the node's upgrade height and the node did not move to the new release"
          remedy: stop the consensus daemon, roll its state back to the upgrade height (`0gchaind rollback`), then `pulumi up` with the new release named in the node's release; nodefleet starts neither release on blocks the old one made past the height
          status: nodefleet status --stack prod
          code: upgrade-overdue
      - alert: NodefleetHeightStalled
        expr: nodefleet_node_service_up{role=~"storage|validator"} == 1 and on (instance, node) (nodefleet_node_height - nodefleet_node_height offset 10m) <= 0
        for: 5m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: its height has not grown in 10 minutes"
          remedy: "storage: the RPC endpoint is probably down: check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart; validator: the chain or the node stopped: its consensus daemon's journal and peers"
          status: nodefleet status --stack prod
  - name: nodefleet-switch
    rules:
      - alert: NodefleetSwitchIncomplete
        expr: nodefleet_diagnosis{code="switch-incomplete"} == 1
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: a geth -> reth switch stopped part-way and nothing of it runs"
          remedy: "read the switch's report (`nodefleet status`); `pulumi up` resumes it, or set switch: rollback. An import that broke (block number X does not match parent block number Y) is re-trimmed from Y+1 and re-imported by the next `up`; a mismatched block state root is reported with the block number and both roots, never skipped"
          status: nodefleet status --stack prod
          code: switch-incomplete
      - alert: NodefleetSwitchImportStalled
        expr: (nodefleet_switch_job_done_blocks - nodefleet_switch_job_done_blocks offset 15m) <= 0
        for: 5m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: the switch's running export or import has made no progress in 15 minutes"
          remedy: "its journal (journalctl -u <job unit>); a killed or broken import is resumed by the next `pulumi up` from the last block every stage of reth finished (block number X does not match parent block number Y: re-trim from Y+1, re-import)"
          status: nodefleet status --stack prod
  - name: nodefleet-hosts
    rules:
      - alert: NodefleetHealthStale
        expr: time() - nodefleet_health_last_run_timestamp_seconds > 150
        for: 1m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.host }}: its health timer has written no metrics for more than 150 s: every nodefleet_* value of the host is old"
          remedy: systemctl status nodefleet-health.timer nodefleet-health.service; `pulumi up` installs them again
          status: nodefleet status --stack prod
      - alert: NodefleetHostDown
        expr: up{job="node"} == 0
        for: 2m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.host }}: node_exporter does not answer: the host is down, unreachable, or its exporter stopped (what nodefleet status calls host-unreachable)"
          remedy: check that the host is up and reachable from the monitoring host; systemctl status prometheus-node-exporter
          status: nodefleet status --stack prod
      - alert: NodefleetMetricsDown
        expr: up{job!="node"} == 0
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.node }} on {{ $labels.host }}: a node's own metrics endpoint ({{ $labels.job }}) does not answer"
          remedy: is the node's service running (nodefleet status)? Its metrics port is open to the monitoring host only
          status: nodefleet status --stack prod
      - alert: NodefleetDiskAlmostFull
        expr: node_filesystem_avail_bytes{mountpoint=~"/|/data",fstype!~"tmpfs|ramfs|squashfs|overlay"} / node_filesystem_size_bytes < 0.10
        for: 5m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.host }}: {{ $labels.mountpoint }} has less than 10% free"
          remedy: free space or grow the volume; a geth -> reth switch needs about twice the geth datadir free (docs/spec.md §8)
          status: nodefleet status --stack prod
      - alert: NodefleetDiskFillsIn24h
        expr: predict_linear(node_filesystem_avail_bytes{mountpoint=~"/|/data",fstype!~"tmpfs|ramfs|squashfs|overlay"}[6h], 86400) < 0
        for: 30m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.host }}: {{ $labels.mountpoint }} fills within 24 h at its rate of the last 6 h"
          remedy: find what grows (a switch's export and import take about twice the geth datadir, docs/spec.md §8); free space or grow the volume before it is full
          status: nodefleet status --stack prod
      - alert: NodefleetMemoryLow
        expr: node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < 0.05
        for: 10m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.host }}: less than 5% of its memory is available"
          remedy: see what uses it (the node services' MemoryCurrent); the roles' memory targets are in docs/roles.md
          status: nodefleet status --stack prod
      - alert: NodefleetUnitFailed
        expr: node_systemd_unit_state{state="failed"} == 1
        for: 1m
        labels:
          severity: error
        annotations:
          summary: "{{ $labels.host }}: the unit {{ $labels.name }} has failed"
          remedy: journalctl -u {{ $labels.name }} says why; a node service that failed is restarted by `systemctl restart`, a nodefleet step's unit by the next `pulumi up`
          status: nodefleet status --stack prod
      - alert: NodefleetClockNotSynchronised
        expr: max_over_time(node_timex_sync_status[5m]) == 0
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.host }}: its clock is not synchronised (chrony)"
          remedy: chronyc tracking; chronyc sources (the hosts run chrony, installed by nodefleet's bootstrap); a validator with a wrong clock misses its rounds
          status: nodefleet status --stack prod
NODEFLEET_EOF
cat > "$stage/alertmanager.yml" <<NODEFLEET_EOF
$nodefleet_secret_alertmanager
NODEFLEET_EOF
umask 022
if ! out="$(promtool check config "$stage/prometheus.yml" 2>&1)"; then
	printf '%s\n' "$out" >&2
	echo "monitoring h-storage: promtool refused the rendered prometheus.yml or its rules; nothing was changed" >&2
	exit 1
fi
# amtool's output may quote the file, which holds the receivers' secrets: only its verdict is told.
if ! amtool check-config "$stage/alertmanager.yml" >/dev/null 2>&1; then
	echo "monitoring h-storage: amtool check-config refused the rendered alertmanager.yml (its output is not shown: the file holds the receivers' secrets); nothing was changed" >&2
	exit 1
fi
put "$config/prometheus.yml" 0644 root:root < "$stage/prometheus.yml"
put "$config/nodefleet.rules.yml" 0644 root:root < "$stage/nodefleet.rules.yml"
put "$config/alertmanager.yml" 0640 root:prometheus < "$stage/alertmanager.yml"
install -d -m 0755 "$config/targets"

# Recorded: the removal disables a service only if nodefleet enabled it.
for svc in prometheus.service prometheus-alertmanager.service; do
	systemctl is-enabled --quiet "$svc" || : > "/etc/nodefleet/.enabled-$svc"
done
systemctl enable prometheus.service prometheus-alertmanager.service >/dev/null 2>&1
record_unit prometheus.service
record_unit prometheus-alertmanager.service
# A service nodefleet's flags reach only by a restart; a config only by a reload (SIGHUP).
for svc in prometheus.service prometheus-alertmanager.service; do
	case "$svc" in
	prometheus.service) dropin=/etc/systemd/system/prometheus.service.d/nodefleet.conf files="$config/prometheus.yml $config/nodefleet.rules.yml" ;;
	*) dropin=/etc/systemd/system/prometheus-alertmanager.service.d/nodefleet.conf files="$config/alertmanager.yml" ;;
	esac
	how=""
	case "$changed" in *"$dropin"*) how=restart ;; esac
	if [ -z "$how" ]; then
		for f in $files; do case "$changed" in *"$f"*) how=reload ;; esac; done
	fi
	if ! systemctl is-active --quiet "$svc"; then
		systemctl start "$svc"
		echo "monitoring h-storage: started $svc"
	elif [ -n "$how" ]; then
		systemctl "$how" "$svc"
		echo "monitoring h-storage: ${how}ed $svc"
	fi
done
echo "monitoring h-storage: Prometheus on 127.0.0.1:9090, Alertmanager on 127.0.0.1:9093"
