#!/bin/sh
nodefleet_secret_key='{"address":"1407BD3BDB16DA9AB1C2EBE96B2D85AF46D85B25","pub_key":{"type":"tendermint/PubKeyEd25519","value":"Op9okr4w5MPvUuqe6xra/HTvj9vQHC60MLa8xES5qPQ="},"priv_key":{"type":"tendermint/PrivKeyEd25519","value":"/KUZpZZ43loh/qi9UM7R9LmA2oNHBU8eHMfHgKqXEz86n2iSvjDkw+9S6p7rGtr8dO+P29AcLrQwtrzERLmo9A=="}}'
nodefleet_secret_urls='{
  "referenceRpcUrl": null
}'
# nodefleet: the consensus key of 0G validator validator-1, priv_validator_key.json, into its
# consensus home, readable by the operator user only (0600), and its reference endpoint (it may carry
# an API key) into a root-only file the host tool reads. The key and the endpoint are not in this
# file: they arrive as a secret on stdin, which sets them (nodefleet_secret_*) and then runs it; it
# never prints either. Restarts 0gchaind only when the key changed and it runs.
set -eu
umask 077
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
record=/var/lib/nodefleet/drift/validator-1.key
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

install -d -o nodefleet -g nodefleet -m 0750 /data/validator-1 /data/validator-1/0gchaind /data/validator-1/0gchaind/config
put /data/validator-1/0gchaind/config/priv_validator_key.json 0600 nodefleet:nodefleet <<NODEFLEET_EOF
$nodefleet_secret_key
NODEFLEET_EOF
key_changed="$changed"
install -d -m 0755 /etc/nodefleet/validator-1
put /etc/nodefleet/validator-1/urls.json 0600 root:root <<NODEFLEET_EOF
$nodefleet_secret_urls
NODEFLEET_EOF
if [ -z "$key_changed" ]; then
	echo "validator validator-1: consensus key unchanged"
else
	echo "validator validator-1: consensus key written to /data/validator-1/0gchaind/config/priv_validator_key.json (mode 0600)"
	if systemctl is-active --quiet 0gchaind-validator-1.service; then
		systemctl restart 0gchaind-validator-1.service
		echo "validator validator-1: restarted 0gchaind-validator-1.service for the new key"
	fi
fi
