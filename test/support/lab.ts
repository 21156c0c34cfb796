// The E2E tier's helpers for the dev lab (lab/): commands on the dev VMs and from the lab
// network, the dev stack's outputs and secrets, `pulumi up` with an edited config (in the
// foreground or in the background, to be killed), and what the tests expect of each VM.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { spawn } from "node:child_process";
import { ROOT, sh, stateDir, type Run } from "./cli";

export const VM = path.join(ROOT, "lab/vm.sh");
export const DEV = path.join(ROOT, "scripts/dev.sh");
export const PORTS_PY = path.join(ROOT, "test/e2e/ports.py");

/** vm.sh's own notice that it tries a connection again (a host that is rebooting refuses connections for a moment). */
export const RETRY_NOTICE = /^\[vm\] ssh to \S+ failed before the session opened .*; trying again$/;

/** vm.sh ssh's stderr split into what the command (and ssh) said and vm.sh's retry notices. */
export function withoutRetryNotices(stderr: string): { said: string; notices: string[] } {
    const lines = stderr.split("\n");
    return { said: lines.filter((l) => !RETRY_NOTICE.test(l)).join("\n"), notices: lines.filter((l) => RETRY_NOTICE.test(l)) };
}

/**
 * One command on a dev VM through `lab/vm.sh ssh` (stdin from `opts.input`), as the command ran it: its
 * output holds what the command printed, without vm.sh's notices of a connection tried again,
 * which are shown on the test's stderr instead: a test that splits a command's output into lines
 * (unit states, counts, "0 0") must not read a notice as one of them.
 */
export function onVm(vm: string, command: string, allowFail = false, opts: { input?: string; timeoutMs?: number; maxBuffer?: number } = {}): Run {
    const r = sh("bash", [VM, "ssh", vm, command], { allowFail, timeoutMs: opts.timeoutMs ?? 120_000, input: opts.input, maxBuffer: opts.maxBuffer });
    const { said, notices } = withoutRetryNotices(r.output.slice(r.stdout.length));
    if (notices.length > 0) process.stderr.write(`${notices.join("\n")}\n`);
    return { status: r.status, stdout: r.stdout, output: r.stdout + said };
}
/** When a unit last became active (changes exactly when it is (re)started). */
export const since = (unit: string) => onVm("dev-1", `systemctl show -p ActiveEnterTimestampMonotonic --value ${unit}`).output.trim();
export const fromLab = (...args: string[]) => sh("bash", [VM, "lab", ...args], { timeoutMs: 120_000 });

/** What must answer from the lab network, per VM, and what must not (docs/spec.md §5: no RPC, engine or admin port). */
export const EXPECTED: Record<string, { ip: string; open: string[]; closed: string[] }> = {
    "dev-1": {
        ip: "10.77.0.11",
        open: ["1234/tcp", "1234/udp", "40400/tcp", "40400/udp"],
        // SSH is open only to the admin CIDR (10.0.2.2, the runner on the lab's nat network), not to the lab.
        closed: ["22/tcp", "8080/tcp", "8880/tcp", "5678/tcp", "5679/tcp", "50051/tcp", "8545/tcp"],
    },
    "dev-2": {
        ip: "10.77.0.12",
        open: ["56303/tcp", "56303/udp", "56656/tcp"],
        closed: ["22/tcp", "56545/tcp", "56546/tcp", "56551/tcp", "56657/tcp", "56658/tcp", "56660/tcp", "8545/tcp", "8551/tcp"],
    },
};

/** The ports a VM's kernel keeps out of its ephemeral range (ip_local_reserved_ports, "a,b-c" expanded). */
export function reservedPorts(vm: string): Set<number> {
    const list = onVm(vm, "cat /proc/sys/net/ipv4/ip_local_reserved_ports").output.trim();
    const ports = list === "" ? [] : list.split(",").flatMap((entry) => {
        const [lo, hi] = entry.split("-").map(Number);
        return Array.from({ length: (hi ?? lo!) - lo! + 1 }, (_, i) => lo! + i);
    });
    return new Set(ports);
}

