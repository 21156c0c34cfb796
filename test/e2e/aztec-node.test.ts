// E2E tier: the real Aztec 4.1.2 node, started from the unit nodefleet renders for a
// `network: local` sequencer, against the dev chain with Aztec's L1 contracts deployed by the real
// CLI; its health read by nodefleet's host tool and diagnosed as `nodefleet status` diagnoses it.
//
// Where it runs: on this machine, not on a dev VM. The VMs are Debian 12 under TCG emulation: the
// node needs Node.js >= 22 and glibc 2.39 (both shipped by lab/aztec.sh beside the CLI, ~1.2 GB)
// and takes 30-60 s of two host cores to start natively; emulated, every one of its steps is
// an order of magnitude slower (docs/roles.md has the measurements). So the rendered unit runs under
// test/support/unit-host.ts, a stand-in for the part of systemd used here (named as one): its
// ExecStart=, Environment=, EnvironmentFile= and WorkingDirectory=, Restart=on-failure with
// RestartSec=, stop by SIGTERM, and `systemctl is-active` / `journalctl -u` answered for the health
// tool. Everything else is real: the node, the key step (sh), the L1 (real geth driven by the real
// beacond, whose node API serves the blobs), the health tool and the diagnosis.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { parseFleet } from "../../components/config/fleet";
import { renderSequencerKey, renderSequencerRegistration, renderSequencerUnit, sequencerJson, sequencerPaths } from "../../components/roles/sequencer";
import { releaseDir, releaseLink } from "../../components/hosts/scripts";
import { ingressRules, rolePorts, sourceCidrs } from "../../components/ports";
import { diagnose } from "../../status/diagnose";
import { details, report, table } from "../../status/report";
import { checkArgv, type HostTarget } from "../../status/targets";
import { baseFleet, RELEASES, SECRETS, secretSource, sequencerV4Settings } from "../support/fixtures";
import { ROOT, sh } from "../support/cli";
import { aztecInstall, aztecLab as aztec, devKey, prepareAztecHost } from "../support/aztec";
import { roleTools } from "../../components/hosts/tools";
import { UnitHost } from "../support/unit-host";
import { until } from "../support/lab";

const L1 = "http://127.0.0.1:8545";
const BEACON = "http://127.0.0.1:3500"; // the dev chain's beacond node API (lab/devchain.sh)
const CHAIN_ID = 80087; // the dev chain's (lab/devchain.sh: beacond's devnet chain spec)
const DEVCHAIN = path.join(ROOT, "lab/devchain.sh");
const NODE = "aztec-node-e2e";
const RELEASE = "aztec-node-e2e";
const INSTALLED = { name: RELEASE, sha256: RELEASES().aztec.sha256 };
const PUBLIC_IP = "127.0.0.1";

