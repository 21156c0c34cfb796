#!/bin/sh
# nodefleet host key swap for host h1: sshd serves the key the host made, alone, and
# the first-boot key (whose private half passed through the metadata service, readable by any
# process on the host) is removed. Idempotent: a run again finds it done and reloads sshd.
set -eu
want='ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs'
d=/etc/ssh/nodefleet
conf=/etc/ssh/sshd_config.d/10-nodefleet-host-key.conf
have="$(cut -d' ' -f1,2 "$d/host_ed25519_key.pub" 2>/dev/null || true)"
if [ "$have" != "$want" ] || [ ! -s "$d/host_ed25519_key" ]; then
	echo "host key swap: $d/host_ed25519_key is not the key nodefleet read from this host; nothing changed" >&2
	exit 3
fi
line="HostKey $d/host_ed25519_key"
if [ "$(cat "$conf" 2>/dev/null || true)" != "$line" ]; then
	printf '%s\n' "$line" >"$conf.tmp"
	chmod 0644 "$conf.tmp"
	mv "$conf.tmp" "$conf"
fi
# Checked before the first-boot key goes: a config sshd refuses is never loaded.
/usr/sbin/sshd -t
rm -f /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub
systemctl reload ssh
echo "host key swap: sshd serves the host's own key"
