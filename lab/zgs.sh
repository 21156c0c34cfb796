#!/usr/bin/env bash
# The real 0G storage node (zgs_node): the pinned prebuilt artifact (lab/lib/prebuilt.sh:
# ../shared/prebuilt, sha256 checked against lab/toolchain/prebuilt.sha256) or, without it, built
# once from the pinned upstream source archives: 0glabs/0g-storage-node v1.1.0 and its one git
# dependency, the `metrics` crate of Conflux-Chain/conflux-rust at rev c4734e33 (GPL-3.0: a build
# input of the lab, never shipped).
#   lab/zgs.sh build       take the artifact or build it if the cache lacks it (the source build:
#                          about 28 CPU-minutes; 32 min wall beside a cold run's other builds), progress
#                          on stderr: "[zgs] compiled N/M crates" as cargo goes
#   lab/zgs.sh path        print the binary's path (building it first if needed); data on stdout only
#   lab/zgs.sh contracts   print the directory of the compiled storage contracts (the archive's
#                          storage-contracts-abis/, unpacked once into the cache)
#   lab/zgs.sh run         print the archive's run/ directory (config.toml, log_config), likewise
#   lab/zgs.sh key         print the cache key (both archives' digests and the build settings)
# Both archives' sha256 must equal the digests pinned in lab/toolchain/upstream.sha256 before
# anything is unpacked; the binary is cached under $NODEFLEET_CACHE/zgs/<key>/zgs_node. An
# interrupted build resumes (cargo's target directory stays under the cache until the binary is in
# place, then is removed).
#
# What the build changes in the upstream tree, and why:
#   - RUSTUP_TOOLCHAIN=stable: the tree pins Rust 1.78.0 in rust-toolchain, which cannot be
#     downloaded here; the machine's stable compiler builds it;
#   - Cargo.toml gains a [patch] that points the conflux `metrics` git dependency at the unpacked
#     conflux archive (no git fetch here); Cargo.lock's entry for it loses its git source, and
#     cargo writes the lock file as format version 4: nothing else in it changes (checked by diff),
#     and the build then runs --locked;
#   - RUSTFLAGS=--cap-lints=warn: common/merkle_light denies unused_qualifications, a lint newer
#     rustc raises on its code;
#   - the release profile as for reth (lab/lib/cargo.sh): optimisation level 1, LTO off, 16 codegen
#     units, no debug info, stripped.
# Needs Debian's libclang-dev (bindgen in librocksdb-sys) and protobuf-compiler (prost-build in
# node/rpc); RocksDB 8.1 compiles from C++ source, a large share of the build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION=1.1.0
ARCHIVE="0g-storage-node-$VERSION.tar.gz"
METRICS_ARCHIVE="conflux-rust-c4734e33-metrics.tar.gz"
UPSTREAM="${NODEFLEET_UPSTREAM:-$ROOT/../shared/upstream}"
PINS="$ROOT/lab/toolchain/upstream.sha256"
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
TAG=zgs
say() { printf '[zgs] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lab/lib/cargo.sh
. "$ROOT/lab/lib/cargo.sh"
# shellcheck source=lab/lib/prebuilt.sh
. "$ROOT/lab/lib/prebuilt.sh" # from_cache_or_artifact
PREBUILT="zgs_node-$VERSION-lab-x86_64-linux-gnu.tar.xz"
BUILD_ENV=(RUSTUP_TOOLCHAIN=stable RUSTFLAGS=--cap-lints=warn)

cache_key() {
    local a b
    a="$(pinned_digest "$ARCHIVE")" b="$(pinned_digest "$METRICS_ARCHIVE")"
    if [ -z "$a" ] || [ -z "$b" ]; then die "no digest pinned for $ARCHIVE or $METRICS_ARCHIVE in $PINS"; fi
    printf '%s\n' "$a" "$b" "--bin zgs_node" "${BUILD_ENV[@]}" "${PROFILE_ENV[@]}" "${1-$(rustc --version 2>/dev/null)}" |
        sha256sum | cut -c1-16
}

# The tree, unpacked and patched, under WORK; returns its path on stdout.
unpack() {
    local work="$1" src="$1/0g-storage-node-$VERSION" metrics="$1/conflux-rust-c4734e33"
    if [ ! -f "$src/.nodefleet-patched" ]; then
        verify_archive "$UPSTREAM" "$ARCHIVE"
        verify_archive "$UPSTREAM" "$METRICS_ARCHIVE"
        rm -rf "$work" && mkdir -p "$work"
        tar -xzf "$UPSTREAM/$ARCHIVE" -C "$work"
        tar -xzf "$UPSTREAM/$METRICS_ARCHIVE" -C "$work"
        [ -d "$metrics/crates/util/metrics" ] || die "$METRICS_ARCHIVE holds no crates/util/metrics"
        printf '\n[patch."https://github.com/Conflux-Chain/conflux-rust.git"]\nmetrics = { path = "%s" }\n' \
            "$metrics/crates/util/metrics" >>"$src/Cargo.toml"
        touch "$src/.nodefleet-patched"
    fi
    echo "$src"
}

build() {
    local key dir bin work src total started
    from_cache_or_artifact zgs zgs_node "$PREBUILT" && return 0
    bin="$BIN" dir="${BIN%/*}" # the entry of this machine's compiler, to be built
    key="${dir##*/}"
    build_deps protobuf-compiler:protoc
    work="$dir/work" # kept until the binary is in place, so an interrupted build resumes
    src="$(unpack "$work")"
    say "building zgs_node $VERSION from $ARCHIVE (once; about 28 CPU-minutes), cache key $key"
    started=$SECONDS
    # Not --locked: this fetch writes the lock file's one change (the metrics entry loses its git
    # source); the build itself is --locked to that.
    (cd "$src" && env "${BUILD_ENV[@]}" cargo fetch 2>&1 | tail -2 | sed 's/^/[zgs] cargo: /' >&2)
    total="$(cd "$src" && env "${BUILD_ENV[@]}" cargo tree --locked --offline -e normal,build -p zgs_node --prefix none 2>/dev/null |
        sed 's/ (\*)$//' | sort -u | wc -l)"
    (cd "$src" && export "${BUILD_ENV[@]}" && cargo_build_progress "$total" build --release --locked --offline --bin zgs_node)
    [ -x "$src/target/release/zgs_node" ] || die "the build produced no zgs_node binary (see the cargo lines above)"
    cp "$src/target/release/zgs_node" "$bin.tmp" && mv "$bin.tmp" "$bin"
    rm -rf "$work"
    cpu_used
    say "built in $((SECONDS - started)) s, $CPU_USED CPU: $bin ($(du -m "$bin" | cut -f1) MB)"
}

# Files of the same pinned archive besides the source, unpacked once: the compiled contracts (ABI
# and bytecode, storage-contracts-abis/) and the run directory a release ships (run/: config.toml,
# the testnet configs, log_config).
files() {
    local dir
    dir="$NODEFLEET_CACHE/zgs/files-$(pinned_digest "$ARCHIVE" | cut -c1-16)"
    if [ ! -f "$dir/.complete" ]; then
        verify_archive "$UPSTREAM" "$ARCHIVE"
        rm -rf "$dir" && mkdir -p "$dir"
        tar -xzf "$UPSTREAM/$ARCHIVE" -C "$dir" --strip-components=1 \
            "0g-storage-node-$VERSION/storage-contracts-abis" "0g-storage-node-$VERSION/run"
        touch "$dir/.complete"
    fi
    echo "$dir"
}

case "${1:-}" in
build) build ;;
path) build && echo "$BIN" ;;
contracts) echo "$(files)/storage-contracts-abis" ;;
run) echo "$(files)/run" ;;
key) cache_key ;;
*) die "usage: lab/zgs.sh build | path | contracts | run | key" ;;
esac
