#!/usr/bin/env bash
# Node software for the dev hosts, served the way real releases are: tarballs with the real
# release layouts plus a SHA256SUMS file, over HTTP from this runner (VMs reach it at
# http://10.0.2.2:8700). nodefleet installs them by URL + sha256 exactly as in production.
#
#   lab/artifacts.sh build    build into a cache outside the clone (seconds from the prebuilt artifacts)
#   lab/artifacts.sh serve    build if needed, then serve on 127.0.0.1:8700 (background)
#   lab/artifacts.sh stop     stop the server
#   lab/artifacts.sh dir      print the directory being served
#   lab/artifacts.sh geth     print the path of the geth binary (the prebuilt artifact's, or built)
#
# Contents (see lab/sim/README.md):
#   aristotle-v1.0.6.tar.gz  Aristotle-v1.0.6/bin/{geth,beacond,reth,0gchaind}, geth-genesis.json,
#                            0g-home/config/genesis.json, kzg-trusted-setup.json, jwt.hex (geth is
#                            the REAL go-ethereum, built from the Go module proxy; reth the REAL reth
#                            1.11.4, from lab/reth.sh; beacond the REAL BeaconKit beacond, from
#                            lab/beacond.sh, which the dev stack's validator runs; the genesis files
#                            are the dev validator's network, lab/sim/release/vmnet; the KZG setup
#                            is the real one; 0gchaind is the SIMULATOR, which no dev node runs)
#   zgs_node-v1.1.0.tar.gz   zgs_node-v1.1.0/{zgs_node, run/…}  (the REAL zgs_node 1.1.0, built from
#                            the pinned upstream archive by lab/zgs.sh; run/ is that archive's)
#   aztec-v4.1.2.tar.gz      aztec-v4.1.2/{bin/aztec, bin/aztec-up, lib/…}  (the REAL Aztec 4.1.2 CLI and
#                            node from the npm registry with its Node.js and C runtime, packed by
#                            lab/aztec/release.sh; its aztec-up is a STAND-IN: nothing is downloaded)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${NODEFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodefleet}"
PORT="${NODEFLEET_ARTIFACTS_PORT:-8700}"
PIDFILE="$ROOT/.state/artifacts/server.pid"
say() { printf '[artifacts] %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
source "$ROOT/lab/lib/go.sh"
# shellcheck source=lab/lib/prebuilt.sh
source "$ROOT/lab/lib/prebuilt.sh" # prebuilt_take: geth's pinned artifact

geth_bin() {
    pinned_tool "[artifacts]" "$ROOT/lab/toolchain/geth" github.com/ethereum/go-ethereum/cmd/geth geth "" geth-1.17.0-x86_64-linux-gnu.tar.xz
}

# A simulator as one executable file: a zip of lab/sim/nodefleet_sim with a fixed timestamp (so the
# same sources give the same bytes and the same sha256) behind a python3 shebang.
zipapp() {
    local module="$1" out="$2"
    python3 - "$ROOT/lab/sim" "$module" "$out" <<'PY'
import io, os, sys, zipfile
root, module, out = sys.argv[1:]
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    def add(name, data):
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, data)
    add("__main__.py", f"import sys\nfrom nodefleet_sim.{module} import main\nsys.exit(main())\n")
    pkg = os.path.join(root, "nodefleet_sim")
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                add(f"nodefleet_sim/{name}", f.read())
with open(out, "wb") as f:
    f.write(b"#!/usr/bin/env python3\n" + buf.getvalue())
os.chmod(out, 0o755)
PY
}

# Deterministic tarball of directory $2/$3 into $1. gzip -1: the 0G release (geth, reth, beacond:
# 175 MB) packs in 3 s, not the 24 s of -9, for an archive 11 % larger that the hosts fetch over
# loopback; a cold start waits for it.
pack() {
    tar --sort=name --mtime='2026-01-01 00:00:00Z' --owner=0 --group=0 --numeric-owner \
        -C "$2" -cf - "$3" | gzip -n -1 > "$1"
}

