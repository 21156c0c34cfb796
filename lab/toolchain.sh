#!/usr/bin/env bash
# Provides the Pulumi toolchain without any Pulumi download, linked into .tools/bin:
#   pulumi                   the Pulumi CLI, built from the Go module proxy at the version pinned
#                            in lab/toolchain/go.mod (checksums pinned in go.sum) with the lab's
#                            patches to pkg/v3 (lab/toolchain/patches/pulumi-pkg), cached outside
#                            the clone;
#   pulumi-language-nodejs   Pulumi's Node.js language host, v3.248.0;
#   pulumi-resource-command  Pulumi's command provider, v1.2.1;
#   pulumi-resource-hcloud   with `lab/toolchain.sh hcloud` only: Pulumi's Hetzner Cloud provider,
#                            v1.39.1 (a Terraform-bridged provider of terraform-provider-hcloud
#                            v1.66.1), for the stacks and tests that plan Hetzner hosts.
# Each plugin comes, in this order, from:
#   1. the machine: on PATH, beside a `pulumi` on PATH, or in Pulumi's plugin cache
#      ($PULUMI_HOME/plugins, default ~/.pulumi/plugins), as a Pulumi install plus
#      `pulumi plugin install resource command v1.2.1` (and `resource hcloud 1.39.1`) leaves them
#      (the production route);
#   2. upstream source archives in NODEFLEET_UPSTREAM (default ../shared/upstream beside the clone;
#      an air-gapped operator points it at a mirror): each archive's sha256 must equal the digest
#      pinned in lab/toolchain/upstream.sha256 before anything is unpacked; the build is cached outside
#      the clone, keyed by those digests.
# With NODEFLEET_NO_SOURCE_BUILD set (a deploy job's: scripts/ci/install-pulumi.sh), what the
# machine and the artifacts do not provide stops it, named, instead of a build from source.
# A plugin that reports another version than the pinned one is not used. Idempotent: a second
# run only checks (about a second). Progress goes to stderr. `lab/toolchain.sh key` prints the
# cache key of the CLI this checkout builds (its prebuilt artifact must stand for it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lab/toolchain/versions.sh
source "$ROOT/lab/toolchain/versions.sh" # PULUMI_VERSION, COMMAND_VERSION, HCLOUD_VERSION, HCLOUD_TF_VERSION
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}/toolchain" # the plugins
UPSTREAM="${NODEFLEET_UPSTREAM:-$ROOT/../shared/upstream}"
PINS="$ROOT/lab/toolchain/upstream.sha256"
BIN="$ROOT/.tools/bin"
say() { printf '[toolchain] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
mkdir -p "$BIN" "$CACHE"

source "$ROOT/lab/lib/go.sh"
# shellcheck source=lab/lib/prebuilt.sh
source "$ROOT/lab/lib/prebuilt.sh" # prebuilt_take: the CLI's and the plugins' pinned artifacts

# `lab/toolchain.sh home DIR`: make DIR a Pulumi home that finds the toolchain's plugins (after a
# plain `lab/toolchain.sh` has provided them): its plugins directory becomes a link to the
# toolchain's, or, where it is a directory of its own (a runner's ~/.pulumi with other
# providers), the command provider (and the hcloud provider, when the toolchain has it) is
# installed into it with `pulumi plugin install --file`.
# install_plugin BINARY PROVIDER VERSION HOME: `pulumi plugin install --file BINARY` into
# HOME/plugins, unless the same binary is there already.
install_plugin() {
    local name="pulumi-resource-$2" dir="$4/plugins/resource-$2-v$3"
    cmp -s "$1" "$dir/$name" && return 0
    rm -rf "$dir" "$dir.lock" "$dir.partial"
    PULUMI_HOME="$4" PULUMI_SKIP_UPDATE_CHECK=1 "${PULUMI_INSTALL:-$ROOT/.tools/pulumi}/bin/pulumi" plugin install resource "$2" "$3" \
        --file "$1" 2>&1 | sed 's/^/[toolchain] pulumi: /' >&2
    cmp -s "$1" "$dir/$name" || die "pulumi plugin install did not place the $2 provider in $dir"
}
home_install() { # provider version home: a provider the toolchain has, into a home of its own
    local binary="$ROOT/.tools/pulumi/plugins/resource-$1-v$2/pulumi-resource-$1"
    [ -x "$binary" ] || return 0
    install_plugin "$binary" "$1" "$2" "$3"
}
if [ "${1:-}" = home ]; then
    [ -n "${2:-}" ] || die "usage: lab/toolchain.sh home DIR"
    plugins="$ROOT/.tools/pulumi/plugins"
    [ -d "$plugins" ] || die "run lab/toolchain.sh first: $plugins is missing"
    mkdir -p "$2"
    if [ "$(readlink "$2/plugins" 2>/dev/null)" = "$plugins" ]; then
        : # already so: left as it is (a pulumi of another run may be reading it)
    elif [ ! -e "$2/plugins" ] || [ -L "$2/plugins" ]; then
        ln -sfn "$plugins" "$2/plugins"
    else
        home_install command "$COMMAND_VERSION" "$2"
        home_install hcloud "$HCLOUD_VERSION" "$2"
    fi
    exit 0
fi
WITH_HCLOUD=0
KEY_ONLY=0
# `stock`: Pulumi as an operator installs it (no patch of the lab's), into .tools/stock/pulumi: the
# CLI and the command provider built from the same pinned sources with no patch, or their stock
# prebuilt artifacts; the language host is the same binary. Nothing of the default toolchain changes.
STOCK=0
for arg in "$@"; do
    case "$arg" in
    hcloud) WITH_HCLOUD=1 ;;
    key) KEY_ONLY=1 ;; # prints the CLI's cache key (what its prebuilt artifact must stand for), builds nothing
    stock) STOCK=1 ;;
    *) die "usage: lab/toolchain.sh [stock] [hcloud | key] | lab/toolchain.sh home DIR" ;;
    esac
