// The dev stack's first checks, on what its first `pulumi up` made: units active, each node's
// release checked, the storage node and the sequencer running and reporting health, keys out of every
// command line and log, only the intended ports open, and a second `up` that changes nothing.
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Steps } from "../support/steps";
import { ROOT, sh } from "../support/cli";
import { RESERVED_PORTS_CONF } from "../../components/hosts/scripts";
import { DEV, devSecret, EXPECTED, fromLab, NODES, onVm, PORTS_PY, reservedPorts, stackHealth, unreservedNodePorts, stackOutput, timed } from "../support/lab";

export function hostsScenario(steps: Steps): void {
    steps.test("the host units are active under systemd (those a container cannot run, enabled and skipped by their own condition)", {}, () => {
        // lab/container-limits.json: the units a container skips (chrony: no clock of its own).
        const skipped = Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, "lab/container-limits.json"), "utf8")).skippedUnits as Record<string, string>);
        assert.deepEqual(skipped, ["chrony.service"]);
        for (const vm of Object.keys(EXPECTED)) {
            const r = onVm(vm, "systemctl is-active nodefleet-firewall.service ssh.service; systemctl is-enabled nodefleet-firewall.service");
            assert.deepEqual(r.output.trim().split("\n"), ["active", "active", "enabled"], `${vm}:\n${r.output}`);
            for (const unit of skipped) {
                const s = onVm(vm, `systemctl is-enabled ${unit}; systemctl show -p ActiveState -p ConditionResult ${unit}`);
                assert.deepEqual(s.output.trim().split("\n").sort(), ["ActiveState=inactive", "ConditionResult=no", "enabled"], `${vm}: ${unit} enabled by nodefleet's bootstrap, skipped by its condition:\n${s.output}`);
            }
            const dirs = NODES[vm]!.map((n) => `/data/${n}`);
            const user = onVm(vm, `id -u nodefleet && stat -c '%U %a' ${dirs.join(" ")}`);
            assert.deepEqual(user.output.trim().split("\n").slice(1), dirs.map(() => "nodefleet 750"), `${vm} data dirs owner/mode`);
        }
    });

    steps.test("installs each node's release, checked against its sha256: real geth, reth, beacond and zgs_node, and the named simulators", {}, () => {
        const chain = onVm("dev-2", "/opt/nodefleet/0g-chain/bin/geth version; /opt/nodefleet/0g-chain/bin/reth --version; /opt/nodefleet/0g-chain/bin/0gchaind version; sha256sum /opt/nodefleet/0g-chain/bin/beacond; cat /opt/nodefleet/0g-chain/.nodefleet-sha256");
        // The real beacond the lab built (v1.1.0 prints no version: its binary is compared).
        const beacond = sh("sha256sum", [sh("bash", [path.join(ROOT, "lab/beacond.sh"), "path"]).stdout.trim()]).stdout.split(" ")[0]!;
        assert.match(chain.output, new RegExp(`^${beacond}  /opt/nodefleet/0g-chain/bin/beacond$`, "m"));
        assert.match(chain.output, /^Geth\nVersion: 1\.17\.0-stable/m);
        // The real reth built from the v1.11.4 archive (whose workspace still says 1.11.3), not the simulator.
        assert.match(chain.output, /^Reth Version: 1\.11\.3$/m);
        assert.match(chain.output, /^Build Features: asm_keccak$/m);
        assert.match(chain.output, /^Build Profile: release$/m);
        assert.doesNotMatch(chain.output.slice(chain.output.indexOf("Reth Version"), chain.output.indexOf("Build Profile")), /simulator/);
        assert.match(chain.output, /v1\.0\.6 \(nodefleet simulator/);
        const sums = fs.readFileSync(path.join(ROOT, ".state/artifacts/current/SHA256SUMS"), "utf8");
        assert.ok(sums.includes(`${chain.stdout.trim().split("\n").pop()}  aristotle-v1.0.6.tar.gz`), "installed archive has the served checksum");
        const seq = onVm("dev-1", "/opt/nodefleet/zgs/zgs_node --version; /opt/nodefleet/aztec/bin/aztec --version; ls /opt/nodefleet/releases; sha256sum /opt/nodefleet/zgs/zgs_node");
        // The real zgs_node built from the v1.1.0 archive (it names no version without a git checkout).
        assert.match(seq.output, /^zgs_node unknown$/m);
        const built = sh("bash", [path.join(ROOT, "lab/zgs.sh"), "path"]).stdout.trim();
        assert.ok(seq.output.includes(crypto.createHash("sha256").update(fs.readFileSync(built)).digest("hex")), "the VM runs the binary lab/zgs.sh built");
        // The real Aztec 4.1.2 CLI of the release (lab/aztec/release.sh), not the simulator.
        assert.match(seq.output, /^4\.1\.2$/m);
        assert.doesNotMatch(seq.output, /simulator/);
        assert.equal(seq.output.trim().split("\n").slice(2, -1).length, 2, `two releases on dev-1:\n${seq.output}`);
    });

    steps.test("runs the storage node under systemd, synced to the dev chain, with health in the stack outputs", {}, () => {
        const active = onVm("dev-1", "systemctl is-active zgs-storage-1.service zgs-storage-1-failover.timer; systemctl show -p User --value zgs-storage-1.service");
        assert.deepEqual(active.output.trim().split("\n"), ["active", "active", "nodefleet"]);
        const health = stackHealth()["storage-1"];
        const seen = JSON.stringify(health);
        assert.equal(health.endpoint, "http://10.0.2.2:8545", seen);
        assert.ok(typeof health.chainHead === "number" && health.chainHead > 0, seen);
        assert.ok(typeof health.logSyncHeight === "number", seen);
        assert.equal(health.synced, true, seen);
        assert.equal(health.connectedPeers, 0, seen); // no boot nodes in the dev config
        // The diagnosis table's verdict on the tool's facts, with the fault table's remedy.
        assert.ok(health.diagnoses.some((d: any) => d.fault === "storage-peers-0" && d.severity === "warning" && /^set network_boot_nodes/.test(d.remedy)), seen);
        // Today's file (UTC), named as zgs_node names it; the health step ran during the up, at
        // most the main job's 30 minutes ago (a run across midnight names the day before).
        const days = [Date.now() - 31 * 60_000, Date.now()].map((t) => `/data/storage-1/log/zgs.log.${new Date(t).toISOString().slice(0, 10)}`);
        assert.ok(days.includes(health.logFile), seen);
        assert.equal(health.logFileExists, true, seen);
        const log = onVm("dev-1", `grep -c 'log sync to block number' ${health.logFile}`);
        assert.ok(Number(log.output.trim()) > 0, log.output);
        // lab/container-limits.json, "spareCore": the lab moves the node's processes, from outside,
        // into a cpu group of their own below the host's (the pad task's spare core); its unit,
        // tracked by the host's systemd in the systemd hierarchy, stays where systemd put it.
        const spare = JSON.parse(fs.readFileSync(path.join(ROOT, "lab/container-limits.json"), "utf8")).spareCore as { cgroup: string };
        assert.equal(spare.cgroup, "cpu");
        const lab = `nodefleet-lab-${crypto.createHash("sha256").update(ROOT).digest("hex").slice(0, 8)}`;
        // Every zgs_node of the runner is looked at: a host of another test file may run one (first-boot).
        const groups = sh("bash", ["-c", `for p in $(pgrep -x zgs_node); do if grep -q ":name=systemd:/${lab}/dev-1/payload/system.slice/zgs-storage-1.service$" /proc/$p/cgroup; then grep -E '^[0-9]+:cpu:' /proc/$p/cgroup; fi; done`]).stdout.trim().split("\n");
        assert.deepEqual(groups, [`1:cpu:/${lab}-spare/dev-1`], `storage-1's zgs_node in the lab's spare group:\n${groups.join("\n")}`);
    });

    steps.test("runs the real Aztec 4.1.2 sequencer under systemd with its 4.x flags, registered against its rollup on the dev L1, with health in the stack outputs", {}, () => {
        // The node is the release's Node.js started through the release's loader (lab/aztec/release.sh).
        const active = onVm("dev-1", "systemctl is-active aztec-sequencer-1.service; systemctl show -p User --value aztec-sequencer-1.service; ps -o args= -u nodefleet | grep 'aztec/dest/bin/index.js start' | grep -v grep");
        const [state, user, args] = active.output.trim().split("\n");
        assert.deepEqual([state, user], ["active", "nodefleet"]);
        assert.match(args!, /\/lib\/node --no-warnings \S+\/index\.js start --node --archiver --sequencer --network local --l1-chain-id 80087 .*--sequencer\.coinbase 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed .*--p2p\.p2pIp 10\.77\.0\.11\b/);
        assert.doesNotMatch(args!, /validatorPrivateKey|private-key|10\.0\.2\.2/);
        // docs/spec.md §2.4's L1 flags reach it as their variables, from the root-only env file (a URL may carry an API key).
        const env = onVm("dev-1", "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value aztec-sequencer-1.service)/environ | grep -E '^(ETHEREUM_HOSTS|L1_CONSENSUS_HOST_URLS)=' | sort").output.trim();
        assert.equal(env, "ETHEREUM_HOSTS=http://10.0.2.2:8545\nL1_CONSENSUS_HOST_URLS=http://10.0.2.2:3500");
        const health = stackHealth()["sequencer-1"];
        assert.equal(health.active, true, JSON.stringify(health));
        assert.ok(Number.isInteger(health.provenBlock) && health.provenBlock >= 0, JSON.stringify(health));
        assert.equal(health.siblingPath.ok, true, JSON.stringify(health));
        assert.ok(health.siblingPath.length > 0, JSON.stringify(health));
        assert.match(health.peerId, /^16Uiu2[1-9A-HJ-NP-Za-km-z]+$/);
        assert.deepEqual(health.diagnoses, []);
        // The same peerId is in the node's own log (JSON lines, LOG_JSON=1).
        assert.match(onVm("dev-1", "journalctl -u aztec-sequencer-1 -o cat | grep 'Started P2P service' | tail -1").output, new RegExp(`"peerId":\\s*"${health.peerId}"`));
        // Registration: the rollup's getStatus and entry queue, asked over eth_call of the real geth
        // from the host, said NONE, so the first deploy deposited (a re-run on kept data finds it queued).
        const reg = stackOutput("registration")["sequencer-1"];
        assert.equal(reg.status, "NONE", JSON.stringify(reg));
        assert.equal(reg.l1RpcUrl, "http://10.0.2.2:8545");
        assert.match(reg.action, /^(submitted|none: submitted earlier, pending)$/, JSON.stringify(reg));
        assert.match(onVm("dev-1", "cat /data/sequencer-1/.nodefleet-registration.json").output, /"validatorAddress": "0x1dd3DaE6726F7F2883010B6fd26D64463650E476"/);
    });

    steps.test("keeps the miner, sequencer and validator keys out of every command line, the logs and the plain state", {}, () => {
        const keys = { miner: devSecret("devMinerKey"), sequencer: devSecret("devSequencerKey"), validator: JSON.parse(devSecret("devValidatorKey")).priv_key.value as string };
        assert.match(keys.miner, /^[0-9a-f]{64}$/);
        assert.match(keys.sequencer, /^0x[0-9a-fA-F]{64}$/);
        assert.match(keys.validator, /^[A-Za-z0-9+/]{40,}={0,2}$/);
        // The keys go to the check on stdin: a grep with a key as an argument would itself be a
        // process showing it. Searched without 0x, in any case.
        const finder = [
            "import glob, subprocess, sys",
            "keys = [k.strip().lower().removeprefix('0x').encode() for k in sys.stdin if k.strip()]",
            "journal = subprocess.run(['journalctl', '--no-pager', '-o', 'cat'], capture_output=True).stdout.lower()",
            "for key in keys:",
            "    procs = 0",
            "    for f in glob.glob('/proc/[0-9]*/cmdline'):",
            "        try:",
            "            procs += key in open(f, 'rb').read().lower()",
            "        except OSError:",
            "            pass",
            "    print(procs, journal.count(key))",
        ].join("\n");
        for (const vm of Object.keys(EXPECTED)) {
            onVm(vm, "cat > /tmp/nodefleet-find-key.py", false, { input: finder });
            const seen = onVm(vm, "python3 /tmp/nodefleet-find-key.py", false, { input: `${keys.miner}\n${keys.sequencer}\n${keys.validator}\n` });
            assert.deepEqual(seen.output.trim().split("\n"), ["0 0", "0 0", "0 0"], `${vm}: a key shows in a command line or the journal (per key: processes, journal lines)`);
        }
        const env = onVm("dev-1", "stat -c '%n %U %a' /etc/nodefleet/storage-1/miner.key /data/storage-1/run/config.toml /etc/nodefleet/sequencer-1/aztec.env /etc/nodefleet/sequencer-1/register.env");
        // The miner key: root's file, and config.toml (zgs_node v1.1.0 reads it from there alone), the node user's.
        assert.deepEqual(env.output.trim().split("\n"), ["/etc/nodefleet/storage-1/miner.key root 600", "/data/storage-1/run/config.toml nodefleet 600", "/etc/nodefleet/sequencer-1/aztec.env root 600", "/etc/nodefleet/sequencer-1/register.env root 600"]);
        const state = sh("bash", [DEV, "pulumi", "stack", "export", "--stack", "dev"]).output.toLowerCase();
        const up = fs.readFileSync(path.join(ROOT, ".state", "e2e-up.log"), "utf8").toLowerCase();
        for (const [name, key] of Object.entries(keys)) {
            const bare = key.toLowerCase().replace(/^0x/, "");
            assert.ok(!state.includes(bare), `the ${name} key is in the exported state in plain text`);
            assert.ok(!up.includes(bare), `the ${name} key is in the pulumi up log`);
        }
    });

    steps.test("only the intended ports answer from another host address", {}, () => {
        for (const [vm, want] of Object.entries(EXPECTED)) {
            const ports = [...want.open, ...want.closed];
            // The nodes' own listeners stop for the probe (the aztec node holds 40400 and geth
            // 56303, and neither echoes arbitrary datagrams); the test's listeners take every
            // probed port instead.
            const nodeUnits = vm === "dev-1" ? "zgs-storage-1-failover.timer zgs-storage-1.service aztec-sequencer-1.service" : "0gchaind-validator-1.service geth-validator-1.service";
            if (nodeUnits) onVm(vm, `systemctl stop ${nodeUnits}`);
            // The units start again whatever the probe finds: a failure here must not leave the
            // nodes stopped for the scenarios after it.
            try {
                onVm(vm, "cat > /tmp/nodefleet-ports.py", false, { input: fs.readFileSync(PORTS_PY, "utf8") });
                // Listeners on every probed port, so a port that stays silent is silent because of the firewall.
                onVm(vm, [
                    "systemctl stop nodefleet-e2e-ports 2>/dev/null; rm -f /tmp/nodefleet-ports.ready",
                    `systemd-run --unit=nodefleet-e2e-ports --collect -E PORTS_READY_FILE=/tmp/nodefleet-ports.ready python3 /tmp/nodefleet-ports.py listen 90 ${ports.join(" ")}`,
                    "for i in $(seq 60); do [ -f /tmp/nodefleet-ports.ready ] && exit 0; sleep 0.5; done; echo listeners not ready >&2; exit 1",
                ].join("\n"));
                const r = fromLab("python3", PORTS_PY, "probe", want.ip, ...ports);
                const answered = JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, boolean>;
                const wanted = Object.fromEntries([...want.open.map((p) => [p, true]), ...want.closed.map((p) => [p, false])]);
                const got = Object.fromEntries(ports.map((p) => [p, answered[p]]));
                assert.deepEqual(got, wanted, `${vm} (${want.ip}): which ports answer (true) from the lab network; probe output:\n${r.output.slice(-2000)}`);
            } finally {
                onVm(vm, "systemctl stop nodefleet-e2e-ports 2>/dev/null || true");
                if (nodeUnits) onVm(vm, `systemctl start ${nodeUnits}`);
            }
        }
    });

    // An outgoing connection whose source port is a port a node listens on makes the node's bind
    // fail ("address already in use") when it starts next: the ports are reserved (docs/hosts.md).
    steps.test("keeps every port its nodes listen on out of the kernel's ephemeral range, by a file applied at boot", {}, () => {
        for (const vm of Object.keys(EXPECTED)) {
            const reserved = reservedPorts(vm);
            assert.deepEqual(unreservedNodePorts(vm, reserved), [], `${vm}: listening ports not reserved (reserved: ${[...reserved].join(",")})`);
            assert.match(onVm(vm, `cat ${RESERVED_PORTS_CONF}`).output, /^net\.ipv4\.ip_local_reserved_ports = [0-9,-]+$/m);
            assert.equal(onVm(vm, "systemctl is-enabled nodefleet-reserved-ports.service").output.trim(), "enabled");
        }
    });

    steps.test("a second pulumi up changes nothing and runs no command", {}, () => {
        const before = onVm("dev-1", "journalctl _COMM=sshd -o cat | grep -c 'Accepted publickey' || true").output.trim();
        const r = timed("second pulumi up", () => sh("bash", [DEV, "pulumi", "up", "--stack", "dev", "--yes", "--non-interactive", "--expect-no-changes"]));
        assert.match(r.output, /42 unchanged/);
        assert.doesNotMatch(r.output, /created|updated|replaced|deleted/);
        const afterCount = onVm("dev-1", "journalctl _COMM=sshd -o cat | grep -c 'Accepted publickey' || true").output.trim();
        // The two checks above opened one SSH session each; pulumi must have opened none.
        assert.equal(Number(afterCount), Number(before) + 1, `SSH logins before ${before}, after ${afterCount}`);
    });
}
