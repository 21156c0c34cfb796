#!/bin/sh
# nodefleet host key for host h1: the host makes an ed25519 key of its own, whose
# private half never leaves it, and prints the public half. Run over a connection pinned to the
# first-boot key of the server's user-data; sshd keeps serving that key until the swap.
# Idempotent: a run again prints the key made before.
set -eu
d=/etc/ssh/nodefleet
umask 077
mkdir -p "$d"
if [ ! -s "$d/host_ed25519_key.pub" ]; then
	rm -f "$d/host_ed25519_key.new" "$d/host_ed25519_key.new.pub"
	ssh-keygen -q -t ed25519 -N '' -C nodefleet-h1 -f "$d/host_ed25519_key.new"
	mv "$d/host_ed25519_key.new" "$d/host_ed25519_key"
	chmod 0644 "$d/host_ed25519_key.new.pub"
	# The public half last: its presence says the pair is whole.
	mv "$d/host_ed25519_key.new.pub" "$d/host_ed25519_key.pub"
fi
printf '{"hostKey":"%s"}\n' "$(cut -d' ' -f1,2 "$d/host_ed25519_key.pub")"
