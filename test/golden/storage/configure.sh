#!/bin/sh
# nodefleet: configure 0G storage node storage-1 on host h-storage: its files, the snapshot guard
# (docs/spec.md §2.2), the RPC endpoint choice (docs/spec.md §7), then start it, or restart it when something it
# reads changed. Safe to run again: unchanged files are left alone and nothing restarts.
set -eu

# journal_tail UNIT LINES: the unit's last journal lines, each URL cut to scheme://host[:port]
# (a node logs the endpoints it could not reach whole: a hosted endpoint's path, query or user part
# may hold an API key, and these lines reach Pulumi's output and state).
journal_tail() {
	journalctl -u "$1" -n "$2" --no-pager 2>&1 | sed -E -e 's|(://)[^/?#[:space:]@"<>]*@|\1|g' -e 's|(://[^/?#[:space:]"<>]+)[/?#][^[:space:]"<>]*|\1/…|g'
}
node=storage-1
service=zgs-storage-1.service
data=/data/storage-1
db=/data/storage-1/db
operator=nodefleet
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
record=/var/lib/nodefleet/drift/storage-1.configure
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

if [ ! -x /opt/nodefleet/releases/zgs-5a5a5a5a5a5a5a5a5a5a5a5a/zgs_node ]; then
	echo "storage $node: /opt/nodefleet/releases/zgs-5a5a5a5a5a5a5a5a5a5a5a5a/zgs_node is missing: the release was not installed" >&2
	exit 1
fi

# docs/spec.md §2.2: snapshots are never used. A flow_db or data_db this node did not create (no marker,
# or another node's) is refused before the service can start on it.
marker="$db/.nodefleet-node"
if [ -f "$marker" ]; then
	if [ "$(cat "$marker")" != "$node" ]; then
		echo "storage $node: refusing to start: $db was created by storage node '$(cat "$marker")', not by $node (a node must sync its own data; another operator's data_db mines for that operator). Move $db away to let $node sync from scratch." >&2
		exit 1
	fi
elif [ -e "$db/flow_db" ] || [ -e "$db/data_db" ]; then
	echo "storage $node: refusing to start: $db holds flow_db/data_db that $node did not create (a snapshot?). Snapshots are not used for storage nodes: a flow_db-only snapshot looks synced by height but lacks the data PoRA needs, and another operator's data_db mines for that operator. Move $db away to let $node sync from scratch." >&2
	exit 1
else
	install -d -o "$operator" -g "$operator" -m 0750 "$db"
	printf '%s\n' "$node" > "$marker"
	chown "$operator:$operator" "$marker"
fi

# The failover timer must not rewrite config.toml while this script does (it starts again below).
systemctl stop zgs-storage-1-failover.timer zgs-storage-1-failover.service >/dev/null 2>&1 || true

install -d -o "$operator" -g "$operator" -m 0750 "$data/run" "$data/log" "$data/network"
install -d -m 0755 /etc/nodefleet /usr/local/lib/nodefleet
install -d -m 0700 /etc/nodefleet/storage-1

put_tool /usr/local/lib/nodefleet/nodefleet_rpc.py 0644 root:root dfbd3424c12748dd5512adf6c44dae190fbf53028a8001971bdea7e5373a008c
put_tool /usr/local/lib/nodefleet/nodefleet_units.py 0644 root:root 863ea2a43557e7e63f4e242d26d1ee80fd5fb4bd2983dee99c4c91182183ab98
put_tool /usr/local/lib/nodefleet/nodefleet_faults.py 0644 root:root a20fc3ff0ff8143ed1cf62137a3654c97ec6981dad5c2b8e8757bdbad57fa453
put_tool /usr/local/lib/nodefleet/faults.json 0644 root:root 34ee96112e36b1c0c58c54f8f89d282cdfc69a777cf37521b7179216cba0f50a
put_tool /usr/local/lib/nodefleet/nodefleet_health.py 0644 root:root a0a2d7cb99f58736bdaf6c3476fb4479d3ad316843fa6785e9317e8582607825
put_tool /usr/local/lib/nodefleet/zgs-endpoint.py 0755 root:root ce29895b6d2c61945990c5c407f0d9a409e536c577ff56593a218e05ec271134
put_tool /usr/local/lib/nodefleet/zgs-health.py 0755 root:root 69a5c9e7fce4c78f2f678526ab90a959ed0d702d02d90b4aca78f376a3f4fb05
put_tool /usr/local/lib/nodefleet/zgs-stop.py 0755 root:root 6840b3b927347223cee0a511864de8175e44a7b8003ae651be2148d1383818a8
# nodefleet's tools are not read by the node: a new version of one restarts nothing.
changed=""
put /data/storage-1/run/config.toml.nodefleet 0644 root:root <<'NODEFLEET_EOF'
# 0G storage node storage-1: config.toml rendered by nodefleet from the fleet config; edits are
# replaced. blockchain_rpc_endpoint is filled in on the host by zgs-endpoint with the first
# candidate that answers eth_blockNumber (RPC failover, docs/spec.md §7), and miner_key with the key from a
# root-only file: this template holds neither, the node's copy (0600, its user's) both.
network_dir = "/data/storage-1/network"
network_listen_address = "0.0.0.0"
network_libp2p_port = 1234
network_discovery_port = 1234
network_enr_address = "198.51.100.4"
network_enr_tcp_port = 1234
network_enr_udp_port = 1234
network_boot_nodes = ["/ip4/203.0.113.10/udp/1234/p2p/16Uiu2HAmLhLvBoYaoZfaMUKuibM6ac163GwKY74c5kiSLg5KvLpY"]
blockchain_rpc_endpoint = "@NODEFLEET_RPC_ENDPOINT@"
log_contract_address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
mine_contract_address = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
miner_key = "@NODEFLEET_MINER_KEY@"
log_sync_start_block_number = 0
# The node's default: it syncs the log up to the chain head less this many blocks.
confirmation_block_count = 3
db_dir = "/data/storage-1/db"
log_config_file = "/data/storage-1/run/log_config"
log_directory = "/data/storage-1/log"

