// Runs the health commands of every host over SSH: one `ssh` per host (the system's OpenSSH client,
// as an operator would), all hosts at once up to a bound, each with a time limit after which it
// is killed and reported unreachable. Keys from secret config are written to a private temporary
// directory (never on a command line) and removed when the round ends.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { HOSTFILES_DIR } from "../components/base/render";
import { pool } from "./pool";
import type { HostTarget } from "./targets";

export interface ProbeOptions {
    /** Seconds per host, SSH connection included; the host is reported unreachable after it. */
    readonly timeoutSeconds: number;
    /** Hosts checked at once. */
    readonly parallel: number;
    /** The private key held by a secret config key, by that key's name. */
    readonly secretKey: (configKey: string) => string | undefined;
    /** Where a key file named by relative path is found (the project directory). */
    readonly cwd: string;
    /** The ssh binary (tests point it elsewhere). */
    readonly ssh?: string;
}

/** Per node on a host: its tool's result as the runner reports it. */
export type NodeResult =
    | { readonly exit: number; readonly stdout: string; readonly stderr: string; readonly seconds: number }
    | { readonly timeout: number }
    | { readonly error: string };

export type HostResult =
    | { readonly ok: true; readonly results: Record<string, NodeResult>; readonly seconds: number }
    | { readonly ok: false; readonly reason: string; readonly seconds: number };

// The checks' runner the health timer imports on a host (hostfiles/nodefleet_checks.py), sent whole:
// a host without the timer has no copy.
const RUNNER = fs.readFileSync(path.join(HOSTFILES_DIR, "nodefleet_checks.py"), "utf8");

/**
 * The runner script for these checks; each check gets most of the host's time limit. The checks
 * come base64-encoded (a JSON list of {node, argv, timeout}): nothing from the config is parsed by
 * a shell on the host, and each argv runs without one.
 */
export function runnerScript(target: HostTarget, timeoutSeconds: number): string {
    const perCheck = Math.max(1, Math.floor(timeoutSeconds * 0.8));
    const checks = target.checks.map((c) => ({ node: c.node, argv: c.argv, timeout: perCheck }));
    const encoded = Buffer.from(JSON.stringify(checks)).toString("base64");
    return `${RUNNER}\n\nimport base64  # noqa: E402\nprint_results(json.loads(base64.b64decode("${encoded}")))\n`;
}

/** The ssh argv for a target (the key file and known_hosts file are given). */
export function sshArgs(t: HostTarget, keyFile: string, knownHosts: string | null): string[] {
    const alias = `nodefleet-${t.host}`;
    return [
        "-F",
        "/dev/null",
        "-i",
        keyFile,
        "-p",
        String(t.port),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "ConnectTimeout=5",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=2",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        ...(knownHosts !== null
            ? ["-o", `UserKnownHostsFile=${knownHosts}`, "-o", `HostKeyAlias=${alias}`, "-o", "StrictHostKeyChecking=yes"]
            : ["-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no"]),
        "-l",
        t.user,
        "--",
        t.address ?? "",
        t.user === "root" ? "python3 -S -" : "sudo -n python3 -S -",
    ];
}

/** Private directories holding decrypted keys while a round runs (see removeKeyDirs). */
const keyDirs = new Set<string>();

/**
 * Removes the private directories of the rounds still running: for a signal handler, so that an
 * interrupted `status --watch` (Ctrl-C is how it ends) leaves no decrypted key behind.
 */
export function removeKeyDirs(): void {
    for (const dir of keyDirs) fs.rmSync(dir, { recursive: true, force: true });
    keyDirs.clear();
}

/** Most a host may answer (a host is not trusted to be small). */
const MAX_ANSWER = 16 * 1024 * 1024;

/** Checks every target; never rejects: a host that fails is a result. */
export async function probeAll(targets: readonly HostTarget[], opts: ProbeOptions): Promise<Map<string, HostResult>> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-status-"));
    keyDirs.add(dir);
    fs.chmodSync(dir, 0o700);
    try {
        const results = await pool(
            opts.parallel,
            targets.map((t) => () => probe(t, dir, opts)),
        );
        return new Map(targets.map((t, i) => [t.host, results[i]!]));
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
        keyDirs.delete(dir);
    }
}

