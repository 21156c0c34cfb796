#!/bin/sh
# nodefleet release install for host h1: zgs from a URL held in a secret (it
# may carry a credential): it arrives on this script's stdin as nodefleet_secret_url, goes to curl on
# curl's stdin (never its command line) and is never printed.
# Downloads, checks the sha256 before unpacking anything, unpacks into a directory named by the
# checksum, then points /opt/nodefleet/zgs at it atomically. Safe to run again: a verified directory is
# reused without downloading.
set -eu
name=zgs
url="$nodefleet_secret_url"
shown="the URL of its secret"
sha256=abababababababababababababababababababababababababababababababab
dest=/opt/nodefleet/releases/zgs-abababababababababababab
link=/opt/nodefleet/zgs

record=/var/lib/nodefleet/drift/release.zgs
files=.nodefleet-files.sha256
# list DIR: the sha256 of each file under DIR but nodefleet's own, paths relative to it, sorted.
list() {
	(cd "$1" && find . -type f ! -name '.nodefleet-*' -print0 | sort -z | xargs -0 -r sha256sum | sed 's#  \./#  #')
}
# A release installed before nodefleet listed its files: the list is taken from it as it is.
if [ -f "$dest/.nodefleet-sha256" ] && [ ! -f "$dest/$files" ]; then
	list "$dest" > "$dest/$files.new"
	mv "$dest/$files.new" "$dest/$files"
fi
# A file changed since the install (a swapped binary): the release is installed again, and the
# running units that start from it are restarted onto it.
reinstalled=""
if [ -f "$dest/.nodefleet-sha256" ] && ! (cd "$dest" && sha256sum -c --quiet --strict "$files" >/dev/null 2>&1); then
	echo "release $name: files under $dest differ from the release; installing it again" >&2
	rm -f "$dest/.nodefleet-sha256"
	reinstalled=1
fi
if [ ! -f "$dest/.nodefleet-sha256" ]; then
	install -d -m 0755 /opt/nodefleet/releases
	tmp="$(mktemp -d /opt/nodefleet/releases/.download.XXXXXX)"
	trap 'rm -rf "$tmp"' EXIT
	echo "release $name: downloading $shown"
	# The URL goes to curl in a config on its stdin (printf is the shell's own): not in its argv,
	# where ps would show a credential. Quotes and backslashes are escaped for curl's config syntax.
	printf 'url = "%s"\n' "$(printf '%s' "$url" | sed 's/[\\"]/\\&/g')" | curl -fsSL --retry 3 --connect-timeout 15 -o "$tmp/archive" -K -
	got="$(sha256sum "$tmp/archive" | cut -d' ' -f1)"
	if [ "$got" != "$sha256" ]; then
		echo "release $name: sha256 mismatch for $shown: expected $sha256, got $got; nothing was installed" >&2
		exit 1
	fi
	mkdir "$tmp/unpacked"
	tar -xzf "$tmp/archive" -C "$tmp/unpacked" --no-same-owner
	# A release archive holds one top directory (Aristotle-v1.0.6/, ...): install its content.
	root="$tmp/unpacked"
	if [ "$(find "$root" -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ] && [ -d "$(find "$root" -mindepth 1 -maxdepth 1)" ]; then
		root="$(find "$root" -mindepth 1 -maxdepth 1)"
	fi
	list "$root" > "$tmp/$files"
	mv "$tmp/$files" "$root/$files"
	echo "$sha256" > "$root/.nodefleet-sha256"
	chmod -R go-w "$root"
	rm -rf "$dest"
	mv "$root" "$dest"
	echo "release $name: installed into $dest"
fi
ln -sfn "$dest" "$link.new"
mv -T "$link.new" "$link"
echo "release $name: $link -> $dest"
# Its other versions (name-<hex digest prefix>) are removed once no unit names them: a node whose
# unit starts a version's own directory keeps it until its configure step moves it to this one
# (batch by batch, with a rollout), and while a rollout's gate keeps a unit naming it to roll back
# to; the next install removes it then.
for old in /opt/nodefleet/releases/"$name"-*; do
	suffix="${old##*/}"
	suffix="${suffix#"$name"-}"
	case "$suffix" in "" | *[!0-9a-f]*) continue ;; esac
	if [ "$old" != "$dest" ] && [ -d "$old" ]; then
		users="$(grep -l -F "$old/" /etc/systemd/system/*.service 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')"
		if [ -n "$users" ]; then
			echo "release $name: kept $old: ${users% } still start(s) from it until its node is configured onto this version"
			continue
		fi
		# A unit staged and not installed (a validator's geth unit after the switch to reth: its
		# rollback installs it again) keeps the version it names too.
		staged="$(grep -l -F "$old/" /etc/nodefleet/*/*.service 2>/dev/null | tr '\n' ' ')"
		if [ -n "$staged" ]; then
			echo "release $name: kept $old: the staged ${staged% } name(s) it"
			continue
		fi
		# A rollout's gate rolls a node back to the unit it kept (onFailure: rollback).
		kept="$(grep -l -F "$old/" /var/lib/nodefleet/gate/*.prev/f* 2>/dev/null | sed 's|.*/\([^/]*\)\.prev/[^/]*$|\1|' | sort -u | tr '\n' ' ')"
		if [ -n "$kept" ]; then
			echo "release $name: kept $old: the rollout gate of ${kept% } would roll back to it"
			continue
		fi
		# Out of its path at once (a rename), deleted off this step's path: deleting a real Aztec
		# release (a gigabyte in some 100,000 files) took 40 s on a dev host.
		trash="$(mktemp -d /opt/nodefleet/releases/.remove."$name".XXXXXX)"
		mv "$old" "$trash/"
		echo "release $name: removed the unused $old"
	fi
done
# What this release set aside, this run or one cut short, is deleted by a unit of its own at idle
# priority (it outlives this SSH session); without systemd-run here, at once.
for trash in /opt/nodefleet/releases/.remove."$name".*; do
	[ -d "$trash" ] || continue
	systemd-run --quiet --collect --no-block -p Nice=19 -p IOSchedulingClass=idle rm -rf -- "$trash" >/dev/null 2>&1 || rm -rf -- "$trash"
done
if [ -n "$reinstalled" ]; then
	for unit in $(grep -l -F -e "$link/" -e "$dest/" /etc/systemd/system/*.service 2>/dev/null | xargs -r -n1 basename); do
		if systemctl is-active --quiet "$unit"; then
			systemctl restart "$unit"
			echo "release $name: restarted $unit onto the release"
		fi
	done
fi
# The drift record: the release's files (their digests are in $files) and its link.
rm -rf "$record"
install -d -m 0700 "$record"
printf 'tree\t%s\t%s\n' "$dest" "$link" > "$record/t.release"
