#!/usr/bin/env bash
# The real Aztec 4.1.2 as a release archive a host installs (nodefleet's release step, by URL and
# sha256 from lab/artifacts.sh), made from the lab's install of @aztec/aztec (lab/aztec.sh):
#
#   lab/aztec.sh release DIR   DIR becomes the release tree (below)
#   lab/aztec.sh archive       the tree packed as aztec-v4.1.2.tar.gz, once into the cache
#                              (keyed by the install and this script); prints its path
#
# The tree is self-contained (nothing in it names the runner's cache), so that any Debian host runs it:
#   bin/aztec      the CLI and node: lib/node (Node.js 24) started through Debian 13's loader from
#                  lib/runtime with that runtime's libraries first, so that the native modules (world
#                  state, lmdb) find the glibc 2.39 and libstdc++ they were built for on a Debian 12
#                  host. It sets three variables that the lab's install and the dev L1 need and
#                  nodefleet does not render (an operator's release or image has the first two; the
#                  last is the dev L1's): NODE_BACKEND=js (bcrypto's native build is an install script,
#                  skipped), PROVER_REAL_PROOFS=false (no network to download the proving CRS from;
#                  the dev L1's rollup takes fake proofs), SEQ_MIN_TX_PER_BLOCK=0 (nothing sends L2
#                  transactions here: it proposes empty blocks).
#   bin/aztec-up   a STAND-IN for Aztec's version manager, which downloads an installer from the
#                  internet (which no host here reaches): it succeeds for this release's own version
#                  and refuses any other by name, saying to install a release of it (lab/sim/README.md)
#   lib/node_modules  the install's, without the deploy tools (forge, solc) and without bb's builds
#                  for other platforms; bb itself (bb.js's prover binary) behind the same loader
# Progress goes to stderr, data to stdout.
set -euo pipefail
INSTALL="${1:?install directory}"
shift
NODEFLEET_CACHE="${NODEFLEET_CACHE:-$HOME/.cache/nodefleet}"
say() { printf '[aztec-release] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

VERSION="$("$INSTALL/bin/node" -p 'require(process.argv[1]).version' "$INSTALL/node_modules/@aztec/aztec/package.json")"
NAME="aztec-v$VERSION"

tree() {
    local dir="$1" lib="$1/lib"
    rm -rf "$dir" && mkdir -p "$dir/bin" "$lib/runtime/usr/lib"
    # Hard links where the cache and DIR share a filesystem (nothing here is written in place);
    # a copy elsewhere.
    local cp=(cp -al)
    cp -al "$INSTALL/package.json" "$dir/.link-test" 2>/dev/null && rm -f "$dir/.link-test" || cp=(cp -a)
    "${cp[@]}" "$INSTALL/node_modules" "$lib/"
    "${cp[@]}" "$INSTALL/runtime/usr/lib/x86_64-linux-gnu" "$lib/runtime/usr/lib/"
    rm -rf "$lib/node_modules/@foundry-rs" "$lib/node_modules/solc" "$lib/node_modules/.bin/solcjs"
    local bb="$lib/node_modules/@aztec/bb.js/build"
    find "$bb" -mindepth 1 -maxdepth 1 ! -name amd64-linux -exec rm -rf {} +
    # The install's node and bb name the cache's loader (patchelf): here they are started by the
    # release's own, so their own names do not matter.
    "${cp[@]}" "$INSTALL/bin/node" "$lib/node"
    mv "$bb/amd64-linux/bb" "$bb/amd64-linux/bb.elf"
    cat > "$bb/amd64-linux/bb" <<'EOF'
#!/bin/sh
# bb (Aztec's prover binary) through the release's loader and C++ runtime (glibc 2.39).
here="$(dirname "$(readlink -f "$0")")"
lib="$here/../../../../../runtime/usr/lib/x86_64-linux-gnu"
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$here/bb.elf" "$@"
EOF
    cat > "$dir/bin/aztec" <<'EOF'
#!/bin/sh
# The real Aztec CLI and node (@aztec/aztec), as the lab packs it (lab/aztec/release.sh says why
# each variable): Node.js from lib/, through Debian 13's loader and libraries in lib/runtime.
here="$(dirname "$(dirname "$(readlink -f "$0")")")"
lib="$here/lib/runtime/usr/lib/x86_64-linux-gnu"
export NODE_BACKEND=js PROVER_REAL_PROOFS=false SEQ_MIN_TX_PER_BLOCK=0
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$here/lib/node" --no-warnings "$here/lib/node_modules/@aztec/aztec/dest/bin/index.js" "$@"
EOF
    sed "s/@VERSION@/$VERSION/g" > "$dir/bin/aztec-up" <<'EOF'
#!/bin/sh
# A STAND-IN for Aztec's version manager (lab/sim/README.md): the real aztec-up downloads the
# version's installer from the internet, which hosts here cannot reach. This release is Aztec
# @VERSION@: that version is installed; any other needs its own release.
set -eu
want="${1:-}"
case "$want" in
"" | latest | @VERSION@)
	echo "Installed aztec @VERSION@ (this release's own; the lab's aztec-up downloads nothing)"
	;;
*)
	echo "aztec-up: version $want is not this release's (@VERSION@), and this lab's aztec-up cannot download one: install a release of $want" >&2
	exit 1
	;;
esac
EOF
    chmod 0755 "$dir/bin/aztec" "$dir/bin/aztec-up" "$bb/amd64-linux/bb"
    "$dir/bin/aztec" --version >/dev/null || die "the release's aztec does not start"
}

case "${1:-}" in
release)
    dir="${2:?release directory}"
    tree "$dir"
    ;;
archive)
    key="$( (basename "$INSTALL"; cat "${BASH_SOURCE[0]}") | sha256sum | cut -c1-16)"
    out="$NODEFLEET_CACHE/aztec-release/$key/$NAME.tar.gz"
    if [ ! -s "$out" ]; then
        work="$(mktemp -d)"
        trap 'rm -rf "$work"' EXIT
        say "packing the real Aztec $VERSION as a release archive (once: about 1 GB unpacked)"
        tree "$work/$NAME"
        # Deterministic (sorted names, fixed owner and time), gzip -1: the archive is made once and
        # unpacked by every install; a smaller one is not worth the minutes -9 takes.
        tar --sort=name --mtime='2026-01-01 00:00:00Z' --owner=0 --group=0 --numeric-owner --hard-dereference \
            -C "$work" -cf - "$NAME" | gzip -n -1 > "$work/out.tar.gz"
        mkdir -p "$(dirname "$out")"
        find "$NODEFLEET_CACHE/aztec-release" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
        mv "$work/out.tar.gz" "$out"
        say "packed $out ($(du -h "$out" | cut -f1))"
    fi
    echo "$out"
    ;;
*) die "usage: lab/aztec.sh release DIR | archive" ;;
esac
