// `nodefleet status` without hosts: the diagnosis table (each error row of docs/spec.md §7 from a recorded
// health answer: test/fixtures/status; the validator's were recorded from the real host tool
// against the node simulators, hostfiles/tests/test_zg_validator_sims.py StatusOnTheSimulators),
// the rows of unreachable hosts and failed checks, the table, the targets read from a stack's
// config and outputs, the runner that runs the checks on a host (run here, with python3), and
// the SSH round's time limit with a stand-in `ssh`. What this cannot prove: real SSH, real hosts
// and their tools answering (the E2E tier runs `scripts/dev.sh status` on the dev VMs).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { FAULT_TABLE } from "../../components/config/faults";
import { diagnose, type NodeRow } from "../../status/diagnose";
import type { Role } from "../../components/roles/registry";
import { probeAll, runnerScript, sshArgs, type HostResult } from "../../status/probe";
import { details, report, rows, table, upgradeSummary } from "../../status/report";
import { planFromConfig, StatusInputError, targets, type HostTarget } from "../../status/targets";
import { checkArgv } from "../../components/health/checks";
import { parseArgs, printable, UsageError } from "../../status/main";
import { golden } from "../support/golden";
import { diagnosisCodes } from "../support/diagnosis-codes";
import { awsHost, baseFleet, FAKE_SSH_KEY, HOST_KEY, SECRETS } from "../support/fixtures";
import { KEY_NOT_READ } from "../../components/hosts/first-boot";
import { newHostKey } from "../../components/hosts/host-key-provider";

