#!/usr/bin/env python3
"""Downtime benchmark of the geth -> reth switch, both modes, on the real reth, measured side by
side in one run on this machine:

    bench_switch.py [--gb 3] [--blocks 3000] [--extend-to N] [--dir DIR] [--reth PATH]

--blocks: the chain real geth made (lab/devchain.sh chain, cached); --extend-to N: that chain, then
empty blocks up to N made by extend_chain (real geth and real reth check each one on import): a
long chain without hours of block making.

Downtime is the time from stopping 0gchaind to its first `Committed state` on reth.

Ordered switch (docs/spec.md §4.5): the work it cannot do without is the export, the import and the one
backup copy; everything else is overhead (target: <= 60 s). The run:

- a real geth datadir: real geth (lab/artifacts.sh) imports a chain of --blocks real blocks
  (lab/devchain.sh chain: made by real geth, cached), padded with --gb GB of synthetic files of
  realistic sizes (2 MB table files and 256 MB freezer files, in a directory geth never opens) so
  the datadir weighs what a few GB of chain would; geth runs with the 0gchaind simulator
  committing on it;
- the downtime path, in the switch's order: 0gchaind and geth stopped (processes here, not
  systemd units); the host tool's own functions for the backup (switch.step_backup), the export's
  verification by the walk that shows its progress (jobs.count_blocks, chain.verify_export) around
  a real `geth export`, the deletion (switch.step_delete_geth) and the trim (switch.step_trim);
  the real reth's `init` and `import` (lab/reth.sh, built from the pinned upstream source); reth
  started with its check of the head's hash (what step 10 compares); reth and 0gchaind started,
  until 0gchaind commits;
- beside it, in the same run: `cp -a` of the datadir, one SHA-256 pass over it and one full walk
  of the export: what the previous tool read on top (4 hash passes of the datadir: the copy and
  the source at step 4, the backup again at steps 5 and 6; 3 walks of the export: steps 5, 6 and
  the trim).

Low-downtime switch (lowDowntime: true), on a second geth datadir with the same chain and its own
0gchaind: while both run, the live export over geth's IPC (admin_exportChain), its verification,
reth's init, the trim and the import (not downtime; 0gchaind commits on geth meanwhile); then the
cutover: 0gchaind and geth stopped, the blocks made since exported by `geth export`, verified,
imported, the head's hash checked on reth, reth and 0gchaind started, until 0gchaind commits.
Target: downtime <= 5 min whatever the chain's length (it grows with the blocks made during the
live import, not with the chain).

Not measured here: systemd, SSH and Pulumi between the steps (the dev VMs' switch report gives
the downtime with them: the stack output validatorSwitch.<node>.downtime). Data to stdout,
progress to stderr. Exits 1 when a target is missed.
"""
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTFILES = os.path.join(ROOT, "hostfiles")
SIM = os.path.join(ROOT, "lab", "sim")
GENESIS = os.path.join(SIM, "release", "geth-genesis.json")
sys.path.insert(0, HOSTFILES)
sys.path.insert(0, SIM)
from nodefleet_rpc import block_hash, block_number  # noqa: E402
from nodefleet_sim import common  # noqa: E402
from tests.support import consensus_home, free_port  # noqa: E402
from zgvalidator import chain, jobs, switch  # noqa: E402
from zgvalidator.node import Validator  # noqa: E402

OVERHEAD_TARGET = 60.0
LOW_DOWNTIME_TARGET = 300.0
RETH_LOG = ["--color", "never", "--log.file.max-files", "0"]  # as nodefleet's unit and host tool run it


def say(msg):
    print(f"[bench_switch] {msg}", file=sys.stderr, flush=True)


