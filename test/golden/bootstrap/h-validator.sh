#!/bin/sh
# nodefleet common bootstrap for host h-validator: base packages, time sync, the operator
# user and the node data directories. Safe to run again: every action checks first.
set -eu
export DEBIAN_FRONTEND=noninteractive

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
echo "bootstrap: done"
