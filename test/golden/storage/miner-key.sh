#!/bin/sh
# nodefleet: the miner key of 0G storage node storage-1, into a root-only environment file that
# systemd reads for zgs-storage-1.service, and its RPC endpoints (one may carry an API key) into a
# root-only file that zgs-endpoint reads. This script arrives as a secret on stdin; it never prints
# the key or an endpoint. Restarts the node only when the key changed and the node runs.
set -eu
umask 077
install -d -m 0700 /etc/nodefleet/storage-1
changed=""

# put PATH MODE OWNER < content: replace PATH only when the content differs.
put() {
	tmp="$1.nodefleet-new"
	cat > "$tmp"
	chmod "$2" "$tmp"
	chown "$3" "$tmp"
	if cmp -s "$tmp" "$1"; then
		rm -f "$tmp"
	else
		mv "$tmp" "$1"
		changed="$changed $1"
	fi
}

put /etc/nodefleet/storage-1/zgs.env 0600 root:root <<'NODEFLEET_EOF'
ZGS_NODE__MINER_KEY=abababababababababababababababababababababababababababababababab
NODEFLEET_EOF
key_changed="$changed"
put /etc/nodefleet/storage-1/urls.json 0600 root:root <<'NODEFLEET_EOF'
{
  "rpcEndpoints": [
    "https://evmrpc-testnet.0g.ai",
    "https://rpc.example.org/v2/KEYabc123def456ghi789"
  ]
}
NODEFLEET_EOF
if [ -z "$key_changed" ]; then
	echo "storage storage-1: miner key unchanged"
else
	echo "storage storage-1: miner key written to /etc/nodefleet/storage-1/zgs.env (mode 0600)"
	if systemctl is-active --quiet zgs-storage-1.service; then
		systemctl restart zgs-storage-1.service
		echo "storage storage-1: restarted zgs-storage-1.service for the new key"
	fi
fi
