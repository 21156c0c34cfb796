#!/bin/sh
# nodefleet: the hosts Prometheus on h-storage scrapes (file-based discovery: it reads the
# file again by itself, no reload).
set -eu
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
record=/var/lib/nodefleet/drift/monitoring.targets
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

install -d -m 0755 /etc/prometheus/nodefleet/targets
put /etc/prometheus/nodefleet/targets/node.json 0644 root:root <<'NODEFLEET_EOF'
[
  {
    "targets": [
      "192.0.2.10:9100"
    ],
    "labels": {
      "host": "h-storage"
    }
  },
  {
    "targets": [
      "192.0.2.12:9100"
    ],
    "labels": {
      "host": "h-validator"
    }
  }
]
NODEFLEET_EOF
put /etc/prometheus/nodefleet/targets/cometbft.json 0644 root:root <<'NODEFLEET_EOF'
[
  {
    "targets": [
      "192.0.2.12:56660"
    ],
    "labels": {
      "host": "h-validator",
      "node": "validator-1",
      "role": "validator"
    }
  }
]
NODEFLEET_EOF
put /etc/prometheus/nodefleet/targets/execution.json 0644 root:root <<'NODEFLEET_EOF'
[
  {
    "targets": [
      "192.0.2.12:56661"
    ],
    "labels": {
      "host": "h-validator",
      "node": "validator-1",
      "role": "validator"
    }
  }
]
NODEFLEET_EOF
echo "monitoring h-storage: 2 hosts and 1 validators to scrape"
