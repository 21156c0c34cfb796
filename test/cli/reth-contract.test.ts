// Contract test: the reth unit nodefleet renders, started as systemd would start it, with
// the real reth built from upstream source (lab/reth.sh, cached). Only the host paths are mapped to
// a scratch directory (the binary, the release's genesis, the data root); every flag and value is
// the rendered one, ports on loopback. It answers eth_blockNumber over HTTP (a fresh datadir is
// initialised from the dev chain's geth genesis: block 0), and on the auth port
// engine_exchangeCapabilities with a JWT made from the rendered jwtsecret file, 401 without one. A
// misspelt flag in the argv makes reth refuse to start, and this test with it. It also records where
// real reth answers otherwise than the spec assumes (SYNCING for a forkchoice to an unknown head,
// not -38002). What this cannot
// show: reth under 0gchaind's engine calls and the switch (the e2e tier).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { executionPorts, RETH_BINARY, renderRethUnit } from "../../components/roles/validator/units";
import { validatorPaths } from "../../components/roles/validator/contract";
import { releaseLink } from "../../components/hosts/scripts";
import { baseFleet, chainRelease, NODE_ID, secretSource } from "../support/fixtures";
import { systemdWords } from "../support/aztec";
import { ROOT } from "../support/cli";
import { until } from "../support/process";

const V = 2;
const PREFIX = 61; // ports 61545 (HTTP), 61551 (auth), 61303 (p2p): loopback only
const GENESIS = path.join(ROOT, "lab/sim/release/geth-genesis.json");

function validator() {
    const f = baseFleet();
    // A boot node on loopback (nothing listens there): reth's discovery never leaves this machine.
    f.nodes[V].validator = { ...f.nodes[V].validator, portPrefix: PREFIX, bootnode: `enode://${NODE_ID}@127.0.0.1:9` };
    return parseFleet(f, secretSource()).spec.nodes[V] as Extract<ReturnType<typeof parseFleet>["spec"]["nodes"][number], { role: "validator" }>;
}

/** The unit's ExecStart as argv, host paths mapped into `dir`. */
function renderedArgv(dir: string, reth: string, metrics = false): string[] {
    const node = validator();
    const unit = renderRethUnit(node, dir, chainRelease(), "127.0.0.1", metrics);
    const start = unit.split("\n").find((l) => l.startsWith("ExecStart="))!;
    const words = systemdWords(start.slice("ExecStart=".length));
    assert.equal(words[0], RETH_BINARY);
    const genesis = `${releaseLink("0g-chain")}/geth-genesis.json`;
    assert.ok(words.includes(genesis), "the unit names the release's genesis");
    return [reth, ...words.slice(1).map((w) => (w === genesis ? GENESIS : w))];
}

