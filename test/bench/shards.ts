// Real-engine shards benchmark (a report, not a gate): one generated fleet of N nodes split into K
// shards (fleet.shards, docs/gitops.md, Shards), each a stack of one project on one backend with its
// fleet in a file and its keys in a secrets directory, brought up side by side as the pipeline's
// matrix runs them (each `pulumi up` with the policy pack, all started at once), against the
// scripted SSH hosts; then `nodefleet status --shards` over all of them. Reports each shard's first
// up (CPU seconds, wall seconds, CLI peak) and the wall time until the last one ended.
//   node dist/test/bench/shards.js [nodes] [shards]     (scripts/bench.sh shards; default 1000 4)
// Data on stdout; progress on stderr.
import * as fs from "node:fs";
import * as path from "node:path";
import { stringify } from "yaml";
import { ScriptedHosts } from "../support/scripted-hosts";
import { ScratchProject } from "../support/cli";
import { CPU_METHOD, measure, writeShards } from "./engine";

const progress = (s: string) => process.stderr.write(`[bench shards] ${s}\n`);

async function main(): Promise<void> {
    const [nodes = 1000, k = 4] = process.argv.slice(2).map(Number);
    if (!Number.isInteger(nodes) || !Number.isInteger(k) || k < 2 || nodes < k) throw new Error("usage: shards.js [nodes] [shards >= 2]");
    const names = Array.from({ length: k }, (_, i) => `bench-${i + 1}`);
    const lab = new ScriptedHosts();
    try {
        const ports = await lab.listen(nodes);
        const project = new ScratchProject(names[0]!, stringify({ config: { "nodefleet:fleetFile": `fleets/${names[0]}.yaml` } }));
        project.writeDevFiles("generated");
        fs.writeFileSync(path.join(lab.dir, "answer"), JSON.stringify({ print_results: JSON.stringify({ results: {} }) }));
        const per = Math.ceil(nodes / k);
        for (const name of names.slice(1)) {
            const init = project.pulumi(["stack", "init", name, "--no-select"]);
            if (init.status !== 0) throw new Error(`pulumi stack init ${name} failed:\n${init.output}`);
        }
        writeShards(project, names, per, nodes, ports, path.join(lab.dir, "secrets"));
        const policy = ["--policy-pack", path.join(project.dir, "policy")];
        progress(`${nodes} nodes in ${k} shards of ${per}: every shard's first up at once`);
        const t0 = Date.now();
        const ups = await Promise.all(
            names.map(async (name) => {
                const m = await measure(project, ["up", "--stack", name, "--yes", "--skip-preview", ...policy]);
                if (m.status !== 0) throw new Error(`${name}: first up failed:\n${m.output.slice(-4000)}`);
                progress(`${name}: first up: ${m.cpuS.toFixed(1)} CPU-s, ${m.wallS.toFixed(0)} s, CLI peak ${m.cliPeakMb.toFixed(0)} MB`);
                return { name, m };
            }),
        );
        const wallS = (Date.now() - t0) / 1000;
        progress("nodefleet status --shards");
        const s0 = Date.now();
        const status = project.exec(process.execPath, [path.join(__dirname, "../../status/main.js"), "status", "--stack", names[0]!, "--shards", "--json", "--parallel", "64"]);
        const statusS = (Date.now() - s0) / 1000;
        const doc = JSON.parse(status.stdout) as { stacks: { hosts: Record<string, { reachable: boolean }> }[] };
        const hosts = doc.stacks.flatMap((st) => Object.values(st.hosts));
        const out = (line: string) => process.stdout.write(`${line}\n`);
        out(`CPU seconds counted by ${CPU_METHOD}; policy pack on; fleet files, keys in secrets directories`);
        out("shard        nodes  first up CPU-s  wall s  CLI peak MB");
        for (const { name, m } of ups) out(`${name.padEnd(12)} ${String(Math.min(per, nodes - names.indexOf(name) * per)).padStart(5)} ${m.cpuS.toFixed(1).padStart(15)} ${m.wallS.toFixed(0).padStart(7)} ${m.cliPeakMb.toFixed(0).padStart(12)}`);
        const cpu = ups.reduce((a, u) => a + u.m.cpuS, 0);
        out(`${nodes} nodes in ${k} shards side by side: every shard's first up done in ${wallS.toFixed(0)} s wall (${cpu.toFixed(0)} CPU-s in all); target <= 900 s ${wallS <= 900 ? "met" : "MISSED"}`);
        out(`nodefleet status --shards over ${hosts.length} hosts: ${statusS.toFixed(1)} s, ${hosts.filter((h) => h.reachable).length} answered`);
        for (const name of names.reverse()) {
            progress(`${name}: destroy`);
            const d = project.pulumi(["destroy", "--stack", name, "--yes", "--skip-preview", "--non-interactive"]);
            if (d.status !== 0) throw new Error(`${name}: destroy failed:\n${d.output.slice(-3000)}`);
        }
        project.dispose();
    } finally {
        lab.dispose();
    }
}

main().catch((e) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
});
