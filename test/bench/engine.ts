// Real-engine scale benchmark (a report, not a gate): generated fleets (test/bench/fleet-gen.ts: the
// three roles in turn, each node on an existing host of its own) planned and applied by the real
// Pulumi CLI, language host and command provider (lab/toolchain.sh) with the file backend, against
// the cli tier's scripted SSH host (one port per host: real SSH, runs nothing). Per size, measured
// in one run side by side:
//   preview, first `up`, no-op `up`, destroy:  CPU seconds of the whole process tree (the CLI, the
//                                               language host, the program, the providers: a
//                                               cpuacct cgroup where root can make one, else GNU
//                                               time) and wall seconds
//   CLI peak RSS                                 VmHWM of the pulumi process, read until it exits
//   state bytes per node                         `pulumi stack export` after the first up (indented),
//                                                its largest fields as shares of it, and the
//                                                stack's checkpoint as the file backend writes it
//                                                after every save (compact JSON)
//   SSH connections per host                     the most open at once on any host during the
//                                                first up, as the scripted host counted them
//   mocks                                        the same fleet evaluated under the strict mocks
//                                                (test/bench/scale.ts --child), seconds
// and the growth exponent of each phase's CPU between consecutive sizes (1 is linear, 2 square).
// Each size on both toolchains, one after the other, and their ratios (stock / nodefleet): stock
// Pulumi as operators install it (lab/toolchain.sh stock: the CLI and command provider with no patch)
// and nodefleet's (lab/toolchain.sh: the lab's patches, docs/toolchain.md).
// A toolchain may carry one of upstream's options for DIY backends (stock+OPTION), measured as a
// toolchain of its own: skip-checkpoints (PULUMI_SKIP_CHECKPOINTS: the state written once, at the
// end; a run that dies loses every change since its start), no-backups
// (PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS), gzip (PULUMI_DIY_BACKEND_GZIP).
//   node dist/test/bench/engine.js [--toolchains nodefleet,stock,stock+gzip,…] [sizes…]
//                                                (scripts/bench.sh engine; default 10 30 90, nodefleet and stock)
// NODEFLEET_BENCH_KEEP_STATE=PREFIX keeps each size's exported state as PREFIX-N.json.
// NODEFLEET_BENCH_PROFILE=PREFIX profiles each size's first up (`pulumi --profiling PREFIX-N`: CPU,
// heap and trace files of the CLI, for `go tool pprof`).
// Data on stdout; progress on stderr.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { stringify } from "yaml";
import type { ScratchProject } from "../support/cli";
import { ScriptedHosts } from "../support/scripted-hosts";
import { generate } from "./fleet-gen";

/** NODEFLEET_BENCH_PARALLEL=P runs preview and up with `--parallel P` (the CLI's default is 4 per core). */
export const PARALLEL = process.env.NODEFLEET_BENCH_PARALLEL ? ["--parallel", process.env.NODEFLEET_BENCH_PARALLEL] : [];

export interface Measured {
    readonly status: number | null;
    readonly wallS: number;
    readonly cpuS: number;
    readonly cliPeakMb: number;
    readonly output: string;
    /** CPU seconds by part (the CLI, the program, the policy pack, …), read from /proc while they ran. */
    readonly parts: ReadonlyMap<string, number>;
}

/** The part of the run a process is, from its command line. */
function partOf(cmdline: string): string {
    const argv = cmdline.split("\0");
    const exe = path.basename(argv[0] ?? "");
    if (exe === "pulumi") return "CLI";
    if (exe.startsWith("pulumi-language-")) return "language host";
    if (exe.startsWith("pulumi-resource-")) return exe.slice("pulumi-resource-".length) + " provider";
    if (exe === "node") return argv.some((a) => a.includes("policy")) ? "policy pack" : "program";
    return exe;
}

