#!/bin/sh
# nodefleet: the miner key of 0G storage node storage-1, into a root-only environment file that
# systemd reads for zgs-storage-1.service. This script arrives as a secret on stdin; it never prints
# the key. Restarts the node only when the key changed and the node runs.
set -eu
umask 077
install -d -m 0700 /etc/nodefleet/storage-1
tmp=/etc/nodefleet/storage-1/zgs.env.nodefleet-new
cat > "$tmp" <<'NODEFLEET_EOF'
ZGS_NODE__MINER_KEY=abababababababababababababababababababababababababababababababab
NODEFLEET_EOF
if cmp -s "$tmp" /etc/nodefleet/storage-1/zgs.env; then
	rm -f "$tmp"
	echo "storage storage-1: miner key unchanged"
else
	mv "$tmp" /etc/nodefleet/storage-1/zgs.env
	echo "storage storage-1: miner key written to /etc/nodefleet/storage-1/zgs.env (mode 0600)"
	if systemctl is-active --quiet zgs-storage-1.service; then
		systemctl restart zgs-storage-1.service
		echo "storage storage-1: restarted zgs-storage-1.service for the new key"
	fi
fi
