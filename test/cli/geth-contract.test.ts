// Contract test: the geth unit nodefleet renders for a validator (the client before the switch to
// reth and after a rollback), started as systemd would start it with the real geth of the lab's
// releases (lab/artifacts.sh geth, built from source once). Only the host paths are mapped into a
// scratch directory; every flag and value is the rendered one, ports on loopback but p2p's. A
// datadir initialised from the dev chain's genesis (setup runs `geth init` first) answers
// eth_blockNumber; monitored, it serves its metrics at the execution job's path on <prefix>661.
// A misspelt flag makes geth refuse to start. What this cannot show: geth under 0gchaind's engine
// calls (the e2e tier).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { executionPorts, renderGethUnit } from "../../components/roles/validator/units";
import { validatorPaths } from "../../components/roles/validator/contract";
import { releaseDir } from "../../components/hosts/scripts";
import { baseFleet, chainRelease, NODE_ID, secretSource } from "../support/fixtures";
import { systemdWords } from "../support/aztec";
import { ROOT } from "../support/cli";
import { until } from "../support/process";

const V = 2;
const PREFIX = 62; // 62545 (HTTP), 62551 (auth), 62661 (metrics), 62303 (p2p)
const GENESIS = path.join(ROOT, "lab/sim/release/geth-genesis.json");

function validator() {
    const f = baseFleet();
    // A boot node on loopback (nothing listens there): discovery never leaves this machine.
    f.nodes[V].validator = { ...f.nodes[V].validator, portPrefix: PREFIX, bootnode: `enode://${NODE_ID}@127.0.0.1:9` };
    return parseFleet(f, secretSource()).spec.nodes[V] as Extract<ReturnType<typeof parseFleet>["spec"]["nodes"][number], { role: "validator" }>;
}

/** The monitored unit's ExecStart as argv, the release's geth mapped to the lab's. */
function renderedArgv(dir: string, geth: string): string[] {
    const unit = renderGethUnit(validator(), dir, chainRelease(), "127.0.0.1", true);
    const words = systemdWords(unit.split("\n").find((l) => l.startsWith("ExecStart="))!.slice("ExecStart=".length));
    assert.equal(words[0], `${releaseDir(chainRelease())}/bin/geth`);
    return [geth, ...words.slice(1)];
}

describe("the rendered geth unit starts the real geth", () => {
    let geth: string;
    let dir: string;
    let child: ChildProcess | undefined;

    before(() => {
        const r = spawnSync("bash", [path.join(ROOT, "lab/artifacts.sh"), "geth"], { encoding: "utf8", timeout: 3600_000 });
        assert.equal(r.status, 0, r.stderr);
        geth = r.stdout.trim();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-geth-contract-"));
    });
    after(() => {
        child?.kill("SIGKILL");
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("monitored: answers eth_blockNumber and serves its metrics on <prefix>661 at /debug/metrics/prometheus", async () => {
        const node = validator();
        const p = validatorPaths(node, dir);
        fs.mkdirSync(p.dataRoot, { recursive: true });
        fs.writeFileSync(p.jwt, `0x${"11".repeat(32)}\n`, { mode: 0o600 });
        const init = spawnSync(geth, ["init", "--datadir", p.gethDir, GENESIS], { encoding: "utf8" });
        assert.equal(init.status, 0, init.stderr);
        const argv = renderedArgv(dir, geth);
        assert.deepEqual(argv.slice(argv.indexOf("--metrics"), argv.indexOf("--metrics") + 5), ["--metrics", "--metrics.addr", "0.0.0.0", "--metrics.port", `${PREFIX}661`]);
        let out = "";
        const c = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
        child = c;
        for (const s of [c.stdout!, c.stderr!]) s.on("data", (d) => (out = (out + String(d)).slice(-20_000)));
        const head = await until("eth_blockNumber", 60, async () => {
            const r = await fetch(`http://127.0.0.1:${executionPorts(node).http}/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }), signal: AbortSignal.timeout(5000) });
            return r.status === 200 ? ((await r.json()) as { result: string }).result : undefined;
        }, c, () => out, "geth");
        assert.equal(head, "0x0");
        const served = await until("geth's metrics", 60, async () => {
            const r = await fetch(`http://127.0.0.1:${PREFIX}661/debug/metrics/prometheus`, { signal: AbortSignal.timeout(5000) });
            const text = await r.text();
            return r.status === 200 && /^chain_head_block /m.test(text) ? text : undefined;
        }, c, () => out, "geth");
        assert.match(served, /^# TYPE chain_head_block gauge$/m);
        c.kill("SIGINT");
        const code = await new Promise<number | null>((r) => (c.exitCode !== null ? r(c.exitCode) : c.on("exit", (x) => r(x))));
        assert.equal(code, 0, out.slice(-3000));
    });

    it("fails on a misspelt flag: --metrics.adr for --metrics.addr", () => {
        const argv = renderedArgv(dir, geth).map((w) => (w === "--metrics.addr" ? "--metrics.adr" : w));
        const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: 30_000 });
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /flag provided but not defined: -metrics\.adr/);
    });
});
