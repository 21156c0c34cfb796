// The dev stack's sequencer: the real Aztec 4.1.2 node that nodefleet's first `up` installed on
// dev-1 and started from its rendered unit under the host's systemd, on the dev chain (real geth
// driven by the real beacond, Aztec's L1 contracts deployed by the real CLI: lab/aztec/dev-l1.sh).
// What the node does there beyond the first checks (hosts.ts): its listeners and admin API, its L2
// blocks on L1, its registration through the rollup's entry queue, and a dead L1 endpoint as
// `nodefleet status` diagnoses it. Runs after the storage scenarios, which leave the storage node
// stopped (its pad task's core back, and no other service of dev-1 on the L1 the fault takes away).
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Steps } from "../support/steps";
import { ROOT } from "../support/cli";
import { aztecInstall, aztecLab, checkpointBlobs, devKey } from "../support/aztec";
import { EXPECTED, onVm, statusJson, until } from "../support/lab";

const UNIT = "aztec-sequencer-1.service";
const HEALTH = "python3 /usr/local/lib/nodefleet/aztec-health.py sequencer-1";
// The dev chain as the runner reaches it (lab/devchain.sh); the hosts reach it as 10.0.2.2.
const L1 = "http://127.0.0.1:8545";
const BEACON = "http://127.0.0.1:3500";
/** The L1 endpoint the dev config gives the sequencer (Pulumi.dev.yaml's l1RpcUrls). */
const SEQUENCER_L1 = "http://10.0.2.2:8545";
/** An nftables table of the test's own on dev-1 that refuses the node's L1 (nodefleet's is `inet nodefleet`). */
const L1_FAULT_TABLE = "inet nodefleet_e2e_l1";