def lab(*args):
    return subprocess.run(["bash", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def filler(directory, gb):
    """Synthetic files of realistic sizes: 70 % as 2 MB table files, 30 % as 256 MB freezer files."""
    os.makedirs(directory)
    chunk = os.urandom(1 << 20)
    total, tables, freezer = gb << 30, 0, 0
    plan = [("table", 2 << 20)] * int(total * 0.7 // (2 << 20)) + [("freezer", 256 << 20)] * int(total * 0.3 // (256 << 20))
    for i, (kind, size) in enumerate(plan):
        with open(os.path.join(directory, f"{i:06d}.{'ldb' if kind == 'table' else 'cdat'}"), "wb") as f:
            for _ in range(size >> 20):
                f.write(chunk)
        tables += kind == "table"
        freezer += kind == "freezer"
    return tables, freezer


def extend_chain(rlp, total, out):
    """The real chain (rlp: blocks 1..N made by real geth), then empty blocks N+1..total made here
    the way geth makes them on this chain (post-merge, Cancun): each header the parent's with
    parentHash, number, timestamp (+1 s), prevRandao and parentBeaconBlockRoot new and the base fee
    of EIP-1559 for an empty parent; no transactions, withdrawals or blobs, so the state root stays
    the parent's. Real geth and real reth check every block when they import it."""
    with open(rlp, "rb") as f:
        data = f.read()
    blocks, pos = [], 0
    while pos < len(data):
        b = common.Block(data, pos, len(data))
        blocks.append(b)
        pos = b.offset + len(b.raw)
    last = blocks[-1]
    kind, s, e = common.rlp_item(last.raw, 0)
    parts = common.rlp_list_items(last.raw, s, e)
    _, hs, he, _ = parts[0]
    header = [last.raw[a:b] for _k, a, b, _r in common.rlp_list_items(last.raw, hs, he)]
    if len(header) != 20 or last.tx_count:  # Cancun: 20 fields; the real chain's blocks are empty
        raise SystemExit(f"block {last.number}: not an empty Cancun block ({len(header)} header fields)")
    num = lambda v: int.from_bytes(v, "big")  # noqa: E731
    parent_hash, number, ts, base_fee = last.hash, last.number, num(header[11]), num(header[15])
    gas_limit = num(header[9])
    with open(out, "wb") as f:
        f.write(data)
        for n in range(number + 1, total + 1):
            base_fee -= base_fee * (gas_limit // 2) // (gas_limit // 2) // 8  # EIP-1559, gas used 0
            ts += 1
            header[0] = parent_hash
            header[8], header[11], header[15] = n.to_bytes((n.bit_length() + 7) // 8, "big"), ts.to_bytes(8, "big").lstrip(b"\0"), \
                base_fee.to_bytes((base_fee.bit_length() + 7) // 8, "big")
            header[13] = common.keccak256(b"randao" + header[8])
            header[19] = common.keccak256(b"beacon" + header[8])
            encoded = common.rlp_encode(header)
            parent_hash = common.keccak256(encoded)
            f.write(common.rlp_encode([header, [], [], []]))
    return out


def tree_sha256(path):
    """What the previous tool did to each tree, once: a SHA-256 of every file."""
    for root, _dirs, files in os.walk(path):
        for name in files:
            h = hashlib.sha256()
            with open(os.path.join(root, name), "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)


def until(f, timeout, every=0.1):
    """f's first truthy value; an endpoint still starting (any error) counts as not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = f()
            if value:
                return value
        except Exception:  # noqa: BLE001 - starting up
            pass
        time.sleep(every)
    raise SystemExit(f"timed out after {timeout} s")


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Reth:
    """The real reth as the switch runs it: init, import and node on one datadir."""

    def __init__(self, binary, datadir, work, el_flags, p2p):
        self.binary, self.datadir, self.work, self.el_flags, self.p2p = binary, datadir, work, el_flags, p2p
        self.log = open(os.path.join(work, f"reth-{os.path.basename(datadir)}.log"), "a")

    def run(self, command, *rest):
        done = subprocess.run([self.binary, command, "--chain", GENESIS, "--datadir", self.datadir, *RETH_LOG, *rest],
                              stdout=self.log, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise SystemExit(f"reth {command} failed (exit {done.returncode}): see {self.log.name}")

    def node(self, procs, url):
        p = subprocess.Popen([self.binary, "node", "--chain", GENESIS, "--datadir", self.datadir, "--ipcpath", os.path.join(self.work, "reth.ipc"),
                              *self.el_flags, "--engine.persistence-threshold", "0", "--engine.memory-block-buffer-target", "0",
                              "--port", str(self.p2p), "--discovery.port", str(self.p2p), *RETH_LOG], stdout=self.log, stderr=subprocess.STDOUT)
        procs.append(p)
        until(lambda: common.rpc_call(url, "eth_blockNumber"), timeout=60)
        return p


def settings_for(root, ports, reth):
    s = {
        "node": "bench", "operator": "root", "dataRoot": root, "gethDir": os.path.join(root, "geth"),
        "rethDir": os.path.join(root, "reth"), "consensusHome": os.path.join(root, "0gchaind"),
        "etcDir": os.path.join(root, "etc"), "releaseDir": os.path.join(root, "release"),
        "rethBinary": reth, "genesis": GENESIS, "ports": ports,
        "services": {"geth": "geth-bench.service", "reth": "reth-bench.service", "consensus": "0gchaind-bench.service"},
    }
    os.makedirs(s["etcDir"])
    settings = os.path.join(root, "settings.json")
    with open(settings, "w") as f:
        json.dump(s, f)
    return s, Validator(settings)


class Node:
    """A validator on this machine: real geth on --blocks real blocks and the 0gchaind simulator committing on it."""

    def __init__(self, work, name, geth, rlp, blocks, reth_binary, procs):
        self.work, self.geth, self.procs = work, geth, procs
        root = os.path.join(work, name)
        ports = {"http": free_port(), "engine": free_port(), "p2p": free_port(), "cometRpc": free_port()}
        self.s, self.v = settings_for(root, ports, reth_binary)
        self.jwt = os.path.join(root, "jwt.hex")
        with open(self.jwt, "w") as f:
            f.write(os.urandom(32).hex())
        self.url = f"http://127.0.0.1:{ports['http']}"
        self.el_flags = ["--http", "--http.addr", "127.0.0.1", "--http.port", str(ports["http"]), "--authrpc.addr", "127.0.0.1",
                         "--authrpc.port", str(ports["engine"]), "--authrpc.jwtsecret", self.jwt]
        self.reth = Reth(reth_binary, self.s["rethDir"], root, self.el_flags, ports["p2p"])
        self.cl_log = os.path.join(root, "0gchaind.log")
        subprocess.run([geth, "init", "--datadir", self.s["gethDir"], GENESIS], check=True, capture_output=True)
        subprocess.run([geth, "import", "--datadir", self.s["gethDir"], rlp], check=True, capture_output=True)
        consensus_home(self.s["consensusHome"], ports["engine"], self.jwt, ports["cometRpc"], validator_key='{"pub_key": {"value": "YmVuY2g="}}')
        self.blocks = blocks

    def start_geth(self):
        log = open(os.path.join(self.work, f"geth-{os.path.basename(self.s['dataRoot'])}.log"), "a")
        self.gp = subprocess.Popen([self.geth, "--datadir", self.s["gethDir"], "--networkid", "16661", "--syncmode", "full", "--nodiscover",
                                    "--maxpeers", "0", "--port", "0", *self.el_flags], stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(self.gp)
        until(lambda: block_number(self.url) >= self.blocks, timeout=120)

    def start_consensus(self):
        mark = os.path.getsize(self.cl_log) if os.path.exists(self.cl_log) else 0
        self.cp = subprocess.Popen([sys.executable, "-m", "nodefleet_sim.zerog", "start", "--home", self.s["consensusHome"]], cwd=SIM,
                                   env=dict(os.environ, NODEFLEET_SIM_BLOCK_TIME="1", PYTHONPATH=SIM),
                                   stdout=open(self.cl_log, "a"), stderr=subprocess.STDOUT)
        self.procs.append(self.cp)
        return mark

    def run_validator(self):
        """geth, then 0gchaind, until it commits past geth's chain (it first commits geth's blocks)."""
        self.start_geth()
        self.start_consensus()
        until(lambda: block_number(self.url) >= self.blocks + 3, timeout=1800)

    def stop_validator(self):
        """The downtime's start in both modes: 0gchaind stopped, geth's final head and its hash, geth stopped."""
        stop(self.cp)
        head = block_number(self.url)
        want = block_hash(self.url, head)
        stop(self.gp)
        return head, want

    def committed_since(self, mark):
        with open(self.cl_log) as f:
            f.seek(mark)
            return "Committed state" in f.read()

    def start_reth_then_consensus(self):
        """Steps 13-14: reth, then 0gchaind, until its first commit on reth."""
        self.reth.node(self.procs, self.url)
        mark = self.start_consensus()
        until(lambda: self.committed_since(mark), timeout=120, every=0.05)

    def compare(self, head, want):
        """Step 10: reth holds the head, with geth's hash."""
        p = self.reth.node(self.procs, self.url)
        got = block_hash(self.url, head)
        if got != want:
            raise SystemExit(f"block {head}: reth has {got}, geth had {want}")
        stop(p)

    def export(self, argv, path, first, last):
        """An export job as jobs.attach watches it (its walk is the progress and the verification)."""
        os.makedirs(self.v.mig, exist_ok=True)
        meter = jobs.Meter(last)
        job = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic() - 5
        while job.poll() is None:  # unit state every 0.5 s, progress every 5 s
            if time.monotonic() - t0 >= 5:
                jobs.count_blocks(path, meter)
                t0 = time.monotonic()
            time.sleep(0.5)
        if job.returncode != 0:
            raise SystemExit(f"{argv[0]} export failed (exit {job.returncode})")
        jobs.count_blocks(path, meter)
        return chain.verify_export(path, last, walked=meter, first=first)


def ordered(n, gb):
    """The ordered switch's downtime path on node n (its geth datadir padded with gb GB first)."""
    s, v = n.s, n.v
    tables, freezer = filler(os.path.join(s["gethDir"], "nodefleet-bench-filler"), gb)
    n.run_validator()
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _d, fs in os.walk(s["gethDir"]) for f in fs)
    say(f"ordered: geth at block {block_number(n.url)} with 0gchaind committing; datadir {size / 2**30:.2f} GiB")
    subprocess.run(["sync"], check=True)  # no writeback of the setup left to slow the path down
    t = {}
    with contextlib.redirect_stdout(sys.stderr):  # the host tool's messages, with the progress
        down0 = time.perf_counter()
        head, want = n.stop_validator()
        t["stop"] = time.perf_counter() - down0
        v.write_marker("s03-stop", {"head": head, "headHash": want})
        with mock.patch.object(switch, "active", lambda unit: False):
            t["backup"], backup = timed(lambda: switch.step_backup(v))
            v.write_marker("s04-backup", backup)
            t["export"], exported = timed(lambda: n.export([n.geth, "export", "--datadir", s["gethDir"], v.export_file, "1", str(head)],
                                                             v.export_file, 1, head))
            v.write_marker("s05-export", exported)
            t["delete"], _ = timed(lambda: switch.step_delete_geth(v))
        t["init"], _ = timed(lambda: n.reth.run("init"))
        t["trim"], trimmed = timed(lambda: switch.step_trim(v))
        t["import"], _ = timed(lambda: n.reth.run("import", trimmed["file"]))
        t["compare"], _ = timed(lambda: n.compare(head, want))
        t["start"], _ = timed(n.start_reth_then_consensus)
        downtime = time.perf_counter() - down0
    subprocess.run(["sync"], check=True)
    copy_s, _ = timed(lambda: subprocess.run(["cp", "-a", os.path.join(backup["backupDir"], "geth"), os.path.join(n.work, "cp-a")], check=True))
    hash_s, _ = timed(lambda: tree_sha256(os.path.join(backup["backupDir"], "geth")))
    walk_s, _ = timed(lambda: chain.verify_export(v.export_file, head))
    shutil.rmtree(os.path.join(n.work, "cp-a"), ignore_errors=True)
    return {"t": t, "downtime": downtime, "head": head, "size": size, "tables": tables, "freezer": freezer, "method": backup["method"],
            "copy": copy_s, "hash": hash_s, "walk": walk_s}


def low_downtime(n):
    """The low-downtime switch on node n: the live part (timed, not downtime), then the cutover."""
    s, v = n.s, n.v
    n.run_validator()
    live, t = {}, {}
    with contextlib.redirect_stdout(sys.stderr):
        live_head = block_number(n.url)
        say(f"low-downtime: geth at block {live_head} with 0gchaind committing: the live export")
        ipc = os.path.join(s["gethDir"], "geth.ipc")
        live["export"], exported = timed(lambda: n.export([sys.executable, "-S", os.path.join(HOSTFILES, "nodefleet_rpc.py"), "ipc", ipc,
                                                            "admin_exportChain", json.dumps([v.export_file, 1, live_head])], v.export_file, 1, live_head))
        v.write_marker("l03-export-live", exported)
        live["init"], _ = timed(lambda: n.reth.run("init"))
        live["trim"], trimmed = timed(lambda: switch.trim_verified(v, "l03-export-live"))
        live["import"], _ = timed(lambda: n.reth.run("import", trimmed["file"]))
        down0 = time.perf_counter()
        head, want = n.stop_validator()
        t["cutover"] = time.perf_counter() - down0
        rest = os.path.join(v.mig, "chain-rest.rlp")
        if head > live_head:  # as l08/l09: nothing to export when no block was made since the live export
            t["export rest"], _ = timed(lambda: n.export([n.geth, "export", "--datadir", s["gethDir"], rest, str(live_head + 1), str(head)],
                                                          rest, live_head + 1, head))
            t["import rest"], _ = timed(lambda: n.reth.run("import", rest))
        else:
            t["export rest"] = t["import rest"] = 0.0
        t["compare"], _ = timed(lambda: n.compare(head, want))
        t["start"], _ = timed(n.start_reth_then_consensus)
        downtime = time.perf_counter() - down0
    return {"live": live, "t": t, "downtime": downtime, "liveHead": live_head, "head": head}


def main(argv):
    args = dict(zip(argv[1::2], argv[2::2]))
    gb, blocks = int(args.get("--gb", "3")), int(args.get("--blocks", "3000"))
    geth = lab("lab/artifacts.sh", "geth")
    reth = args.get("--reth") or lab("lab/reth.sh", "path")
    rlp = lab("lab/devchain.sh", "chain", str(blocks))
    version = subprocess.run([reth, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    work = tempfile.mkdtemp(prefix="nodefleet-bench-switch-", dir=args.get("--dir"))
    procs = []
    real = blocks
    try:
        if "--extend-to" in args:  # a long chain: the real one, then empty blocks made here
            blocks = int(args["--extend-to"])
            long = os.path.join(os.path.dirname(rlp), f"chain-{real}-extended-to-{blocks}.rlp")  # cached beside the real one
            if not os.path.exists(long):
                say(f"extending the chain of {real} real blocks to {blocks} with empty blocks (once; cached as {long})")
                os.replace(extend_chain(rlp, blocks, long + ".partial"), long)
            rlp = long
        say(f"setting up: two geth datadirs each import the {blocks} blocks; {gb} GB of synthetic files in the ordered one's")
        a = Node(work, "ordered", geth, rlp, blocks, reth, procs)
        b = Node(work, "low", geth, rlp, blocks, reth, procs)
        o = ordered(a, gb)
        say(f"ordered switch: downtime {o['downtime']:.1f} s")
        for p in procs:
            if p.poll() is None:
                stop(p)
        low = low_downtime(b)
    finally:
        for p in procs:
            if p.poll() is None:
                stop(p)
        shutil.rmtree(work, ignore_errors=True)

    t = o["t"]
    work_s = t["export"] + t["import"] + t["backup"]
    overhead = o["downtime"] - work_s
    previous = overhead + 4 * o["hash"] + 3 * o["walk"]
    made = f"{real} real blocks" + (f" and {blocks - real} empty ones made by extend_chain" if blocks > real else "")
    print(f"{version} (real, from source); chain of {blocks} blocks: {made}")
    print(f"ordered switch: datadir {o['size'] / 2**30:.2f} GiB ({o['tables']} table and {o['freezer']} freezer files of filler); "
          f"chain head {o['head']}; backup by {o['method']}")
    print(f"{'part of the downtime':<44}{'seconds':>9}")
    for name in ("stop", "backup", "export", "delete", "init", "trim", "import", "compare", "start"):
        print(f"{'  ' + name:<44}{t[name]:>9.2f}")
    print(f"{'downtime (0gchaind stopped -> committed)':<44}{o['downtime']:>9.2f}")
    print(f"{'  the work: export + import + backup':<44}{work_s:>9.2f}")
    print(f"{'  overhead: the rest':<44}{overhead:>9.2f}  target <= {OVERHEAD_TARGET:.0f} s  {'ok' if overhead <= OVERHEAD_TARGET else 'MISSED'}")
    print(f"{'cp -a of the datadir (same run)':<44}{o['copy']:>9.2f}")
    print(f"{'overhead / cp -a':<44}{overhead / o['copy']:>9.3f}")
    print(f"{'one SHA-256 pass of the datadir':<44}{o['hash']:>9.2f}")
    print(f"{'one full walk of the export':<44}{o['walk']:>9.2f}")
    print(f"{'previous tool: overhead + 4 hashes + 3 walks':<44}{previous:>9.2f}  ({previous / o['copy']:.3f} x cp -a)")
    lt = low["t"]
    low_work = lt["export rest"] + lt["import rest"]
    print(f"low-downtime switch: live head {low['liveHead']}, final head {low['head']} ({low['head'] - low['liveHead']} blocks made during the live part)")
    print(f"{'live part (not downtime)':<44}{'seconds':>9}")
    for name, value in low["live"].items():
        print(f"{'  ' + name:<44}{value:>9.2f}")
    print(f"{'part of the downtime':<44}{'seconds':>9}")
    for name, value in lt.items():
        print(f"{'  ' + name:<44}{value:>9.2f}")
    print(f"{'downtime (0gchaind stopped -> committed)':<44}{low['downtime']:>9.2f}  target <= {LOW_DOWNTIME_TARGET:.0f} s  "
          f"{'ok' if low['downtime'] <= LOW_DOWNTIME_TARGET else 'MISSED'}")
    print(f"{'  the work: export rest + import rest':<44}{low_work:>9.2f}")
    print(f"{'  overhead: the rest':<44}{low['downtime'] - low_work:>9.2f}")
    print(f"{'downtime low-downtime / ordered':<44}{low['downtime'] / o['downtime']:>9.3f}")
    return 0 if overhead <= OVERHEAD_TARGET and low["downtime"] <= LOW_DOWNTIME_TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
