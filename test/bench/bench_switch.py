#!/usr/bin/env python3
"""Downtime benchmark of the geth -> reth switch (issue: an orchestration overhead under a
minute), measured side by side in one run on this machine, in a few minutes:

    bench_switch.py [--gb 3] [--blocks 3000] [--dir DIR]

Downtime is the time from stopping 0gchaind to its first `Committed state` on reth. The work it
cannot do without is the export, the import and the one backup copy; everything else is overhead
(target: <= 60 s). The run:

- a real geth datadir: real geth (lab/artifacts.sh) imports a chain of --blocks real blocks
  (lab/devchain.sh chain), padded with --gb GB of synthetic files of realistic sizes (2 MB table
  files and 256 MB freezer files, in a directory geth never opens) so the datadir weighs what a
  few GB of chain would; geth runs with the 0gchaind simulator committing on it;
- the downtime path, in the switch's order: 0gchaind and geth stopped (processes here, not
  systemd units); the host tool's own functions for the backup (switch.step_backup), the export's
  verification by the walk that shows its progress (jobs.count_blocks, chain.verify_export) around
  a real `geth export`, the deletion (switch.step_delete_geth) and the trim (switch.step_trim);
  the reth simulator's `init` and `import`; reth started with its check of the head's hash
  (what step 10 compares); reth and 0gchaind started, until 0gchaind commits;
- beside it, in the same run: `cp -a` of the datadir, one SHA-256 pass over it and one full walk
  of the export: what the previous tool read on top (4 hash passes of the datadir: the copy and
  the source at step 4, the backup again at steps 5 and 6; 3 walks of the export: steps 5, 6 and
  the trim).

Not measured here: systemd, SSH and Pulumi between the steps (the dev VMs' switch report gives
the downtime with them: the stack output validatorSwitch.<node>.downtime). Data to stdout,
progress to stderr. Exits 1 when the overhead exceeds 60 s.
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


def main(argv):
    args = dict(zip(argv[1::2], argv[2::2]))
    gb, blocks = int(args.get("--gb", "3")), int(args.get("--blocks", "3000"))
    geth = lab("lab/artifacts.sh", "geth")
    rlp = lab("lab/devchain.sh", "chain", str(blocks))
    work = tempfile.mkdtemp(prefix="nodefleet-bench-switch-", dir=args.get("--dir"))
    procs = []
    try:
        root = os.path.join(work, "data")
        s = {
            "node": "bench", "operator": "root", "dataRoot": root, "gethDir": os.path.join(root, "geth"),
            "rethDir": os.path.join(root, "reth"), "consensusHome": os.path.join(root, "0gchaind"),
            "etcDir": os.path.join(root, "etc"), "releaseDir": os.path.join(root, "release"),
            "rethBinary": os.path.join(root, "bin", "reth"), "genesis": GENESIS,
            "ports": {"http": free_port(), "engine": free_port(), "p2p": free_port(), "cometRpc": free_port()},
            "services": {"geth": "geth-bench.service", "reth": "reth-bench.service", "consensus": "0gchaind-bench.service"},
        }
        os.makedirs(s["etcDir"])
        settings = os.path.join(root, "settings.json")
        with open(settings, "w") as f:
            json.dump(s, f)
        v = Validator(settings)
        jwt = os.path.join(root, "jwt.hex")
        with open(jwt, "w") as f:
            f.write(os.urandom(32).hex())

        say(f"setting up: geth imports {blocks} real blocks; {gb} GB of synthetic datadir files")
        subprocess.run([geth, "init", "--datadir", s["gethDir"], GENESIS], check=True, capture_output=True)
        subprocess.run([geth, "import", "--datadir", s["gethDir"], rlp], check=True, capture_output=True)
        tables, freezer = filler(os.path.join(s["gethDir"], "nodefleet-bench-filler"), gb)
        consensus_home(s["consensusHome"], s["ports"]["engine"], jwt, s["ports"]["cometRpc"], validator_key='{"pub_key": {"value": "YmVuY2g="}}')
        sim_env = dict(os.environ, NODEFLEET_SIM_BLOCK_TIME="1", PYTHONPATH=SIM)
        sim = [sys.executable, "-m"]
        url = f"http://127.0.0.1:{s['ports']['http']}"
        el_flags = ["--http", "--http.addr", "127.0.0.1", "--http.port", str(s["ports"]["http"]), "--authrpc.addr", "127.0.0.1",
                    "--authrpc.port", str(s["ports"]["engine"]), "--authrpc.jwtsecret", jwt]
        geth_log = open(os.path.join(work, "geth.log"), "w")
        gp = subprocess.Popen([geth, "--datadir", s["gethDir"], "--networkid", "16661", "--syncmode", "full", "--nodiscover",
                               "--maxpeers", "0", "--port", "0", *el_flags], stdout=geth_log, stderr=subprocess.STDOUT)
        procs.append(gp)
        until(lambda: block_number(url) >= blocks, timeout=60)
        cl_log = os.path.join(work, "0gchaind.log")
        cp = subprocess.Popen(sim + ["nodefleet_sim.zerog", "start", "--home", s["consensusHome"]], cwd=SIM, env=sim_env,
                              stdout=open(cl_log, "w"), stderr=subprocess.STDOUT)
        procs.append(cp)
        until(lambda: block_number(url) >= blocks + 3, timeout=60)
        size = sum(os.path.getsize(os.path.join(r, n)) for r, _d, fs in os.walk(s["gethDir"]) for n in fs)
        say(f"geth at block {block_number(url)} with 0gchaind committing; datadir {size / 2**30:.2f} GiB")

        # ---- the downtime path (the host tool's messages go to stderr, with the progress) --------
        subprocess.run(["sync"], check=True)  # no writeback of the setup left to slow the path down
        t = {}
        quiet = contextlib.redirect_stdout(sys.stderr)
        quiet.__enter__()
        down0 = time.perf_counter()
        stop(cp)
        head = block_number(url)
        want = block_hash(url, head)
        stop(gp)
        t["stop"] = time.perf_counter() - down0
        v.write_marker("s03-stop", {"head": head, "headHash": want})
        with mock.patch.object(switch, "active", lambda unit: False):
            t["backup"], backup = timed(lambda: switch.step_backup(v))
            v.write_marker("s04-backup", backup)

            def export():
                os.makedirs(v.mig, exist_ok=True)
                meter = jobs.Meter(head)
                job = subprocess.Popen([geth, "export", "--datadir", s["gethDir"], v.export_file, "1", str(head)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                last = 0.0
                while job.poll() is None:  # what jobs.attach does: unit state every 0.5 s, progress every 5 s
                    if time.monotonic() - last >= 5:
                        jobs.count_blocks(v.export_file, meter)
                        last = time.monotonic()
                    time.sleep(0.5)
                if job.returncode != 0:
                    raise SystemExit(f"geth export failed (exit {job.returncode})")
                jobs.count_blocks(v.export_file, meter)
                return chain.verify_export(v.export_file, head, walked=meter)
            t["export"], exported = timed(export)
            v.write_marker("s05-export", exported)
            t["delete"], _ = timed(lambda: switch.step_delete_geth(v))
        os.makedirs(os.path.dirname(s["rethBinary"]))
        shutil.copy(os.path.join(SIM, "nodefleet_sim", "reth.py"), s["rethBinary"])  # not run: the simulator runs as a module
        t["init"], _ = timed(lambda: subprocess.run(sim + ["nodefleet_sim.reth", "init", "--chain", GENESIS, "--datadir", s["rethDir"]],
                                                     cwd=SIM, env=sim_env, check=True, capture_output=True))
        t["trim"], trimmed = timed(lambda: switch.step_trim(v))
        t["import"], _ = timed(lambda: subprocess.run(sim + ["nodefleet_sim.reth", "import", "--chain", GENESIS, "--datadir", s["rethDir"],
                                                             trimmed["file"]], cwd=SIM, env=sim_env, check=True, capture_output=True))

        def start_reth():
            p = subprocess.Popen(sim + ["nodefleet_sim.reth", "node", "--chain", GENESIS, "--datadir", s["rethDir"], *el_flags],
                                 cwd=SIM, env=sim_env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            procs.append(p)
            until(lambda: common.rpc_call(url, "eth_blockNumber"), timeout=60)
            return p

        def compare():
            p = start_reth()
            got = block_hash(url, head)
            if got != want:
                raise SystemExit(f"block {head}: reth has {got}, geth had {want}")
            stop(p)
        t["compare"], _ = timed(compare)

        def start():
            start_reth()
            mark = os.path.getsize(cl_log)
            p = subprocess.Popen(sim + ["nodefleet_sim.zerog", "start", "--home", s["consensusHome"]], cwd=SIM, env=sim_env,
                                 stdout=open(cl_log, "a"), stderr=subprocess.STDOUT)
            procs.append(p)

            def committed():
                with open(cl_log) as f:
                    f.seek(mark)
                    return "Committed state" in f.read()
            until(committed, timeout=120, every=0.05)
        t["start"], _ = timed(start)
        downtime = time.perf_counter() - down0
        quiet.__exit__(None, None, None)
        subprocess.run(["sync"], check=True)

        # ---- beside it: cp -a, and what the previous tool read on top ---------------------------
        copy_s, _ = timed(lambda: subprocess.run(["cp", "-a", os.path.join(backup["backupDir"], "geth"), os.path.join(work, "cp-a")], check=True))
        hash_s, _ = timed(lambda: tree_sha256(os.path.join(backup["backupDir"], "geth")))
        walk_s, _ = timed(lambda: chain.verify_export(v.export_file, head))
    finally:
        for p in procs:
            if p.poll() is None:
                stop(p)
        shutil.rmtree(work, ignore_errors=True)

    work_s = t["export"] + t["import"] + t["backup"]
    overhead = downtime - work_s
    previous = overhead + 4 * hash_s + 3 * walk_s
    print(f"datadir: {size / 2**30:.2f} GiB ({blocks} real blocks, {tables} table and {freezer} freezer files of filler); "
          f"chain head {head}; backup by {backup['method']}")
    print(f"{'part of the downtime':<44}{'seconds':>9}")
    for name in ("stop", "backup", "export", "delete", "init", "trim", "import", "compare", "start"):
        print(f"{'  ' + name:<44}{t[name]:>9.2f}")
    print(f"{'downtime (0gchaind stopped -> committed)':<44}{downtime:>9.2f}")
    print(f"{'  the work: export + import + backup':<44}{work_s:>9.2f}")
    print(f"{'  overhead: the rest':<44}{overhead:>9.2f}  target <= {OVERHEAD_TARGET:.0f} s  {'ok' if overhead <= OVERHEAD_TARGET else 'MISSED'}")
    print(f"{'cp -a of the datadir (same run)':<44}{copy_s:>9.2f}")
    print(f"{'overhead / cp -a':<44}{overhead / copy_s:>9.3f}")
    print(f"{'one SHA-256 pass of the datadir':<44}{hash_s:>9.2f}")
    print(f"{'one full walk of the export':<44}{walk_s:>9.2f}")
    print(f"{'previous tool: overhead + 4 hashes + 3 walks':<44}{previous:>9.2f}  ({previous / copy_s:.3f} x cp -a)")
    return 0 if overhead <= OVERHEAD_TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
