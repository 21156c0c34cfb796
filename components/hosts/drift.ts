// Drift that sees the hosts. Every remote step that puts something on a host records it there (each
// file's sha256, mode and owner, the units it left enabled and running, the firewall table's digest,
// each release's file digests: never contents) under DRIFT_DIR/<group>/. One HostDrift resource per
// host reads the host against those records when Pulumi refreshes it (never on preview or up: a
// no-op up opens no SSH session), over SSH as `nodefleet status` goes, so `pulumi refresh` shows a drifted
// host as a diff of its `drift` output. The next `pulumi up` (after that refresh, or as
// `pulumi up --refresh`) counts one repair for each drifted group; the steps of that group take the
// count in their triggers and run again, putting the host back.
import * as cp from "node:child_process";
import * as crypto from "node:crypto";
import * as fsm from "node:fs";
import * as osm from "node:os";
import * as pathm from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { hostFile } from "../render";
import type { Connection } from "./host";

/** Where steps record what they put on a host, one directory per group. */
export const DRIFT_DIR = "/var/lib/nodefleet/drift";

/** The record directory of a group ("storage-1.configure", "firewall", "release.0g-chain", …). */
export function driftRecord(group: string): string {
    if (!/^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(group)) throw new Error(`drift group ${JSON.stringify(group)}: letters, digits, '.', '_', '+', '-' only`);
    return `${DRIFT_DIR}/${group}`;
}

/** One difference between a host and what nodefleet last applied there. */
export interface DriftItem {
    /** The group whose steps put it there (and run again to repair it). */
    readonly group: string;
    /** The file, unit, table or release. */
    readonly item: string;
    /** What changed, in words; never a content or a digest. */
    readonly change: string;
}

interface DriftProps {
    readonly host: string;
    readonly connection: Connection;
    readonly toolHash: string;
    /** What differs, a line each: "HOST: ITEM: CHANGE [GROUP]" (see driftLine). */
    readonly drift?: string[];
    readonly repairs?: Record<string, number>;
}

/** One difference as `pulumi refresh --diff` shows it and scripts/ci/stack.sh drift reports it. */
export function driftLine(host: string, d: DriftItem): string {
    return `${host}: ${d.item}: ${d.change} [${d.group}]`;
}

/** The group of a drift line (the steps that run again to repair it). */
export function driftLineGroup(line: string): string | undefined {
    return /\[([A-Za-z0-9._+-]+)\]$/.exec(line)?.[1];
}

// The check sent to the host on stdin (it needs nothing installed there but python3).
const TOOL = hostFile("drift.py");
const TOOL_HASH = crypto.createHash("sha256").update(TOOL).digest("hex").slice(0, 16);

/** The most differences a host's answer is read for (a host is not trusted to be small). */
const MAX_ITEMS = 200;

/**
 * One difference as the host answered it, made safe to show: the host is not trusted, and its words
 * reach the state, the refresh diff and CI annotations. Printable characters only, no quote (the
 * drift check's output is read line by line), a bounded length, a group that is a group's name.
 */
export function cleanDriftItem(raw: unknown): DriftItem {
    const o = (raw !== null && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
    const text = (v: unknown, max: number) => String(v ?? "").replace(/[^\x20-\x7e]|"/g, "?").slice(0, max);
    const group = typeof o.group === "string" && /^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$/.test(o.group) ? o.group : "unknown";
    return { group, item: text(o.item, 300), change: text(o.change, 300) };
}

/** Seconds a host has to answer, SSH connection included. */
const READ_TIMEOUT_SECONDS = 120;

/**
 * Runs the drift check on a host over SSH: the system's OpenSSH client with the options of
 * `nodefleet status` (status/probe.ts sshArgs, repeated here: the dynamic provider serializes this
 * function into the state, with what it uses); the key goes to a private temporary file, removed
 * when the check ends.
 */
async function readHost(host: string, c: Connection, tool: string, timeoutSeconds: number): Promise<DriftItem[]> {
    const dir = fsm.mkdtempSync(pathm.join(osm.tmpdir(), "nodefleet-drift-"));
    try {
        fsm.chmodSync(dir, 0o700);
        const keyFile = pathm.join(dir, "key");
        const key = String(c.privateKey ?? "");
        fsm.writeFileSync(keyFile, key.endsWith("\n") ? key : `${key}\n`, { mode: 0o600 });
        const user = String(c.user ?? "root");
        const args = [
            "-F", "/dev/null", "-i", keyFile, "-p", String(c.port ?? 22),
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=10",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR",
            "-o", "GlobalKnownHostsFile=/dev/null",
        ];
        if (typeof c.hostKey === "string" && c.hostKey !== "") {
            const known = pathm.join(dir, "known_hosts");
            fsm.writeFileSync(known, `nodefleet-${host} ${c.hostKey}\n`, { mode: 0o600 });
            args.push("-o", `UserKnownHostsFile=${known}`, "-o", `HostKeyAlias=nodefleet-${host}`, "-o", "StrictHostKeyChecking=yes");
        } else {
            args.push("-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no");
        }
        args.push("-l", user, "--", String(c.host), user === "root" ? "python3 -S -" : "sudo -n python3 -S -");
        const { code, out, err } = await new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
            const child = cp.spawn("ssh", args, { stdio: ["pipe", "pipe", "pipe"] });
            let out = "";
            let err = "";
            const timer = setTimeout(() => {
                child.kill("SIGKILL");
                reject(new Error(`host ${host}: the drift check got no answer within ${timeoutSeconds} s`));
            }, timeoutSeconds * 1000);
            child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
            child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
            child.stdin.on("error", () => undefined);
            child.stdin.end(tool);
            child.on("error", (e) => {
                clearTimeout(timer);
                reject(new Error(`host ${host}: cannot run ssh: ${e.message}`));
            });
            child.on("close", (code) => {
                clearTimeout(timer);
                resolve({ code, out, err });
            });
        });
        const last = out.trim().split("\n").pop() ?? "";
        let answer: { drift?: unknown } | undefined;
        try {
            answer = JSON.parse(last) as { drift?: unknown };
        } catch {
            answer = undefined;
        }
        if (code !== 0 || answer === undefined || !Array.isArray(answer.drift)) {
            const why = err.trim().split("\n").filter((l) => l !== "").pop() ?? `exit ${code}`;
            throw new Error(`host ${host}: the drift check failed (${code === 255 ? "ssh" : `exit ${code}`}): ${why}`);
        }
        return (answer.drift as unknown[]).slice(0, MAX_ITEMS).map(cleanDriftItem);
    } finally {
        fsm.rmSync(dir, { recursive: true, force: true });
    }
}

