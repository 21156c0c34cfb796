// Real-engine benchmark of the pipeline at fleet scale (a report, not a gate; docs/gitops.md, Sizing):
// a fleet of N nodes kept as shards of S nodes, each shard a stack on an S3 backend (moto's S3 server
// on loopback, lab/s3.sh: it answers as S3 does; its own CPU is not counted and S3's latency is not
// had), its hosts the scripted SSH host (real SSH, runs nothing; it answers the drift check with no
// drift). Per toolchain and shard size, one shard is measured (the generated shards are alike, each
// stands for the others): its first `up`, then what a merge with no fleet change runs for it, each
// through scripts/ci/stack.sh as the workflows run it, the program through ts-node as there: `up`
// (refresh + up), `drift`, `preview`. The fleet's figures: the CPU of its k shards (k × one), and
// the pipeline's wall with a runner per shard, at most R at once (a GitHub plan's concurrent jobs,
// default 20): ceil(k / R) × one shard's. Not counted: a runner's start, checkout, `npm ci` and
// Pulumi install before each job.
//   node dist/test/bench/steady.js [--toolchains nodefleet,stock] [--shards 50,250] [--runners 20] [nodes]
//   (scripts/bench.sh steady; default 1000 nodes, shards of 50 on stock and 250 on nodefleet's)
// Data on stdout; progress on stderr.
import * as path from "node:path";
import { stringify } from "yaml";
import { ROOT, ScratchProject, sh } from "../support/cli";
import { ScriptedHosts } from "../support/scripted-hosts";
import { s3Server } from "../support/s3";
import { CPU_METHOD, measureCommand, partsText, writeShards, type Measured } from "./engine";

const progress = (s: string) => process.stderr.write(`[bench steady] ${s}\n`);
/** What stack.sh runs in a checkout (test/cli/pipeline.test.ts takes the same). */
const SOURCES = ["Pulumi.yaml", "package.json", "package-lock.json", "tsconfig.json", "index.ts", "components", "templates", "hostfiles", "policy", "status", "scripts", "lab"];
/** The goals of docs/gitops.md's sizing, in seconds of the pipeline's wall. */
const GOALS = { firstUpStock: 30 * 60, merge: 5 * 60, drift: 5 * 60 };
const PHASES = ["first up", "merge: up", "drift", "preview"] as const;
type Phase = (typeof PHASES)[number];

interface Row {
    readonly toolchain: "nodefleet" | "stock";
    readonly shard: number;
    readonly shards: number;
    readonly m: Record<Phase, Measured>;
}

/** One shard of `shard` nodes of a fleet of `nodes` on `toolchain`: its first up, then a no-change merge's steps. */
async function run(toolchain: Row["toolchain"], nodes: number, shard: number, backendUrl: string): Promise<Row> {
    const k = Math.ceil(nodes / shard);
    const names = Array.from({ length: k }, (_, i) => `fleet-${i + 1}`);
    const stack = names[0]!;
    const lab = new ScriptedHosts();
    let project: ScratchProject | undefined;
    process.env.NODEFLEET_TEST_TOOLCHAIN = toolchain; // the scratch project's PATH and plugins (test/support/cli.ts)
    try {
        // Every shard's config is in the project (the program reads them all: docs/gitops.md, Shards),
        // each on hosts of its own; only the first shard's are ever reached.
        const ports = await lab.listen(nodes);
        project = new ScratchProject(stack, stringify({ config: { "nodefleet:fleetFile": `fleets/${stack}.yaml` } }), undefined, SOURCES, "typescript");
        project.writeDevFiles("generated");
        writeShards(project, names, shard, nodes, ports, path.join(lab.dir, "secrets"));
        lab.answerDrift();
        const env = {
            PULUMI_BACKEND_URL: backendUrl,
            AWS_ACCESS_KEY_ID: "nodefleet-bench",
            AWS_SECRET_ACCESS_KEY: "nodefleet-bench",
            AWS_REGION: "us-east-1",
            NODEFLEET_TOOLCHAIN: toolchain,
            NODEFLEET_UPSTREAM: path.resolve(ROOT, "../shared/upstream"),
            NODEFLEET_PREBUILT: path.resolve(ROOT, "../shared/prebuilt"),
        };
        // A runner's install step, before the measured ones: nodefleet's toolchain into the copy (from the cache).
        if (toolchain === "nodefleet") sh("bash", ["lab/toolchain.sh", "hcloud"], { cwd: project.dir, env });
        const m = {} as Record<Phase, Measured>;
        for (const [phase, action] of [["first up", "up"], ["merge: up", "up"], ["drift", "drift"], ["preview", "preview"]] as const) {
            progress(`${toolchain}, ${stack} (${shard} of ${nodes} nodes, ${k} shards): stack.sh ${action} (${phase})`);
            const r = await measureCommand(project, ["bash", "scripts/ci/stack.sh", action, stack], env);
            if (r.status !== 0) throw new Error(`${toolchain}: stack.sh ${action} ${stack} (${phase}) failed:\n${r.output.slice(-4000)}`);
            const changed = phase === "first up" ? [] : changes(r.output);
            if (changed.length > 0) throw new Error(`${toolchain}: stack.sh ${action} ${stack} (${phase}) changed what a steady state leaves alone: ${changed.join("; ")}`);
            progress(`${phase}: ${r.cpuS.toFixed(1)} CPU-s, ${r.wallS.toFixed(0)} s, CLI peak ${r.cliPeakMb.toFixed(0)} MB (${partsText(r)})`);
            m[phase] = r;
        }
        return { toolchain, shard, shards: k, m };
    } finally {
        project?.dispose();
        lab.dispose();
    }
}

