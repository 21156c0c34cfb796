// The drift check's provider: what `pulumi refresh` runs for each host's HostDrift resource (see
// drift.ts). The state keeps only a loader of this module (driftCheckLoader), so it is loaded by the
// dynamic provider's process itself: it imports nothing of the program but node's modules, the
// OpenSSH runner (openssh.ts) and the host file it sends.
import * as crypto from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { hostFile } from "../base/render";
import type { Connection } from "./connection";
import { runSsh, sshFailure } from "./openssh";

/** One difference between a host and what nodefleet last applied there. */
export interface DriftItem {
    /** The group whose steps put it there (and run again to repair it). */
    readonly group: string;
    /** The file, unit, table or release. */
    readonly item: string;
    /** What changed, in words; never a content or a digest. */
    readonly change: string;
}

export interface DriftProps {
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
export const TOOL_HASH = crypto.createHash("sha256").update(TOOL).digest("hex").slice(0, 16);

/** The most differences a host's answer is read for (a host is not trusted to be small). */
const MAX_ITEMS = 200;

/**
 * One difference as the host answered it, made safe to show: the host is not trusted, and its words
 * reach the state, the refresh diff and CI annotations. Printable characters only, no quote (the
 * drift check's output is read line by line), a bounded length, a group that is a group's name.
 */
export function cleanDriftItem(raw: unknown): DriftItem {
    const o = (raw !== null && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
    const text = (v: unknown, max: number) =>
        String(v ?? "")
            .replace(/[^\x20-\x7e]|"/g, "?")
            .slice(0, max);
    const group = typeof o.group === "string" && /^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$/.test(o.group) ? o.group : "unknown";
    return { group, item: text(o.item, 300), change: text(o.change, 300) };
}

/** Seconds a host has to answer, SSH connection included. */
const READ_TIMEOUT_SECONDS = 120;

/** Runs the drift check on a host over SSH (openssh.ts: the options of `nodefleet status`). */
async function readHost(host: string, c: Connection, tool: string, timeoutSeconds: number): Promise<DriftItem[]> {
    const r = await runSsh({ host, connection: c, command: "python3 -S -", stdin: tool, timeoutSeconds, what: "the drift check" });
    const last = r.out.trim().split("\n").pop() ?? "";
    let answer: { drift?: unknown } | undefined;
    try {
        answer = JSON.parse(last) as { drift?: unknown };
    } catch {
        answer = undefined;
    }
    if (r.code !== 0 || answer === undefined || !Array.isArray(answer.drift)) {
        throw new Error(`host ${host}: the drift check failed (${r.code === 255 ? "ssh" : `exit ${r.code}`}): ${sshFailure(r)}`);
    }
    return (answer.drift as unknown[]).slice(0, MAX_ITEMS).map(cleanDriftItem);
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
        // A state that keeps the provider's whole code (an older nodefleet's, 14 KB) is rewritten with
        // this loader. Another loader's text is not a change: an update of this resource leaves its
        // outputs unknown in a preview, and every step that answers to its repair counts would show
        // as replaced there. It is rewritten with the next change of the check (its tool's hash).
        const text = String((olds as unknown as Record<string, unknown>).__provider ?? "");
        const wholeCode = text !== "" && !text.includes("components/hosts/drift-check");
        return { changes: drifted || olds.toolHash !== news.toolHash || !sameConnection(olds.connection, news.connection) || wholeCode };
    },
    // The up after a refresh that found drift: one more repair for each drifted group.
    async update(_id: string, olds: DriftProps, news: DriftProps) {
        const repairs: Record<string, number> = { ...(olds.repairs ?? {}) };
        const groups = new Set((olds.drift ?? []).map(driftLineGroup).filter((g): g is string => g !== undefined));
        for (const g of groups) repairs[g] = (repairs[g] ?? 0) + 1;
        return { outs: { ...news, drift: [], repairs } };
    },
};
