#!/bin/sh
# nodefleet common bootstrap for host h-validator: base packages, time sync, the operator
# user and the node data directories. Safe to run again: every action checks first.
set -eu
export DEBIAN_FRONTEND=noninteractive
# reserve_ports CONF PROC PORTS: PORTS (a comma list) kept out of the kernel's ephemeral range, now
# (PROC, the netns's ip_local_reserved_ports) and at every boot (CONF, read by systemd-sysctl).
# Reservations made by others stay; those this file made before for ports no longer listed go.
# An outgoing connection that took a listening port as its source port would make the service's
# bind fail with "address already in use" (docs/hosts.md).
reserve_ports() {
	conf="$1"; proc="$2"; ports="$3"
	work=$(mktemp -d)
	# One port a line, ranges ("a-b", as the kernel prints them) expanded.
	expand() { tr ',' '\n' | while IFS=- read -r lo hi; do [ -n "$lo" ] && seq "$lo" "${hi:-$lo}"; done | sort -u; }
	sed -n 's/^# nodefleet reserves: //p' "$conf" 2>/dev/null | expand > "$work/before"
	expand < "$proc" > "$work/live"
	printf '%s\n' "$ports" | expand > "$work/ours"
	all=$( { comm -23 "$work/live" "$work/before"; cat "$work/ours"; } | sort -n -u | paste -s -d, -)
	rm -rf "$work"
	# The kernel first: a setting it refuses leaves the boot file as it was.
	if ! (printf '%s\n' "$all" > "$proc") 2>/dev/null; then
		echo "bootstrap: cannot write $proc (its /proc/sys/net is read-only here?): the ports its nodes listen on would stay in the ephemeral range, where an outgoing connection can take one (docs/hosts.md)" >&2
		return 1
	fi
	if [ -z "$ports" ]; then
		rm -f "$conf"
	else
		printf '# Written by nodefleet: the ports its services listen on, with what was reserved before.\n# nodefleet reserves: %s\nnet.ipv4.ip_local_reserved_ports = %s\n' "$ports" "$all" > "$conf.new"
		mv "$conf.new" "$conf"
	fi
	echo "bootstrap: ports kept out of the ephemeral range: ${ports:-none}"
}

# Cloud images run cloud-init at first boot, which holds the apt lock.
if command -v cloud-init >/dev/null 2>&1; then
	cloud-init status --wait >/dev/null 2>&1 || true
fi

missing=""
for pkg in ca-certificates curl chrony nftables python3; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $pkg"
	fi
done
if [ -n "$missing" ]; then
	echo "bootstrap: installing$missing"
	apt-get update -qq
	# shellcheck disable=SC2086 # word splitting of the package list is intended
	apt-get install -y -qq --no-install-recommends $missing
fi

# Validators sign by wall-clock time: keep the clock disciplined.
systemctl enable --now chrony.service >/dev/null 2>&1

operator=nodefleet
if ! id -u "$operator" >/dev/null 2>&1; then
	useradd --system --create-home --home-dir /var/lib/"$operator" --shell /usr/sbin/nologin "$operator"
	echo "bootstrap: created user $operator"
fi

mount=/data
if [ ! -d "$mount" ]; then
	echo "bootstrap: data mount point $mount does not exist" >&2
	exit 1
fi
install -d -o "$operator" -g "$operator" -m 0750 /data/validator-1
reserve_ports /etc/sysctl.d/90-nodefleet-reserved-ports.conf /proc/sys/net/ipv4/ip_local_reserved_ports 56303,56545,56546,56551,56656,56657,56658,56660,56661
cat > /etc/systemd/system/nodefleet-reserved-ports.service <<'NODEFLEET_UNIT'
# nodefleet: the node services' listening ports kept out of the ephemeral range at boot. Rendered by nodefleet.
# systemd-sysctl.service applies the same file on a machine, but skips a container (its /proc/sys is
# read-only but for /proc/sys/net): this unit applies that file alone, before the network and the nodes.
[Unit]
Description=nodefleet: listening ports kept out of the ephemeral range
DefaultDependencies=no
After=systemd-sysctl.service
Before=network-pre.target shutdown.target
Wants=network-pre.target
Conflicts=shutdown.target
ConditionPathExists=/etc/sysctl.d/90-nodefleet-reserved-ports.conf

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/lib/systemd/systemd-sysctl /etc/sysctl.d/90-nodefleet-reserved-ports.conf

[Install]
WantedBy=multi-user.target
NODEFLEET_UNIT
systemctl daemon-reload
systemctl enable nodefleet-reserved-ports.service >/dev/null 2>&1
echo "bootstrap: done"
