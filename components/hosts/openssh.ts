// One command on a host through the system's OpenSSH client, for what runs in a dynamic provider's
// process (the drift check, the host key's swap): the options of `nodefleet status` (status/probe.ts
// sshArgs), the private key in a private temporary file removed when the command ends, and the host
// keys it may present pinned in a known_hosts file of its own. It imports nothing but node's modules:
// the dynamic provider's process loads it on its own.
import * as cp from "node:child_process";
import * as fsm from "node:fs";
import * as osm from "node:os";
import * as pathm from "node:path";
import type { Connection } from "./connection";

export interface SshRun {
    /** The host's name in nodefleet, for messages and the known_hosts alias. */
    readonly host: string;
    readonly connection: Connection;
    /**
     * The host keys the host may present (`ssh-ed25519 AAAA…`), any one of them accepted; empty:
     * the connection's own `hostKey`, else any key (as the command provider does without one).
     */
    readonly hostKeys?: readonly string[];
    /** What runs on the host (with root rights through sudo when the user is not root). */
    readonly command: string;
    readonly stdin: string;
    readonly timeoutSeconds: number;
    /** What the command is, for the message when it gets no answer in time. */
    readonly what: string;
}

export interface SshResult {
    readonly code: number | null;
    readonly out: string;
    readonly err: string;
}

/** The known_hosts alias of a host: the connection's address may be unknown to the operator's own files. */
function alias(host: string): string {
    return `nodefleet-${host}`;
}

/** The options every connection takes: no prompt, no agent's keys, a dead link noticed within 25 s, no global known hosts. */
const SSH_OPTIONS = [
    "BatchMode=yes",
    "IdentitiesOnly=yes",
    "ConnectTimeout=10",
    "ServerAliveInterval=5",
    "ServerAliveCountMax=3",
    "LogLevel=ERROR",
    "GlobalKnownHostsFile=/dev/null",
];

export async function runSsh(run: SshRun): Promise<SshResult> {
    const c = run.connection;
    const dir = fsm.mkdtempSync(pathm.join(osm.tmpdir(), "nodefleet-ssh-"));
    try {
        fsm.chmodSync(dir, 0o700);
        const keyFile = pathm.join(dir, "key");
        const key = String(c.privateKey ?? "");
        fsm.writeFileSync(keyFile, key.endsWith("\n") ? key : `${key}\n`, { mode: 0o600 });
        const user = String(c.user ?? "root");
        const args = ["-F", "/dev/null", "-i", keyFile, "-p", String(c.port ?? 22), ...SSH_OPTIONS.flatMap((o) => ["-o", o])];
        const pinned =
            (run.hostKeys ?? []).length > 0 ? run.hostKeys! : typeof c.hostKey === "string" && c.hostKey !== "" ? [c.hostKey] : [];
        if (pinned.length > 0) {
            const known = pathm.join(dir, "known_hosts");
            fsm.writeFileSync(known, pinned.map((k) => `${alias(run.host)} ${k}\n`).join(""), { mode: 0o600 });
            args.push("-o", `UserKnownHostsFile=${known}`, "-o", `HostKeyAlias=${alias(run.host)}`, "-o", "StrictHostKeyChecking=yes");
        } else {
            args.push("-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no");
        }
        args.push("-l", user, "--", String(c.host), user === "root" ? run.command : `sudo -n ${run.command}`);
        return await spawnSsh(args, run);
    } finally {
        fsm.rmSync(dir, { recursive: true, force: true });
    }
}

/** Runs ssh with `args`: its exit status and output, or an error when it cannot run or answers too late. */
function spawnSsh(args: readonly string[], run: SshRun): Promise<SshResult> {
    return new Promise<SshResult>((resolve, reject) => {
        const child = cp.spawn("ssh", args, { stdio: ["pipe", "pipe", "pipe"] });
        let out = "";
        let err = "";
        const timer = setTimeout(() => {
            child.kill("SIGKILL");
            reject(new Error(`host ${run.host}: ${run.what} got no answer within ${run.timeoutSeconds} s`));
        }, run.timeoutSeconds * 1000);
        child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
        child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
        child.stdin.on("error", () => undefined);
        child.stdin.end(run.stdin);
        child.on("error", (e) => {
            clearTimeout(timer);
            reject(new Error(`host ${run.host}: cannot run ssh: ${e.message}`));
        });
        child.on("close", (code) => {
            clearTimeout(timer);
            resolve({ code, out, err });
        });
    });
}

/** The last line of what ssh or the command said on stderr, or its exit status: the reason of a failure. */
export function sshFailure(r: SshResult): string {
    return (
        r.err
            .trim()
            .split("\n")
            .filter((l) => l !== "")
            .pop() ?? `exit ${r.code}`
    );
}