/** The lines of a run's resource summary that say something changed (a steady state's say "N unchanged" alone). */
function changes(output: string): string[] {
    const summary = /^Resources:\n((?: {4}.*\n?)+)/m.exec(output)?.[1] ?? "";
    if (summary === "") return ["no resource summary"];
    return summary.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !/^\d+ unchanged$/.test(l));
}

function report(rows: Row[], nodes: number, runners: number): void {
    const out = (s: string) => process.stdout.write(`${s}\n`);
    const cell = (x: Measured) => `${x.cpuS.toFixed(1)} (${x.wallS.toFixed(0)})`;
    out(`CPU seconds counted by ${CPU_METHOD}; wall seconds in brackets; one shard, each step as scripts/ci/stack.sh runs it on an S3 backend (moto)`);
    out(`toolchain  shard nodes  shards  ${PHASES.map((p) => `${p} CPU-s (wall)`.padStart(24)).join(" ")}  CLI peak MB (first up)`);
    for (const r of rows) out(`${r.toolchain.padEnd(9)}  ${String(r.shard).padStart(11)}  ${String(r.shards).padStart(6)}  ${PHASES.map((p) => cell(r.m[p]).padStart(24)).join(" ")}  ${r.m["first up"].cliPeakMb.toFixed(0).padStart(22)}`);
    for (const r of rows) out(`CPU by part, ${r.toolchain} shards of ${r.shard}: ${PHASES.map((p) => `${p}: ${partsText(r.m[p])}`).join("; ")}`);
    const met = (ok: boolean) => (ok ? "met" : "MISSED");
    for (const r of rows) {
        const waves = Math.ceil(r.shards / runners);
        const wall = (p: Phase) => waves * r.m[p].wallS;
        const cpu = (p: Phase) => r.shards * r.m[p].cpuS;
        const goal = r.toolchain === "stock" ? `; first up <= 30 min ${met(wall("first up") <= GOALS.firstUpStock)}` : "";
        out(
            `${nodes} nodes as ${r.shards} shard(s) of ${r.shard} on ${r.toolchain}, ${Math.min(r.shards, runners)} runner(s) at once (${waves} wave(s)): ` +
                `first up ${wall("first up").toFixed(0)} s wall, ${cpu("first up").toFixed(0)} CPU-s in all; no-change merge (up) ${wall("merge: up").toFixed(0)} s, ${cpu("merge: up").toFixed(0)} CPU-s; ` +
                `drift ${wall("drift").toFixed(0)} s, ${cpu("drift").toFixed(0)} CPU-s; preview ${wall("preview").toFixed(0)} s, ${cpu("preview").toFixed(0)} CPU-s` +
                `${goal}; merge <= 5 min ${met(wall("merge: up") <= GOALS.merge)}; drift <= 5 min ${met(wall("drift") <= GOALS.drift)}`,
        );
    }
}

/** `--name a,b` from args (removed from them), or the default. */
function listArg(args: string[], name: string, fallback: string[]): string[] {
    const i = args.indexOf(name);
    if (i === -1) return fallback;
    const values = (args[i + 1] ?? "").split(",").filter(Boolean);
    if (values.length === 0) throw new Error(`${name}: a comma-separated list`);
    args.splice(i, 2);
    return values;
}

async function main(): Promise<void> {
    const args = process.argv.slice(2);
    const toolchains = listArg(args, "--toolchains", ["nodefleet", "stock"]);
    for (const t of toolchains) if (t !== "nodefleet" && t !== "stock") throw new Error(`--toolchains: nodefleet or stock, not ${t}`);
    const shardArg = listArg(args, "--shards", []).map(Number);
    const [runners = 20] = listArg(args, "--runners", ["20"]).map(Number);
    const [nodes = 1000, ...rest] = args.map(Number);
    if (rest.length > 0 || !Number.isInteger(nodes) || nodes < 1 || !Number.isInteger(runners) || runners < 1 || shardArg.some((s) => !Number.isInteger(s) || s < 1 || s > nodes)) {
        throw new Error("usage: steady.js [--toolchains nodefleet,stock] [--shards S,…] [--runners R] [nodes]");
    }
    const s3 = await s3Server();
    const rows: Row[] = [];
    try {
        for (const toolchain of toolchains as Row["toolchain"][]) {
            const shards = shardArg.length > 0 ? shardArg : [toolchain === "stock" ? 50 : 250];
            for (const shard of shards) rows.push(await run(toolchain, nodes, shard, await s3.bucket(`bench-${toolchain}-${shard}`)));
        }
    } finally {
        s3.server.kill();
    }
    report(rows, nodes, runners);
}

main().catch((e) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
});
