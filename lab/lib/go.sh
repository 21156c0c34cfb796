# shellcheck shell=bash
# Go builds for nodefleet's scripts (sourced). Every tool built from Go is cached under
# $NODEFLEET_CACHE (default ~/.cache/nodefleet), keyed by what it is built from, so a second run,
# or a fresh clone on the same machine, builds nothing. The checksum database is not reachable
# here: the go.sum beside each go.mod (or inside a source archive) pins every dependency.
# shellcheck source=lab/lib/progress.sh
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh" # line_awk
NODEFLEET_CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"

# go_build PREFIX DIR OUT LDFLAGS TARGET [TAGS]: `go build -ldflags LDFLAGS TARGET` in module directory
# DIR to OUT (the order of LDFLAGS is in the binary's build id: keep a pinned build's), the
# compiler's output prefixed on stderr; fails unless OUT was made. Progress every 15 s on stderr:
# "PREFIX compiled N/M packages" (M: the target's dependencies, `go list -deps`; packages Go's
# build cache already holds are not compiled, so N may stop short of M).
go_build() {
    local prefix="$1" dir="$2" out="$3" ldflags="$4" target="$5" tags="${6:-}" total
    command -v go >/dev/null || { printf '%s Go 1.25 or newer is needed to build %s (https://go.dev/doc/install, or the golang-1.25 Debian backport)\n' "$prefix" "$(basename "$out")" >&2; return 1; }
    (
        cd "$dir" && export GOFLAGS=-mod=mod GOSUMDB=off GOPROXY="${GOPROXY:-https://proxy.golang.org}"
        printf '%s downloading the modules of %s\n' "$prefix" "$(basename "$out")" >&2
        total="$(go list -tags "$tags" -deps "$target" 2>/dev/null | wc -l)"
        go build -v -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out" "$target" 2>&1 |
            line_awk -v total="$total" -v start="$(date +%s)" -v prefix="$prefix" '
                /^[[:alnum:]_.~\/-]+$/ { n++; if (systime() - last >= 15) {
                    printf "%s compiled %d/%d packages, %d s\n", prefix, n, total, systime() - start; fflush(); last = systime() }; next }
                { print prefix " go: " $0; fflush() }
                END { printf "%s compiled %d/%d packages, %d s\n", prefix, n, total, systime() - start }' >&2
    )
    [ -x "$out" ] || { printf '%s the build in %s produced no %s\n' "$prefix" "$dir" "$(basename "$out")" >&2; return 1; }
}

# pinned_tool PREFIX MODULE_DIR PACKAGE NAME [LDFLAGS [ARTIFACT]]: prints the path of binary NAME
# built from PACKAGE at the versions pinned by MODULE_DIR/go.mod + go.sum, building it once, or
# taking it from the pinned prebuilt ARTIFACT (lab/lib/prebuilt.sh) when that stands for this build.
pinned_tool() {
    local prefix="$1" module="$2" package="$3" name="$4" ldflags="${5:-}" artifact="${6:-}" stamp bin work
    stamp="$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-16)"
    bin="$NODEFLEET_CACHE/$name/$stamp/$name"
    if [ ! -x "$bin" ] && [ -n "$artifact" ]; then
        prebuilt_take "$artifact" "$name" "$stamp" "$bin" >/dev/null || true
    fi
    if [ ! -x "$bin" ]; then
        printf '%s building %s from the Go module proxy (once; geth and the Pulumi CLI take about 5 minutes on 2 cores)\n' "$prefix" "$name" >&2
        work="$(mktemp -d)"
        cp "$module/go.mod" "$module/go.sum" "$work/"
        go_build "$prefix" "$work" "$work/$name" "-s -w${ldflags:+ $ldflags}" "$package" || { rm -rf "$work"; return 1; }
        mkdir -p "$(dirname "$bin")" && mv "$work/$name" "$bin.tmp" && mv "$bin.tmp" "$bin"
        rm -rf "$work"
    fi
    echo "$bin"
}