build_dir() {
    local geth reth zgs_node zgs_run beacond kzg aztec stamp out
    geth="$(geth_bin)"
    aztec="$(bash "$ROOT/lab/aztec.sh" archive)"   # a few minutes the first time (npm install, packing), then cached
    reth="$(bash "$ROOT/lab/reth.sh" path)"         # about 20 CPU-minutes the first time, then cached
    zgs_node="$(bash "$ROOT/lab/zgs.sh" path)"      # about 28 CPU-minutes the first time, then cached
    zgs_run="$(bash "$ROOT/lab/zgs.sh" run)"
    beacond="$(bash "$ROOT/lab/beacond.sh" path)" # the real consensus daemon (lab/beacond.sh)
    kzg="$(bash "$ROOT/lab/beacond.sh" kzg)"
    stamp="$( (sha256sum "$geth" "$reth" "$zgs_node" "$beacond" "$kzg"; echo "$aztec"; find "$zgs_run" -type f | sort | xargs sha256sum; { find "$ROOT/lab/sim/nodefleet_sim" -name '*.py'; find "$ROOT/lab/sim/release" -type f; } | sort | xargs cat) | sha256sum | cut -c1-16)"
    out="$CACHE/artifacts/$stamp"
    if [ -f "$out/SHA256SUMS" ]; then echo "$out"; return; fi
    local work
    work="$(mktemp -d)"
    local og="$work/Aristotle-v1.0.6"
    mkdir -p "$og/bin"
    cp "$geth" "$og/bin/geth"
    zipapp zerog "$og/bin/0gchaind"
    cp "$reth" "$og/bin/reth"
    cp "$beacond" "$og/bin/beacond"
    # The dev validator's network (lab/sim/release/vmnet): its execution genesis, its consensus
    # genesis where 0G's release keeps its home files, and the real KZG trusted setup beacond loads.
    cp "$ROOT/lab/sim/release/vmnet/eth-genesis.json" "$og/geth-genesis.json"
    mkdir -p "$og/0g-home/config"
    cp "$ROOT/lab/sim/release/vmnet/genesis.json" "$og/0g-home/config/genesis.json"
    cp "$kzg" "$og/kzg-trusted-setup.json"
    printf '%s\n' "$(printf 'd%.0s' $(seq 64))" > "$og/jwt.hex" # shipped by the real release; nodefleet makes its own
    local zgs="$work/zgs_node-v1.1.0"
    mkdir -p "$zgs/run"
    cp "$zgs_node" "$zgs/zgs_node"
    cp "$zgs_run"/* "$zgs/run/"
    mkdir -p "$work/out"
    pack "$work/out/aristotle-v1.0.6.tar.gz" "$work" Aristotle-v1.0.6
    pack "$work/out/zgs_node-v1.1.0.tar.gz" "$work" zgs_node-v1.1.0
    ln "$aztec" "$work/out/$(basename "$aztec")" 2>/dev/null || cp "$aztec" "$work/out/"
    (cd "$work/out" && sha256sum -- *.tar.gz > SHA256SUMS)
    mkdir -p "$(dirname "$out")" && rm -rf "$out" && mv "$work/out" "$out" && rm -rf "$work"
    say "built $out"
    echo "$out"
}

# Builds if needed and points .state/artifacts/current (the dev config's SHA256SUMS) at the result.
cmd_build() {
    local dir
    dir="$(build_dir)"
    mkdir -p "$ROOT/.state/artifacts"
    ln -sfn "$dir" "$ROOT/.state/artifacts/current"
    echo "$dir"
}

cmd_serve() {
    local dir
    dir="$(cmd_build)"
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        if [ "$(readlink -f "/proc/$(cat "$PIDFILE")/cwd")" = "$(readlink -f "$dir")" ]; then return; fi
        kill "$(cat "$PIDFILE")"
    fi
    (cd "$dir" && exec python3 -m http.server --bind 127.0.0.1 "$PORT" >/dev/null 2>&1) &
    echo $! > "$PIDFILE"
    for _ in $(seq 50); do
        curl -fsS -o /dev/null "http://127.0.0.1:$PORT/SHA256SUMS" 2>/dev/null && { say "serving $dir on 127.0.0.1:$PORT"; return; }
        sleep 0.1
    done
    say "the artifact server did not start"
    exit 1
}

cmd_stop() {
    if [ -f "$PIDFILE" ]; then kill "$(cat "$PIDFILE")" 2>/dev/null || true; rm -f "$PIDFILE"; fi
}

case "${1:-}" in
build) cmd_build >/dev/null ;;
serve) cmd_serve ;;
stop) cmd_stop ;;
dir) cmd_build ;;
geth) geth_bin ;;
*) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
