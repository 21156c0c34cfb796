#!/bin/sh
# nodefleet: the rollout gate of storage node storage-1 (docs/rollouts.md). It runs after
# a change restarted the node: the node must answer healthy to its health tool (the one `nodefleet
# status` runs) within 900 s and stay so for 60 s, or the up stops here with the
# node's diagnoses, and the nodes of later batches keep what they run. The node's first deploy is
# not gated (the marker below records it). Read-only on the node (it only asks), except with
# `onFailure: rollback` (--keep): a node that fails its gate gets back the files it ran when it last
# passed, and is restarted on them and checked again. A service systemd keeps restarting (--unit:
# a crash loop) fails the gate without waiting out the deadline.
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
record=/var/lib/nodefleet/drift/storage-1.gate
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

install -d -m 0755 /usr/local/lib/nodefleet /usr/local/lib/nodefleet/zgvalidator
# Where the gate's tools went when each node had its own copy.
rm -rf /var/lib/nodefleet/gate/storage-1.tools
put_tool /usr/local/lib/nodefleet/nodefleet_gate.py 0644 root:root 2168eb5a985e14a23261dfe5246070176408e27e77d629e0ffc158e8f62faa5c
put_tool /usr/local/lib/nodefleet/nodefleet_rpc.py 0644 root:root dfbd3424c12748dd5512adf6c44dae190fbf53028a8001971bdea7e5373a008c
put_tool /usr/local/lib/nodefleet/nodefleet_units.py 0644 root:root 863ea2a43557e7e63f4e242d26d1ee80fd5fb4bd2983dee99c4c91182183ab98
put_tool /usr/local/lib/nodefleet/nodefleet_checks.py 0644 root:root 79f885f77a521d1a1a95023c9992c6554221e68bd838bfc7c6c188dc9008d3cc
put_tool /usr/local/lib/nodefleet/nodefleet_faults.py 0644 root:root a20fc3ff0ff8143ed1cf62137a3654c97ec6981dad5c2b8e8757bdbad57fa453
put_tool /usr/local/lib/nodefleet/faults.json 0644 root:root 34ee96112e36b1c0c58c54f8f89d282cdfc69a777cf37521b7179216cba0f50a
put_tool /usr/local/lib/nodefleet/nodefleet_health.py 0644 root:root a0a2d7cb99f58736bdaf6c3476fb4479d3ad316843fa6785e9317e8582607825
put_tool /usr/local/lib/nodefleet/nodefleet_metrics.py 0644 root:root 63f07941750e86e1fc461e86d093f8f411a9f14fb5dfade0ef56dd78402d8414
put_tool /usr/local/lib/nodefleet/zgvalidator/steps.json 0644 root:root a7230d7652f2939e97e25101acf7ccf8b2224ec2560022e28a5c500a2ba2c57c
exec python3 /usr/local/lib/nodefleet/nodefleet_gate.py storage storage-1 --within 900 --soak 60 --every 10 --marker /var/lib/nodefleet/gate/storage-1 --unit zgs-storage-1.service -- python3 /usr/local/lib/nodefleet/zgs-health.py storage-1