[rpc]
listen_address = "127.0.0.1:5678"
listen_address_admin = "127.0.0.1:5679"
# The node's default for gRPC is 0.0.0.0:50051: local only, like the other two.
listen_address_grpc = "127.0.0.1:50051"
NODEFLEET_EOF
put /data/storage-1/run/log_config 0644 root:root <<'NODEFLEET_EOF'
info
NODEFLEET_EOF
put /etc/nodefleet/storage-1/storage.json 0644 root:root <<'NODEFLEET_EOF'
{
  "template": "/data/storage-1/run/config.toml.nodefleet",
  "config": "/data/storage-1/run/config.toml",
  "urls": "/etc/nodefleet/storage-1/urls.json",
  "minerKey": "/etc/nodefleet/storage-1/miner.key",
  "service": "zgs-storage-1.service",
  "driftRecord": "/var/lib/nodefleet/drift/storage-1.configure+endpoint"
}
NODEFLEET_EOF
put /etc/systemd/system/zgs-storage-1.service 0644 root:root <<'NODEFLEET_EOF'
# 0G storage node storage-1, rendered by nodefleet.
[Unit]
Description=0G storage node storage-1 (zgs_node)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nodefleet
Group=nodefleet
WorkingDirectory=/data/storage-1/run
# The miner key is in config.toml (0600, this user's): zgs_node v1.1.0 reads it from there alone.
ExecStart=/opt/nodefleet/releases/zgs-5a5a5a5a5a5a5a5a5a5a5a5a/zgs_node --config /data/storage-1/run/config.toml
Restart=on-failure
RestartSec=5
# zgs_node v1.1.0 waits 15 s after its shutdown on a task that never ends, then exits with it cut
# off anyway (docs/roles.md, "Its stop"): the stop tool sends SIGTERM and, 5 s later, ends it with
# SIGUSR2, which it does not handle. That signal is the tool's alone, so it counts as a clean stop;
# a crash or the kernel's SIGKILL still does not. "-": without the tool, systemd's own SIGTERM.
ExecStop=-/usr/bin/python3 -S /usr/local/lib/nodefleet/zgs-stop.py --grace 5
SuccessExitStatus=SIGUSR2
LimitNOFILE=65535
# Below the host's other nodes and tools: once synced, upstream's pad task keeps a core busy without
# pause (docs/roles.md, "One core and the disk stay busy"); with that core to spare it changes nothing.
Nice=10

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
put /etc/systemd/system/zgs-storage-1-failover.service 0644 root:root <<'NODEFLEET_EOF'
# RPC failover for 0G storage node storage-1 (docs/spec.md §7: "local block does not increase"),
# rendered by nodefleet: keeps blockchain_rpc_endpoint on the first candidate that answers.
[Unit]
Description=RPC endpoint failover for 0G storage node storage-1
After=network-online.target

[Service]
Type=oneshot
# 10: it rewrote config.toml (and restarted the node if it ran): what it is for, not a failure.
SuccessExitStatus=10
ExecStart=/usr/bin/python3 /usr/local/lib/nodefleet/zgs-endpoint.py storage-1 --restart
NODEFLEET_EOF
put /etc/systemd/system/zgs-storage-1-failover.timer 0644 root:root <<'NODEFLEET_EOF'
# Runs the RPC failover check of 0G storage node storage-1 every minute. Rendered by nodefleet.
[Unit]
Description=RPC endpoint failover check for 0G storage node storage-1

[Timer]
OnBootSec=1min
OnUnitActiveSec=1min
AccuracySec=5s

[Install]
WantedBy=timers.target
NODEFLEET_EOF
systemctl daemon-reload

# The endpoint: the first candidate answering eth_blockNumber (exit 10: config.toml rewritten).
rc=0
python3 /usr/local/lib/nodefleet/zgs-endpoint.py "$node" || rc=$?
case "$rc" in
0) ;;
10) changed="$changed config.toml" ;;
2) echo "storage $node: warning: no RPC endpoint answers now; keeping the current one" >&2 ;;
*) exit "$rc" ;;
esac
# It holds the chosen endpoint, which may carry an API key: the node's user's alone.
chown "$operator:$operator" /data/storage-1/run/config.toml
chmod 0600 /data/storage-1/run/config.toml

systemctl enable "$service" zgs-storage-1-failover.timer >/dev/null 2>&1
record_unit "$service"
record_unit zgs-storage-1-failover.timer
systemctl start zgs-storage-1-failover.timer
if ! systemctl is-active --quiet "$service"; then
	systemctl start "$service"
	echo "storage $node: started $service"
elif [ -n "$changed" ]; then
	systemctl restart "$service"
	echo "storage $node: restarted $service (changed:$changed)"
else
	echo "storage $node: $service unchanged and running"
fi
sleep 2
# Not running after its (re)start (a release that exits at start): warned, not failed. The health
# step next fails for it (or, gated and past its first deploy, the node's gate judges it): a step
# that fails records nothing in Pulumi's state, so this one, having changed the node, would not run
# again when the change is set back, and the node would stay on it.
if ! systemctl is-active --quiet "$service"; then
	journal_tail "$service" 20 >&2 || true
	echo "storage $node: warning: $service is not running: its health step judges it" >&2
fi