done
# The prebuilt artifacts' names: the lab's carry "-lab".
FLAVOUR=-lab
[ "$STOCK" = 0 ] || FLAVOUR=""

# The patches the lab applies to the CLI's modules and to a plugin's upstream source
# (lab/toolchain/patches/NAME/*.patch, in order, `git apply` in the module's or archive's top
# directory), each documented in its own header and in docs/toolchain.md; their text is part of
# the binary's cache key.
patches_of() { # the stock toolchain's CLI and command provider take none
    if [ "$STOCK" = 1 ] && { [ "$1" = pulumi-pkg ] || [ "$1" = pulumi-resource-command ]; }; then return 0; fi
    find "$ROOT/lab/toolchain/patches/$1" -name '*.patch' 2>/dev/null | sort
}
apply_patches() { # name dir
    local p
    while IFS= read -r p; do
        say "patching $1: $(basename "$p")"
        (cd "$2" && git apply "$p") || die "the patch $p does not apply to $2"
    done < <(patches_of "$1")
}

# ---- the CLI ------------------------------------------------------------------------------------
# Built from the released pkg/v3 and sdk/v3 modules at the versions lab/toolchain/go.mod pins, with
# the patches of lab/toolchain/patches/pulumi-pkg applied to a copy of pkg/v3 (the state saved once
# for the steps that finish together, secrets encrypted once per operation, not at every save:
# docs/toolchain.md); the patched packages' tests run before the build. Cached outside the clone,
# keyed by go.mod, go.sum and the patches.
cli_module_dir() { # module@version: its directory in the module cache, downloaded if need be
    (cd "$1" && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json "$2" |
        node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const m=JSON.parse(s);if(!m.Dir)process.exit(1);console.log(m.Dir)})')
}
build_cli() { # out
    local work
    work="$(mktemp -d)"
    cp "$ROOT/lab/toolchain/go.mod" "$ROOT/lab/toolchain/go.sum" "$work/"
    cp -r "$(cli_module_dir "$work" "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION")" "$work/pkg" || die "the module pkg/v3@$PULUMI_VERSION could not be downloaded"
    cp -r "$(cli_module_dir "$work" "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION")" "$work/sdk" || die "the module sdk/v3@$PULUMI_VERSION could not be downloaded"
    chmod -R u+w "$work/pkg" "$work/sdk"
    apply_patches pulumi-pkg "$work/pkg"
    # pkg's own go.mod points sdk/v3 at ../sdk: the released copy beside it.
    say "testing the patched package"
    (cd "$work/pkg" && GOFLAGS=-mod=mod GOSUMDB=off go test ./backend/ ./backend/diy/ ./resource/stack/ 2>&1 |
        sed 's/^/[toolchain] go test: /' >&2; exit "${PIPESTATUS[0]}") || die "the patched pkg/v3 fails its tests"
    (cd "$work" && go mod edit -replace=github.com/pulumi/pulumi/pkg/v3=./pkg)
    go_build "[toolchain]" "$work" "$work/pulumi" "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
        github.com/pulumi/pulumi/pkg/v3/cmd/pulumi || die "the Pulumi CLI did not build"
    mv "$work/pulumi" "$1.tmp" && mv "$1.tmp" "$1"
    rm -rf "$work"
}
mapfile -t cli_patches < <(patches_of pulumi-pkg)
cli_stamp="$(cat "$ROOT/lab/toolchain/go.mod" "$ROOT/lab/toolchain/go.sum" "${cli_patches[@]}" | sha256sum | cut -c1-16)"
[ "$KEY_ONLY" = 0 ] || { echo "$cli_stamp"; exit 0; }
cli="$NODEFLEET_CACHE/pulumi/$cli_stamp/pulumi"
if [ ! -x "$cli" ]; then
    prebuilt_take "pulumi-$PULUMI_VERSION$FLAVOUR-x86_64-linux-gnu.tar.xz" pulumi "$cli_stamp" "$cli" || true