async function probe(t: HostTarget, dir: string, opts: ProbeOptions): Promise<HostResult> {
    const t0 = Date.now();
    const seconds = () => Math.round((Date.now() - t0) / 100) / 10;
    if (t.address === null) return { ok: false, reason: "the stack has no address for it (never deployed?)", seconds: 0 };
    const files = sshFiles(t, dir, opts);
    if ("ok" in files) return files;
    return overSsh(t, files.keyFile, files.knownHosts, opts, seconds);
}

/** The target's SSH key file (a key held in a secret is written to `dir`) and known_hosts, or why it has none. */
function sshFiles(t: HostTarget, dir: string, opts: ProbeOptions): { keyFile: string; knownHosts: string | null } | HostResult {
    let keyFile: string;
    if ("secret" in t.key) {
        const key = opts.secretKey(t.key.secret);
        if (key === undefined)
            return { ok: false, reason: `the config key nodefleet:${t.key.secret} (its SSH key) is not set`, seconds: 0 };
        keyFile = path.join(dir, `${t.host}.key`);
        fs.writeFileSync(keyFile, key.endsWith("\n") ? key : `${key}\n`, { mode: 0o600 });
    } else {
        keyFile = path.resolve(opts.cwd, t.key.file);
    }
    let knownHosts: string | null = null;
    if (t.hostKey !== null) {
        knownHosts = path.join(dir, `${t.host}.known_hosts`);
        fs.writeFileSync(knownHosts, `nodefleet-${t.host} ${t.hostKey}\n`, { mode: 0o600 });
    }
    return { keyFile, knownHosts };
}

/** Runs the target's checks over ssh: their results, or why there are none (a timeout, an answer too large, ssh's error). */
function overSsh(
    t: HostTarget,
    keyFile: string,
    knownHosts: string | null,
    opts: ProbeOptions,
    seconds: () => number,
): Promise<HostResult> {
    const script = runnerScript(t, opts.timeoutSeconds);
    return new Promise((resolve) => {
        // Its own process group: a timeout kills ssh and anything it started (a ProxyCommand, say).
        const child = spawn(opts.ssh ?? "ssh", sshArgs(t, keyFile, knownHosts), { stdio: ["pipe", "pipe", "pipe"], detached: true });
        let out = "";
        let err = "";
        let settled = false;
        const done = (r: HostResult) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            resolve(r);
        };
        const kill = (reason: string) => {
            try {
                if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
            } catch {
                child.kill("SIGKILL");
            }
            child.stdout.destroy();
            child.stderr.destroy();
            done({ ok: false, reason, seconds: seconds() });
        };
        const timer = setTimeout(() => kill(`no answer within ${opts.timeoutSeconds} s`), opts.timeoutSeconds * 1000);
        const take = (d: string, into: "out" | "err") => {
            if (into === "out") out += d;
            else err += d;
            if (out.length + err.length > MAX_ANSWER) kill(`its answer exceeded ${MAX_ANSWER / 1024 / 1024} MiB: not read further`);
        };
        child.stdout.setEncoding("utf8").on("data", (d: string) => take(d, "out"));
        child.stderr.setEncoding("utf8").on("data", (d: string) => take(d, "err"));
        child.stdin.on("error", () => undefined); // ssh gone before reading: reported below
        child.stdin.end(script);
        child.on("error", (e) => done({ ok: false, reason: `cannot run ssh: ${e.message}`, seconds: seconds() }));
        child.on("close", (code) => done({ ...runnerAnswer(code, out, err), seconds: seconds() }));
    });
}

/** The runner's answer from ssh's exit status and output: its results, or why there are none. */
function runnerAnswer(
    code: number | null,
    out: string,
    err: string,
): { ok: true; results: Record<string, NodeResult> } | { ok: false; reason: string } {
    const last = out.trim().split("\n").pop() ?? "";
    try {
        const parsed = JSON.parse(last) as { results?: Record<string, NodeResult> };
        if (code === 0 && parsed.results !== undefined && typeof parsed.results === "object") return { ok: true, results: parsed.results };
    } catch {
        // not the runner's answer: reported below
    }
    const why =
        err
            .trim()
            .split("\n")
            .filter((l) => l !== "")
            .pop() ?? `exit ${code}`;
    return {
        ok: false,
        reason: code === 255 ? (why.startsWith("ssh:") ? why : `ssh: ${why}`) : `the check runner failed (exit ${code}): ${why}`,
    };
}
