#!/bin/sh
# nodefleet firewall removal for host h-validator (pulumi destroy): leaves the host's
# other nftables tables alone.
set -eu
systemctl stop nodefleet-firewall-revert.timer >/dev/null 2>&1 || true
systemctl disable --now nodefleet-firewall.service >/dev/null 2>&1 || true
nft delete table inet nodefleet 2>/dev/null || true
rm -f /etc/systemd/system/nodefleet-firewall.service
rm -rf /etc/nodefleet/firewall /var/lib/nodefleet/drift/firewall
systemctl daemon-reload
echo "firewall: removed"
