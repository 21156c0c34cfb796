#!/usr/bin/env bash
# The real reth v1.11.4: the pinned prebuilt artifact (lab/lib/prebuilt.sh: ../shared/prebuilt, sha256
# checked against lab/toolchain/prebuilt.sha256) or, without it, built once from the pinned upstream
# source archive (paradigmxyz/reth v1.11.4).
#   lab/reth.sh build   take the artifact or build it if the cache lacks it (the source build: about
#                       20 CPU-minutes; 28 min wall beside a cold run's other builds), progress on
#                       stderr: "[reth] compiled N/M crates" as cargo goes
#   lab/reth.sh path    print the binary's path (building it first if needed); data on stdout only
#   lab/reth.sh key     print the cache key (the archive's digest and the build settings)
# The archive's sha256 must equal the digest pinned in lab/toolchain/upstream.sha256 before anything
# is unpacked; the binary is cached under $NODEFLEET_CACHE/reth/<key>/reth, keyed by that digest and
# every build setting below, so a change of either builds anew and a fresh clone on the same machine
# builds nothing. An interrupted build resumes: cargo's target directory is kept under the cache
# until the binary is in place, then removed (it is 2.7 GB).
#
# Build settings, chosen for build time on 2 cores (the binary is for the lab and its benchmarks):
#   --no-default-features   leaves out RocksDB (a long C++ build), jemalloc, OpenTelemetry and the
#                           boa JavaScript tracer: nothing the switch uses;
#   reth-revm/portable      blst picks its CPU instructions at run time: the binary runs on the
#                           emulated dev VMs, whose CPU is not this machine's;
#   asm-keccak              keccak in assembly (the import hashes every block and trie node);
#   the release profile of lab/lib/cargo.sh: optimisation level 1, LTO off, 16 codegen units, no
#   debug info, symbols stripped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION=1.11.4
ARCHIVE="reth-$VERSION.tar.gz"
UPSTREAM="${NODEFLEET_UPSTREAM:-$ROOT/../shared/upstream}"
PINS="$ROOT/lab/toolchain/upstream.sha256"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
FEATURES="reth-revm/portable,asm-keccak"
TAG=reth
say() { printf '[reth] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lab/lib/cargo.sh
. "$ROOT/lab/lib/cargo.sh" # PROFILE_ENV, pinned_digest, verify_archive, build_deps, cargo_build_progress
# shellcheck source=lab/lib/prebuilt.sh
. "$ROOT/lab/lib/prebuilt.sh" # from_cache_or_artifact
PREBUILT="reth-$VERSION-lab-x86_64-linux-gnu.tar.xz"

cache_key() {
    local digest
    digest="$(pinned_digest "$ARCHIVE")"
    [ -n "$digest" ] || die "no digest pinned for $ARCHIVE in $PINS"
    printf '%s\n' "$digest" "--no-default-features --features $FEATURES" "${PROFILE_ENV[@]}" "${1-$(rustc --version 2>/dev/null)}" |
        sha256sum | cut -c1-16
}

build() {
    local key dir bin work src total started
    from_cache_or_artifact reth reth "$PREBUILT" && return 0
    bin="$BIN" dir="${BIN%/*}" # the entry of this machine's compiler, to be built
    key="${dir##*/}"
    # shellcheck disable=SC2119 # reth needs no package beyond the common ones
    build_deps
    work="$dir/work" # kept until the binary is in place, so an interrupted build resumes
    src="$work/reth-$VERSION"
    if [ ! -f "$src/Cargo.lock" ]; then
        verify_archive "$UPSTREAM" "$ARCHIVE"
        rm -rf "$work" && mkdir -p "$work"
        tar -xzf "$UPSTREAM/$ARCHIVE" -C "$work"
    fi
    say "building reth $VERSION from $ARCHIVE (once; about 20 CPU-minutes), cache key $key"
    started=$SECONDS
    (cd "$src" && cargo fetch --locked 2>&1 | tail -2 | sed 's/^/[reth] cargo: /' >&2)
    total="$(cd "$src" && cargo tree --locked --offline -e normal,build --no-default-features --features "$FEATURES" \
        -p reth --prefix none 2>/dev/null | sed 's/ (\*)$//' | sort -u | wc -l)"
    (cd "$src" && cargo_build_progress "$total" build --release --locked --offline --no-default-features --features "$FEATURES" --bin reth)
    [ -x "$src/target/release/reth" ] || die "the build produced no reth binary (see the cargo lines above)"
    cp "$src/target/release/reth" "$bin.tmp" && mv "$bin.tmp" "$bin"
    rm -rf "$work"
    cpu_used
    say "built in $((SECONDS - started)) s, $CPU_USED CPU: $bin ($(du -m "$bin" | cut -f1) MB, $("$bin" --version | head -1))"
}

case "${1:-}" in
build) build ;;
path) build && echo "$BIN" ;;
key) cache_key ;;
*) die "usage: lab/reth.sh build | path | key" ;;
esac
