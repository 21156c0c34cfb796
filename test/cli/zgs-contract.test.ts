// Contract test: the config.toml nodefleet renders for a storage node, read by the real
// zgs_node v1.1.0 built from upstream source (lab/zgs.sh, cached). Host paths are mapped to a
// scratch directory; every key and value is the rendered one, ports on loopback.
//
// Which keys the node reads, and with which type, is asked of the node itself, not of a list in
// this file: zgs_node ignores a key it does not know (it looks up each of its own keys in the file),
// so for each key nodefleet writes, the test gives that key a value of the wrong type and requires
// the node to refuse to start naming that key. A misspelt key is ignored by the node, which then
// does not refuse: the check fails, as the self-test below shows with a misspelling.
//
// Then the node starts from the rendered file against a real geth (--dev, on loopback) and answers
// zgs_getStatus in the shape the health check parses, with the flow address it was given; the miner
// key is read from config.toml, where nodefleet's host tool puts it (and not from the
// environment variable ZGS_NODE__MINER_KEY: shown below). What this cannot show: the node under systemd on a host, its sync of the
// flow contract's log, failover and the snapshot guard (the e2e tier, on the dev VMs).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { renderStorageConfig, renderStorageUnits } from "../../components/roles/storage/node";
import { storagePaths } from "../../components/roles/storage/contract";
import { baseFleet, secretSource } from "../support/fixtures";
import { ROOT } from "../support/cli";
import { until } from "../support/process";

const S = 0;
const GETH_HTTP = 61645;
const PORTS = { p2pPort: 61634, rpcPort: 61678, adminRpcPort: 61679, grpcPort: 61680 };
type StorageNode = Extract<ReturnType<typeof parseFleet>["spec"]["nodes"][number], { role: "storage" }>;

function storage(contracts: { flow?: string; mine?: string } = {}): StorageNode {
    const f = baseFleet();
    // No boot nodes: the node's discovery stays on this machine.
    f.nodes[S].storage = { ...f.nodes[S].storage, ...PORTS, networkBootNodes: [], networkEnrAddress: "127.0.0.1" };
    if (contracts.flow) f.nodes[S].storage.logContractAddress = contracts.flow;
    if (contracts.mine) f.nodes[S].storage.mineContractAddress = contracts.mine;
    return parseFleet(f, secretSource()).spec.nodes[S] as StorageNode;
}

/** config.toml as the host has it once zgs-endpoint filled in the endpoint. */
function renderedConfig(mount: string, node = storage()): string {
    return renderStorageConfig(node, mount).replace("@NODEFLEET_RPC_ENDPOINT@", `http://127.0.0.1:${GETH_HTTP}`);
}

/** The keys of the rendered file: [table, key, line index]. */
function renderedKeys(text: string): Array<[string, string, number]> {
    let table = "";
    const out: Array<[string, string, number]> = [];
    text.split("\n").forEach((line, i) => {
        const t = /^\[([a-z_]+)\]$/.exec(line);
        if (t) table = t[1]!;
        const k = /^([a-z_0-9]+) = /.exec(line);
        if (k) out.push([table, k[1]!, i]);
    });
    return out;
}

/** A value of another type than the line's own (a string for a number, a number for the rest). */
function wrongTyped(line: string): string {
    const [key, value] = line.split(" = ", 2) as [string, string];
    return `${key} = ${/^[0-9]+$/.test(value) ? '"not a number"' : "[1, 2]"}`;
}

function run(bin: string, config: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 20_000) {
    return spawnSync(bin, ["--config", config], { encoding: "utf8", timeout: timeoutMs, cwd: path.dirname(config), env: { PATH: process.env.PATH, ...env } });
}

/**
 * Whether the node reads `key` (under `table`) from the file: with that one line given a value of
 * the wrong type, it must exit non-zero, naming the key, before it does anything else.
 */
function readByNode(bin: string, dir: string, text: string, table: string, key: string, index: number): { read: boolean; why: string } {
    const lines = text.split("\n");
    lines[index] = wrongTyped(lines[index]!);
    const file = path.join(dir, `probe-${table || "top"}-${key}.toml`);
    fs.writeFileSync(file, lines.join("\n"));
    const r = run(bin, file);
    const out = `${r.stdout}${r.stderr}`;
    const named = new RegExp(`\\b${key}\\b`).test(out);
    return { read: r.status !== 0 && r.status !== null && named, why: `exit ${r.status ?? r.signal}: ${out.trim().split("\n").slice(-3).join(" | ")}` };
}

