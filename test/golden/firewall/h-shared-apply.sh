#!/bin/sh
# nodefleet firewall apply for host h-shared. Commit-confirm: the new ruleset is
# checked with `nft -c`, a revert is armed, then the ruleset is applied in one
# transaction. A separate SSH connection must confirm it (firewall-confirm) within
# 120 s, otherwise the previous table comes back by itself.
set -eu
dir=/etc/nodefleet/firewall
pending=/etc/nodefleet/firewall/nodefleet.nft.pending
mkdir -p "$dir"
chmod 0755 "$dir"

cat > "$pending.tmp" <<'NODEFLEET_RULESET'
#!/usr/sbin/nft -f
# nodefleet host firewall for h-shared. Rendered from the fleet config: edits here are replaced.
# Only this table is touched; the first two lines make one atomic replace of it.
table inet nodefleet
delete table inet nodefleet

table inet nodefleet {
	chain input {
		type filter hook input priority filter; policy drop;
		ct state established,related accept
		ct state invalid drop
		iif "lo" accept
		# ICMP (1) and ICMPv6 (58) by number: minimal hosts lack /etc/protocols (netbase).
		meta l4proto { 1, 58 } accept
		ip saddr { 198.51.100.0/24 } tcp dport 2200 accept comment "SSH from admin CIDRs"
		ip6 saddr { 2001:db8::/48 } tcp dport 2200 accept comment "SSH from admin CIDRs"
		tcp dport 40400 accept comment "sequencer-2 sequencer p2p"
		udp dport 40400 accept comment "sequencer-2 sequencer p2p"
		ip saddr { 10.0.0.0/8 } tcp dport 8080 accept comment "sequencer-2 sequencer JSON-RPC"
		tcp dport 47303 accept comment "validator-2 execution p2p"
		udp dport 47303 accept comment "validator-2 execution p2p"
		tcp dport 47656 accept comment "validator-2 CometBFT p2p"
	}
}
NODEFLEET_RULESET
# Refuse anything nft cannot parse before a single rule changes.
nft -c -f "$pending.tmp"
mv "$pending.tmp" "$pending"

cat > /etc/systemd/system/nodefleet-firewall.service <<'NODEFLEET_UNIT'
# nodefleet host firewall: loads the confirmed ruleset at boot. Rendered by nodefleet.
[Unit]
Description=nodefleet host firewall (nftables table inet nodefleet)
DefaultDependencies=no
Before=network-pre.target shutdown.target
Wants=network-pre.target
Conflicts=shutdown.target
ConditionPathExists=/etc/nodefleet/firewall/nodefleet.nft

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/nft -f /etc/nodefleet/firewall/nodefleet.nft
ExecStop=/usr/sbin/nft delete table inet nodefleet

[Install]
WantedBy=multi-user.target
NODEFLEET_UNIT

# The revert restores the table exactly as it is now (or removes it if there is none).
previous="$dir/previous.nft"
{
	echo "table inet nodefleet"
	echo "delete table inet nodefleet"
	nft list table inet nodefleet 2>/dev/null || true
} > "$previous"

systemctl stop nodefleet-firewall-revert.timer nodefleet-firewall-revert.service >/dev/null 2>&1 || true
systemctl reset-failed nodefleet-firewall-revert.timer nodefleet-firewall-revert.service >/dev/null 2>&1 || true
systemd-run --quiet --unit=nodefleet-firewall-revert --on-active=120 \
	/bin/sh -c "nft -f $previous && rm -f $pending"

nft -f "$pending"
echo "firewall: applied; reverts in 120 s unless confirmed"