fi
no_source_build() { # what
    [ -z "${NODEFLEET_NO_SOURCE_BUILD:-}" ] || die "$1 is neither on this machine nor a pinned prebuilt artifact in ${NODEFLEET_PREBUILT:-$ROOT/../shared/prebuilt}, and NODEFLEET_NO_SOURCE_BUILD forbids building it here: put its artifact there (the recipe: ../shared/prebuilt/README.md; its pins: lab/toolchain/prebuilt.sha256)"
}
if [ ! -x "$cli" ]; then
    no_source_build "the Pulumi CLI $PULUMI_VERSION$FLAVOUR (cache key $cli_stamp)"
    say "building the Pulumi CLI $PULUMI_VERSION from the Go module proxy, $([ "$STOCK" = 1 ] && echo "with no patch" || echo patched) (once; about 5 minutes on 2 cores)"
    mkdir -p "$(dirname "$cli")"
    build_cli "$cli"
fi

# ---- the plugins --------------------------------------------------------------------------------
# The version a plugin binary reports: the language host answers `--version`; the provider has no
# such flag, but the schema it serves (`pulumi package get-schema <binary>`) carries its version.
reported_version() {
    case "$(basename "$1")" in
    pulumi-language-nodejs) timeout 10 "$1" --version 2>/dev/null | head -1 | tr -d '[:space:]' || true ;;
    *) PULUMI_HOME="$CACHE/pulumi-home" PULUMI_SKIP_UPDATE_CHECK=1 timeout 30 "$cli" package get-schema "$1" 2>/dev/null |
        node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{console.log(JSON.parse(s).version??"")}catch{console.log("")}})' || true ;;
    esac
}

declare -A REPORTED # plugin name -> the version its binary reported when it was taken
declare -A PROVIDED # plugin name -> the binary taken

# Whether a plugin binary reports the pinned version (with or without a leading v); says why not.
reports_version() { # binary version
    local got
    got="$(reported_version "$1")"
    case "$got" in
    "$2" | "v$2") REPORTED[$(basename "$1")]="$got"; return 0 ;;
    *) say "not using $1: it reports version '$got', nodefleet pins $2"; return 1 ;;
    esac
}