const ROOT = path.resolve(__dirname, "../../..");
const answers = (role: string): Record<string, Record<string, unknown>> => JSON.parse(fs.readFileSync(path.join(ROOT, "test", "fixtures", "status", `${role}.json`), "utf8"));
const STORAGE = answers("storage");
const SEQUENCER = answers("sequencer");
const VALIDATOR = answers("validator");
const faults = (r: NodeRow, severity?: "error" | "warning") => r.diagnoses.filter((d) => severity === undefined || d.severity === severity).map((d) => d.fault);
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe("status: the diagnosis table (docs/spec.md §7) from recorded health answers", () => {
    const storage = (c: string) => diagnose("storage-1", "storage", "dev-1", STORAGE[c]!);
    const sequencer = (c: string) => diagnose("sequencer-1", "sequencer", "dev-1", SEQUENCER[c]!);
    const validator = (a: Record<string, unknown>) => diagnose("validator-1", "validator", "dev-2", a);

    it("storage synced (< 5 behind) is healthy, with its height, lag and peers", () => {
        const r = storage("healthy");
        assert.deepEqual([r.healthy, r.service, r.height, r.lag, r.peers, r.storage?.synced], [true, "active", 1202, 2, 3, true]);
        assert.deepEqual(r.diagnoses, []);
    });

    it("storage peers are 0: a warning with the spec's remedy, still healthy", () => {
        const r = storage("peers-0");
        assert.equal(r.healthy, true);
        assert.deepEqual(faults(r), ["storage-peers-0"]);
        assert.match(r.diagnoses[0]!.remedy, /network_boot_nodes.*restart; a known issue, often ignorable/);
    });

    it("the storage RPC endpoint down: unhealthy, remedy: check with eth_blockNumber, switch, restart", () => {
        const r = storage("endpoint-down");
        assert.equal(r.healthy, false);
        assert.deepEqual(faults(r, "error"), ["rpc-endpoint-down"]); // not also "not increasing": the endpoint is the cause
        assert.match(r.diagnoses[0]!.detail, /blockchain_rpc_endpoint http:\/\/10\.0\.2\.2:8547 does not answer eth_blockNumber: .*Connection refused/);
        assert.match(r.diagnoses[0]!.remedy, /eth_blockNumber, switch blockchain_rpc_endpoint, restart/);
        assert.equal(r.lag, null);
    });

    it("the storage height not increasing while behind: unhealthy (seed: the RPC endpoint is down)", () => {
        const r = storage("not-increasing");
        assert.deepEqual(faults(r, "error"), ["not-synced", "height-not-increasing"]);
        assert.match(r.diagnoses[1]!.detail, /logSyncHeight 1190 did not grow in 60\.2 s/);
        assert.equal(r.lag, 310);
    });

    it("a height compared with a sample seconds old says nothing about increasing", () => {
        assert.deepEqual(faults(storage("not-increasing-too-soon")), ["not-synced"]);
    });

    it("the real zgs_node with its endpoint down exits at start (systemd restarts it): one fault, rpc-endpoint-down, saying so", () => {
        const r = storage("endpoint-down-exits");
        assert.deepEqual(faults(r, "error"), ["rpc-endpoint-down"], "not also service-down or storage-rpc-down: they follow from it");
        assert.match(r.diagnoses[0]!.detail, /8547 does not answer eth_blockNumber: .*\(the node exits at start while it does not: zgs-storage-1\.service is activating\)/);
    });

    it("the endpoint down while systemd has just restarted the node (active, RPC silent, no failure logged yet): still only rpc-endpoint-down", () => {
        const r = storage("endpoint-down-restarting");
        assert.deepEqual(faults(r, "error"), ["rpc-endpoint-down"], "storage-rpc-down follows from the endpoint (seen in CI: the status ran inside the node's start)");
        assert.match(r.diagnoses[0]!.detail, /8547 does not answer eth_blockNumber: .*\(zgs_getStatus is silent too: the node cannot start without it/);
        const up = diagnose("storage-1", "storage", "dev-1", { ...STORAGE["endpoint-down-restarting"]!, endpointError: undefined, chainHead: 1200 });
        assert.deepEqual(faults(up, "error"), ["storage-rpc-down"], "with the endpoint answering, a silent active node is its own fault");
    });

    it("a miner key whose account cannot pay: miner-unfunded (the node exits at start), not service-down", () => {
        const r = storage("miner-unfunded");
        assert.deepEqual(faults(r, "error"), ["miner-unfunded"]);
        assert.match(r.diagnoses[0]!.detail, /insufficient funds/);
        assert.match(r.diagnoses[0]!.remedy, /fund the miner key's account/);
    });

    it("a stopped storage service: service-down, not a second fault for its RPC", () => {
        const r = storage("stopped");
        assert.deepEqual(faults(r), ["service-down"]);
        assert.equal(r.service, "inactive");
        assert.match(r.diagnoses[0]!.remedy, /systemctl start zgs-storage-1\.service/);
    });

    it("a sequencer: proven block, sibling path and peerId; stopped, no sibling path, no peerId", () => {
        const ok = sequencer("healthy");
        assert.deepEqual([ok.healthy, ok.service, ok.height, ok.sequencer], [true, "active", 57, { provenBlock: 57, latestBlock: null, siblingPath: true, peerId: "16Uiu2HAmQk7DnUo4h8aLaf8p3uFxNs7SoqFAVmCwDZh2gzcPRs9K", registration: null }]);
        const stopped = sequencer("stopped");
        assert.deepEqual([stopped.healthy, stopped.service, faults(stopped)], [false, "inactive", ["service-down", "sequencer-rpc-down"]]);
        assert.match(stopped.diagnoses[0]!.remedy, /systemctl start aztec-sequencer-1\.service/);
        assert.match(stopped.diagnoses[1]!.remedy, /start aztec-sequencer-1\.service if it is stopped/);
        assert.deepEqual(faults(sequencer("sibling-path-null")), ["sibling-path-missing"]);
        assert.deepEqual(faults(sequencer("no-peer-id")), ["no-peer-id"]);
    });

    it("a sequencer on the real 4.1.2 node (answers recorded by the e2e tier): healthy; its L1 gone while running and at start is one fault; stopped", () => {
        const ok = sequencer("4.1.2-healthy");
        assert.deepEqual([ok.healthy, ok.height, ok.sequencer!.latestBlock, ok.sequencer!.siblingPath], [true, 0, 1, true]);
        assert.equal(details(ok), "proven 0, latest 1, sibling path ok, peerId 16Uiu2…6j9GKJ");
        const running = sequencer("4.1.2-l1-down-running");
        assert.deepEqual([running.healthy, running.service, faults(running)], [false, "active", ["l1-endpoint-down"]]);
        assert.match(running.diagnoses[0]!.detail, /^the node cannot reach its L1 RPC http:\/\/127\.0\.0\.1:\d+ .*; it runs on, neither syncing L1 nor proposing$/);
        // Restarting between failed starts, the RPC silent: still the one fault, saying it exits at start.
        const restarting = sequencer("4.1.2-l1-down-restarting");
        assert.deepEqual(faults(restarting), ["l1-endpoint-down"]);
        assert.match(restarting.diagnoses[0]!.detail, /it exits at start without it/);
        assert.match(restarting.diagnoses[0]!.remedy, /l1RpcUrls/);
        assert.deepEqual(faults(sequencer("4.1.2-stopped")), ["service-down", "sequencer-rpc-down"]);
        // Stopped, with L1 failures its last process logged while it stopped (a stop cuts its L1
        // requests short; killed after its TimeoutStopSec it reads `failed`): down, not its L1.
        for (const state of ["inactive", "failed", "deactivating"]) {
            const cut = diagnose("sequencer-1", "sequencer", "dev-1", { ...SEQUENCER["4.1.2-stopped"], state, l1Unreachable: "http://127.0.0.1:31451" });
            assert.deepEqual([cut.healthy, faults(cut)], [false, ["service-down", "sequencer-rpc-down"]], state);
            assert.match(cut.diagnoses[0]!.detail, new RegExp(`is ${state}$`));
        }
        // Between failed starts (systemd's auto-restart: `activating`), its L1 stays the one fault.
        const waiting = diagnose("sequencer-1", "sequencer", "dev-1", { ...SEQUENCER["4.1.2-l1-down-restarting"], active: false, state: "activating" });
        assert.deepEqual(faults(waiting), ["l1-endpoint-down"]);
        assert.match(waiting.diagnoses[0]!.detail, /it exits at start without it \(aztec-aztec-node-e2e\.service is activating/);
        // What L1 says of the registration, shown in the details (not judged).
        const queued = diagnose("sequencer-1", "sequencer", "dev-1", { ...SEQUENCER["4.1.2-healthy"], registration: { status: "QUEUED", queuePosition: 3, l1RpcUrl: "http://127.0.0.1:8545" } });
        assert.deepEqual([queued.healthy, queued.sequencer!.registration], [true, "QUEUED #3"]);
        assert.match(details(queued), /registration QUEUED #3$/);
        assert.equal(diagnose("sequencer-1", "sequencer", "dev-1", { ...SEQUENCER["4.1.2-healthy"], registration: { error: "no L1 RPC URL answered" } }).sequencer!.registration, "unknown");
    });

    it("a validator on reth: healthy; reth without peers is the spec's 'expected at first' warning with its p2p port", () => {
        const a = VALIDATOR["healthy-reth"]!;
        const r = validator(a);
        assert.equal(r.healthy, true);
        assert.equal(r.service, "active");
        assert.deepEqual(r.validator, { client: "reth", consensusHeight: (a.consensus as { height: number }).height, catchingUp: false, switch: null });
        assert.deepEqual(faults(r), ["reth-no-peers"]);
        const p2p = (a.findings as { p2pPort: number }[])[0]!.p2pPort;
        assert.match(r.diagnoses[0]!.remedy, new RegExp(`wait; make sure ${p2p} is open on TCP and UDP`));
    });

    it("0gchaind's head not on the execution client (docs/spec.md §7's -38002; real reth's SYNCING), found by status and not remedied: unhealthy with the spec's remedy", () => {
        const r = validator(VALIDATOR["forkchoice-38002"]!);
        assert.equal(r.healthy, false);
        assert.ok(faults(r, "error").includes("forkchoice-38002"), JSON.stringify(r.diagnoses));
        const d = r.diagnoses.find((x) => x.fault === "forkchoice-38002")!;
        assert.match(d.remedy, /stop the consensus daemon, wait for the execution client to reach the chain head, run the height rollback script, start it again/);
        // Recorded on the simulators, which answer as real reth 1.11 does (SYNCING), and 0gchaind as beacon-kit logs it.
        assert.match(d.detail, /^0gchaind's head is not on the execution client \(-38002, or the EL answers SYNCING\): .*NotifyForkchoiceUpdate: EL syncing/);
    });

    it("a -38002 the health step already remedied is not reported again", () => {
        const a = clone(VALIDATOR["forkchoice-38002"]!);
        (a.findings as { fault: string; remedied: number }[]).forEach((d) => d.fault === "forkchoice-38002" && (d.remedied = 1));
        assert.ok(!faults(validator(a)).includes("forkchoice-38002"));
    });

    it("JWT files that differ: the spec's Engine API row, and 0gchaind down", () => {
        const r = validator(VALIDATOR["jwt-mismatch"]!);
        assert.deepEqual(faults(r, "error"), ["service-down", "jwt-mismatch"]);
        assert.match(r.diagnoses[1]!.remedy, /same JWT file for both/);
        assert.match(r.service, /^0gchaind-simtest inactive$/);
    });

    it("beacond waiting for the engine API: engine-unreachable with the tool's facts and the fault table's remedy", () => {
        const a = clone(VALIDATOR["healthy-reth"]!);
        a.findings = [{ fault: "engine-unreachable", detail: "INFO Waiting for execution client to start... service=engine.client", dialUrl: "http://localhost:56551", tries: 7 }];
        const r = validator(a);
        assert.deepEqual(faults(r, "error"), ["engine-unreachable"]);
        const d = r.diagnoses.find((d) => d.fault === "engine-unreachable")!;
        assert.equal(d.remedy, FAULT_TABLE["engine-unreachable"]!.remedy);
        assert.match(d.detail, /engine API at http:\/\/localhost:56551 \(7 tries; .*: INFO Waiting for execution client/);
    });

    it("a host tool older than the findings (its faults under `diagnoses`, in words of its own): the same faults, the table's words", () => {
        const a = clone(VALIDATOR["healthy-reth"]!);
        delete a.findings;
        a.diagnoses = [{ fault: "engine-unreachable", detail: "INFO Waiting for execution client to start...", advice: "the host tool's own words" }];
        const r = validator(a);
        assert.deepEqual(faults(r, "error"), ["engine-unreachable"]);
        assert.ok(!JSON.stringify(r).includes("own words"), JSON.stringify(r));
    });

    it("a missing priv_validator_state.json: the spec's remedy, create it with {}", () => {
        const r = validator(VALIDATOR["missing-priv-validator-state"]!);
        assert.ok(faults(r, "error").includes("missing-priv-validator-state"));
        assert.match(r.diagnoses.find((d) => d.fault === "missing-priv-validator-state")!.remedy, /create data\/priv_validator_state\.json in the consensus home with the content \{\}/);
    });

    it("a switch importing: its steps and the import's progress, no fault", () => {
        const r = validator(VALIDATOR["switch-importing"]!);
        const { started, at } = (VALIDATOR["switch-importing"]!.running as any).import;
        assert.deepEqual(r.validator?.switch, {
            mode: "ordered", stepsDone: 8, steps: 14, lastStep: "s08-trim", complete: false,
            running: [{ job: "nodefleet-import-simtest", done: 1200, total: 3000, percent: 40, rate: 240, etaSeconds: 8, started, at }],
        });
        assert.ok(!faults(r).includes("switch-incomplete"));
    });

    it("a running import whose figures are not its own (pulumi up not attached) shows that it runs, with no numbers", () => {
        const a = clone(VALIDATOR["switch-importing"]!);
        const { unit, started } = (a.running as any).import;
        a.running = { import: { unit, started } };
        const r = validator(a);
        assert.match(details(r), new RegExp(`import running since ${started} \\(no figures: pulumi up is not attached\\)`));
        assert.ok(r.healthy);
    });

    // Built from a recorded answer with one fact changed: states the simulators are not driven into.
    it("a switch stopped half-way with nothing running: a warning to resume or roll back", () => {
        const a = clone(VALIDATOR["switch-importing"]!);
        delete a.running;
        const r = validator(a);
        assert.deepEqual(faults(r, "warning"), ["reth-no-peers", "switch-incomplete"]);
        assert.match(r.diagnoses[1]!.detail, /stopped after s08-trim \(8 of 14 steps\)/);
    });

    it("catching_up true, two 0gchaind with this key, and a lag to the reference endpoint", () => {
        const a = clone(VALIDATOR["healthy-reth"]!);
        (a.consensus as { catchingUp: boolean }).catchingUp = true;
        a.consensusProcessesWithThisKey = 2;
        a.networkHeight = (a.executionHeight as number) + 40;
        const r = validator(a);
        assert.deepEqual(faults(r, "error"), ["catching-up", "key-running-twice"]);
        assert.ok(faults(r, "warning").includes("execution-behind"));
        assert.equal(r.lag, 40);
    });

    it("answers of the wrong shape are facts unknown, never a crash or a false 'healthy' for a stopped service", () => {
        const r = diagnose("storage-1", "storage", "dev-1", { active: "yes", chainHead: "0x10", logSyncHeight: [], connectedPeers: null });
        assert.deepEqual([r.service, r.height, r.lag, r.storage?.synced], ["unknown", null, null, false]);
        const v = validator({ client: 7, services: "x", consensus: [] });
        assert.equal(v.service, "unknown");
        assert.deepEqual(faults(v), ["no-execution-client"]);
    });
});

const target = (over: Partial<HostTarget> = {}): HostTarget => ({
    host: "h1", address: "127.0.0.1", port: 22, user: "root", hostKey: null, key: { secret: "sshKey" },
    checks: [{ node: "storage-1", role: "storage", argv: ["python3", "/usr/local/lib/nodefleet/zgs-health.py", "storage-1"] }], ...over,
});

describe("status: rows, the table and the JSON", () => {
    it("an unreachable host makes each of its nodes unhealthy, named with the reason; a failed check names the tool's last words", () => {
        const t = [target({ host: "h1" }), target({ host: "h2", checks: [{ node: "validator-1", role: "validator", argv: ["python3", "-S", "/usr/local/lib/nodefleet/zg-validator.py", "/etc/nodefleet/validator-1/validator.json", "status"] }, { node: "sequencer-1", role: "sequencer", argv: ["python3", "x"] }] })];
        const results = new Map([
            ["h1", { ok: false as const, reason: "no answer within 30 s", seconds: 30 }],
            ["h2", { ok: true as const, seconds: 1.2, results: { "validator-1": { exit: 2, stdout: "", stderr: "usage: zg-validator.py <settings.json> <command>\n", seconds: 0.1 }, "sequencer-1": { timeout: 24 } } }],
        ]);
        const r = rows(t, results);
        assert.deepEqual(r.map((x) => [x.node, x.service, faults(x)]), [["storage-1", "unreachable", ["host-unreachable"]], ["validator-1", "unknown", ["check-failed"]], ["sequencer-1", "unknown", ["check-failed"]]]);
        assert.match(r[0]!.diagnoses[0]!.detail, /host h1: no answer within 30 s/);
        assert.match(r[1]!.diagnoses[0]!.detail, /exited 2 without a JSON answer: usage: zg-validator\.py/);
        assert.match(r[1]!.diagnoses[0]!.remedy, /pulumi up/);
        assert.match(r[2]!.diagnoses[0]!.detail, /did not end within 24 s/);
    });

    it("the table: one line per node, then each diagnosis with its remedy (golden)", () => {
        const t = [target({ host: "dev-1", checks: [{ node: "storage-1", role: "storage", argv: [] }, { node: "sequencer-1", role: "sequencer", argv: [] }] }), target({ host: "dev-2", checks: [{ node: "validator-1", role: "validator", argv: [] }] })];
        const ok = (a: unknown) => ({ exit: 0, stdout: `progress line\n${JSON.stringify(a)}\n`, stderr: "", seconds: 0.5 });
        const results = new Map<string, HostResult>([
            ["dev-1", { ok: true as const, seconds: 1, results: { "storage-1": ok(STORAGE["endpoint-down"]), "sequencer-1": ok(SEQUENCER.healthy) } }],
            ["dev-2", { ok: true as const, seconds: 1, results: { "validator-1": ok(VALIDATOR["switch-importing"]) } }],
        ]);
        const r = report("dev", t, results, new Date("2026-11-24T06:30:00Z"));
        assert.equal(r.healthy, false);
        golden("status/table.txt", table(r).replace(/\/tmp\/nodefleet-sims-\w+/g, "/tmp/nodefleet-sims-X").replace(/\b\d{4,5}\/tcp/g, "P2P/tcp").replace(/make sure \d+ is open/g, "make sure P2P is open").replace(/\(at [0-9TZ:-]+\)/g, "(at T)"));
        const json = JSON.parse(JSON.stringify(r)) as typeof r;
        assert.deepEqual(json.hosts, { "dev-1": { reachable: true, seconds: 1 }, "dev-2": { reachable: true, seconds: 1 } });
        assert.deepEqual(json.nodes.map((n) => [n.node, n.healthy]), [["storage-1", false], ["sequencer-1", true], ["validator-1", true]]);
    });

    it("an upgrade at a height: DETAILS says where each validator stands, the footer how many of its validators are ready", () => {
        const upgrade = (node: string, facts: Record<string, unknown>, findings: unknown[]) => {
            const a = clone(VALIDATOR["healthy-reth"]!);
            a.findings = findings;
            a.upgrade = facts;
            return diagnose(node, "validator", "dev-2", a);
        };
        const pending = { release: "0g-chain-next", height: 1200, state: "pending", blocksLeft: 50, ready: true };
        const ready = upgrade("validator-1", pending, [{ fault: "upgrade-pending", detail: "release 0g-chain-next at height 1200: 50 blocks left; ready (release staged, watcher running)" }]);
        const late = upgrade("validator-2", { ...pending, ready: false }, [{ fault: "upgrade-not-ready", detail: "release 0g-chain-next at height 1200: not ready: the watcher is not running" }]);
        const done = upgrade("validator-3", { ...pending, state: "done", blocksLeft: -5 }, []);
        assert.deepEqual([ready.healthy, late.healthy, done.healthy], [true, false, true]);
        assert.deepEqual(ready.validator?.upgrade, pending, "the host tool's facts, as reported");
        assert.match(details(ready), /, upgrade to 0g-chain-next at 1200: 50 blocks left, ready$/);
        assert.match(details(late), /, upgrade to 0g-chain-next at 1200: 50 blocks left, NOT READY$/);
        assert.match(details(done), /, upgrade to 0g-chain-next at 1200: done$/);
        assert.deepEqual(upgradeSummary([ready, late, done]), ["upgrade to 0g-chain-next at height 1200: 1 of 2 validators ready (not ready: validator-2)"]);
        assert.deepEqual(upgradeSummary([done]), []);
        assert.equal(diagnose("validator-1", "validator", "dev-2", VALIDATOR["healthy-reth"]!).validator?.upgrade, undefined, "none configured: none reported");
    });

    it("a host's answer cannot drive the terminal: control characters are replaced", () => {
        assert.equal(printable("ok\x1b]0;pwned\x07\x1b[2J\u009bdone\n"), "ok?]0;pwned??[2J?done\n");
    });
});

describe("status: what to check, from the stack's config and outputs", () => {
    const config = (fleet: unknown) => ({
        "nodefleet:fleet": { value: JSON.stringify(fleet), secret: false },
        ...Object.fromEntries(Object.entries(SECRETS).map(([k, v]) => [`nodefleet:${k}`, { value: v, secret: true }])),
    });

    it("existing hosts from the config (address, port, user, pinned key); cloud hosts from the hosts output, pinned to the key nodefleet learned at their first boot", () => {
        const f = baseFleet();
        f.hosts["h-validator"] = awsHost();
        f.hosts["h-storage"].port = 2201;
        const plan = planFromConfig(config(f));
        const learned = newHostKey("made by the host").publicKey;
        const got = targets(plan, { "h-validator": { kind: "aws", publicAddress: "203.0.113.50", nodes: ["validator-1"], hostKey: learned } });
        assert.deepEqual(got.map((t) => [t.host, t.address, t.port, t.user, t.hostKey, t.key]), [
            ["h-storage", "192.0.2.10", 2201, "root", HOST_KEY, { secret: "sshKey" }],
            ["h-sequencer", "192.0.2.11", 22, "root", HOST_KEY, { secret: "sshKey" }],
            ["h-validator", "203.0.113.50", 22, "admin", learned, { secret: "sshKey" }],
        ]);
        // No key learned yet (its key step not run), or one that is not a key: never dialled unpinned.
        for (const hostKey of [undefined, KEY_NOT_READ, "ssh-ed25519 AAAA\nx"]) {
            const t = targets(plan, { "h-validator": { kind: "aws", publicAddress: "203.0.113.50", nodes: ["validator-1"], hostKey } }).find((x) => x.host === "h-validator")!;
            assert.deepEqual([t.address, t.hostKey], [null, null], String(hostKey));
        }
        // A cloud host whose key the config gives (made before first-boot keys): that key, whatever the output says.
        f.hosts["h-validator"] = { ...awsHost(), hostKey: HOST_KEY };
        const given = targets(planFromConfig(config(f)), { "h-validator": { kind: "aws", publicAddress: "203.0.113.50", nodes: ["validator-1"], hostKey: learned } }).find((x) => x.host === "h-validator")!;
        assert.deepEqual([given.address, given.hostKey], ["203.0.113.50", HOST_KEY]);
        f.hosts["h-validator"] = awsHost();
        assert.deepEqual(got.find((t) => t.host === "h-validator")!.checks, [{ node: "validator-1", role: "validator", argv: ["python3", "-S", "/usr/local/lib/nodefleet/zg-validator.py", "/etc/nodefleet/validator-1/validator.json", "status"] }]);
        assert.equal(targets(plan, undefined).find((t) => t.host === "h-validator")!.address, null, "never deployed: no address");
    });

    it("the health commands are the read-only ones of each role", () => {
        const plan = planFromConfig(config(baseFleet()));
        assert.deepEqual(plan.spec.nodes.map((n) => checkArgv(n).join(" ")), [
            "python3 /usr/local/lib/nodefleet/zgs-health.py storage-1",
            "python3 /usr/local/lib/nodefleet/aztec-health.py sequencer-1",
            "python3 -S /usr/local/lib/nodefleet/zg-validator.py /etc/nodefleet/validator-1/validator.json status",
        ]);
    });

    it("a config that `pulumi up` would refuse is refused here too, naming the path", () => {
        const f = baseFleet();
        f.nodes[0].host = "nowhere";
        assert.throws(() => planFromConfig(config(f)), (e: Error) => e instanceof StatusInputError && /nodes\[0\]\.host/.test(e.message));
        assert.throws(() => planFromConfig({}), /nodefleet:fleet: missing/);
        assert.throws(() => planFromConfig({ "nodefleet:fleet": { value: "{", secret: false } }), /not a structured value/);
    });

    it("the arguments: each bad one named", () => {
        assert.deepEqual(parseArgs(["--stack", "prod", "--json", "--watch", "5", "--count=3"]), { stacks: ["prod"], shards: false, json: true, watch: 5, count: 3, timeout: 30, parallel: 64 });
        assert.deepEqual(parseArgs(["--stack", "prod-eu", "--stack=prod-us", "--stack", "prod-eu", "--shards"]), { stacks: ["prod-eu", "prod-us"], shards: true, json: false, watch: undefined, count: undefined, timeout: 30, parallel: 64 });
        for (const [argv, why] of [[["--watch", "0"], /--watch: needs a positive number, got "0"/], [["--count", "2"], /--count: only with --watch/], [["--stack", "a b"], /--stack: needs a stack name/], [["--parallel", "1.5"], /--parallel: needs a positive whole number/], [["--nope"], /unknown argument "--nope"/]] as const) {
            assert.throws(() => parseArgs(argv), (e: Error) => e instanceof UsageError && why.test(e.message));
        }
    });
});

describe("status: the runner on a host and the SSH round", () => {
    const hostile = "x'; $(touch /tmp/nodefleet-pwned) `id` \"\n\\";

    it("the runner runs each argv as given (no shell), all at once, each with its time limit", () => {
        const t = target({
            checks: [
                { node: "a", role: "storage", argv: ["python3", "-c", "import json,sys; print('progress'); print(json.dumps(sys.argv[1:]))", hostile] },
                { node: "b", role: "storage", argv: ["python3", "-c", "import time; time.sleep(30)"] },
                { node: "c", role: "storage", argv: ["/nonexistent/tool"] },
            ],
        });
        // Limits far above what the checks need: the unit tier also runs beside the hosts' tests,
        // where starting python3 can take seconds.
        const t0 = Date.now();
        const run = spawnSync("python3", ["-S", "-"], { input: runnerScript(t, 10), encoding: "utf8" });
        assert.equal(run.status, 0, run.stderr);
        assert.ok(Date.now() - t0 < 25_000, "the sleeping check was not cut at its limit");
        const out = JSON.parse(run.stdout) as { results: Record<string, any> };
        assert.deepEqual(JSON.parse(out.results.a.stdout.trim().split("\n").pop()), [hostile]);
        assert.deepEqual(out.results.b, { timeout: 8 });
        assert.match(out.results.c.error, /^\/nonexistent\/tool: No such file or directory/);
        assert.ok(!fs.existsSync("/tmp/nodefleet-pwned"));
    });

    it("ssh: batch mode, the pinned key checked strictly under an alias, the key by file; root runs the runner directly, others through sudo -n", () => {
        const pinned = sshArgs(target({ hostKey: HOST_KEY, user: "admin", port: 2201 }), "/k", "/kh");
        assert.deepEqual(pinned.slice(-4), ["admin", "--", "127.0.0.1", "sudo -n python3 -S -"]);
        for (const o of ["BatchMode=yes", "UserKnownHostsFile=/kh", "HostKeyAlias=nodefleet-h1", "StrictHostKeyChecking=yes"]) assert.ok(pinned.includes(o), o);
        assert.deepEqual(pinned.slice(0, 6), ["-F", "/dev/null", "-i", "/k", "-p", "2201"]);
        assert.equal(sshArgs(target(), "/k", null).pop(), "python3 -S -");
    });

    it("a round with a stand-in ssh: answers parsed, a hung host cut at its time limit, a refused one named, a flooding one cut off, the secret key file gone after", async (t) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-status-test-"));
        t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
        const fake = path.join(dir, "ssh");
        // Stands in for ssh: records its key file, then behaves by the host's address.
        fs.writeFileSync(fake, `#!/bin/sh\nwhile [ $# -gt 1 ]; do [ "$1" = -i ] && echo "$2" >> ${dir}/keys; [ "$1" = -- ] && host="$2"; shift; done\ncase "$host" in\n  hang) sleep 60;;\n  refuse) echo "ssh: connect to host refuse port 22: Connection refused" >&2; exit 255;;\n  flood) head -c 17000000 /dev/zero | tr "\\\\0" x; sleep 60;;\n  *) exec python3 -S -;;\nesac\n`, { mode: 0o755 });
        const checks = [{ node: "n", role: "storage" as Role, argv: ["python3", "-c", "print('{\"active\": true}')"] }];
        const ts = [target({ host: "good", address: "good", checks }), target({ host: "hung", address: "hang", checks }), target({ host: "refused", address: "refuse", checks }), target({ host: "flooding", address: "flood", checks })];
        const t0 = Date.now();
        const got = await probeAll(ts, { timeoutSeconds: 10, parallel: 4, cwd: dir, secretKey: (k) => (k === "sshKey" ? FAKE_SSH_KEY : undefined), ssh: fake });
        assert.ok(Date.now() - t0 < 25_000, `the round took ${Date.now() - t0} ms`);
        assert.deepEqual(got.get("good"), { ok: true, results: { n: { exit: 0, stdout: '{"active": true}\n', stderr: "", seconds: (got.get("good") as any).results.n.seconds } }, seconds: got.get("good")!.seconds });
        assert.deepEqual([got.get("hung")!.ok, (got.get("hung") as any).reason], [false, "no answer within 10 s"]);
        assert.deepEqual([got.get("refused")!.ok, (got.get("refused") as any).reason], [false, "ssh: connect to host refuse port 22: Connection refused"]);
        assert.deepEqual([got.get("flooding")!.ok, (got.get("flooding") as any).reason], [false, "its answer exceeded 16 MiB: not read further"]);
        const keys = fs.readFileSync(path.join(dir, "keys"), "utf8").trim().split("\n");
        assert.equal(keys.length, 4);
        for (const k of keys) assert.ok(!fs.existsSync(k), `${k} was left behind`);
        const missing = await probeAll([target({ key: { secret: "nope" } })], { timeoutSeconds: 3, parallel: 1, cwd: dir, secretKey: () => undefined, ssh: fake });
        assert.match((missing.get("h1") as any).reason, /nodefleet:nope \(its SSH key\) is not set/);
    });
});

describe("status: the report reaches a pipe whole", () => {
    // A report of a thousand hosts is megabytes; the reader here takes nothing for 300 ms, so the
    // pipe fills and the rest waits in the process when it ends.
    const main = path.join(__dirname, "../../status/main.js");
    const piped = (end: string) => {
        const program = `const m = require(${JSON.stringify(main)}); process.stdout.write("x".repeat(5 << 20) + "\\n"); ${end};`;
        const r = spawnSync("sh", ["-c", `"$0" -e "$1" | (sleep 0.3; wc -c)`, process.execPath, program], { encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        return Number(r.stdout.trim());
    };
    it("exitWhenWritten ends the process only after stdout took every byte (process.exit there loses them: the control)", () => {
        assert.equal(piped("m.exitWhenWritten(1)"), (5 << 20) + 1);
        assert.ok(piped("process.exit(1)") < 5 << 20, "the control: process.exit right after the write cuts the report");
    });
});

describe("status: the docs", () => {
    it("every fault the diagnosis table or a rollout gate can report is in docs/faults.md's table, and no other", () => {
        const faultsInCode = diagnosisCodes();
        const docs = fs.readFileSync(path.join(ROOT, "docs", "faults.md"), "utf8");
        const documented = new Set([...docs.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]!));
        assert.ok(faultsInCode.size >= 20, `found ${faultsInCode.size} faults in hostfiles/nodefleet_health.py`);
        assert.deepEqual([...faultsInCode].sort(), [...documented].sort());
    });
});