const TICK = 100; // USER_HZ: /proc's CPU times are in these ticks per second on Linux
/** A process's user+system CPU seconds and its part, or undefined when it is gone. */
function procCpu(pid: string): { cpuS: number; part: string } | undefined {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // after "pid (comm) "
        const cpuS = (Number(fields[11]) + Number(fields[12])) / TICK; // utime, stime
        return { cpuS, part: partOf(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")) };
    } catch {
        return undefined;
    }
}

/** Reads a process's VmHWM (peak RSS) in MB, or 0 when it is gone. */
function vmHwmMb(pid: number): number {
    try {
        const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
        return m ? Number(m[1]) / 1024 : 0;
    } catch {
        return 0;
    }
}

/**
 * A cpuacct cgroup (v1) of its own for one measured command, where this machine lets root make one:
 * it counts the CPU of every process the command starts, plugins that outlive their parent's wait
 * included (GNU time counts only the descendants that were waited for).
 */
const CPUACCT = "/sys/fs/cgroup/cpuacct";
let cgroups = 0;
function cpuCgroup(): string | undefined {
    const dir = path.join(CPUACCT, `nodefleet-bench-${process.pid}-${++cgroups}`);
    try {
        fs.mkdirSync(dir);
        return dir;
    } catch {
        return undefined;
    }
}
export const CPU_METHOD = fs.existsSync(path.join(CPUACCT, "cpuacct.usage")) ? "cpuacct cgroup (the whole process tree)" : "GNU time (waited-for descendants only)";

/** `pulumi ARGS` in the project under GNU time (and a cpuacct cgroup); the pulumi process's VmHWM polled until it exits. */
export function measure(project: ScratchProject, args: string[]): Promise<Measured> {
    return measureCommand(project, ["pulumi", ...args, "--non-interactive", "--color", "never"]);
}

/**
 * Any command (`argv`) in the project with its environment plus `env`, measured as `measure` does:
 * its whole process tree's CPU, and the peak RSS of its pulumi (a script's, where the cgroup shows it).
 */
export function measureCommand(project: ScratchProject, argv: string[], env: Record<string, string> = {}): Promise<Measured> {
    const timeFile = path.join(project.dir, ".time");
    const cgroup = cpuCgroup();
    const timed = ["/usr/bin/time", "-f", "%e %U %S", "-o", timeFile, ...argv];
    // In the cgroup before anything is started: the shell joins it, then becomes GNU time.
    const child = cgroup
        ? project.start("sh", ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, ...timed], env)
        : project.start(timed[0]!, timed.slice(1), env);
    let output = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (output += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (output += d));
    let peak = 0;
    // Each process's CPU as last read (a process that ends between two reads loses at most 200 ms).
    const seen = new Map<string, { cpuS: number; part: string }>();
    const poll = setInterval(() => {
        let pids: string[] = [];
        try {
            pids = fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
        } catch {
            /* time has exited */
        }
        for (const pid of pids) peak = Math.max(peak, vmHwmMb(Number(pid)));
        if (cgroup) {
            let members: string[] = [];
            try {
                members = fs.readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").trim().split(/\s+/).filter(Boolean);
            } catch {
                /* removed */
            }
            for (const pid of members) {
                const c = procCpu(pid);
                // An ended process not yet reaped has no command line: it keeps the part it had.
                if (c) seen.set(pid, c.part === "" ? { cpuS: c.cpuS, part: seen.get(pid)?.part ?? "other" } : c);
                // A script's pulumi is no child of time's: its peak is read here.
                if (c?.part === "CLI") peak = Math.max(peak, vmHwmMb(Number(pid)));
            }
        }
    }, 200);
    return new Promise((resolve) => {
        child.on("close", async (status) => {
            clearInterval(poll);
            const [wall, user, sys] = fs.readFileSync(timeFile, "utf8").trim().split("\n").pop()!.split(" ").map(Number);
            let cpuS = user! + sys!;
            if (cgroup) {
                // Plugins the CLI did not wait for may still be ending: the cgroup empties, then is read.
                for (let i = 0; i < 50 && fs.readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").trim() !== ""; i++) await new Promise((r) => setTimeout(r, 100));
                cpuS = Number(fs.readFileSync(path.join(cgroup, "cpuacct.usage"), "utf8")) / 1e9;
                try {
                    fs.rmdirSync(cgroup);
                } catch {
                    /* a process left in it: the cgroup stays, empty of meaning */
                }
            }
            const parts = new Map<string, number>();
            for (const { cpuS: c, part } of seen.values()) parts.set(part, (parts.get(part) ?? 0) + c);
            resolve({ status, wallS: wall!, cpuS, cliPeakMb: peak, output, parts });
        });
    });
}

type Toolchain = string;
const DIY_OPTIONS: Record<string, Record<string, string>> = {
    "skip-checkpoints": { PULUMI_SKIP_CHECKPOINTS: "true" },
    "no-backups": { PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS: "true" },
    gzip: { PULUMI_DIY_BACKEND_GZIP: "true" },
};
/** A toolchain's base (nodefleet or stock) and the environment of its DIY option, or why it is not one. */
function toolchainOf(t: string): { base: "nodefleet" | "stock"; env: Record<string, string> } | string {
    const [base, option, ...rest] = t.split("+");
    if ((base !== "nodefleet" && base !== "stock") || rest.length > 0) return `${t}: a toolchain is nodefleet or stock, with at most one +OPTION`;
    if (option === undefined) return { base, env: {} };
    const env = DIY_OPTIONS[option];
    return env === undefined ? `${t}: the options are ${Object.keys(DIY_OPTIONS).join(", ")}` : { base, env };
}

interface Row {
    n: number;
    toolchain: Toolchain;
    resources: number;
    preview: Measured;
    up: Measured;
    noop: Measured;
    status: { wallS: number; answered: number; hosts: number };
    destroy: Measured;
    stateBytesPerNode: number;
    /** The checkpoint file the backend writes after each save, per node. */
    writtenBytesPerNode: number;
    /** What the state is made of: its largest fields, as shares of its bytes. */
    stateShares: string;
    sshPeakPerHost: number;
    mocksS: number;
}

function mocksSeconds(n: number): number {
    const r = spawnSync(process.execPath, [path.join(__dirname, "scale.js"), "--child", String(n), "nodefleet"], { encoding: "utf8", maxBuffer: 1 << 26 });
    if (r.status !== 0) throw new Error(`the mocks' run of ${n} nodes failed:\n${r.stderr.slice(-3000)}`);
    return (JSON.parse(r.stdout.trim().split("\n").pop()!) as { ms: number }).ms / 1000;
}

/**
 * The generated fleet of `n` nodes on the scripted hosts' `ports` from `first` on, as a large fleet
 * is kept (docs/configuration.md, "A fleet in a file"): the fleet in fleets/<stack>.yaml of the
 * project, its keys as files of a secrets directory outside it. The stack file only names the fleet file.
 */
export function writeFleet(project: ScratchProject, stack: string, secretsDir: string, n: number, ports: readonly number[], shards?: { names: string[]; first: number }): void {
    const generated = generate(n, (i) => ({ kind: "existing", address: "127.0.0.1", port: ports[i], user: "root", sshPrivateKeyFile: ".state/vm/id_ed25519", adminCidrs: ["10.0.2.2/32"] }), shards?.first ?? 0);
    const { sshKey: _unused, ...secrets } = generated.secrets; // the hosts' key is a file, as in the dev stack
    fs.mkdirSync(secretsDir, { recursive: true, mode: 0o700 });
    for (const [k, v] of Object.entries(secrets)) fs.writeFileSync(path.join(secretsDir, k), v, { mode: 0o600 });
    fs.mkdirSync(path.join(project.dir, "fleets"), { recursive: true });
    const fleet = { hardwareCheck: "warn", secretsDir, ...(shards ? { shards: shards.names } : {}), ...generated.fleet };
    fs.writeFileSync(path.join(project.dir, "fleets", `${stack}.yaml`), JSON.stringify(fleet));
}

/**
 * A fleet of `nodes` nodes as shards `names` of `per` nodes each (the last the rest), every shard's
 * stack file (naming its fleet file) and fleet file in the project, shard i on `ports` from i·per
 * on, its keys in `secretsRoot`-<shard>. The first shard's stack file is the project's own.
 */
export function writeShards(project: ScratchProject, names: readonly string[], per: number, nodes: number, ports: readonly number[], secretsRoot: string): void {
    for (const [i, name] of names.entries()) {
        const first = i * per;
        const n = Math.min(per, nodes - first);
        if (i > 0) fs.writeFileSync(path.join(project.dir, `Pulumi.${name}.yaml`), stringify({ config: { "nodefleet:fleetFile": `fleets/${name}.yaml` } }));
        writeFleet(project, name, `${secretsRoot}-${name}`, n, ports.slice(first, first + n), names.length > 1 ? { names: [...names], first } : undefined);
    }
}

/** `nodefleet status` over the stack's hosts, each answering (the scripted host answers every runner alike): wall seconds, hosts that answered. */
export function statusRun(project: ScratchProject, stack: string): { wallS: number; answered: number; hosts: number } {
    const t0 = Date.now();
    const r = project.exec(process.execPath, [path.join(__dirname, "../../status/main.js"), "status", "--stack", stack, "--json", "--parallel", "64", "--timeout", "30"]);
    const wallS = (Date.now() - t0) / 1000;
    let doc: { hosts?: Record<string, { reachable: boolean }> };
    try {
        doc = JSON.parse(r.stdout) as typeof doc;
    } catch {
        throw new Error(`nodefleet status printed no report (exit ${r.status}, ${r.stdout.length} bytes on stdout: ${r.stdout.slice(0, 300)}):\n${r.output.slice(-1500)}`);
    }
    const hosts = Object.values(doc.hosts ?? {});
    return { wallS, answered: hosts.filter((h) => h.reachable).length, hosts: hosts.length };
}

async function run(n: number, toolchain: Toolchain): Promise<Row> {
    const lab = new ScriptedHosts();
    const chosen = toolchainOf(toolchain);
    if (typeof chosen === "string") throw new Error(chosen);
    process.env.NODEFLEET_TEST_TOOLCHAIN = chosen.base; // the scratch project's PATH and plugins (test/support/cli.ts)
    const progress = (s: string) => process.stderr.write(`[bench engine] ${toolchain}: ${s}\n`);
    try {
        // The project's environment is this process's when it is made (test/support/cli.ts): the option's with it.
        Object.assign(process.env, chosen.env);
        const started = await lab.start("bench", () => stringify({ config: { "nodefleet:fleetFile": "fleets/bench.yaml" } }), undefined, n).finally(() => {
            for (const k of Object.keys(chosen.env)) delete process.env[k];
        });
        const { project, ports } = started;
        writeFleet(project, "bench", path.join(lab.dir, "secrets"), n, ports);
        // Every host's runner answers alike: reached, no node result (the timing is what is measured).
        fs.writeFileSync(path.join(lab.dir, "answer"), JSON.stringify({ print_results: JSON.stringify({ results: {} }) }));
        const phase = async (name: string, args: string[]) => {
            progress(`${n} nodes: ${name}`);
            const m = await measure(project, args);
            if (m.status !== 0) throw new Error(`${n} nodes: ${name} failed:\n${m.output.slice(-4000)}`);
            progress(`${n} nodes: ${name}: ${m.cpuS.toFixed(1)} CPU-s, ${m.wallS.toFixed(1)} s, CLI peak ${m.cliPeakMb.toFixed(0)} MB${m.parts.size ? ` (${partsText(m)})` : ""}`);
            return m;
        };
        const policy = ["--policy-pack", path.join(project.dir, "policy"), ...PARALLEL];
        const preview = await phase("preview", ["preview", "--stack", "bench", ...policy]);
        const profile = process.env.NODEFLEET_BENCH_PROFILE ? ["--profiling", `${process.env.NODEFLEET_BENCH_PROFILE}-${n}`] : [];
        const up = await phase("first up", ["up", "--stack", "bench", "--yes", "--skip-preview", ...policy, ...profile]);
        const sshPeakPerHost = Math.max(0, ...[...lab.connections().values()].map((c) => c.peak));
        const stateFile = path.join(lab.dir, "state.json");
        const exported = project.pulumi(["stack", "export", "--stack", "bench", "--file", stateFile]);
        if (exported.status !== 0) throw new Error(`pulumi stack export failed:\n${exported.output.slice(-2000)}`);
        const state = fs.readFileSync(stateFile, "utf8");
        const resources = (JSON.parse(state) as { deployment: { resources?: unknown[] } }).deployment.resources?.length ?? 0;
        if (process.env.NODEFLEET_BENCH_KEEP_STATE) fs.copyFileSync(stateFile, `${process.env.NODEFLEET_BENCH_KEEP_STATE}-${n}.json`);
        const writtenBytes = fs.statSync(checkpointFile(path.join(project.dir, ".backend"), "bench")).size;
        const noop = await phase("no-op up", ["up", "--stack", "bench", "--yes", "--skip-preview", ...policy]);
        progress(`${n} nodes: nodefleet status`);
        const status = statusRun(project, "bench");
        progress(`${n} nodes: nodefleet status: ${status.answered} of ${status.hosts} hosts answered in ${status.wallS.toFixed(1)} s`);
        const destroy = await phase("destroy", ["destroy", "--stack", "bench", "--yes", "--skip-preview"]);
        progress(`${n} nodes: the mocks`);
        const mocksS = mocksSeconds(n);
        return { n, toolchain, resources, preview, up, noop, status, destroy, stateBytesPerNode: Buffer.byteLength(state) / n, writtenBytesPerNode: writtenBytes / n, stateShares: stateShares(state), sshPeakPerHost, mocksS };
    } finally {
        lab.dispose();
    }
}

/** Where a phase's CPU went, largest first: "CLI 41 %, program 30 %, …" (shares of what /proc showed). */
export function partsText(m: Measured): string {
    const total = [...m.parts.values()].reduce((a, b) => a + b, 0);
    return [...m.parts].sort((a, b) => b[1] - a[1]).map(([part, c]) => `${part} ${((100 * c) / Math.max(total, 1e-9)).toFixed(0)} %`).join(", ");
}

/** The file backend's checkpoint of a stack: `<backend>/.pulumi/stacks/[<project>/]<stack>.json`. */
function checkpointFile(backend: string, stack: string): string {
    const stacks = path.join(backend, ".pulumi", "stacks");
    const found = fs.readdirSync(stacks, { recursive: true, encoding: "utf8" }).filter((f) => [`${stack}.json`, `${stack}.json.gz`].includes(path.basename(f)));
    if (found.length !== 1) throw new Error(`the checkpoint of stack ${stack}: ${found.length} files named ${stack}.json under ${stacks}`);
    return path.join(stacks, found[0]!);
}

/**
 * The largest fields of an exported state, as shares of the resources' bytes: a resource field
 * ("stackTrace", "dependencies") or an input or output property ("stdin", "connection"), inputs and
 * outputs counted together.
 */
export function stateShares(state: string, top = 6): string {
    const resources = (JSON.parse(state) as { deployment: { resources?: Record<string, unknown>[] } }).deployment.resources ?? [];
    const bytes = new Map<string, number>();
    let total = 0;
    const add = (key: string, value: unknown) => bytes.set(key, (bytes.get(key) ?? 0) + JSON.stringify(value).length);
    for (const r of resources) {
        total += JSON.stringify(r).length;
        for (const [field, value] of Object.entries(r)) {
            if ((field === "inputs" || field === "outputs") && value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) add(k, v);
            else add(field, value);
        }
    }
    return [...bytes].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, b]) => `${k} ${((100 * b) / Math.max(total, 1)).toFixed(0)} %`).join(", ");
}

