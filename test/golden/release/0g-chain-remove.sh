#!/bin/sh
# nodefleet release removal for host h1 (pulumi destroy or a new version): removes this
# version's directory, and the link only while it still points here.
set -eu
dest=/opt/nodefleet/releases/0g-chain-abababababababababababab
link=/opt/nodefleet/0g-chain
if [ "$(readlink "$link" 2>/dev/null || true)" = "$dest" ]; then
	rm -f "$link"
fi
rm -rf "$dest"
# Versions kept for nodes not yet moved onto a newer one (install-release) go too, once no unit names
# them (installed or staged), nor a rollout gate's kept files (the nodes' own removals ran first: they depend on the release).
for old in /opt/nodefleet/releases/0g-chain-*; do
	suffix="${old##*/}"
	suffix="${suffix#0g-chain-}"
	case "$suffix" in "" | *[!0-9a-f]*) continue ;; esac
	if [ -d "$old" ] && ! grep -q -F "$old/" /etc/systemd/system/*.service /etc/nodefleet/*/*.service /var/lib/nodefleet/gate/*.prev/f* 2>/dev/null; then
		rm -rf "$old"
		echo "release 0g-chain: removed $old"
	fi
done
# What an install set aside and its deletion unit has not deleted yet goes now.
rm -rf /opt/nodefleet/releases/.remove.0g-chain.*
if [ -f /var/lib/nodefleet/drift/release.0g-chain/t.release ] && [ "$(cut -f2 /var/lib/nodefleet/drift/release.0g-chain/t.release)" = "$dest" ]; then
	rm -rf /var/lib/nodefleet/drift/release.0g-chain
fi
echo "release 0g-chain: removed $dest"
