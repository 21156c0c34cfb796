#!/bin/sh
# nodefleet: the monitoring agent of host h-validator: Debian's prometheus-node-exporter with
# nodefleet's drop-in (its flags: port, nodefleet's units, the textfile collector), and the health
# timer that writes every node's diagnosis rows as metrics for it. The exporter's port is open to the
# monitoring host alone (the host firewall). Safe to run again: unchanged files are left alone.
set -eu
export DEBIAN_FRONTEND=noninteractive
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
record=/var/lib/nodefleet/drift/monitoring.agent
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

# The drop-in goes in first: the package starts its service on install, with nodefleet's flags then.
install -d -m 0755 /etc/systemd/system/prometheus-node-exporter.service.d /usr/local/lib/nodefleet /usr/local/lib/nodefleet/zgvalidator /etc/nodefleet
put /etc/systemd/system/prometheus-node-exporter.service.d/nodefleet.conf 0644 root:root <<'NODEFLEET_EOF'
# node_exporter as nodefleet runs it on host h-validator: every address, its port open to the
# monitoring host alone (the host firewall), with the states of nodefleet's units and the health
# timer's metrics (textfile collector). A drop-in for Debian's prometheus-node-exporter.service.
[Service]
ExecStart=
ExecStart=/usr/bin/prometheus-node-exporter --web.listen-address=0.0.0.0:9100 --collector.systemd "--collector.systemd.unit-include=(zgs|aztec|0gchaind|geth|reth|nodefleet)-.+[.](service|timer)" --collector.textfile.directory=/var/lib/prometheus/node-exporter
NODEFLEET_EOF
systemctl daemon-reload
if ! dpkg-query -W -f='${Status}' prometheus-node-exporter 2>/dev/null | grep -q 'install ok installed'; then
	echo "monitoring h-validator: installing prometheus-node-exporter"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends prometheus-node-exporter >/dev/null
	# Recorded: the removal purges the package only if nodefleet installed it.
	: > /etc/nodefleet/.installed-prometheus-node-exporter
fi
install -d -m 0755 /var/lib/prometheus/node-exporter
put_tool /usr/local/lib/nodefleet/nodefleet_checks.py 0644 root:root 79f885f77a521d1a1a95023c9992c6554221e68bd838bfc7c6c188dc9008d3cc
put_tool /usr/local/lib/nodefleet/nodefleet_faults.py 0644 root:root a20fc3ff0ff8143ed1cf62137a3654c97ec6981dad5c2b8e8757bdbad57fa453
put_tool /usr/local/lib/nodefleet/faults.json 0644 root:root 34ee96112e36b1c0c58c54f8f89d282cdfc69a777cf37521b7179216cba0f50a
put_tool /usr/local/lib/nodefleet/nodefleet_health.py 0644 root:root a0a2d7cb99f58736bdaf6c3476fb4479d3ad316843fa6785e9317e8582607825
put_tool /usr/local/lib/nodefleet/nodefleet_metrics.py 0644 root:root 63f07941750e86e1fc461e86d093f8f411a9f14fb5dfade0ef56dd78402d8414
put_tool /usr/local/lib/nodefleet/zgvalidator/steps.json 0644 root:root a7230d7652f2939e97e25101acf7ccf8b2224ec2560022e28a5c500a2ba2c57c
put /etc/nodefleet/health-checks.json 0644 root:root <<'NODEFLEET_EOF'
{
  "host": "h-validator",
  "timeout": 24,
  "checks": [
    {
      "node": "validator-1",
      "role": "validator",
      "argv": [
        "python3",
        "-S",
        "/usr/local/lib/nodefleet/zg-validator.py",
        "/etc/nodefleet/validator-1/validator.json",
        "status"
      ]
    }
  ]
}
NODEFLEET_EOF
put /etc/systemd/system/nodefleet-health.service 0644 root:root <<'NODEFLEET_EOF'
# The health timer's run on host h-validator: every node's health command (the one `nodefleet status`
# runs), their rows written as node_exporter textfile metrics. Rendered by nodefleet.
[Unit]
Description=nodefleet health metrics of host h-validator
After=network-online.target

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 -S /usr/local/lib/nodefleet/nodefleet_metrics.py collect /etc/nodefleet/health-checks.json /var/lib/prometheus/node-exporter/nodefleet.prom
TimeoutStartSec=54
Nice=10
NODEFLEET_EOF
put /etc/systemd/system/nodefleet-health.timer 0644 root:root <<'NODEFLEET_EOF'
# Runs nodefleet's health checks of host h-validator every 30 s. Rendered by nodefleet.
[Unit]
Description=nodefleet health metrics of host h-validator, every 30 s

[Timer]
OnBootSec=30s
OnUnitActiveSec=30s
AccuracySec=1s

[Install]
WantedBy=timers.target
NODEFLEET_EOF
systemctl daemon-reload

# Recorded: the removal disables the exporter only if nodefleet enabled it.
systemctl is-enabled --quiet prometheus-node-exporter.service || : > /etc/nodefleet/.enabled-prometheus-node-exporter.service
systemctl enable prometheus-node-exporter.service nodefleet-health.timer >/dev/null 2>&1
record_unit prometheus-node-exporter.service
record_unit nodefleet-health.timer
case "$changed" in
*/etc/systemd/system/prometheus-node-exporter.service.d/nodefleet.conf*)
	systemctl restart prometheus-node-exporter.service
	echo "monitoring h-validator: node_exporter (re)started with nodefleet's flags"
	;;
*) systemctl start prometheus-node-exporter.service ;;
esac
systemctl start nodefleet-health.timer
echo "monitoring h-validator: node_exporter on port 9100 and the health timer, every 30 s"
