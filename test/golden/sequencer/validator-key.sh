#!/bin/sh
nodefleet_secret_node_env='VALIDATOR_PRIVATE_KEY=0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318
ETHEREUM_HOSTS=https://sepolia.example.org/rpc
L1_CONSENSUS_HOST_URLS=https://beacon.example.org'
nodefleet_secret_register_env='PRIVATE_KEY=0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318
ETHEREUM_HOSTS=https://sepolia.example.org/rpc'
# nodefleet: the keys of Aztec sequencer sequencer-1, into two root-only (0600) environment files,
# under the names its version reads: the validator key for the node (aztec-sequencer-1.service), and for the
# registration the sender key as PRIVATE_KEY (what add-l1-validator reads when --private-key is not
# given) and, for 4.x, the BLS secret key for the argv preload. The files' lines are not in this
# file: they arrive as a secret on stdin, which sets them (nodefleet_secret_*) and then runs it; it
# never prints a key. Restarts the node only when its file changed and the node runs.
set -eu
umask 077
install -d -m 0700 /etc/nodefleet/sequencer-1
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
record=/var/lib/nodefleet/drift/sequencer-1.key
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

# Assembled in a file (umask 077), not piped: put must run in this shell to record what changed.
{
	cat <<NODEFLEET_EOF
$nodefleet_secret_node_env
NODEFLEET_EOF
} > /etc/nodefleet/sequencer-1/aztec.env.nodefleet-in
put /etc/nodefleet/sequencer-1/aztec.env 0600 root:root < /etc/nodefleet/sequencer-1/aztec.env.nodefleet-in
rm -f /etc/nodefleet/sequencer-1/aztec.env.nodefleet-in
node_changed="$changed"
put /etc/nodefleet/sequencer-1/register.env 0600 root:root <<NODEFLEET_EOF
$nodefleet_secret_register_env
NODEFLEET_EOF
if [ -z "$changed" ]; then
	echo "sequencer sequencer-1: validator key unchanged"
else
	echo "sequencer sequencer-1: keys written to /etc/nodefleet/sequencer-1/aztec.env and /etc/nodefleet/sequencer-1/register.env (mode 0600)"
	if [ -n "$node_changed" ] && systemctl is-active --quiet aztec-sequencer-1.service; then
		systemctl restart aztec-sequencer-1.service
		echo "sequencer sequencer-1: restarted aztec-sequencer-1.service for the new key"
	fi
fi
