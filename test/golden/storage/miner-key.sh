#!/bin/sh
nodefleet_secret_key=abababababababababababababababababababababababababababababababab
nodefleet_secret_urls='{
  "rpcEndpoints": [
    "https://evmrpc-testnet.0g.ai",
    "https://rpc.example.org/v2/KEYabc123def456ghi789"
  ]
}'
# nodefleet: the miner key of 0G storage node storage-1 into a root-only file, and its RPC
# endpoints (one may carry an API key) into another, both read by zgs-endpoint, which renders the
# node's config.toml (0600, the node's user's) with them: zgs_node v1.1.0 reads miner_key from its
# config file alone (not from ZGS_NODE__MINER_KEY, not safely from its command line). The key and
# the endpoints are not in this file: they arrive as a secret on stdin, which sets them
# (nodefleet_secret_*) and then runs it; it never prints the key or an endpoint. When the key
# changed on a node already configured, config.toml is rendered again and a running node restarted.
set -eu
umask 077
install -d -m 0700 /etc/nodefleet/storage-1
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
record=/var/lib/nodefleet/drift/storage-1.key
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

put /etc/nodefleet/storage-1/miner.key 0600 root:root <<NODEFLEET_EOF
$nodefleet_secret_key
NODEFLEET_EOF
key_changed="$changed"
put /etc/nodefleet/storage-1/urls.json 0600 root:root <<NODEFLEET_EOF
$nodefleet_secret_urls
NODEFLEET_EOF
# Earlier nodefleet versions kept the key in an environment file the node never read: no stale copy.
rm -f /etc/nodefleet/storage-1/zgs.env
if [ -z "$key_changed" ]; then
	echo "storage storage-1: miner key unchanged"
else
	echo "storage storage-1: miner key written to /etc/nodefleet/storage-1/miner.key (mode 0600)"
	if [ -f /etc/nodefleet/storage-1/storage.json ] && [ -f /usr/local/lib/nodefleet/zgs-endpoint.py ]; then
		# Exit 10: config.toml rewritten with the key (and the node restarted if it runs).
		rc=0
		python3 /usr/local/lib/nodefleet/zgs-endpoint.py storage-1 --restart || rc=$?
		case "$rc" in 0 | 10 | 2) ;; *) exit "$rc" ;; esac
	fi
fi
