#!/bin/sh
# nodefleet: configure Aztec sequencer sequencer-1 on host h-sequencer: its unit, the registration and
# health scripts, then start it, or restart it when its unit or its version changed. Safe to run
# again: unchanged files are left alone and nothing restarts.
set -eu

# journal_tail UNIT LINES: the unit's last journal lines, each URL cut to scheme://host[:port]
# (a node logs the endpoints it could not reach whole: a hosted endpoint's path, query or user part
# may hold an API key, and these lines reach Pulumi's output and state).
journal_tail() {
	journalctl -u "$1" -n "$2" --no-pager 2>&1 | sed -E -e 's|(://)[^/?#[:space:]@"<>]*@|\1|g' -e 's|(://[^/?#[:space:]"<>]+)[/?#][^[:space:]"<>]*|\1/…|g'
}
node=sequencer-1
service=aztec-sequencer-1.service
etc=/etc/nodefleet/sequencer-1
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
record=/var/lib/nodefleet/drift/sequencer-1.configure
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

if ! command -v docker >/dev/null 2>&1; then
	echo "sequencer $node: docker is not installed (runtime: docker); install it or use runtime: release" >&2
	exit 1
fi
for f in "$etc/aztec.env" "$etc/register.env" "$etc/version"; do
	if [ ! -f "$f" ]; then
		echo "sequencer $node: $f is missing: the key and version steps run first" >&2
		exit 1
	fi
done

install -d -o root -g root -m 0750 /data/sequencer-1 /data/sequencer-1/data
install -d -m 0755 /usr/local/lib/nodefleet

put "$etc/sequencer.json" 0644 root:root <<'NODEFLEET_EOF'
{
  "node": "sequencer-1",
  "service": "aztec-sequencer-1.service",
  "rpcPort": 8080,
  "api": "2.0.x"
}
NODEFLEET_EOF
put_tool /usr/local/lib/nodefleet/nodefleet_rpc.py 0644 root:root dfbd3424c12748dd5512adf6c44dae190fbf53028a8001971bdea7e5373a008c
put_tool /usr/local/lib/nodefleet/nodefleet_units.py 0644 root:root 863ea2a43557e7e63f4e242d26d1ee80fd5fb4bd2983dee99c4c91182183ab98
put_tool /usr/local/lib/nodefleet/nodefleet_faults.py 0644 root:root a20fc3ff0ff8143ed1cf62137a3654c97ec6981dad5c2b8e8757bdbad57fa453
put_tool /usr/local/lib/nodefleet/faults.json 0644 root:root 34ee96112e36b1c0c58c54f8f89d282cdfc69a777cf37521b7179216cba0f50a
put_tool /usr/local/lib/nodefleet/nodefleet_health.py 0644 root:root a0a2d7cb99f58736bdaf6c3476fb4479d3ad316843fa6785e9317e8582607825
put_tool /usr/local/lib/nodefleet/aztec-register.py 0755 root:root 014cf85fcb75997167d4673e9be9d9d77d04490ed33753c4e0b6732f87aa26a3
put_tool /usr/local/lib/nodefleet/aztec-argv.mjs 0644 root:root 83c82548d5e69390b1f05563c01b6e74f502ae3ae1e6971884de98affc9e8f4e
put_tool /usr/local/lib/nodefleet/aztec-health.py 0755 root:root 1d48518ed93b1f8e59c54dad99abd5c58ff6120d935d660829137f752058461d
restart=""
put /etc/systemd/system/"$service" 0644 root:root <<'NODEFLEET_EOF'
# Aztec 2.0.x sequencer sequencer-1 (node, archiver, sequencer on alpha-testnet), rendered by nodefleet.
# The start flags are the ones Aztec 2.0.x reads (docs/spec.md §2.4 for 2.0.x); the validator private key
# is the one value given by its environment variable (VALIDATOR_PRIVATE_KEY) from a root-only 0600
# file, never a command line.
[Unit]
Description=Aztec sequencer sequencer-1 (alpha-testnet)
Wants=network-online.target
After=network-online.target docker.service
Requires=docker.service

[Service]
Type=simple
# docker runs as root; the container reads the key from --env-file (the aztec wrapper would put
# it on docker's command line as -e VALIDATOR_PRIVATE_KEY=...).
User=root
WorkingDirectory=/data/sequencer-1
Environment=DATA_DIRECTORY=/data/sequencer-1/data
Environment=P2P_PORT=40400
Environment=AZTEC_PORT=8080
Environment=AZTEC_ADMIN_PORT=8880
Environment=LOG_JSON=1
ExecStartPre=-/usr/bin/docker rm -f aztec-sequencer-1
ExecStart=/usr/bin/docker run --rm --name aztec-sequencer-1 --network host --env-file /etc/nodefleet/sequencer-1/aztec.env -e DATA_DIRECTORY -e P2P_PORT -e AZTEC_PORT -e AZTEC_ADMIN_PORT -e LOG_JSON -v /data/sequencer-1:/data/sequencer-1 aztecprotocol/aztec:2.0.2 start --node --archiver --sequencer --network alpha-testnet --sequencer.coinbase 0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359 --p2p.p2pIp 198.51.100.20
ExecStop=/usr/bin/docker stop aztec-sequencer-1
# On SIGTERM (systemctl stop) 4.1.2 shuts down and exits 143 (128 + 15), as docker run does then:
# a clean stop, not a failure. 78 and 79 (a rollup or version upgrade) are failures: restarted.
SuccessExitStatus=143
Restart=on-failure
RestartSec=10
# A clean stop takes about a second. Stopped while its archiver stores the checkpoint the node has
# just published, 4.1.2 never exits (its archiver's stop waits on that iteration; docs/roles.md,
# "Its stop"), and only the kill ends it: 20 s, twice docker stop's grace, not a minute of downtime.
TimeoutStopSec=20
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
NODEFLEET_EOF
case "$changed" in *"$service"*) restart="unit" ;; esac
systemctl daemon-reload

# The version the running node was started with, against the one aztec-up installed last.
if ! cmp -s "$etc/version" "$etc/started-version"; then
	restart="${restart:+$restart, }version $(cat "$etc/version")"
fi

systemctl enable "$service" >/dev/null 2>&1
record_unit "$service"
if ! systemctl is-active --quiet "$service"; then
	systemctl start "$service"
	echo "sequencer $node: started $service"
elif [ -n "$restart" ]; then
	systemctl restart "$service"
	echo "sequencer $node: restarted $service (changed: $restart)"
else
	echo "sequencer $node: $service unchanged and running"
fi
cp "$etc/version" "$etc/started-version"
sleep 3
# Not running after its (re)start (a version that exits at start): warned, not failed. The health
# step fails for it (or, gated and past its first deploy, the node's gate judges it): a step that
# fails records nothing in Pulumi's state, so this one, having changed the node, would not run again
# when the change is set back, and the node would stay on it.
if ! systemctl is-active --quiet "$service"; then
	journal_tail "$service" 20 >&2 || true
	echo "sequencer $node: warning: $service is not running: its health step judges it" >&2
fi
