#!/bin/sh
# nodefleet: remove 0G storage node storage-1 from host h-storage (pulumi destroy): stop and remove
# its units, scripts' config and key, and config.toml (it holds the key). Its chain data under
# /data/storage-1 is kept.
set -eu
systemctl disable --now zgs-storage-1-failover.timer zgs-storage-1.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/zgs-storage-1.service /etc/systemd/system/zgs-storage-1-failover.service /etc/systemd/system/zgs-storage-1-failover.timer
rm -rf /etc/nodefleet/storage-1
rm -f /data/storage-1/run/config.toml /data/storage-1/run/config.toml.new
rm -rf /var/lib/nodefleet/drift/storage-1.*
# Its rollout gate's first-deploy marker, tools and kept files (a copy of config.toml holds a key).
rm -rf /var/lib/nodefleet/gate/storage-1 /var/lib/nodefleet/gate/storage-1.*
systemctl daemon-reload
echo "storage storage-1: removed zgs-storage-1.service; data kept in /data/storage-1"
