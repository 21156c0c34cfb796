#!/bin/sh
# nodefleet: remove the monitoring agent from host h-validator (pulumi destroy, or the fleet's
# monitoring section removed): the health timer and its files, and node_exporter's drop-in; the
# package is purged when nodefleet installed it, the service disabled when nodefleet enabled it, and
# otherwise restarted without nodefleet's flags (as it ran before).
set -eu
export DEBIAN_FRONTEND=noninteractive
systemctl disable --now nodefleet-health.timer nodefleet-health.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/nodefleet-health.timer /etc/systemd/system/nodefleet-health.service /etc/nodefleet/health-checks.json /var/lib/prometheus/node-exporter/nodefleet.prom /etc/systemd/system/prometheus-node-exporter.service.d/nodefleet.conf
rmdir /etc/systemd/system/prometheus-node-exporter.service.d 2>/dev/null || true
systemctl daemon-reload
if [ -f /etc/nodefleet/.installed-prometheus-node-exporter ]; then
	apt-get purge -y -qq prometheus-node-exporter >/dev/null 2>&1 || true
elif [ -f /etc/nodefleet/.enabled-prometheus-node-exporter.service ]; then
	systemctl disable --now prometheus-node-exporter.service >/dev/null 2>&1 || true
elif systemctl is-active --quiet prometheus-node-exporter.service; then
	systemctl restart prometheus-node-exporter.service
fi
rm -f /etc/nodefleet/.installed-prometheus-node-exporter /etc/nodefleet/.enabled-prometheus-node-exporter.service
rm -rf /var/lib/nodefleet/drift/monitoring.agent
echo "monitoring h-validator: agent removed"