async function rpc(port: number, method: string, params: unknown[] = []): Promise<any> {
    const r = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        signal: AbortSignal.timeout(5000),
    });
    const body: any = await r.json();
    if (body.error) throw new Error(JSON.stringify(body.error));
    return body.result;
}

function buildPath(script: string, ...args: string[]): string {
    const r = spawnSync("bash", [path.join(ROOT, script), ...args], { encoding: "utf8", timeout: 3 * 3600_000 });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim().split("\n").pop()!;
}

describe("the rendered storage config.toml and the real zgs_node", () => {
    let zgs: string;
    let geth: string;
    let dir: string;
    const children: ChildProcess[] = [];

    before(() => {
        zgs = buildPath("lab/zgs.sh", "path");
        geth = buildPath("lab/artifacts.sh", "geth");
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-zgs-contract-"));
    });
    after(() => {
        for (const c of children) c.kill("SIGKILL");
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("reads every key nodefleet writes, with the type nodefleet writes it as (asked of the node: a wrong-typed value is refused naming the key)", () => {
        const text = renderedConfig(dir);
        const keys = renderedKeys(text);
        assert.ok(keys.length >= 18, `the rendered file has ${keys.length} keys`);
        const unread = keys.map(([table, key, i]) => ({ key: table ? `${table}.${key}` : key, ...readByNode(zgs, dir, text, table, key, i) })).filter((k) => !k.read);
        assert.deepEqual(unread.map((k) => `${k.key} (${k.why})`), [], "keys zgs_node v1.1.0 does not read");
    });

    it("the check fails on a misspelt key: the node ignores it, and starts instead of refusing", () => {
        const text = renderedConfig(dir).replace(/^log_contract_address = /m, "log_contract_adress = ");
        const [table, key, i] = renderedKeys(text).find(([, k]) => k === "log_contract_adress")!;
        assert.equal(readByNode(zgs, dir, text, table, key, i).read, false);
        const rpcTypo = renderedConfig(dir).replace(/^listen_address_admin = /m, "listen_adress_admin = ");
        const [t2, k2, i2] = renderedKeys(rpcTypo).find(([, k]) => k === "listen_adress_admin")!;
        assert.equal(readByNode(zgs, dir, rpcTypo, t2, k2, i2).read, false);
    });

    it("starts from the rendered file against a real geth with the miner key where zgs-endpoint puts it, and answers zgs_getStatus in the shape the health check reads", async () => {
        // The chain first: the node asks it for its chain id before it parses the key.
        let output = "";
        const gethChild = spawn(geth, ["--dev", "--dev.period", "1", "--datadir", path.join(dir, "geth"), "--ipcdisable", "--nodiscover", "--maxpeers", "0", "--port", "0",
            "--http", "--http.addr", "127.0.0.1", "--http.port", String(GETH_HTTP), "--authrpc.port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
        children.push(gethChild);
        gethChild.stderr!.on("data", (d) => (output = (output + String(d)).slice(-10_000)));
        const chainId = await until("geth's eth_chainId", 60, () => rpc(GETH_HTTP, "eth_chainId"), gethChild, () => output);
        // The storage contracts, deployed as on the dev chain (lab/zgs_contracts.py), which also
        // funds the dev miner key: with a key, zgs_node registers its miner id with the mine contract
        // at start, and exits when the account cannot pay ("insufficient funds") or the contract is
        // not there ("Fail to find minerId in receipt"). Its funds come from geth's dev account.
        const [funder] = await rpc(GETH_HTTP, "eth_accounts");
        const labDev = spawnSync("python3", ["-c", "from nodefleet_sim import txgen; print(txgen.address_of(txgen.DEV_KEY))"], { cwd: path.join(ROOT, "lab/sim"), encoding: "utf8" }).stdout.trim();
        const tx = await rpc(GETH_HTTP, "eth_sendTransaction", [{ from: funder, to: labDev, value: "0x3635c9adc5dea00000" }]);
        await until("the funding transaction's receipt", 60, () => rpc(GETH_HTTP, "eth_getTransactionReceipt", [tx]).then((r) => r ?? undefined), gethChild, () => output);
        const deployed = spawnSync("python3", [path.join(ROOT, "lab/zgs_contracts.py"), "deploy", "--rpc", `http://127.0.0.1:${GETH_HTTP}`, "--contracts", buildPath("lab/zgs.sh", "contracts")], { encoding: "utf8", timeout: 300_000 });
        assert.equal(deployed.status, 0, deployed.stderr);
        const contracts = JSON.parse(deployed.stdout);
        const key = spawnSync("python3", [path.join(ROOT, "lab/zgs_contracts.py"), "miner-key"], { encoding: "utf8" }).stdout.trim();

        const node = storage(contracts);
        const p = storagePaths(node, dir);
        for (const d of [p.runDir, `${p.dataDir}/log`, `${p.dataDir}/network`]) fs.mkdirSync(d, { recursive: true });
        const config = path.join(p.runDir, "config.toml");
        // What zgs-endpoint.py writes on the host: the endpoint and the key from the root-only file.
        const withKey = (k: string) => renderedConfig(dir, node).replace('"@NODEFLEET_MINER_KEY@"', JSON.stringify(k));
        fs.writeFileSync(path.join(p.runDir, "log_config"), "info");
        const logFile = path.join(p.dataDir, "log", `zgs.log.${new Date().toISOString().slice(0, 10)}`);

        // The node reads miner_key from the file: a malformed one stops it at start, naming it.
        fs.writeFileSync(config, withKey("zz"));
        const bad = run(zgs, config);
        assert.notEqual(bad.status, 0, `a malformed miner_key was not refused:\n${bad.stdout}${bad.stderr}`);
        assert.match(fs.readFileSync(logFile, "utf8"), /Unable to parse miner_key/);
        // Where the node differs from what its docs suggest: it does not read
        // ZGS_NODE__MINER_KEY (it parses its own keys from the file and the command line alone), so
        // a key delivered that way never reached it. A malformed one there is not even noticed.
        fs.writeFileSync(config, withKey(key));
        const ignored = run(zgs, config, { ZGS_NODE__MINER_KEY: "zz" }, 8_000);
        // Still running when spawnSync's timeout sent SIGTERM (on which it stops cleanly, exit 0).
        assert.equal((ignored.error as NodeJS.ErrnoException | undefined)?.code, "ETIMEDOUT", `it stopped on its own (${ignored.status}): the variable is read after all?\n${ignored.stdout}${ignored.stderr}\n${fs.readFileSync(logFile, "utf8").slice(-3000)}`);
        assert.equal(renderStorageUnits(node, dir, { name: "zgs", sha256: "a1".repeat(32) }).unit.includes("EnvironmentFile"), false, "the unit carries no key environment");

        const child = spawn(zgs, ["--config", config], { cwd: p.runDir, stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH } });
        children.push(child);
        let zout = "";
        for (const s of [child.stdout!, child.stderr!]) s.on("data", (d) => (zout = (zout + String(d)).slice(-20_000)));
        const status = await until("zgs_getStatus", 120, () => rpc(PORTS.rpcPort, "zgs_getStatus"), child, () => zout);
        // The shape zgs-health.py reads.
        assert.deepEqual(Object.keys(status).sort(), ["connectedPeers", "logSyncBlock", "logSyncHeight", "networkIdentity", "nextTxSeq"]);
        assert.equal(typeof status.logSyncHeight, "number");
        assert.equal(status.connectedPeers, 0);
        assert.equal(status.networkIdentity.chainId, Number(chainId));
        assert.equal(String(status.networkIdentity.flowAddress).toLowerCase(), node.storage.logContractAddress.toLowerCase());
        // The admin and gRPC listeners are where nodefleet put them (loopback), answering there.
        const listening = spawnSync("ss", ["-Hltnp"], { encoding: "utf8" }).stdout.split("\n").filter((l) => l.includes(`pid=${child.pid},`));
        const local = listening.map((l) => l.trim().split(/\s+/)[3]).sort();
        for (const port of [PORTS.rpcPort, PORTS.adminRpcPort, PORTS.grpcPort]) assert.ok(local.includes(`127.0.0.1:${port}`), `${port} on loopback: ${local.join(" ")}`);
        assert.ok(!local.some((a) => a!.startsWith("0.0.0.0:") && a !== `0.0.0.0:${PORTS.p2pPort}`), `only the p2p port on all addresses: ${local.join(" ")}`);
        // Its log, in log_directory as zgs.log.<UTC date>; the key in neither it nor the output.
        await until("the log file", 30, async () => (fs.existsSync(logFile) ? true : undefined), child, () => zout);
        assert.ok(!fs.readFileSync(logFile, "utf8").includes(key), "the miner key is in the node's log");
        assert.ok(!zout.includes(key), "the miner key is in the node's output");
    });
});