/** An HS256 JWT with iat now, as the engine API wants it, from the hex secret file. */
function jwt(secretHex: string): string {
    const b64 = (x: object | Buffer) => Buffer.from(x instanceof Buffer ? x : JSON.stringify(x)).toString("base64url");
    const body = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ iat: Math.floor(Date.now() / 1000) })}`;
    return `${body}.${crypto.createHmac("sha256", Buffer.from(secretHex.replace(/^0x/, ""), "hex")).update(body).digest("base64url")}`;
}

async function post(port: number, method: string, token?: string, params?: unknown[]): Promise<{ status: number; body: any }> {
    const r = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: params ?? (method === "engine_exchangeCapabilities" ? [["engine_forkchoiceUpdatedV3"]] : []) }),
        signal: AbortSignal.timeout(5000),
    });
    const text = await r.text();
    let body: any = text;
    try {
        body = JSON.parse(text);
    } catch {
        /* not JSON: kept as text */
    }
    return { status: r.status, body };
}

describe("the rendered reth unit starts the real reth", () => {
    let reth: string;
    let dir: string;
    let child: ChildProcess | undefined;
    let output = "";

    before(() => {
        const r = spawnSync("bash", [path.join(ROOT, "lab/reth.sh"), "path"], { encoding: "utf8", timeout: 3 * 3600_000 });
        assert.equal(r.status, 0, r.stderr);
        reth = r.stdout.trim();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-reth-contract-"));
    });
    after(() => {
        child?.kill("SIGKILL");
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("is the pinned upstream release (it names itself 1.11.3: the tag v1.11.4 did not bump its version)", () => {
        const v = spawnSync(reth, ["--version"], { encoding: "utf8" });
        assert.equal(v.status, 0, v.stderr);
        assert.match(v.stdout, /^Reth Version: 1\.11\.3$/m);
    });

    it("answers eth_blockNumber on its HTTP port and, with the JWT of its jwtsecret file, engine_exchangeCapabilities (401 without)", async () => {
        const node = validator();
        const p = validatorPaths(node, dir);
        fs.mkdirSync(p.dataRoot, { recursive: true });
        const secret = crypto.randomBytes(32).toString("hex");
        fs.writeFileSync(p.jwt, `0x${secret}\n`, { mode: 0o600 }); // as setup writes it (BeaconKit needs the 0x)
        const argv = renderedArgv(dir, reth);
        // The operator's home, as systemd gives it: the unit's log flags keep reth's files out of it.
        const home = path.join(dir, "home");
        fs.mkdirSync(home);
        child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, HOME: home, XDG_CACHE_HOME: "" } });
        for (const s of [child.stdout!, child.stderr!]) s.on("data", (d) => (output = (output + String(d)).slice(-20_000)));
        const ports = executionPorts(node);
        const head = await until("eth_blockNumber", 120, async () => {
            const r = await post(ports.http, "eth_blockNumber");
            return r.status === 200 ? r.body : undefined;
        }, child, () => output, "reth");
        assert.equal(head.result, "0x0", JSON.stringify(head));
        const denied = await post(ports.engine, "engine_exchangeCapabilities");
        assert.equal(denied.status, 401, JSON.stringify(denied));
        const wrong = await post(ports.engine, "engine_exchangeCapabilities", jwt(crypto.randomBytes(32).toString("hex")));
        assert.equal(wrong.status, 401, "a JWT signed with another secret is refused");
        const caps = await post(ports.engine, "engine_exchangeCapabilities", jwt(secret));
        assert.equal(caps.status, 200, JSON.stringify(caps));
        assert.ok(Array.isArray(caps.body.result) && caps.body.result.includes("engine_forkchoiceUpdatedV3"), JSON.stringify(caps.body));
        // Where real reth differs from the spec: a forkchoice to a head it does not have
        // is answered SYNCING, not -38002 "Invalid forkchoice state" (which the spec's error table
        // assumes; the host tool's
        // remedies now count beacon-kit's "EL syncing" for it as the same fault).
        const unknown = `0x${"ab".repeat(32)}`;
        const forkchoice = { headBlockHash: unknown, safeBlockHash: unknown, finalizedBlockHash: unknown };
        const { status, body: fcu } = await post(ports.engine, "engine_forkchoiceUpdatedV3", jwt(secret), [forkchoice, null]);
        assert.equal(status, 200, JSON.stringify(fcu));
        assert.equal(fcu.error, undefined, JSON.stringify(fcu));
        assert.equal(fcu.result?.payloadStatus?.status, "SYNCING", JSON.stringify(fcu));
        // The datadir and IPC path are the rendered ones.
        assert.ok(fs.existsSync(path.join(p.rethDir, "db")), `no ${p.rethDir}/db`);
        await until("the IPC socket", 30, async () => (fs.existsSync(`${p.rethDir}/reth.ipc`) ? true : undefined), child, () => output, "reth");
        child.kill("SIGINT");
        const code = await new Promise<number | null>((r) => (child!.exitCode !== null ? r(child!.exitCode) : child!.on("exit", (c) => r(c))));
        assert.equal(code, 0, `reth did not stop cleanly on SIGINT:\n${output.slice(-3000)}`);
        // The journal is its log: no colour codes in it, no debug log files under the home.
        assert.match(output, /Starting consensus engine/);
        assert.doesNotMatch(output, /\x1b\[/, "ANSI colour codes in reth's output");
        assert.deepEqual(fs.readdirSync(home), [], "reth wrote under the operator's home");
    });

    it("monitored: serves its metrics on <prefix>661 at the execution job's path (geth's; reth answers every path)", async () => {
        const argv = renderedArgv(dir, reth, true);
        assert.equal(argv[argv.indexOf("--metrics") + 1], `0.0.0.0:${PREFIX}661`);
        let out = "";
        const home = fs.mkdtempSync(path.join(dir, "home-"));
        const c = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, HOME: home, XDG_CACHE_HOME: "" } });
        child = c;
        for (const s of [c.stdout!, c.stderr!]) s.on("data", (d) => (out = (out + String(d)).slice(-20_000)));
        const served = await until("reth's metrics", 120, async () => {
            const r = await fetch(`http://127.0.0.1:${PREFIX}661/debug/metrics/prometheus`, { signal: AbortSignal.timeout(5000) });
            const text = await r.text();
            return r.status === 200 && /^reth_/m.test(text) ? text : undefined;
        }, c, () => out, "reth");
        assert.match(served, /^# TYPE reth_\w+ \w+$/m);
        c.kill("SIGINT");
        await new Promise((r) => (c.exitCode !== null ? r(null) : c.on("exit", r)));
    });

    for (const [from, to] of [["--authrpc.jwtsecret", "--authrpc.jwt-secret"], ["--engine.persistence-threshold", "--engine.persistance-threshold"], ["--http.api", "--http.apis"]] as const) {
        it(`fails on a misspelt flag: ${to} for ${from}`, () => {
            const argv = renderedArgv(dir, reth).map((w) => (w === from ? to : w));
            assert.ok(argv.includes(to));
            const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: 30_000 });
            assert.notEqual(r.status, 0);
            assert.match(r.stderr, new RegExp(`unexpected argument '${to.replace(/[.]/g, "\\.")}' found`));
        });
    }
});
