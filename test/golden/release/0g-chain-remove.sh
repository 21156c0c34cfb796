#!/bin/sh
# nodefleet release removal for host h1 (pulumi destroy or a new version): removes this
# version's directory, and the link only while it still points here.
set -eu
dest=/opt/nodefleet/releases/0g-chain-abababababababab
link=/opt/nodefleet/0g-chain
if [ "$(readlink "$link" 2>/dev/null || true)" = "$dest" ]; then
	rm -f "$link"
fi
rm -rf "$dest"
echo "release 0g-chain: removed $dest"