# A plugin already on this machine, at the pinned version: sets FOUND to its path, or to nothing.
on_machine() { # binary version cache-dir-name
    local name="$1" version="$2" kind_dir="$3" candidate pulumi_on_path
    FOUND=""
    local -a candidates=()
    candidate="$(PATH="${PATH//$BIN:/}" command -v "$name" || true)"
    [ -n "$candidate" ] && candidates+=("$candidate")
    pulumi_on_path="$(PATH="${PATH//$BIN:/}" command -v pulumi || true)"
    [ -n "$pulumi_on_path" ] && candidates+=("$(dirname "$(readlink -f "$pulumi_on_path")")/$name")
    [ -n "$kind_dir" ] && candidates+=("${PULUMI_HOME:-$HOME/.pulumi}/plugins/$kind_dir/$name")
    for candidate in "${candidates[@]}"; do
        [ -x "$candidate" ] || continue
        if reports_version "$candidate" "$version"; then FOUND="$candidate"; return 0; fi
    done
}

# The sha256 of an upstream archive as pinned in the repository (not as the mirror says).
pinned_digest() { awk -v f="$1" '$2 == f { print $1 }' "$PINS"; }

# Prints the path of an upstream archive once its sha256 is the pinned one; stops otherwise.
verified_archive() { # archive
    local archive="$UPSTREAM/$1" want got
    want="$(pinned_digest "$1")"
    [ -n "$want" ] || die "no digest pinned for $1 in $PINS"
    [ -f "$archive" ] || die "$archive is missing"
    got="$(sha256sum "$archive" | cut -d' ' -f1)"
    [ "$got" = "$want" ] || die "$archive has sha256 $got, but $PINS pins $want: refusing to build from it"
    echo "$archive"
}

# Unpacks a verified archive into a fresh temp dir and prints that dir.
unpack_verified() { # archive
    local archive work
    archive="$(verified_archive "$1")"
    work="$(mktemp -d)"
    tar -xzf "$archive" -C "$work"
    echo "$work"
}

build_language_host() { # out
    local work src
    work="$(unpack_verified "pulumi-${PULUMI_VERSION#v}-language-nodejs.tar.gz")"
    src="$work/pulumi-${PULUMI_VERSION#v}/sdk/nodejs/cmd/pulumi-language-nodejs"
    # In the monorepo, pkg/v3 and sdk/v3 point at ../../../../pkg and ../../..; outside it they are
    # the released modules of the same version (the clipboard replace stays).
    (cd "$src" && rm -f ./*_test.go && go mod edit \
        -dropreplace=github.com/pulumi/pulumi/pkg/v3 -dropreplace=github.com/pulumi/pulumi/sdk/v3 \
        -require=github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION -require=github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION)
    go_build "[toolchain]" "$src" "$1" "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" .
    rm -rf "$work"
}

build_command_provider() { # out
    local work
    work="$(unpack_verified "pulumi-command-$COMMAND_VERSION-provider.tar.gz")"
    apply_patches pulumi-resource-command "$work/pulumi-command-$COMMAND_VERSION"
    go_build "[toolchain]" "$work/pulumi-command-$COMMAND_VERSION/provider" "$1" \
        "-s -w -X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$COMMAND_VERSION" ./cmd/pulumi-resource-command
    rm -rf "$work"
}

# pulumi-hcloud v1.39.1 bridges terraform-provider-hcloud v1.66.1, which the Go module proxy does not
# serve: its go.mod is pointed at the second archive's tree. The provider's schema is embedded at
# build time with its version set (upstream's `go generate`: cmd/pulumi-resource-hcloud/generate.go).
build_hcloud_provider() { # out
    local work src
    work="$(unpack_verified "pulumi-hcloud-$HCLOUD_VERSION-provider.tar.gz")"
    tar -xzf "$(verified_archive "terraform-provider-hcloud-$HCLOUD_TF_VERSION.tar.gz")" -C "$work"
    src="$work/pulumi-hcloud-$HCLOUD_VERSION/provider"
    (cd "$src" && go mod edit -replace="github.com/hetznercloud/terraform-provider-hcloud=$work/terraform-provider-hcloud-$HCLOUD_TF_VERSION")
    (cd "$src/cmd/pulumi-resource-hcloud" && VERSION="$HCLOUD_VERSION" GOFLAGS=-mod=mod GOSUMDB=off go run ./generate.go 2>&1 | sed 's/^/[toolchain] go: /' >&2)
    [ -s "$src/cmd/pulumi-resource-hcloud/schema-embed.json" ] || die "the hcloud provider's schema was not generated"
    go_build "[toolchain]" "$src" "$1" "-s -w -X github.com/pulumi/pulumi-hcloud/provider/pkg/version.Version=$HCLOUD_VERSION" ./cmd/pulumi-resource-hcloud
    rm -rf "$work"
}

provide() { # binary version plugin-cache-dir builder prebuilt-artifact archive [second archive]
    local name="$1" version="$2" artifact="$5" found key out
    set -- "$1" "$2" "$3" "$4" "${@:6}" # $5 and $6: the upstream archives
    on_machine "$name" "$version" "$3"
    found="$FOUND"
    if [ -n "$found" ]; then
        PROVIDED[$name]="$found"
        say "$name $version: the machine's ($found)"
        return
    fi
    # The cache key: the upstream archives' pinned digests and the lab's patches (as the build's).
    key="$(pinned_digest "$5" | cut -c1-16)"
    [ -z "${6:-}" ] || key="$( (pinned_digest "$5"; pinned_digest "$6") | sha256sum | cut -c1-16)"
    if [ -n "$(patches_of "$name")" ]; then
        key="$( (echo "$key"; patches_of "$name" | while IFS= read -r p; do cat "$p"; done) | sha256sum | cut -c1-16)"
    fi
    out="$CACHE/$name-$version-$key/$name"
    local when="cached"
    if [ ! -x "$out" ] && prebuilt_take "$artifact" "$name" "$key" "$out"; then when="the pinned prebuilt artifact"; fi
    [ -x "$out" ] || no_source_build "$name $version (cache key $key)"
    if [ ! -x "$out" ] && [ ! -f "$UPSTREAM/$5" ]; then
        local route="install Pulumi $PULUMI_VERSION (it ships the language host) and run \`pulumi plugin install resource command v$COMMAND_VERSION\`"
        [ "$name" = pulumi-resource-hcloud ] && route="run \`pulumi plugin install resource hcloud v$HCLOUD_VERSION\`"
        die "$name $version is not on this machine and $UPSTREAM/$5 is missing. Either $route, or set NODEFLEET_UPSTREAM to a directory holding the upstream source archives pinned in lab/toolchain/upstream.sha256"
    fi
    if [ ! -x "$out" ]; then
        when="built now"
        say "building $name $version from $UPSTREAM/$5${6:+ and $6} (sha256 checked; 1-3 minutes on 2 cores, once)"
        mkdir -p "$(dirname "$out")"
        "$4" "$out.tmp"
        mv "$out.tmp" "$out"
    fi
    reports_version "$out" "$version" || die "the build $out does not report the pinned version"
    PROVIDED[$name]="$out"
    say "$name $version: the upstream source's build ($when: $out)"
}

provide pulumi-language-nodejs "$PULUMI_VERSION" "" build_language_host "pulumi-language-nodejs-$PULUMI_VERSION-x86_64-linux-gnu.tar.xz" \
    "pulumi-${PULUMI_VERSION#v}-language-nodejs.tar.gz"
provide pulumi-resource-command "$COMMAND_VERSION" "resource-command-v$COMMAND_VERSION" build_command_provider "pulumi-resource-command-v$COMMAND_VERSION$FLAVOUR-x86_64-linux-gnu.tar.xz" \
    "pulumi-command-$COMMAND_VERSION-provider.tar.gz"
if [ "$WITH_HCLOUD" = 1 ]; then
    provide pulumi-resource-hcloud "$HCLOUD_VERSION" "resource-hcloud-v$HCLOUD_VERSION" build_hcloud_provider "pulumi-resource-hcloud-v$HCLOUD_VERSION-x86_64-linux-gnu.tar.xz" \
        "pulumi-hcloud-$HCLOUD_VERSION-provider.tar.gz" "terraform-provider-hcloud-$HCLOUD_TF_VERSION.tar.gz"
fi
# ---- where Pulumi looks for them -----------------------------------------------------------------
# A plugin found on PATH makes every pulumi run warn "using … from $PATH" (five warnings an up), so
# none is on PATH. As a Pulumi release lays them out: .tools/pulumi/bin holds the CLI (a hard link
# of the cached build: Pulumi looks for its bundled language host beside its own resolved path) and
# the language host; the command provider is installed by `pulumi plugin install --file` into
# .tools/pulumi/plugins, which every Pulumi home of nodefleet's links to as its plugins directory
# (`lab/toolchain.sh home DIR`: scripts/dev.sh, the cli tier's scratch projects).
PULUMI_INSTALL="$ROOT/.tools/pulumi"
[ "$STOCK" = 0 ] || PULUMI_INSTALL="$ROOT/.tools/stock/pulumi"
mkdir -p "$PULUMI_INSTALL/bin"
# Each file is made under a name of this run's and renamed into place: two runs in one checkout at
# once (the pipeline's shards, side by side) each see the old file or the new one, never neither.
if ! [ "$PULUMI_INSTALL/bin/pulumi" -ef "$cli" ]; then
    ln -f "$cli" "$PULUMI_INSTALL/bin/.pulumi.$$" 2>/dev/null || cp "$cli" "$PULUMI_INSTALL/bin/.pulumi.$$"
    mv -f "$PULUMI_INSTALL/bin/.pulumi.$$" "$PULUMI_INSTALL/bin/pulumi"
    cmp -s "$cli" "$PULUMI_INSTALL/bin/pulumi" || die "could not place the CLI at $PULUMI_INSTALL/bin/pulumi"
fi
ln -sfn "${PROVIDED[pulumi-language-nodejs]}" "$PULUMI_INSTALL/bin/pulumi-language-nodejs"
# Dynamic providers (nodefleet's HostDrift) run through the launcher a Pulumi release bundles there.
if ! cmp -s "$ROOT/lab/toolchain/pulumi-resource-pulumi-nodejs" "$PULUMI_INSTALL/bin/pulumi-resource-pulumi-nodejs"; then
    install -m 0755 "$ROOT/lab/toolchain/pulumi-resource-pulumi-nodejs" "$PULUMI_INSTALL/bin/.pulumi-resource-pulumi-nodejs.$$"
    mv -f "$PULUMI_INSTALL/bin/.pulumi-resource-pulumi-nodejs.$$" "$PULUMI_INSTALL/bin/pulumi-resource-pulumi-nodejs"
fi
if [ "$STOCK" = 0 ]; then
    ln -sfn "$PULUMI_INSTALL/bin/pulumi" "$BIN/pulumi"
    rm -f "$BIN/pulumi-language-nodejs" "$BIN/pulumi-resource-command" # the old layout's PATH links
fi
install_plugin "${PROVIDED[pulumi-resource-command]}" command "$COMMAND_VERSION" "$PULUMI_INSTALL"
[ "$WITH_HCLOUD" = 0 ] || install_plugin "${PROVIDED[pulumi-resource-hcloud]}" hcloud "$HCLOUD_VERSION" "$PULUMI_INSTALL"

[ "$STOCK" = 0 ] || say "the stock toolchain (no patch): $PULUMI_INSTALL/bin/pulumi"
say "pulumi $("$PULUMI_INSTALL/bin/pulumi" version), language host ${REPORTED[pulumi-language-nodejs]}, command provider ${REPORTED[pulumi-resource-command]}${REPORTED[pulumi-resource-hcloud]:+, hcloud provider ${REPORTED[pulumi-resource-hcloud]}}"