function sameConnection(a: Connection, b: Connection): boolean {
    const key = (c: Connection) => JSON.stringify([c.host, c.port, c.user, c.privateKey, c.hostKey]);
    return key(a) === key(b);
}

export const driftProvider: pulumi.dynamic.ResourceProvider = {
    // Nothing to read yet: the steps that run after it record the host.
    async create(inputs: DriftProps) {
        return { id: `drift-${inputs.host}`, outs: { ...inputs, drift: [], repairs: {} } };
    },
    // `pulumi refresh`: the host against its records.
    async read(id: string, props: DriftProps) {
        const found = await readHost(props.host, props.connection, TOOL, READ_TIMEOUT_SECONDS);
        return { id, props: { ...props, drift: found.map((d) => driftLine(props.host, d)) } };
    },
    async diff(_id: string, olds: DriftProps, news: DriftProps) {
        const drifted = (olds.drift ?? []).length > 0;
        return { changes: drifted || olds.toolHash !== news.toolHash || !sameConnection(olds.connection, news.connection) };
    },
    // The up after a refresh that found drift: one more repair for each drifted group.
    async update(_id: string, olds: DriftProps, news: DriftProps) {
        const repairs: Record<string, number> = { ...(olds.repairs ?? {}) };
        const groups = new Set((olds.drift ?? []).map(driftLineGroup).filter((g): g is string => g !== undefined));
        for (const g of groups) repairs[g] = (repairs[g] ?? 0) + 1;
        return { outs: { ...news, drift: [], repairs } };
    },
};

/**
 * The provider of the stack's HostDrift resources, made explicitly: Pulumi configures the default
 * dynamic provider with the whole stack config, secret keys included, which the drift check has no
 * use for (and the policy pack rightly flags). This one is configured with nothing.
 */
export class DriftCheckProvider extends pulumi.ProviderResource {
    constructor(name: string, opts?: pulumi.ResourceOptions) {
        super("pulumi-nodejs", name, {}, opts);
    }
}

export interface HostDriftArgs {
    readonly host: string;
    readonly connection: pulumi.Input<Connection>;
}

/** A host's drift as `pulumi refresh` last read it, and the repair count of each group. */
export class HostDrift extends pulumi.dynamic.Resource {
    declare readonly drift: pulumi.Output<string[]>;
    declare readonly repairs: pulumi.Output<Record<string, number>>;

    constructor(name: string, args: HostDriftArgs, opts?: pulumi.CustomResourceOptions) {
        super(driftProvider, name, { host: args.host, connection: pulumi.secret(args.connection), toolHash: TOOL_HASH, drift: undefined, repairs: undefined }, opts);
    }

    /** The repair count of a group, for its steps' triggers. */
    repairCount(group: string): pulumi.Output<number> {
        return this.repairs.apply((r) => r?.[group] ?? 0);
    }
}

/** A step's place in a host's drift check: its record directory and the repairs it answers to. */
export interface DriftBinding {
    readonly drift: HostDrift;
    readonly group: string;
}

/** A node's drift group for one of its steps: "storage-1.configure", "storage-1.key". */
export function nodeDriftGroup(node: string, step: "configure" | "key"): string {
    return `${node}.${step}`;
}

/** The shell glob of every record directory of a node (its remove script drops them). */
export function nodeDriftGlob(node: string): { readonly dir: string; readonly prefix: string } {
    driftRecord(node);
    return { dir: DRIFT_DIR, prefix: `${node}.` };
}
