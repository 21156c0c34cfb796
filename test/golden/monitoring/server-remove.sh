#!/bin/sh
# nodefleet: remove the monitoring stack from host h-storage (pulumi destroy, or the fleet's
# monitoring section removed): Prometheus and Alertmanager stopped, nodefleet's drop-ins and config
# removed; the packages nodefleet installed are removed (not purged: their data under
# /var/lib/prometheus is kept); a service the host ran before nodefleet runs again as it did.
set -eu
export DEBIAN_FRONTEND=noninteractive
systemctl stop prometheus.service prometheus-alertmanager.service >/dev/null 2>&1 || true
for svc in prometheus.service prometheus-alertmanager.service; do
	if [ -f "/etc/nodefleet/.enabled-$svc" ]; then
		systemctl disable "$svc" >/dev/null 2>&1 || true
		rm -f "/etc/nodefleet/.enabled-$svc"
	fi
done
rm -f /etc/systemd/system/prometheus.service.d/nodefleet.conf /etc/systemd/system/prometheus-alertmanager.service.d/nodefleet.conf
rmdir /etc/systemd/system/prometheus.service.d /etc/systemd/system/prometheus-alertmanager.service.d 2>/dev/null || true
rm -rf /etc/prometheus/nodefleet
systemctl daemon-reload
for pkg in prometheus prometheus-alertmanager ; do
	if [ -f "/etc/nodefleet/.installed-$pkg" ]; then
		apt-get remove -y -qq "$pkg" >/dev/null 2>&1 || true
		rm -f "/etc/nodefleet/.installed-$pkg"
	fi
done
for svc in prometheus.service prometheus-alertmanager.service; do
	if systemctl is-enabled --quiet "$svc" 2>/dev/null; then systemctl start "$svc" >/dev/null 2>&1 || true; fi
done
rm -rf /var/lib/nodefleet/drift/monitoring.server /var/lib/nodefleet/drift/monitoring.targets
echo "monitoring h-storage: Prometheus and Alertmanager removed; their data is kept under /var/lib/prometheus"