describe("the real Aztec 4.1.2 node from nodefleet's rendered unit, on the dev L1 (runner)", { timeout: 30 * 60_000 }, () => {
    const created: string[] = [];
    let chainWasRunning = false;
    let contracts: Record<string, string>;
    let node: any;
    let hostSpec: any;
    let unit: UnitHost;
    let mount: string;
    let proxy: ChildProcess | null = null;
    let proxyPort = 0;
    const key = `0x${randomBytes(32).toString("hex")}`;
    const t0 = Date.now();

    /** The key step as rendered for this node (L1 endpoints given), run by sh as a host runs it. */
    function keyStep(l1RpcUrls: string[]) {
        const script = renderSequencerKey(node, mount, key, SECRETS.blsKey, { l1RpcUrls, l1ConsensusHostUrls: [BEACON] });
        const r = sh("sh", ["-s"], { input: script });
        assert.ok(!r.output.includes(key.slice(2)), "the key step printed the key");
    }

    /** The health check as `nodefleet status` runs it on a host (checkArgv; the health step adds --wait), systemd's answers from the stand-in. */
    function check(wait = 0) {
        const bin = unit.standIns(sequencerPaths(node, mount).service);
        const argv = [...checkArgv(node), ...(wait > 0 ? ["--wait", String(wait)] : [])];
        const t = Date.now();
        const r = sh(argv[0]!, argv.slice(1), { env: { PATH: `${bin}:/usr/bin:/bin` }, timeoutMs: (wait + 60) * 1000, allowFail: true });
        return { exit: r.status ?? -1, stdout: r.stdout, stderr: r.output.slice(r.stdout.length), seconds: (Date.now() - t) / 1000 };
    }
    function health(wait = 0): Record<string, any> {
        const r = check(wait);
        assert.equal(r.exit, 0, r.stderr);
        return JSON.parse(r.stdout.trim().split("\n").pop()!);
    }
    /** `nodefleet status`'s report of this host, from a check run now (status reaches hosts by SSH: the VM tier proves that part). */
    function status() {
        const target: HostTarget = { host: "runner", address: "127.0.0.1", port: 22, user: "root", hostKey: null, key: { secret: "none" }, checks: [{ node: NODE, role: "sequencer", argv: checkArgv(node) }] };
        return report("e2e", [target], new Map([["runner", { ok: true as const, seconds: 1, results: { [NODE]: check() } }]]));
    }

    /** The newest blob transaction on the dev L1 and the blobs beacond's node API serves for its block.
     *  The newest: beacond v1.1.0 maps a block root to its slot from an in-memory cache of the blocks
     *  it saw since it started (storage/block/store.go, an LRU), so a root from before a restart of
     *  the dev chain is "slot not found at block root"; the sidecars themselves are kept on disk. */
    async function checkpointBlobs(): Promise<{ block: number; slot: number; versionedHashes: string[]; served: string[] }> {
        const rpc = async (method: string, params: unknown[]) =>
            ((await (await fetch(L1, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json()) as any).result;
        const head = Number(await rpc("eth_blockNumber", []));
        for (let n = head; n >= 1; n--) {
            const block = await rpc("eth_getBlockByNumber", [`0x${n.toString(16)}`, true]);
            const versionedHashes: string[] = block.transactions.flatMap((tx: any) => tx.blobVersionedHashes ?? []);
            if (versionedHashes.length === 0) continue;
            const header = (await (await fetch(`${BEACON}/eth/v1/beacon/headers/${block.parentBeaconBlockRoot}`)).json()) as any;
            assert.ok(header.data, `block ${n}'s parent beacon root ${block.parentBeaconBlockRoot}: ${JSON.stringify(header)}`);
            const slot = Number(header.data.header.message.slot) + 1;
            const sidecars = (await (await fetch(`${BEACON}/eth/v1/beacon/blob_sidecars/${slot}`)).json()) as any;
            const served = sidecars.data.map((s: any) => `0x01${createHash("sha256").update(Buffer.from(s.kzg_commitment.slice(2), "hex")).digest("hex").slice(2)}`);
            return { block: n, slot, versionedHashes, served };
        }
        return { block: 0, slot: 0, versionedHashes: [], served: [] };
    }

    const row = (answer: Record<string, any>) => diagnose(NODE, "sequencer", "runner", answer);
    const faults = (answer: Record<string, any>) => row(answer).diagnoses.map((d) => d.fault);

    /** The forwarder the node reaches its L1 through (a dead L1 is this forwarder stopped). */
    async function startProxy(): Promise<void> {
        proxyPort = proxyPort || 20000 + Math.floor(Math.random() * 20000);
        proxy = spawn("python3", ["-m", "nodefleet_sim.rpcproxy", "--listen", `127.0.0.1:${proxyPort}`, "--to", L1], { cwd: path.join(ROOT, "lab/sim"), stdio: "ignore" });
        await until("the L1 forwarder", () => sh("curl", ["-fsS", "-m", "2", "-X", "POST", "-H", "Content-Type: application/json", "--data", '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}', `http://127.0.0.1:${proxyPort}`], { allowFail: true }).status === 0, 20_000);
    }
    function stopProxy(): void {
        proxy?.kill("SIGKILL");
        proxy = null;
    }

    before(async () => {
        prepareAztecHost(NODE, RELEASE, roleTools("sequencer").map((t) => t.path), created); // what the sequencer's steps install
        aztecInstall();
        chainWasRunning = /^geth running$/m.test(sh("bash", [DEVCHAIN, "status"]).stdout);
        sh("bash", [DEVCHAIN, "start"]);
        // The release as a host installs it: its version's directory, and the link to it (the unit
        // starts the version's own binary; one-shot commands take the link).
        const dir = releaseDir(INSTALLED);
        assert.ok(!fs.existsSync(dir), `${dir} exists on this machine: not touching it`);
        if (!fs.existsSync(path.dirname(dir))) created.push(path.dirname(dir));
        created.push(dir);
        aztec(["release", dir]);
        fs.symlinkSync(dir, releaseLink(RELEASE));
        mount = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-aztec-node-"));
        created.push(mount);
        await startProxy();
    });

    after(async () => {
        if (unit) await unit.stop();
        stopProxy();
        for (const p of created.reverse()) fs.rmSync(p, { recursive: true, force: true });
        if (!chainWasRunning) sh("bash", [DEVCHAIN, "stop"], { allowFail: true });
        console.log(`# the real Aztec node scenario: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    });

    it("Aztec's L1 contracts on the dev chain for a one-sequencer local network; the sequencer's key funded", () => {
        // No committee (anyone may propose), 24 s slots of 2 s L1 blocks, 8-slot epochs: blocks within minutes.
        const settings = { ETHEREUM_SLOT_DURATION: "2", AZTEC_SLOT_DURATION: "24", AZTEC_EPOCH_DURATION: "8", AZTEC_TARGET_COMMITTEE_SIZE: "0" };
        contracts = JSON.parse(aztec(["deploy", L1, String(CHAIN_ID)], { DEPLOYER_KEY: devKey(), ...settings }));
        const address = aztec(["l1", "address", L1, contracts.rollupAddress!], { SENDER_KEY: key }).trim();
        aztec(["l1", "fund", L1, contracts.rollupAddress!], { DEPLOYER_KEY: devKey(), SENDER_KEY: key }); // ETH for the proposals' gas
        const f = baseFleet();
        f.nodes[1].name = NODE;
        f.nodes[1].release = RELEASE;
        f.releases[RELEASE] = f.releases.aztec;
        f.nodes[1].sequencer = {
            ...sequencerV4Settings(), network: "local", l1ChainId: CHAIN_ID, l1RpcUrls: [L1], l1ConsensusHostUrls: [BEACON],
            registryAddress: contracts.registryAddress, rollupAddress: contracts.rollupAddress, validatorAddress: address, withdrawerAddress: address,
            coinbase: address, runtime: "release", publicIp: PUBLIC_IP, rpcAllowedCidrs: ["198.51.100.0/24"],
            l1SlotSeconds: 2, // the dev chain's block time (lab/devchain.sh)
        };
        const spec = parseFleet(f, secretSource({ ...SECRETS, sequencerKey: key })).spec;
        node = spec.nodes[1];
        hostSpec = spec.hosts[node.host];
    });

    it("nodefleet's registration as `nodefleet status` shows it: queued after the deposit, VALIDATING after the flush", () => {
        // Before the node starts, as on a host whose validator is not yet in a committee: here anyone
        // may propose, and the node's blob transactions from the same key would make geth refuse the
        // deposit ("address already reserved": one account, one of geth's two transaction pools).
        assert.ok(node, "the L1 was deployed");
        const p = sequencerPaths(node, mount);
        fs.mkdirSync(p.dataDirectory, { recursive: true });
        fs.mkdirSync(path.join("/etc/nodefleet", NODE), { recursive: true });
        fs.writeFileSync(path.join("/etc/nodefleet", NODE, "sequencer.json"), sequencerJson(node, mount));
        // The L1 through the forwarder, so that the scenario below can take it away.
        keyStep([`http://127.0.0.1:${proxyPort}`]);
        unit = new UnitHost(NODE, renderSequencerUnit(node, mount, INSTALLED, PUBLIC_IP), () => fs.readFileSync(p.envFile, "utf8"), path.join(mount, "systemd"));
        const first = sh("sh", ["-s"], { input: renderSequencerRegistration(node, mount, RELEASE), timeoutMs: 600_000 });
        assert.equal(JSON.parse(first.stdout.trim().split("\n").pop()!).action, "submitted", first.output);
        const queued = health();
        assert.equal(queued.registration.status, "QUEUED", JSON.stringify(queued.registration));
        assert.match(details(status().nodes[0]!), /registration QUEUED #\d+/);
        aztec(["l1", "flush", L1, contracts.rollupAddress!], { DEPLOYER_KEY: devKey() });
        const validating = health();
        assert.deepEqual([validating.registration.status, validating.registration.queuePosition], ["VALIDATING", null]);
    });

    it("starts from the rendered unit and answers the health check: healthy, as `nodefleet status` reads it", async () => {
        assert.ok(unit, "the key step ran");
        const p = sequencerPaths(node, mount);
        const started = Date.now();
        unit.start();
        const h = health(240);
        console.log(`# started and healthy in ${((Date.now() - started) / 1000).toFixed(0)} s: ${JSON.stringify(h)}`);
        assert.deepEqual(h.diagnoses, [], JSON.stringify(h));
        assert.equal(h.active, true);
        assert.equal(h.provenBlock, 0, "nothing proves on the dev L1");
        assert.ok(Number.isInteger(h.latestBlock));
        assert.equal(h.siblingPath.ok, true);
        assert.match(h.peerId, /^16Uiu2[1-9A-HJ-NP-Za-km-z]{40,}$/);
        const st = status();
        console.log(table(st));
        assert.equal(st.healthy, true, JSON.stringify(st.nodes));
        assert.deepEqual([st.nodes[0]!.service, st.nodes[0]!.sequencer!.peerId, st.nodes[0]!.sequencer!.registration], ["active", h.peerId, "VALIDATING"]);
        // Secrets: neither the validator key nor an admin API key in its journal (the node gets the key's hash).
        // The admin API starts after the node answers on 8080 (its line may come a few seconds after healthy).
        const adminLine = /Admin API key authentication enabled \(using pre-configured key hash\)/;
        await until("the node's admin API line in its log", () => adminLine.test(fs.readFileSync(unit.journal, "utf8")), 60_000);
        const journal = fs.readFileSync(unit.journal, "utf8");
        const adminKey = fs.readFileSync(p.adminKeyFile, "utf8");
        assert.ok(!journal.includes(key.slice(2)), "the validator key is in the node's log");
        assert.ok(!journal.includes(adminKey) && !/ADMIN API KEY/.test(journal), "an admin API key is in the node's log");

        // The admin API answers with the key nodefleet made, and not without it.
        const admin = (extra: string[]) => sh("curl", ["-sS", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json", ...extra, "--data", '{"jsonrpc":"2.0","id":1,"method":"nodeAdmin_getConfig","params":[]}', "http://127.0.0.1:8880"], { allowFail: true }).stdout;
        assert.equal(admin(["-H", `x-api-key: ${adminKey}`]), "200");
        assert.equal(admin([]), "401");
    });

    it("binds 40400 TCP+UDP, 8080 and 8880 (on every address); the firewall opens only 40400 and 8080 to its CIDRs", () => {
        const listening = sh("ss", ["-H", "-lntup"]).stdout.split("\n").filter((l) => l.includes(`pid=${unit.pid},`));
        const bound = listening.map((l) => {
            const [proto, , , , local] = l.trim().split(/\s+/);
            return `${local!.slice(local!.lastIndexOf(":") + 1)}/${proto} on ${local!.slice(0, local!.lastIndexOf(":"))}`;
        }).sort();
        console.log(`# the real node's listeners: ${bound.join(", ")}`);
        const ports = new Set(bound.map((b) => b.split(" ")[0]));
        assert.deepEqual([...ports].sort(), ["40400/tcp", "40400/udp", "8080/tcp", "8880/tcp"], bound.join(", "));
        // Every listener is one the port table knows; the rules nodefleet renders open 40400 to all and
        // 8080 to the allowed CIDRs only, never 8880 (which the node binds on every address).
        const table = rolePorts(node).map((p) => `${p.port}/${p.protocol}`);
        for (const p of ports) assert.ok(table.includes(p!), `${p} is not in the port table`);
        const rules = ingressRules(hostSpec, [node]).filter((r) => r.port !== 22);
        assert.ok(node.sequencer.rpcAllowedCidrs.length > 0, "the fixture allows 8080 to some CIDRs");
        assert.deepEqual(rules.map((r) => `${r.port}/${r.protocol}`).sort(), ["40400/tcp", "40400/udp", "8080/tcp"]);
        assert.deepEqual(sourceCidrs(rules.find((r) => r.port === 8080)!), node.sequencer.rpcAllowedCidrs);
    });

    it("proposes L2 blocks on the dev L1 (checkpointed there; nothing proves them)", async () => {
        const started = Date.now();
        await until("an L2 block proposed and checkpointed on L1", () => {
            const tips = JSON.parse(sh("curl", ["-fsS", "-m", "5", "-X", "POST", "-H", "Content-Type: application/json", "--data", '{"jsonrpc":"2.0","id":1,"method":"node_getL2Tips","params":[]}', "http://127.0.0.1:8080"], { allowFail: true }).stdout || "{}").result;
            return (tips?.checkpointed?.block?.number ?? 0) >= 1;
        }, 300_000);
        console.log(`# first checkpointed L2 block after ${((Date.now() - started) / 1000).toFixed(0)} s`);
        assert.match(fs.readFileSync(unit.journal, "utf8"), /Built block 1 at checkpoint 1/);
        // The checkpoint went to L1 as a blob transaction; its blobs are served by the real beacond,
        // found the way the node's blob client finds them (the slot of the block's parent beacon root, + 1).
        const blobs = await checkpointBlobs();
        assert.ok(blobs.versionedHashes.length > 0, "a blob transaction on the dev L1");
        assert.deepEqual(blobs.served.filter((h) => blobs.versionedHashes.includes(h)).sort(), [...blobs.versionedHashes].sort(), JSON.stringify(blobs));
        assert.doesNotMatch(fs.readFileSync(unit.journal, "utf8"), /Unable to get blob sidecar|Error getting blob sidecar/);
        const h = health(60);
        assert.ok(h.latestBlock >= 1);
        assert.deepEqual(h.diagnoses, [], JSON.stringify(h));
    });

    it("a dead L1 endpoint: the running node says so in its log and status names it; at start it exits and systemd restarts it", async () => {
        stopProxy();
        await until("the node's log to show the L1 gone", () => health().l1Unreachable !== null, 60_000);
        const running = health();
        console.log(`# l1 gone, running: ${JSON.stringify(running)}`);
        assert.equal(running.active, true, "the node runs on without its L1");
        assert.equal(running.l1Unreachable, `http://127.0.0.1:${proxyPort}`);
        assert.deepEqual(faults(running), ["l1-endpoint-down"]);
        assert.match(row(running).diagnoses[0]!.detail, /it runs on/);
        // Restarted with its L1 still gone: it exits at start, and Restart=on-failure brings it back every 10 s.
        await unit.stop();
        const startsBefore = unit.starts;
        unit.start();
        await until("two failed starts", () => unit.starts >= startsBefore + 2, 120_000);
        assert.ok(unit.exits.slice(-1)[0] !== "0", `exit ${unit.exits.slice(-1)[0]}`);
        const looping = health();
        console.log(`# l1 gone, restarting: ${JSON.stringify(looping)}`);
        // systemd calls a Type=simple unit active from its start: between failed starts it is "activating".
        assert.ok(looping.active !== true || looping.tipsError !== undefined, JSON.stringify(looping));
        assert.deepEqual(faults(looping), ["l1-endpoint-down"], JSON.stringify(looping));
        assert.match(row(looping).diagnoses[0]!.detail, /exits at start/);
        console.log(table(status()));
        // The L1 back: the next restart starts it, and it is healthy again.
        await startProxy();
        const healthy = health(240);
        assert.deepEqual(healthy.diagnoses, [], JSON.stringify(healthy));
    });

    it("a stopped node: service down, its RPC silent", async () => {
        const how = await unit.stop();
        console.log(`# the node stopped by SIGTERM: ${how}`);
        // 4.1.2 exits 143 on SIGTERM; the unit's SuccessExitStatus=143 makes that a clean stop ("inactive", not "failed").
        assert.deepEqual([how, unit.state], ["143", "inactive"]);
        const h = health();
        console.log(`# stopped: ${JSON.stringify(h)}`);
        assert.equal(h.active, false);
        assert.deepEqual(faults(h), ["service-down", "sequencer-rpc-down"]);
        const st = status();
        console.log(table(st));
        assert.equal(st.healthy, false);
    });
});