/** The TCP ports of EXPECTED a VM's nodes listen on (SSH and the ports no node binds left out) that its kernel does not reserve. */
export function unreservedNodePorts(vm: string, reserved = reservedPorts(vm)): number[] {
    return [...EXPECTED[vm]!.open, ...EXPECTED[vm]!.closed].filter((p) => p.endsWith("/tcp")).map((p) => Number(p.split("/")[0]))
        .filter((p) => ![22, 8545, 8551].includes(p) && !reserved.has(p));
}

/** The nodes of Pulumi.dev.yaml, per VM: each gets its data directory on the data disk. */
export const NODES: Record<string, string[]> = { "dev-1": ["storage-1", "sequencer-1"], "dev-2": ["validator-1"] };

/** A stack output (`health`, `registration`), per node. */
export function stackOutput(name: string): Record<string, any> {
    // stdout only: the data; a warning pulumi prints goes to stderr and must not spoil the JSON.
    const r = sh("bash", [DEV, "pulumi", "stack", "output", name, "--json", "--stack", "dev"]);
    try {
        return JSON.parse(r.stdout) as Record<string, any>;
    } catch {
        throw new Error(`pulumi stack output ${name} --json gave no JSON:\n${r.output.slice(-3000)}`);
    }
}
export const stackHealth = () => stackOutput("health");

// Seconds per host for status on the lab's hosts: the default an operator gets.
export const STATUS_TIMEOUT = "30";
/** `scripts/dev.sh status --json`: the report and the exit status. */
export function statusJson(): { code: number | null; report: any } {
    const r = sh("bash", [DEV, "status", "--json", "--timeout", STATUS_TIMEOUT], { allowFail: true, timeoutMs: 180_000 });
    try {
        return { code: r.status, report: JSON.parse(r.stdout) };
    } catch {
        throw new Error(`status --json gave no JSON (exit ${r.status}):\n${r.output.slice(-3000)}`);
    }
}

/** A dev stack secret's value (the test compares it against what the hosts and state hold). */
export function devSecret(key: string): string {
    return sh("bash", [DEV, "pulumi", "config", "get", key, "--stack", "dev"]).stdout.trim();
}

/**
 * What this test file's ups and previews are named by: the dev stack's config copies and logs
 * (.state/e2e-*), or, after `aStackOfItsOwn`, its own.
 */
let runFiles = "e2e";
const runFile = (name: string) => path.join(ROOT, ".state", `${runFiles}-${name}`);

/**
 * This test file's `dev.sh pulumi` runs go to a stack of its own: a stack "dev" (Pulumi.dev.yaml's
 * secrets and their salt) in a backend and Pulumi home of its own under the tier's state directory
 * (scripts/dev.sh, NODEFLEET_PULUMI_DIR), so that it runs beside the dev stack's scenarios on hosts
 * of its own, on the same dev chain and artifact server.
 */
export function aStackOfItsOwn(name: string): void {
    assert.match(name, /^[a-z0-9-]+$/);
    runFiles = `e2e-${name}`;
    const dir = path.join(stateDir(), `stack-${name}`);
    fs.rmSync(dir, { recursive: true, force: true });
    process.env.NODEFLEET_PULUMI_DIR = dir;
    sh("bash", [DEV, "pulumi", "stack", "init", "dev", "--non-interactive"]);
}

/** The edit of Pulumi.dev.yaml the stack was last brought up with (`upWith`, `upInBackground`). */
let lastEdit: (yaml: string) => string = (y) => y;
/** Pulumi.dev.yaml as the last `up` of a scenario had it: a later scenario changes only what it means to. */
export const lastUpConfig = (yaml: string) => lastEdit(yaml);

/** `pulumi up` with an edited copy of Pulumi.dev.yaml (the checkout's file is left untouched). */
export function upWith(edit: (yaml: string) => string, extraArgs: readonly string[] = [], timeoutMs = 900_000) {
    lastEdit = edit;
    const yaml = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
    const edited = edit(yaml);
    assert.notEqual(edited, yaml, "the edit must change the config");
    const file = runFile("config.yaml");
    fs.writeFileSync(file, edited);
    const r = sh("bash", [DEV, "pulumi", "up", "--stack", "dev", "--yes", "--skip-preview", "--non-interactive", "--config-file", file, ...extraArgs], { allowFail: true, timeoutMs });
    // The whole run, for a failure's post-mortem (an assertion shows only its tail), as upInBackground keeps its own.
    fs.writeFileSync(runFile(`up-fg-${++foregroundRuns}.log`), `status ${r.status}\n${r.output}`);
    return r;
}
let foregroundRuns = 0;

