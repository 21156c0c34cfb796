#!/bin/sh
# nodefleet: remove 0G validator validator-1 from host h-validator (pulumi destroy): stop 0gchaind
# first, then the execution client and any switch job, and remove their units and the staged
# config. Chain data, the consensus home (with its key) and backups under /data/validator-1 are kept.
set -eu
systemctl disable --now 0gchaind-validator-1.service >/dev/null 2>&1 || true
for unit in geth-validator-1.service reth-validator-1.service nodefleet-export-validator-1 nodefleet-import-validator-1 nodefleet-rethcheck-validator-1 nodefleet-upgrade-validator-1.service; do
	systemctl disable --now "$unit" >/dev/null 2>&1 || true
	systemctl reset-failed "$unit" >/dev/null 2>&1 || true
	rm -f /etc/systemd/system/"$unit"
done
rm -f /etc/systemd/system/0gchaind-validator-1.service
rm -rf /etc/nodefleet/validator-1
rm -rf /var/lib/nodefleet/drift/validator-1.*
# Its rollout gate's first-deploy marker, tools and kept files (a copy of config.toml holds a key).
rm -rf /var/lib/nodefleet/gate/validator-1 /var/lib/nodefleet/gate/validator-1.*
systemctl daemon-reload
echo "validator validator-1: removed its units; data kept in /data/validator-1"
