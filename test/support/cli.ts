// Runs the real Pulumi CLI (lab/toolchain.sh) on a throwaway copy of the project: its own
// file backend and Pulumi home in a temp dir, so tests never touch the checkout's stacks.
import { spawn, spawnSync, type ChildProcess, SpawnSyncReturns } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const ROOT = path.resolve(__dirname, "../../..");
/** The lab's state directory as lab/vm.sh and lab/devchain.sh take it: NODEFLEET_STATE (the e2e tier's own) or the checkout's .state. */
export const stateDir = (): string => process.env.NODEFLEET_STATE ?? path.join(ROOT, ".state");
/**
 * The bound on one pulumi or project command of the cli tier: it stops a hung one. Many times what
 * a command needs, because the tier runs at nice 10 beside the hosts' tests (scripts/test.sh).
 */
const HUNG_MS = 900_000;
const PROJECT_FILES = ["Pulumi.yaml", "package.json", "tsconfig.json", "index.ts", "components", "templates", "hostfiles", "policy"];

/** What a scratch project is made of: paths in the checkout, each copied to the same or another place. */
export type Sources = readonly (string | readonly [from: string, to: string])[];

/**
 * Points a scratch project at the program as tsc compiled it: each .ts file of index.ts and
 * components/ gets the .js tsc made of it (dist/, which every tier's tests run from) beside it, and
 * Pulumi.yaml runs index.js without TypeScript. Why: loading TypeScript and transpiling the whole
 * program through ts-node took 2 of the 4.5 CPU-s of a preview's program (profiled,
 * docs/development.md), and the cli tier makes some two hundred pulumi runs beside the hosts' tests.
 * The e2e tier runs the program as an operator's `pulumi up` does: index.ts through ts-node.
 */
export function runCompiled(dir: string): void {
    const overlay = (rel: string): void => {
        const from = path.join(ROOT, "dist", rel);
        if (fs.statSync(from).isDirectory()) {
            for (const entry of fs.readdirSync(from)) overlay(path.join(rel, entry));
        } else if (rel.endsWith(".js")) {
            const source = path.join(dir, rel.replace(/\.js$/, ".ts"));
            if (!fs.existsSync(source)) throw new Error(`dist/${rel} has no source in the scratch project (${source}): dist/ is stale; run tsc`);
            fs.copyFileSync(from, path.join(dir, rel));
        }
    };
    overlay("index.js");
    overlay("components");
    const file = path.join(dir, "Pulumi.yaml");
    const yaml = fs.readFileSync(file, "utf8");
    const out = yaml.replace(/^( +typescript: )true$/m, "$1false").replace(/^main: index\.ts$/m, "main: index.js");
    if (!/typescript: false/.test(out) || !/^main: index\.js$/m.test(out)) throw new Error(`Pulumi.yaml: not the project's runtime and main:\n${yaml}`);
    fs.writeFileSync(file, out);
}

export interface Run {
    readonly status: number | null;
    /** stdout then stderr, for assertions on everything a command said. */
    readonly output: string;
    /** stdout alone: the data a command prints (progress and logs go to stderr). */
    readonly stdout: string;
}

/**
 * Which Pulumi a scratch project runs (NODEFLEET_TEST_TOOLCHAIN): nodefleet's (lab/toolchain.sh, the
 * default) or stock Pulumi with no patch (lab/toolchain.sh stock): its CLI's directory and its plugins.
 */
/** True when the tests run on stock Pulumi (NODEFLEET_TEST_TOOLCHAIN=stock): a test of a patch's effect asserts stock's behaviour instead (docs/toolchain.md). */
export const ON_STOCK = process.env.NODEFLEET_TEST_TOOLCHAIN === "stock";