/** `pulumi preview` with an edited copy of Pulumi.dev.yaml. */
export function previewWith(edit: (yaml: string) => string, extraArgs: readonly string[] = []) {
    const file = runFile("config-preview.yaml");
    fs.writeFileSync(file, edit(fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8")));
    return sh("bash", [DEV, "pulumi", "preview", "--stack", "dev", "--non-interactive", ...extraArgs, "--config-file", file], { allowFail: true, timeoutMs: 600_000 });
}

/** `pulumi preview --expect-no-changes` with an edited copy of Pulumi.dev.yaml: its status says whether anything would change. */
export const previewNoChangesWith = (edit: (yaml: string) => string) => previewWith(edit, ["--expect-no-changes"]);

export function timed<T>(label: string, f: () => T): T {
    const t0 = Date.now();
    try {
        return f();
    } finally {
        console.log(`# ${label}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
}


/** validator-1's consensus address (the dev network's key, lab/sim/release/vmnet). */
export const validator1Address = (): string => JSON.parse(fs.readFileSync(path.join(ROOT, "lab/sim/release/vmnet/priv_validator_key.json"), "utf8")).address as string;

/** The storage endpoints and sequencer version as the storage and sequencer tests leave them. */
export const settled = (y: string) => y.replace('rpcEndpoints: ["http://10.0.2.2:8545", "http://10.0.2.2:8546"]', 'rpcEndpoints: ["http://10.0.2.2:8546", "http://10.0.2.2:8545"]');

/** Pulumi.dev.yaml, settled, with validator-1's execution client, switch and switch attempt set. */
export const withSwitch = (client: "geth" | "reth", sw: string, attempt = 1) => (y: string) =>
    settled(y).replace("          validatorKeySecret: devValidatorKey\n", `          validatorKeySecret: devValidatorKey\n          executionClient: ${client}\n          switch: ${sw}\n          switchAttempt: ${attempt}\n`);

/**
 * A storage node made from storage-1's entry of the dev config (its comments left out): its name,
 * host, lab address and miner key replaced, `extra` lines after the key (ports of its own).
 */
export function storageLike(yaml: string, o: { name: string; host: string; enr: string; minerKeySecret: string; extra?: string }): string {
    const i = yaml.indexOf("      - name: storage-1\n");
    const j = yaml.indexOf("      - name: ", i + 1);
    assert.ok(i > 0 && j > i, "the dev config's storage-1 entry");
    const one = yaml.slice(i, j).split("\n").filter((l) => !/^\s*#/.test(l)).join("\n");
    return one.replace("name: storage-1", `name: ${o.name}`).replace("host: dev-1", `host: ${o.host}`).replace(/networkEnrAddress: \S+/, `networkEnrAddress: ${o.enr}`).replace("minerKeySecret: devMinerKey", `minerKeySecret: ${o.minerKeySecret}${o.extra ?? ""}`);
}

/** Every process below `pid`, from /proc's parent links (read before anything is killed: orphans lose them). */
export function descendants(pid: number): number[] {
    const children = new Map<number, number[]>();
    for (const entry of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        let stat: string;
        try {
            stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
        } catch {
            continue; // ended meanwhile
        }
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]); // "pid (comm) state ppid ..."
        children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    }
    const found: number[] = [];
    for (let queue = [pid]; queue.length > 0; ) {
        const next = children.get(queue.shift()!) ?? [];
        found.push(...next);
        queue.push(...next);
    }
    return found;
}

let backgroundRuns = 0;
/** `pulumi up` with an edited config, in the background: its output so far, its end, and a hard kill. */
export function upInBackground(edit: (yaml: string) => string) {
    lastEdit = edit;
    const file = runFile("config-bg.yaml");
    fs.writeFileSync(file, edit(fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8")));
    const child = spawn("bash", [DEV, "pulumi", "up", "--stack", "dev", "--yes", "--skip-preview", "--non-interactive", "--config-file", file], { cwd: ROOT, detached: true });
    const run = { output: "", status: null as number | null, done: false };
    child.stdout.on("data", (d) => (run.output += String(d)));
    child.stderr.on("data", (d) => (run.output += String(d)));
    const log = runFile(`up-bg-${++backgroundRuns}.log`);
    const ended = new Promise<void>((resolve) => child.on("exit", (code) => {
        run.status = code;
        run.done = true;
        fs.writeFileSync(log, run.output); // the whole run, for a failure's post-mortem
        resolve();
    }));
    // SIGKILL to the whole process tree at once, as when the machine running it dies: pulumi puts
    // its plugins in process groups of their own, so its dynamic provider would outlive a kill of
    // this group alone (it did, one per kill, until the end of the CI run).
    const kill = () => {
        const tree = descendants(child.pid!);
        process.kill(-child.pid!, "SIGKILL");
        for (const pid of tree) {
            try {
                process.kill(pid, "SIGKILL");
            } catch {
                // already gone with the group
            }
        }
    };
    return { run, ended, kill };
}

/** Waits until `f` holds; past the time, fails naming `what` and, where given, what `explain` finds then. */
export async function until(what: string, f: () => boolean, timeoutMs: number, explain?: () => string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!f()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${explain === undefined ? "" : `\n${explain()}`}`);
        await new Promise((r) => setTimeout(r, 2000));
    }
}

/**
 * The `result` of a query (`/status`, `/commit?height=N`…) to the runner's validator of
 * validator-1's network (lab/devchain.sh, its CometBFT RPC on 127.0.0.1:8667). curl, a connection
 * per call: beacond's RPC closes an idle kept-alive one, which fetch then reuses.
 */
export const vmnetRpc = (q: string, timeoutSeconds = 10): any =>
    (JSON.parse(sh("curl", ["-fsS", "-m", String(timeoutSeconds), `http://127.0.0.1:8667${q}`]).stdout) as { result: unknown }).result;

/** The height validator-1's network has committed, as the runner's validator of it answers. */
export const vmnetHeight = (timeoutSeconds = 10): number => Number(vmnetRpc("/status", timeoutSeconds).sync_info.latest_block_height);

/**
 * What each validator of validator-1's network is doing, for a wait on the network that ran out:
 * its height/round/step, the proposal and the block each vote names at that height (a hash's first
 * bytes, `nil`, `-` for no vote), its last commit's votes and where it sees its peers; then the
 * lines of both validators' logs that warn or fail, the last minutes'. A halt of the lab network
 * (docs/roles.md, the consensus daemon's "Its stop") is then read from the run that met it.
 */
export function networkConsensus(): string {
    const read = (label: string, get: (q: string) => any): string => {
        try {
            const dump = get("/dump_consensus_state");
            const rs = dump.round_state;
            const votes = (rs.votes ?? []).filter((v: any) => /\{\d+:[_x]*x/.test(`${v.prevotes_bit_array} ${v.precommits_bit_array}`)) // rounds with a vote
                .map((v: any) => `round ${v.round} prevotes ${v.prevotes_bit_array} [${namedBlocks(v.prevotes)}], precommits ${v.precommits_bit_array} [${namedBlocks(v.precommits)}]`);
            const p = rs.proposal;
            const proposal = p ? `proposal ${shortHash(p.block_id?.hash)} of round ${p.round} (pol ${p.pol_round}), block ${rs.proposal_block ? "held" : "not held"}` : "no proposal";
            const peers = (dump.peers ?? []).map((x: any) => `${String(x.node_address).split("@")[1] ?? x.node_address} at ${x.peer_state?.round_state?.height}/${x.peer_state?.round_state?.round}/${x.peer_state?.round_state?.step}`);
            return `${label}: ${rs.height}/${rs.round}/${rs.step} since ${rs.start_time}; ${proposal}, locked round ${rs.locked_round}, valid round ${rs.valid_round}; ${votes.join("; ") || "no votes"}; last commit ${rs.last_commit?.votes_bit_array ?? "none"}; peers: ${peers.join(", ") || "none"}`;
        } catch (e) {
            return `${label}: no answer (${(e as Error).message.split("\n")[0]})`;
        }
    };
    // Not the lines every block writes: beacond's fee-recipient warning and its "Finalized block … syncing_to_height".
    const WARNS = "grep -aiE 'erro|warn|fail|reject|invalid|syncing|panic' | grep -avE 'Suggested fee recipient|syncing_to_height|sonic only supports' | sed 's/\\x1b\\[[0-9;]*m//g' | cut -c1-400 | tail -n 25";
    const runnerLog = path.join(process.env.NODEFLEET_STATE ?? path.join(ROOT, ".state"), "devchain", "vm-cl.log");
    return [
        read("the runner's validator", (q) => vmnetRpc(q)),
        read("validator-1", (q) => JSON.parse(onV(`curl -fsS -m 10 http://127.0.0.1:56657${q}`).output).result),
        `the runner's validator's log (${runnerLog}), what warns or fails:`,
        sh("bash", ["-c", `tail -n 4000 "$1" | ${WARNS}`, "-", runnerLog], { allowFail: true }).stdout.trimEnd(),
        "validator-1's units on dev-2, the last ten minutes, what warns or fails:",
        onV(`journalctl -u 0gchaind-validator-1 -u geth-validator-1 -u reth-validator-1 --since -10min --no-pager -o short-iso-precise | ${WARNS}`, true).output.trimEnd(),
    ].join("\n");
}

/** The block each vote of a CometBFT vote list names: `index:hash` (six bytes), `index:nil`, or `index:-` without a vote. */
function namedBlocks(list: unknown): string {
    if (!Array.isArray(list)) return "?";
    return list.map((v, i) => {
        const m = /^Vote\{\d+:\S+ \S+ ([0-9A-F]+) /.exec(String(v));
        return `${i}:${m === null ? "-" : m[1] === "000000000000" ? "nil" : m[1]}`;
    }).join(" ");
}

const shortHash = (h: unknown): string => (typeof h === "string" && h !== "" ? h.slice(0, 12) : "nil");

export const onV = (command: string, allowFail = false) => onVm("dev-2", command, allowFail);
export const DEVCHAIN = path.join(ROOT, "lab/devchain.sh");
export const CHAIN_BLOCKS = 3000;
/** validator-1's execution and consensus heights, read on the host (no pulumi run). */
export function stackHealthOnHost(): { executionHeight: number; consensusHeight: number } {
    const el = onV(`curl -fsS -m 5 -X POST -H 'Content-Type: application/json' --data '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' http://127.0.0.1:56545`, true).output;
    const cl = onV("curl -fsS -m 5 http://127.0.0.1:56657/status", true).output;
    const executionHeight = Number.parseInt(/"result":"(0x[0-9a-f]+)"/.exec(el)?.[1] ?? "-1", 16);
    const consensusHeight = Number(/"latest_block_height":\s*"(\d+)"/.exec(cl)?.[1] ?? -1);
    return { executionHeight, consensusHeight };
}
export const unitState = (unit: string) => onV(`systemctl is-active ${unit} || true`, true).output.trim();
export const marker = (step: string) => JSON.parse(onV(`cat /data/validator-1/.nodefleet-switch/migration/${step}.json`).output) as Record<string, any>;
export const FAILPOINTS = "/run/nodefleet/failpoints";

/**
 * Counts, every 200 ms until stopped, the SSH connections open from this runner to each dev host's
 * sshd (10.0.2.11:22 for dev-1, 10.0.2.12:22 for dev-2). `stop()` gives the most open at once per host.
 */
export function watchSshConnections(): { stop: () => Record<string, number> } {
    const file = path.join(ROOT, ".state", "e2e-ssh-peaks");
    fs.rmSync(file, { force: true });
    const loop = [
        "a=0; b=0",
        `while kill -0 ${process.pid} 2>/dev/null; do # ends with the test process, however that ends`,
        "  n=$(ss -Htn state established '( dst 10.0.2.11 and dport = :22 )' | wc -l); [ \"$n\" -gt \"$a\" ] && a=$n",
        "  m=$(ss -Htn state established '( dst 10.0.2.12 and dport = :22 )' | wc -l); [ \"$m\" -gt \"$b\" ] && b=$m",
        `  echo "$a $b" > ${JSON.stringify(file)}.tmp && mv ${JSON.stringify(file)}.tmp ${JSON.stringify(file)}`,
        "  sleep 0.2",
        "done",
    ].join("\n");
    const child = spawn("bash", ["-c", loop], { stdio: "ignore", detached: true });
    return {
        stop: () => {
            process.kill(-child.pid!, "SIGKILL");
            const [a, b] = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split(" ").map(Number) : [NaN, NaN];
            return { "dev-1": a!, "dev-2": b! };
        },
    };
}
