#!/bin/sh
# nodefleet: the health step of validator node validator-1, after its configure step. It prints the
# node's health report (its role's health tool), then fails when the node's service does not run: a
# release that exits at start, a flag or config the binary rejects. The configure step that
# restarted it does not fail for that (it warns): a step that fails records nothing in Pulumi's
# state, so a configure step failing after it changed the host would not run again when the change
# is set back, and the node would stay on it. This step writes no file of the node's; a
# validator's health tool alone acts, running the forkchoice remedy of docs/spec.md §7 (stop the
# consensus daemon, roll its height back, start it) when the daemon logs that fault.
set -u

# journal_tail UNIT LINES: the unit's last journal lines, each URL cut to scheme://host[:port]
# (a node logs the endpoints it could not reach whole: a hosted endpoint's path, query or user part
# may hold an API key, and these lines reach Pulumi's output and state).
journal_tail() {
	journalctl -u "$1" -n "$2" --no-pager 2>&1 | sed -E -e 's|(://)[^/?#[:space:]@"<>]*@|\1|g' -e 's|(://[^/?#[:space:]"<>]+)[/?#][^[:space:]"<>]*|\1/…|g'
}
# Gated and past its first deploy: its services' restart counts now, right after the configure
# step's restart, for the gate after this step to count a crash loop from (nodefleet_gate.py,
# handed_base), not from its own start after this step's wait.
if [ -e /var/lib/nodefleet/gate/validator-1 ]; then
	if { date +%s; printf '%s %s\n' geth-validator-1.service "$(systemctl show -p NRestarts --value geth-validator-1.service)"; printf '%s %s\n' 0gchaind-validator-1.service "$(systemctl show -p NRestarts --value 0gchaind-validator-1.service)"; } >/var/lib/nodefleet/gate/validator-1.restarts.new; then
		mv -f /var/lib/nodefleet/gate/validator-1.restarts.new /var/lib/nodefleet/gate/validator-1.restarts
	fi
fi
python3 -S /usr/local/lib/nodefleet/zg-validator.py /etc/nodefleet/validator-1/validator.json health
report=$?
[ "$report" -eq 0 ] || exit "$report"
down=""
systemctl is-active --quiet geth-validator-1.service || down="$down geth-validator-1.service"
systemctl is-active --quiet 0gchaind-validator-1.service || down="$down 0gchaind-validator-1.service"
[ -z "$down" ] && exit 0
# Gated (a rollout) and past its first deploy: the node's gate, next, judges it with its
# diagnoses and halts the rollout there or (onFailure: rollback) puts back what it ran.
if [ -e /var/lib/nodefleet/gate/validator-1 ]; then
	echo "validator validator-1: warning: not running:$down: its rollout gate judges it" >&2
	exit 0
fi
for unit in $down; do
	journal_tail "$unit" 20 >&2 || true
done
echo "validator validator-1: not running:$down. Fix the release or setting (or set it back) and run up again: the configure step applies it" >&2
exit 1