export function report(rows: Row[]): void {
    const out = (s: string) => process.stdout.write(`${s}\n`);
    const cpu = (m: Measured) => m.cpuS.toFixed(1);
    out(`CPU seconds counted by ${CPU_METHOD}; wall seconds in brackets`);
    out("policy pack on (preview, up); fleet in a file, keys in a secrets directory");
    out("toolchain (+ DIY option)  nodes  resources  preview CPU-s (wall)  first up CPU-s (wall)  no-op up CPU-s (wall)  destroy CPU-s  CLI peak MB (up)  state KB/node (written)  SSH conns/host  status s (hosts answered)  mocks s");
    for (const r of rows) {
        out(
            [
                r.toolchain.padEnd(24),
                String(r.n).padStart(5),
                String(r.resources).padStart(10),
                `${cpu(r.preview)} (${r.preview.wallS.toFixed(0)})`.padStart(20),
                `${cpu(r.up)} (${r.up.wallS.toFixed(0)})`.padStart(22),
                `${cpu(r.noop)} (${r.noop.wallS.toFixed(0)})`.padStart(22),
                cpu(r.destroy).padStart(14),
                r.up.cliPeakMb.toFixed(0).padStart(17),
                `${(r.stateBytesPerNode / 1024).toFixed(1)} (${(r.writtenBytesPerNode / 1024).toFixed(1)})`.padStart(23),
                String(r.sshPeakPerHost).padStart(15),
                `${r.status.wallS.toFixed(1)} (${r.status.answered}/${r.status.hosts})`.padStart(25),
                r.mocksS.toFixed(1).padStart(8),
            ].join(" "),
        );
    }
    for (const r of rows) out(`state at ${r.n} nodes (${r.toolchain}), by field: ${r.stateShares}`);
    for (const r of rows) if (r.preview.parts.size) out(`CPU at ${r.n} nodes (${r.toolchain}), by part: preview ${partsText(r.preview)}; first up ${partsText(r.up)}; no-op up ${partsText(r.noop)}`);
    // Side by side: every other toolchain over nodefleet's, size by size.
    const x = (a: number, b: number) => (b > 0 ? `×${(a / b).toFixed(1)}` : "not measured");
    for (const s of rows.filter((r) => r.toolchain !== "nodefleet")) {
        const p = rows.find((r) => r.toolchain === "nodefleet" && r.n === s.n);
        if (!p) continue;
        out(`${s.toolchain} / nodefleet at ${s.n} nodes: preview CPU ${x(s.preview.cpuS, p.preview.cpuS)}, first up CPU ${x(s.up.cpuS, p.up.cpuS)} (wall ${x(s.up.wallS, p.up.wallS)}), no-op up CPU ${x(s.noop.cpuS, p.noop.cpuS)}, destroy CPU ${x(s.destroy.cpuS, p.destroy.cpuS)}, CLI peak ${x(s.up.cliPeakMb, p.up.cliPeakMb)}, state written per node ${x(s.writtenBytesPerNode, p.writtenBytesPerNode)}`);
    }
    for (const t of [...new Set(rows.map((r) => r.toolchain))]) {
        const own = rows.filter((r) => r.toolchain === t);
        for (let i = 1; i < own.length; i++) {
            const [a, b] = [own[i - 1]!, own[i]!];
            const k = (f: (r: Row) => number) => exponent(f(a), f(b), a.n, b.n);
            out(`growth exponent ${a.n} -> ${b.n} nodes (${t}; 1 linear, 2 square): preview ${k((r) => r.preview.cpuS)}, first up ${k((r) => r.up.cpuS)}, no-op up ${k((r) => r.noop.cpuS)}, destroy ${k((r) => r.destroy.cpuS)}, CLI peak ${k((r) => r.up.cliPeakMb)}, mocks ${k((r) => r.mocksS)}`);
        }
    }
    // The targets are nodefleet's toolchain's; a figure this run did not measure says so.
    const ours = rows.filter((r) => r.toolchain === "nodefleet");
    const check = (ok: boolean, measured = true) => (!measured ? "not measured" : ok ? "met" : "MISSED");
    const thousand = ours.find((r) => r.n === 1000);
    if (thousand) {
        const hundred = ours.find((r) => r.n === 100);
        const exp = hundred ? Math.log(thousand.up.cpuS / hundred.up.cpuS) / Math.log(10) : NaN;
        const t = thousand;
        out(
            `targets at 1000 nodes: first up <= 900 s wall ${check(t.up.wallS <= 900)} (${t.up.wallS.toFixed(0)} s) and <= 900 CPU-s ${check(t.up.cpuS <= 900)} (${cpu(t.up)}); no-op up <= 180 s ${check(t.noop.wallS <= 180)} (${t.noop.wallS.toFixed(0)} s); ` +
                `preview <= 180 s ${check(t.preview.wallS <= 180)} (${t.preview.wallS.toFixed(0)} s); CLI peak <= 4 GB ${check(t.up.cliPeakMb <= 4096)} (${t.up.cliPeakMb.toFixed(0)} MB); exponent 100->1000 <= 1.1 ${check(exp <= 1.1, !Number.isNaN(exp))} (${exp.toFixed(2)}); ` +
                `status <= 60 s ${check(t.status.wallS <= 60)} (${t.status.wallS.toFixed(1)} s, ${t.status.answered} of ${t.status.hosts} hosts answered)`,
        );
    }
    const big = ours.find((r) => r.n === 90);
    if (big) {
        const k30 = ours.find((r) => r.n === 30);
        const exp = k30 ? Math.log(big.up.cpuS / k30.up.cpuS) / Math.log(3) : NaN;
        out(`targets at 90 nodes: first up <= 120 CPU-s ${check(big.up.cpuS <= 120)} (${cpu(big.up)}); exponent 30->90 <= 1.3 ${check(exp <= 1.3, !Number.isNaN(exp))} (${exp.toFixed(2)}); CLI peak <= 1 GB ${check(big.up.cliPeakMb <= 1024)} (${big.up.cliPeakMb.toFixed(0)} MB); state <= 40 KB/node ${check(big.writtenBytesPerNode <= 40 * 1024)} (as the backend stores it ${(big.writtenBytesPerNode / 1024).toFixed(1)} KB; pulumi stack export, indented, ${(big.stateBytesPerNode / 1024).toFixed(1)} KB); no-op up <= 45 s ${check(big.noop.wallS <= 45)} (${big.noop.wallS.toFixed(0)} s); SSH <= 2 per host ${check(big.sshPeakPerHost <= 2)} (${big.sshPeakPerHost})`);
    }
}

/** The growth exponent between two sizes, or "not measured" where a figure is missing. */
function exponent(a: number, b: number, na: number, nb: number): string {
    const k = Math.log(b / a) / Math.log(nb / na);
    return Number.isFinite(k) ? k.toFixed(2) : "not measured";
}

async function main(): Promise<void> {
    const args = process.argv.slice(2);
    let toolchains: Toolchain[] = ["nodefleet", "stock"];
    const i = args.indexOf("--toolchains");
    if (i !== -1) {
        toolchains = (args[i + 1] ?? "").split(",").filter(Boolean);
        if (toolchains.length === 0) throw new Error("--toolchains: a list of toolchains (nodefleet, stock, stock+OPTION)");
        for (const t of toolchains) {
            const bad = toolchainOf(t);
            if (typeof bad === "string") throw new Error(`--toolchains: ${bad}`);
        }
        args.splice(i, 2);
    }
    const sizes = args.map(Number);
    if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`sizes are node counts, not ${args.join(" ")}`);
    const rows: Row[] = [];
    for (const n of sizes.length ? sizes : [10, 30, 90]) for (const t of toolchains) rows.push(await run(n, t));
    report(rows);
}

if (require.main === module) main().catch((e) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
});