export function toolchainDirs(): { bin: string; plugins: string } {
    const which = process.env.NODEFLEET_TEST_TOOLCHAIN ?? "nodefleet";
    if (which === "stock") return { bin: path.join(ROOT, ".tools/stock/pulumi/bin"), plugins: path.join(ROOT, ".tools/stock/pulumi/plugins") };
    if (which !== "nodefleet") throw new Error(`NODEFLEET_TEST_TOOLCHAIN is nodefleet or stock, not ${which}`);
    return { bin: path.join(ROOT, ".tools/bin"), plugins: path.join(ROOT, ".tools/pulumi/plugins") };
}

export function toolEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return {
        ...process.env,
        PATH: `${toolchainDirs().bin}:${process.env.PATH}`,
        PULUMI_SKIP_UPDATE_CHECK: "1",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "1",
        PULUMI_NODEJS_TRANSPILE_ONLY: "true",
        ...extra,
    };
}

function result(r: SpawnSyncReturns<string>): Run {
    // A command killed by its timeout (or a signal) has no exit status: say so, rather than "exited null".
    const killed = r.status === null ? `\n[killed by ${r.signal ?? "a signal"}${(r.error as NodeJS.ErrnoException | undefined)?.code === "ETIMEDOUT" ? " at its timeout" : ""}]\n` : "";
    return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}${killed}`, stdout: r.stdout ?? "" };
}

/** Key-shaped text that is no key: what a preview's key-file check reads. */
export const PLACEHOLDER_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nbm90LWEtcmVhbC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n";

/** A copy of the project with its own backend; `stack` is initialised with `config` as its file. */
export class ScratchProject {
    readonly dir: string;
    private readonly env: NodeJS.ProcessEnv;

    /**
     * `program`: "compiled" (the default when `sources` hold the project's index.ts and
     * components/) runs the program tsc compiled (runCompiled); "typescript", its sources through ts-node.
     */
    constructor(readonly stack: string, config: string, passphrase = "nodefleet-dev", sources: Sources = PROJECT_FILES, program: "compiled" | "typescript" = "compiled") {
        this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-cli-"));
        for (const f of sources) {
            const [from, to] = typeof f === "string" ? [f, f] : f;
            fs.cpSync(path.join(ROOT, from), path.join(this.dir, to), { recursive: true });
        }
        if (program === "compiled" && ["Pulumi.yaml", "index.ts", "components"].every((f) => sources.includes(f))) runCompiled(this.dir);
        fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(this.dir, "node_modules"));
        fs.mkdirSync(path.join(this.dir, ".backend"));
        // The toolchain's plugins, where Pulumi looks for them (lab/toolchain.sh home).
        fs.mkdirSync(path.join(this.dir, ".pulumi-home"));
        fs.symlinkSync(toolchainDirs().plugins, path.join(this.dir, ".pulumi-home", "plugins"));
        this.env = toolEnv({
            PULUMI_HOME: path.join(this.dir, ".pulumi-home"),
            PULUMI_BACKEND_URL: `file://${path.join(this.dir, ".backend")}`,
            PULUMI_CONFIG_PASSPHRASE: passphrase,
        });
        const init = this.pulumi(["stack", "init", stack, "--no-select"]);
        if (init.status !== 0) throw new Error(`pulumi stack init failed:\n${init.output}`);
        this.writeConfig(config);
    }

    writeConfig(config: string): void {
        fs.writeFileSync(path.join(this.dir, `Pulumi.${this.stack}.yaml`), config);
    }

    /**
     * What the dev config reads besides its stack file, written into the project: the per-checkout VM
     * key it names by relative path (`generated`: a real ed25519 key, for an up over real SSH;
     * `placeholder`: key-shaped text, all a preview checks) and the artifact server's SHA256SUMS,
     * which preview reads to resolve the releases.
     */
    writeDevFiles(key: "generated" | "placeholder"): void {
        const keyFile = path.join(this.dir, ".state/vm/id_ed25519");
        fs.mkdirSync(path.dirname(keyFile), { recursive: true });
        if (key === "generated") sh("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
        else fs.writeFileSync(keyFile, PLACEHOLDER_KEY, { mode: 0o600 });
        const sums = path.join(this.dir, ".state/artifacts/current/SHA256SUMS");
        fs.mkdirSync(path.dirname(sums), { recursive: true });
        fs.writeFileSync(sums, ["aristotle-v1.0.6", "zgs_node-v1.1.0", "aztec-v4.1.2"].map((n, i) => `${String(i + 1).repeat(64)}  ${n}.tar.gz\n`).join(""));
    }

    readConfig(): string {
        return fs.readFileSync(path.join(this.dir, `Pulumi.${this.stack}.yaml`), "utf8");
    }

    pulumi(args: string[], input?: string): Run {
        return result(spawnSync("pulumi", args, { cwd: this.dir, env: this.env, encoding: "utf8", input, timeout: HUNG_MS }));
    }

    preview(...extra: string[]): Run {
        return this.pulumi(["preview", "--stack", this.stack, "--non-interactive", "--color", "never", ...extra]);
    }

    /** Any command in the project directory with the project's Pulumi environment (plus `extraEnv`). */
    exec(cmd: string, args: string[], extraEnv: Record<string, string> = {}): Run {
        // A status report of a thousand nodes is megabytes: past spawnSync's 1 MB default it would be cut.
        return result(spawnSync(cmd, args, { cwd: this.dir, env: { ...this.env, ...extraEnv }, encoding: "utf8", timeout: HUNG_MS, maxBuffer: 256 << 20 }));
    }

    /** A command started in the project directory with the project's Pulumi environment (plus `extraEnv`), not waited for. */
    start(cmd: string, args: string[], extraEnv: Record<string, string> = {}): ChildProcess {
        return spawn(cmd, args, { cwd: this.dir, env: { ...this.env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
    }

    /** `preview`, without blocking: for several scratch projects previewed at once. */
    previewAsync(...extra: string[]): Promise<Run> {
        return new Promise((resolve, reject) => {
            const child = spawn("pulumi", ["preview", "--stack", this.stack, "--non-interactive", "--color", "never", ...extra], { cwd: this.dir, env: this.env });
            let stdout = "";
            let stderr = "";
            const timer = setTimeout(() => child.kill("SIGKILL"), HUNG_MS);
            child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
            child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
            child.on("error", reject);
            child.on("close", (status) => {
                clearTimeout(timer);
                resolve({ status, output: stdout + stderr, stdout });
            });
        });
    }

    dispose(): void {
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

/**
 * What a failed command said of its failure, for an assertion's message: pulumi's Diagnostics
 * section (each resource that failed and its error), then the output's tail. The tail alone of a
 * failed up shows the stack's outputs, which pulumi prints after its errors.
 */
export function failureOf(output: string, tail = 3000): string {
    const start = output.search(/^Diagnostics:$/m);
    if (start < 0) return output.slice(-tail);
    const rest = output.slice(start);
    const end = rest.search(/^(Outputs|Resources):$/m);
    const diagnostics = (end < 0 ? rest : rest.slice(0, end)).slice(0, 6000);
    return `${diagnostics}\n…\n${output.slice(-tail)}`;
}

/** A command in the checkout (scripts/…), output captured; throws with the output on failure. `env` adds variables (keys go there, never into an argv). */
export function sh(cmd: string, args: string[], opts: { timeoutMs?: number; allowFail?: boolean; input?: string; env?: Record<string, string>; cwd?: string; maxBuffer?: number } = {}): Run {
    const env = opts.env ? { ...process.env, ...opts.env } : process.env;
    const timeout = opts.timeoutMs ?? 900_000;
    const r = result(spawnSync(cmd, args, { cwd: opts.cwd ?? ROOT, env, encoding: "utf8", input: opts.input, timeout, maxBuffer: opts.maxBuffer }));
    const how = r.status === null ? `did not finish (its timeout is ${timeout / 1000} s)` : `exited ${r.status}`;
    if (!opts.allowFail && r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} ${how}:\n${failureOf(r.output, 4000)}`);
    return r;
}

export { pool } from "../../status/pool";
