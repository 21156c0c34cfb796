#!/bin/sh
# nodefleet release install for host h1: 0g-chain from https://github.com/0glabs/0g-chain/releases/download/v1.0.6/aristotle-v1.0.6.tar.gz
# Downloads, checks the sha256 before unpacking anything, unpacks into a directory named by the
# checksum, then points /opt/nodefleet/0g-chain at it atomically. Safe to run again: a verified directory is
# reused without downloading.
set -eu
name=0g-chain
url=https://github.com/0glabs/0g-chain/releases/download/v1.0.6/aristotle-v1.0.6.tar.gz
sha256=abababababababababababababababababababababababababababababababab
dest=/opt/nodefleet/releases/0g-chain-abababababababab
link=/opt/nodefleet/0g-chain

if [ ! -f "$dest/.nodefleet-sha256" ]; then
	install -d -m 0755 /opt/nodefleet/releases
	tmp="$(mktemp -d /opt/nodefleet/releases/.download.XXXXXX)"
	trap 'rm -rf "$tmp"' EXIT
	echo "release $name: downloading $url"
	curl -fsSL --retry 3 --connect-timeout 15 -o "$tmp/archive" "$url"
	got="$(sha256sum "$tmp/archive" | cut -d' ' -f1)"
	if [ "$got" != "$sha256" ]; then
		echo "release $name: sha256 mismatch for $url: expected $sha256, got $got; nothing was installed" >&2
		exit 1
	fi
	mkdir "$tmp/unpacked"
	tar -xzf "$tmp/archive" -C "$tmp/unpacked" --no-same-owner
	# A release archive holds one top directory (Aristotle-v1.0.6/, ...): install its content.
	root="$tmp/unpacked"
	if [ "$(find "$root" -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ] && [ -d "$(find "$root" -mindepth 1 -maxdepth 1)" ]; then
		root="$(find "$root" -mindepth 1 -maxdepth 1)"
	fi
	echo "$sha256" > "$root/.nodefleet-sha256"
	chmod -R go-w "$root"
	rm -rf "$dest"
	mv "$root" "$dest"
	echo "release $name: installed into $dest"
fi
ln -sfn "$dest" "$link.new"
mv -T "$link.new" "$link"
echo "release $name: $link -> $dest"
