#!/bin/sh
# nodefleet: remove Aztec sequencer sequencer-1 from host h-sequencer (pulumi destroy): stop and remove
# its unit, its key files and config. Its data under /data/sequencer-1 (node data, registration
# record) is kept.
set -eu
systemctl disable --now aztec-sequencer-1.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/aztec-sequencer-1.service
rm -rf /etc/nodefleet/sequencer-1
rm -rf /var/lib/nodefleet/drift/sequencer-1.*
# Its rollout gate's first-deploy marker, tools and kept files (a copy of config.toml holds a key).
rm -rf /var/lib/nodefleet/gate/sequencer-1 /var/lib/nodefleet/gate/sequencer-1.*
systemctl daemon-reload
echo "sequencer sequencer-1: removed aztec-sequencer-1.service; data kept in /data/sequencer-1"