const rollupAddress = () => /rollupAddress: "(0x[0-9a-fA-F]{40})"/.exec(fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8"))![1]!;
const health = (wait = 0): Record<string, any> => {
    const r = onVm("dev-1", `${HEALTH}${wait > 0 ? ` --wait ${wait}` : ""}`, false, { timeoutMs: (wait + 60) * 1000 });
    return JSON.parse(r.stdout.trim().split("\n").pop()!);
};
const sequencerRow = (report: any) => report.nodes.find((n: any) => n.node === "sequencer-1");
const l2Tips = (): any => JSON.parse(onVm("dev-1", `curl -fsS -m 5 -X POST -H 'Content-Type: application/json' --data '{"jsonrpc":"2.0","id":1,"method":"node_getL2Tips","params":[]}' http://127.0.0.1:8080`, true).stdout || "{}").result;

export function sequencerScenario(steps: Steps): void {
    steps.test("the real node binds 40400 TCP+UDP, 8080 and 8880, each a port the firewall probe covered (only 40400 open); its admin API answers only with nodefleet's key, which is in no log", {}, () => {
        const listening = onVm("dev-1", `pid=$(systemctl show -p MainPID --value ${UNIT}); ss -H -lntup | grep "pid=$pid,"`).stdout.trim().split("\n");
        const bound = listening.map((l) => {
            const [proto, , , , local] = l.trim().split(/\s+/);
            return `${local!.slice(local!.lastIndexOf(":") + 1)}/${proto}`;
        });
        const ports = [...new Set(bound)].sort();
        console.log(`# the real node's listeners on dev-1: ${listening.map((l) => l.trim().split(/\s+/)[4]).join(", ")}`);
        assert.deepEqual(ports, ["40400/tcp", "40400/udp", "8080/tcp", "8880/tcp"], listening.join("\n"));
        // The hosts scenario probed each from another address: the peer port open, the RPC (to its
        // allowed CIDRs only, not the lab network) and the admin API (bound on every address) closed.
        const dev1 = EXPECTED["dev-1"]!;
        assert.deepEqual(ports.filter((p) => dev1.open.includes(p)), ["40400/tcp", "40400/udp"]);
        assert.deepEqual(ports.filter((p) => dev1.closed.includes(p)), ["8080/tcp", "8880/tcp"]);

        // The key reaches curl in a header file (printf is the shell's own: no process shows it).
        const admin = onVm("dev-1", [
            "set -e",
            "umask 077",
            "printf 'x-api-key: %s\\n' \"$(cat /etc/nodefleet/sequencer-1/admin-api.key)\" > /run/nodefleet-e2e-admin.h",
            "call() { curl -sS -m 5 -o /dev/null -w '%{http_code}\\n' -X POST -H 'Content-Type: application/json' \"$@\" --data '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nodeAdmin_getConfig\",\"params\":[]}' http://127.0.0.1:8880; }",
            "call -H @/run/nodefleet-e2e-admin.h; call; rm -f /run/nodefleet-e2e-admin.h",
            `journalctl -u ${UNIT} -o cat > /run/nodefleet-e2e-journal`,
            "echo hash-line $(grep -c 'Admin API key authentication enabled (using pre-configured key hash)' /run/nodefleet-e2e-journal || true)",
            "echo key-in-log $(grep -c -F -f /etc/nodefleet/sequencer-1/admin-api.key /run/nodefleet-e2e-journal || true)",
            // A node given no hash makes a key and prints it under this banner.
            "echo printed-key $(grep -c 'ADMIN API KEY' /run/nodefleet-e2e-journal || true)",
            "rm -f /run/nodefleet-e2e-journal",
        ].join("\n")).stdout.trim().split("\n");
        assert.deepEqual(admin.slice(0, 2), ["200", "401"], "the admin API with the key, then without");
        assert.notEqual(admin[2], "hash-line 0", "the node was given the key's hash");
        assert.deepEqual(admin.slice(3), ["key-in-log 0", "printed-key 0"]);
    });

    steps.test("proposes L2 blocks, checkpointed on the dev L1 as blob transactions whose blobs the real beacond serves", { timeout: 10 * 60_000 }, async () => {
        await until("an L2 block checkpointed on L1", () => (l2Tips()?.checkpointed?.block?.number ?? 0) >= 1, 300_000);
        assert.match(onVm("dev-1", `journalctl -u ${UNIT} -o cat | grep -m1 -o 'Built block [0-9]* at checkpoint [0-9]*'`).stdout, /Built block \d+ at checkpoint \d+/);
        // Found the way the node's blob client finds them: the slot of the block's parent beacon root, + 1.
        const blobs = await checkpointBlobs(L1, BEACON);
        assert.ok(blobs.versionedHashes.length > 0, "a blob transaction on the dev L1");
        assert.deepEqual(blobs.served.filter((h) => blobs.versionedHashes.includes(h)).sort(), [...blobs.versionedHashes].sort(), JSON.stringify(blobs));
        assert.equal(onVm("dev-1", `journalctl -u ${UNIT} -o cat | grep -c -E 'Unable to get blob sidecar|Error getting blob sidecar' || true`).stdout.trim(), "0");
    });

    steps.test("its registration: queued in the rollup's entry queue after nodefleet's deposit, VALIDATING once the queue is flushed, as `nodefleet status` shows it", {}, () => {
        const queued = sequencerRow(statusJson().report);
        assert.match(String(queued.sequencer.registration), /^QUEUED\b/, JSON.stringify(queued));
        // Anyone may flush the queue (the dev chain's funded account pays the gas); on a public
        // network the rollup flushes it once per epoch.
        aztecInstall();
        aztecLab(["l1", "flush", L1, rollupAddress()], { DEPLOYER_KEY: devKey() });
        const validating = sequencerRow(statusJson().report);
        assert.deepEqual([validating.healthy, validating.sequencer.registration], [true, "VALIDATING"], JSON.stringify(validating));
    });

    steps.test("a dead L1 endpoint: the running node says so in its log and status names it; restarted without it, it exits at start and systemd restarts it; healthy once the L1 is back", { timeout: 12 * 60_000 }, async () => {
        // The endpoint refuses connections from dev-1 (as a provider that is down does), a rule of
        // the test's own beside nodefleet's firewall; removed whatever happens.
        onVm("dev-1", `nft -f - <<'EOF'\ntable ${L1_FAULT_TABLE} {\n\tchain out {\n\t\ttype filter hook output priority 0;\n\t\tip daddr 10.0.2.2 tcp dport 8545 reject with tcp reset\n\t}\n}\nEOF`);
        try {
            await until("the node's log to show its L1 gone", () => health().l1Unreachable !== null, 90_000);
            assert.equal(health().l1Unreachable, SEQUENCER_L1);
            const row = sequencerRow(statusJson().report);
            console.log(`# L1 gone, the node running: ${JSON.stringify(row.diagnoses)}`);
            assert.deepEqual([row.healthy, row.service], [false, "active"], "the node runs on without its L1");
            assert.deepEqual(row.diagnoses.map((d: any) => d.fault), ["l1-endpoint-down"]);
            assert.match(row.diagnoses[0].detail, /it runs on/);

            // Restarted with its L1 still gone: it exits at start, and Restart=on-failure brings it back.
            const at = onVm("dev-1", `date +%s; systemctl restart ${UNIT}`).stdout.trim();
            const restarts = () => Number(onVm("dev-1", `systemctl show -p NRestarts --value ${UNIT}`).stdout.trim());
            await until("two failed starts", () => restarts() >= 2, 240_000);
            const exits = onVm("dev-1", `journalctl -u ${UNIT} -o cat --since @${at} | grep -c 'Main process exited, code=exited, status=[1-9]' || true`).stdout.trim();
            assert.ok(Number(exits) >= 2, `failed starts since the restart: ${exits}`);
            const looping = sequencerRow(statusJson().report);
            console.log(`# L1 gone, restarting: ${JSON.stringify(looping.diagnoses)}`);
            assert.deepEqual(looping.diagnoses.map((d: any) => d.fault), ["l1-endpoint-down"], JSON.stringify(looping));
            assert.match(looping.diagnoses[0].detail, /exits at start/);
        } finally {
            onVm("dev-1", `nft delete table ${L1_FAULT_TABLE} 2>/dev/null || true; systemctl start ${UNIT}`);
        }
        // The L1 back: the next automatic restart starts it, and it is healthy again.
        const started = Date.now();
        const healthy = health(240);
        console.log(`# healthy again ${((Date.now() - started) / 1000).toFixed(0)} s after the L1 came back`);
        assert.deepEqual(healthy.diagnoses, [], JSON.stringify(healthy));
        assert.equal(healthy.active, true);
    });
}
