#!/bin/sh
# nodefleet firewall confirm for host h-validator. Runs over a new SSH connection made
# after the new ruleset is active: reaching the host proves SSH still passes.
set -eu
pending=/etc/nodefleet/firewall/nodefleet.nft.pending
ruleset=/etc/nodefleet/firewall/nodefleet.nft
expected=2bb3e29c0bcceca97bcce9ac9b1dba86d1230bab758401ecaf9dd71a0172b3bf

if [ -f "$pending" ]; then
	systemctl stop nodefleet-firewall-revert.timer >/dev/null 2>&1 || true
	mv "$pending" "$ruleset"
	systemctl daemon-reload
	systemctl enable nodefleet-firewall.service >/dev/null 2>&1
	echo "firewall: confirmed and persisted"
fi
if ! echo "$expected  $ruleset" | sha256sum -c --status 2>/dev/null; then
	echo "firewall: the new ruleset is not active: it was reverted after no confirmation came (did it lock out SSH? check adminCidrs and sshdPort)" >&2
	exit 1
fi
record=/var/lib/nodefleet/drift/firewall
live() { nft list table inet nodefleet 2>/dev/null | sha256sum | cut -c1-64; }
if ! nft list table inet nodefleet >/dev/null 2>&1; then
	echo "firewall: table inet nodefleet is missing; loading the confirmed ruleset"
	nft -f "$ruleset"
elif [ -f "$record/nft" ] && [ "$(live)" != "$(cut -f3 "$record/nft")" ]; then
	# Run again as a repair: the table was changed by hand since it was confirmed.
	echo "firewall: table inet nodefleet differs from the confirmed ruleset; loading it again"
	nft -f "$ruleset"
fi
# The drift record: the table as confirmed (its digest; `pulumi refresh` compares).
install -d -m 0700 "$record"
printf 'nft\tinet nodefleet\t%s\n' "$(live)" > "$record/nft"
# The unit (it loads the same confirmed ruleset) shows active from now on, not only after
# the next boot.
if ! systemctl is-active --quiet nodefleet-firewall.service; then
	systemctl start nodefleet-firewall.service
fi
echo "firewall: active ruleset $expected"
