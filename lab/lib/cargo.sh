# shellcheck shell=bash
# Shared by lab/reth.sh and lab/zgs.sh: node software built once from a pinned upstream source
# archive with cargo. Sourced; the caller sets TAG (the log prefix, e.g. "reth") and PINS (the file
# of pinned sha256 digests), and defines die/say.
# shellcheck source=lab/lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
# shellcheck source=lab/lib/progress.sh
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh" # line_awk
#
#   pinned_digest ARCHIVE            the digest PINS pins for ARCHIVE (empty if none)
#   verify_archive DIR ARCHIVE       refuse to go on unless DIR/ARCHIVE has the pinned digest
#   build_deps [DEBIAN-PACKAGE:PROBE ...]
#                                    install what the build lacks (libclang-dev and a C compiler
#                                    always; each extra package when its probe command is missing);
#                                    as root, once
#   cpu_used                         CPU_USED: the CPU time of the build so far (user + system)
#   cargo_build_progress TOTAL ARGS...
#                                    run `cargo ARGS...` printing "[TAG] compiled N/TOTAL crates, S s"
#                                    every 15 s on stderr, and cargo's other lines prefixed; its
#                                    warnings (the upstream code's lints, by the hundred) left out

# The release profile, changed for build time on 2 cores (the binaries serve the lab, not production):
# optimisation level 1 instead of 3 (most of a release build's CPU is LLVM's optimisation passes,
# and C/C++ dependencies built by the cc crate follow it: -O1), LTO off, 16 codegen units, no debug
# info, symbols stripped. Debug assertions stay off, as in every release build: the code that runs is
# the release's, only slower to run; no figure the lab measures is a production speed.
PROFILE_ENV=(CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
    CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_INCREMENTAL=false CARGO_PROFILE_RELEASE_STRIP=true)

pinned_digest() { awk -v f="$1" '$2 == f { print $1 }' "$PINS"; }

verify_archive() {
    local digest pinned
    pinned="$(pinned_digest "$2")"
    [ -n "$pinned" ] || die "no digest pinned for $2 in $PINS"
    [ -f "$1/$2" ] || die "$1/$2 is missing (the upstream source archives: ../shared/upstream)"
    digest="$(sha256sum "$1/$2" | cut -d' ' -f1)"
    [ "$digest" = "$pinned" ] || die "$1/$2 has sha256 $digest, but $PINS pins $pinned: refusing to build from it"
}

build_deps() {
    local missing=() dep
    [ -n "$(find /usr/lib -regex '.*/libclang\(-[0-9.]*\)?\.so[.0-9]*' -print -quit 2>/dev/null)" ] || missing+=(libclang-dev)
    command -v cc >/dev/null || missing+=(build-essential)
    for dep in "$@"; do command -v "${dep#*:}" >/dev/null || missing+=("${dep%%:*}"); done
    command -v cargo >/dev/null || die "cargo (Rust 1.88 or newer) is needed to build $TAG: https://rustup.rs, or Debian's cargo"
    [ "${#missing[@]}" -eq 0 ] && return
    [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: run as root or apt-get install ${missing[*]}"
    say "installing ${missing[*]} (apt-get)"
    apt_install "${missing[@]}"
}

# Sets CPU_USED to the CPU time this shell's finished children used (the build's, when called after
# it), e.g. "1607 s user + 150 s system": bash's `times`, second line. Call it plainly, not in $(…):
# a child shell has no children of its own yet.
cpu_used() {
    local f
    f="$(mktemp)"
    times >"$f"
    # shellcheck disable=SC2034 # the caller reads it
    CPU_USED="$(tail -1 "$f" | awk '{ split($0, t, " "); for (i = 1; i <= 2; i++) { split(t[i], p, /[ms]/); s[i] = p[1] * 60 + p[2] }
        printf "%d s user + %d s system", s[1], s[2] }')"
    rm -f "$f"
}

# cargo's own progress bar needs a terminal; its "Compiling" lines, counted, are the progress here.
cargo_build_progress() {
    local total="$1"
    shift
    env "${PROFILE_ENV[@]}" CARGO_TERM_COLOR=never CARGO_TERM_PROGRESS_WHEN=never cargo "$@" 2>&1 |
        line_awk -v total="$total" -v start="$(date +%s)" -v tag="$TAG" '
            /^ *Compiling / { n++; if (systime() - last >= 15 || n == total) {
                printf "[%s] compiled %d/%d crates, %d s\n", tag, n, total, systime() - start; fflush(); last = systime() } ; next }
            /^ *Finished/ { next }
            /^warning/ { block = "w" } /^error/ { block = "e" } /^$/ { was = block; block = ""; if (was == "w") next }
            block != "w" { print "[" tag "] cargo: " $0; fflush() }' >&2
}
