# shellcheck shell=bash
# Node software taken as a pinned prebuilt artifact instead of built from source: a release-style
# `NAME-VERSION-…-x86_64-linux-gnu.tar.xz` holding one binary, made on this machine image from the
# same pinned source with the lab's own build settings (../shared/prebuilt/README.md says how).
# Sourced by lab/reth.sh and lab/zgs.sh after lab/lib/cargo.sh; the caller defines say/die, ROOT,
# NODEFLEET_CACHE and cache_key.
#
#   prebuilt_take ARTIFACT MEMBER KEY DEST
#       puts MEMBER of the artifact at DEST (the cache entry the source build with cache key KEY
#       would have made) and returns 0, or returns 1 when the source build should run instead.
#       In order:
#       - NODEFLEET_PREBUILT set and empty: the operator wants the source build (return 1);
#       - no artifact in the folder (NODEFLEET_PREBUILT, default ../shared/prebuilt): return 1;
#       - KEY is not the cache key pinned for the artifact (a build setting changed, so the
#         artifact is not what this build makes): return 1;
#       - the artifact's sha256, and then the binary's, must equal the digests pinned in
#         lab/toolchain/prebuilt.sha256. A mismatch is refused naming the file and both digests,
#         nothing is unpacked into the cache and nothing is run; it stops here (exit 1) unless
#         NODEFLEET_BUILD_FROM_SOURCE=1 asks for the source build instead, so that a tampered
#         artifact never turns silently into a 40-minute build either.
PREBUILT_PINS="$ROOT/lab/toolchain/prebuilt.sha256"

# The value pinned for NAME: a line "VALUE  NAME" (NAME has no spaces, VALUE may).
prebuilt_pin() { awk -v f="$1" '$1 !~ /^#/ && $NF == f { sub(/  [^ ]+$/, ""); print }' "$PREBUILT_PINS"; }

# from_cache_or_artifact SUBDIR MEMBER ARTIFACT: sets BIN to the binary and returns 0 when the cache
# has it (the entry of this machine's compiler, or the entry of the compiler the artifact was built
# with) or the artifact provides it (prebuilt_take); else sets BIN to the entry the source build is
# to fill and returns 1. The caller's cache_key [RUSTC-VERSION] names the entries: the artifact is
# taken whatever compiler this machine has (or lacks), but only for the build settings it was made
# with.
from_cache_or_artifact() {
    local subdir="$1" member="$2" artifact="$3" key akey
    key="$(cache_key)"
    BIN="$NODEFLEET_CACHE/$subdir/$key/$member"
    [ -x "$BIN" ] && return 0
    akey="$(cache_key "$(prebuilt_pin "$artifact#compiler")")"
    BIN="$NODEFLEET_CACHE/$subdir/$akey/$member"
    [ -x "$BIN" ] && return 0
    prebuilt_take "$artifact" "$member" "$akey" "$BIN" && return 0
    BIN="$NODEFLEET_CACHE/$subdir/$key/$member"
    return 1
}

prebuilt_dir() { printf '%s\n' "${NODEFLEET_PREBUILT-$ROOT/../shared/prebuilt}"; }

prebuilt_refuse() { # WHAT ACTUAL PINNED
    local msg="refusing the prebuilt artifact $1: its sha256 is $2, but $PREBUILT_PINS pins $3"
    if [ "${NODEFLEET_BUILD_FROM_SOURCE:-}" = 1 ]; then
        say "$msg; NODEFLEET_BUILD_FROM_SOURCE=1: building from source instead"
        return 1
    fi
    die "$msg. It is never run: put the pinned artifact back, or build from source with NODEFLEET_BUILD_FROM_SOURCE=1 (or NODEFLEET_PREBUILT= to skip artifacts)"
}

prebuilt_take() {
    local artifact="$1" member="$2" key="$3" dest="$4" dir file pinned pinned_bin pinned_key digest tmp
    dir="$(prebuilt_dir)"
    if [ -z "$dir" ]; then
        say "NODEFLEET_PREBUILT is empty: building from source"
        return 1
    fi
    file="$dir/$artifact"
    if [ ! -f "$file" ]; then
        say "no prebuilt artifact $file: building from source"
        return 1
    fi
    pinned="$(prebuilt_pin "$artifact")" pinned_bin="$(prebuilt_pin "$artifact/$member")" pinned_key="$(prebuilt_pin "$artifact#cache-key")"
    if [ -z "$pinned" ] || [ -z "$pinned_bin" ] || [ -z "$pinned_key" ]; then
        die "$PREBUILT_PINS pins no digest, binary digest or cache key for $artifact"
    fi
    if [ "$key" != "$pinned_key" ]; then
        say "the prebuilt artifact $artifact stands for cache key $pinned_key, this build's is $key (a build setting differs): building from source"
        return 1
    fi
    digest="$(sha256sum "$file" | cut -d' ' -f1)"
    [ "$digest" = "$pinned" ] || { prebuilt_refuse "$file" "$digest" "$pinned"; return 1; }
    mkdir -p "$(dirname "$dest")"
    tmp="$(mktemp -d "$(dirname "$dest")/.prebuilt.XXXXXX")"
    tar -xJf "$file" -C "$tmp" "$member" || { rm -rf "$tmp"; die "$file has no $member in it"; }
    digest="$(sha256sum "$tmp/$member" | cut -d' ' -f1)"
    if [ "$digest" != "$pinned_bin" ]; then
        rm -rf "$tmp"
        prebuilt_refuse "$file ($member inside it)" "$digest" "$pinned_bin" || return 1
    fi
    chmod 0755 "$tmp/$member"
    mv "$tmp/$member" "$dest"
    rm -rf "$tmp"
    say "prebuilt artifact $artifact (sha256 checked): $dest"
}
