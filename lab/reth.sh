#!/usr/bin/env bash
# The real reth, built once from the pinned upstream source archive (paradigmxyz/reth v1.11.4).
#   lab/reth.sh build   build it if the cache lacks it (about 20 minutes on 2 idle cores), progress
#                       on stderr: "[reth] compiled N/M crates" as cargo goes
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
#   release profile with thin LTO off, 16 codegen units, no debug info, symbols stripped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION=1.11.4
ARCHIVE="reth-$VERSION.tar.gz"
UPSTREAM="${NODEFLEET_UPSTREAM:-$ROOT/../shared/upstream}"
PINS="$ROOT/lab/toolchain/upstream.sha256"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
FEATURES="reth-revm/portable,asm-keccak"
PROFILE_ENV=(CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
    CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_INCREMENTAL=false CARGO_PROFILE_RELEASE_STRIP=true)
say() { printf '[reth] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

pinned_digest() { awk -v f="$ARCHIVE" '$2 == f { print $1 }' "$PINS"; }

cache_key() {
    local digest
    digest="$(pinned_digest)"
    [ -n "$digest" ] || die "no digest pinned for $ARCHIVE in $PINS"
    printf '%s\n' "$digest" "--no-default-features --features $FEATURES" "${PROFILE_ENV[@]}" "$(rustc --version 2>/dev/null)" |
        sha256sum | cut -c1-16
}

# Debian's libclang (bindgen in reth-mdbx-sys) and a C compiler; installed once, as root.
build_deps() {
    local missing=()
    [ -n "$(find /usr/lib -regex '.*/libclang\(-[0-9.]*\)?\.so[.0-9]*' -print -quit 2>/dev/null)" ] || missing+=(libclang-dev)
    command -v cc >/dev/null || missing+=(build-essential)
    command -v cargo >/dev/null || die "cargo (Rust 1.88 or newer) is needed to build reth: https://rustup.rs, or Debian's cargo"
    [ "${#missing[@]}" -eq 0 ] && return
    [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: run as root or apt-get install ${missing[*]}"
    say "installing ${missing[*]} (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
    local key dir bin work src digest total started
    key="$(cache_key)"
    dir="$NODEFLEET_CACHE/reth/$key"
    bin="$dir/reth"
    [ -x "$bin" ] && return 0
    build_deps
    digest="$(sha256sum "$UPSTREAM/$ARCHIVE" | cut -d' ' -f1)"
    [ "$digest" = "$(pinned_digest)" ] ||
        die "$UPSTREAM/$ARCHIVE has sha256 $digest, but $PINS pins $(pinned_digest): refusing to build from it"
    work="$dir/work" # kept until the binary is in place, so an interrupted build resumes
    src="$work/reth-$VERSION"
    if [ ! -f "$src/Cargo.lock" ]; then
        rm -rf "$work" && mkdir -p "$work"
        tar -xzf "$UPSTREAM/$ARCHIVE" -C "$work"
    fi
    say "building reth $VERSION from $ARCHIVE (once; about 20 minutes on 2 idle cores), cache key $key"
    started=$SECONDS
    (cd "$src" && cargo fetch --locked 2>&1 | tail -2 | sed 's/^/[reth] cargo: /' >&2)
    total="$(cd "$src" && cargo tree --locked --offline -e normal,build --no-default-features --features "$FEATURES" \
        -p reth --prefix none 2>/dev/null | sed 's/ (\*)$//' | sort -u | wc -l)"
    # cargo's own progress bar needs a terminal; its "Compiling" lines, counted, are the progress here.
    (cd "$src" && env "${PROFILE_ENV[@]}" CARGO_TERM_COLOR=never CARGO_TERM_PROGRESS_WHEN=never \
        cargo build --release --locked --offline --no-default-features --features "$FEATURES" --bin reth 2>&1) |
        awk -v total="$total" -v start="$(date +%s)" '
            /^ *Compiling / { n++; if (systime() - last >= 15 || n == total) {
                printf "[reth] compiled %d/%d crates, %d s\n", n, total, systime() - start; fflush(); last = systime() } ; next }
            /^ *(Finished|warning: unused)/ { next }
            { print "[reth] cargo: " $0; fflush() }' >&2
    [ -x "$src/target/release/reth" ] || die "the build produced no reth binary (see the cargo lines above)"
    cp "$src/target/release/reth" "$bin.tmp" && mv "$bin.tmp" "$bin"
    rm -rf "$work"
    say "built in $((SECONDS - started)) s: $bin ($(du -m "$bin" | cut -f1) MB, $("$bin" --version | head -1))"
}

case "${1:-}" in
build) build ;;
path) build && echo "$NODEFLEET_CACHE/reth/$(cache_key)/reth" ;;
key) cache_key ;;
*) die "usage: lab/reth.sh build | path | key" ;;
esac
