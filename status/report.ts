// One round of `nodefleet status`: the probe results turned into rows, and the rows into the
// table people read or the JSON monitoring reads.
import { diagnoseAll, type Asked, type NodeRow, type UpgradeState } from "./diagnose";
import type { HostResult } from "./probe";
import type { HostTarget } from "./targets";

export interface StatusReport {
    readonly stack: string;
    /** When the round ended (UTC, ISO 8601). */
    readonly at: string;
    readonly healthy: boolean;
    readonly nodes: readonly NodeRow[];
    /** Per host: whether it answered and in how many seconds. */
    readonly hosts: Record<string, { readonly reachable: boolean; readonly seconds: number; readonly reason?: string }>;
}

/** The rows of one round: host by host (the plan's order, by host name), each host's nodes in config order. */
export function rows(targets: readonly HostTarget[], results: ReadonlyMap<string, HostResult>): NodeRow[] {
    const asked: Asked[] = [];
    for (const t of targets) {
        const r = results.get(t.host) ?? { ok: false as const, reason: "not checked", seconds: 0 };
        for (const c of t.checks) {
            const who = { node: c.node, role: c.role, host: t.host };
            if (!r.ok) {
                asked.push({ ...who, unreachable: r.reason });
                continue;
            }
            // What the check's run gave, read by the one diagnosis table (nodefleet_health.py): its answer, or why there is none.
            asked.push({ ...who, argv: c.argv, result: r.results[c.node] ?? null });
        }
    }
    return diagnoseAll(asked);
}

export function report(
    stack: string,
    targets: readonly HostTarget[],
    results: ReadonlyMap<string, HostResult>,
    at = new Date(),
): StatusReport {
    const nodes = rows(targets, results);
    const hosts: StatusReport["hosts"] = {};
    for (const t of targets) {
        const r = results.get(t.host);
        hosts[t.host] =
            r === undefined
                ? { reachable: false, seconds: 0, reason: "not checked" }
                : r.ok
                  ? { reachable: true, seconds: r.seconds }
                  : { reachable: false, seconds: r.seconds, reason: r.reason };
    }
    return { stack, at: at.toISOString().replace(/\.\d{3}Z$/, "Z"), healthy: nodes.every((n) => n.healthy), nodes, hosts };
}

const dash = (v: unknown) => (v === null || v === undefined ? "-" : String(v));

/** What the DETAILS column says for a node. */
export function details(n: NodeRow): string {
    if (n.storage) return n.storage.synced ? "synced" : n.height === null ? "-" : "not synced";
    if (n.sequencer) {
        const s = n.sequencer;
        const peer =
            s.peerId === null ? "no peerId" : `peerId ${s.peerId.length > 16 ? `${s.peerId.slice(0, 6)}…${s.peerId.slice(-6)}` : s.peerId}`;
        const latest = s.latestBlock === null ? "" : `, latest ${s.latestBlock}`;
        const registration = s.registration === null ? "" : `, registration ${s.registration}`;
        return `proven ${dash(s.provenBlock)}${latest}, sibling path ${s.siblingPath === null ? "-" : s.siblingPath ? "ok" : "missing"}, ${peer}${registration}`;
    }
    if (n.validator) {
        const v = n.validator;
        const parts = [`${dash(v.client)}`, `consensus ${dash(v.consensusHeight)}`, `catching_up ${dash(v.catchingUp)}`];
        if (v.switch) {
            const sw = v.switch;
            let text = sw.complete
                ? `switch done (${sw.mode})`
                : `switch ${sw.stepsDone}/${sw.steps} (${sw.mode}, last ${dash(sw.lastStep)})`;
            for (const j of sw.running) {
                const kind = /export/.test(j.job) ? "export" : /import/.test(j.job) ? "import" : j.job;
                text += `, ${kind} ${j.done === null ? `running since ${dash(j.started)} (no figures: pulumi up is not attached)` : `${j.done}/${dash(j.total)} blocks ${dash(j.percent)}%, ${dash(j.rate)} blocks/s, ETA ${j.etaSeconds === null ? "?" : `${j.etaSeconds} s`} (at ${dash(j.at)})`}`;
            }
            parts.push(text);
        }
        if (v.upgrade) parts.push(upgradeText(v.upgrade));
        return parts.join(", ");
    }
    return "-";
}

/** An upgrade at a height in DETAILS: where it stands and, while pending, the blocks left and whether the node is ready. */
function upgradeText(u: UpgradeState): string {
    const at = `upgrade to ${u.release} at ${u.height}`;
    if (u.state !== "pending") return `${at}: ${u.state}`;
    return `${at}: ${u.blocksLeft === null ? "?" : u.blocksLeft} blocks left, ${u.ready ? "ready" : "NOT READY"}`;
}

/** Per pending upgrade (release and height): how many of its validators are ready, naming those that are not. */
export function upgradeSummary(nodes: readonly NodeRow[]): string[] {
    const byUpgrade = new Map<string, { ready: string[]; not: string[] }>();
    for (const n of nodes) {
        const u = n.validator?.upgrade;
        if (u === undefined || u.state !== "pending") continue;
        const key = `upgrade to ${u.release} at height ${u.height}`;
        const g = byUpgrade.get(key) ?? { ready: [], not: [] };
        (u.ready ? g.ready : g.not).push(n.node);
        byUpgrade.set(key, g);
    }
    return [...byUpgrade].map(
        ([key, g]) =>
            `${key}: ${g.ready.length} of ${g.ready.length + g.not.length} validators ready${g.not.length > 0 ? ` (not ready: ${g.not.join(", ")})` : ""}`,
    );
}

/** The table, then each diagnosis with its remedy. */
export function table(r: StatusReport): string {
    const head = ["NODE", "ROLE", "HOST", "SERVICE", "HEIGHT", "LAG", "PEERS", "STATUS", "DETAILS"];
    const body = r.nodes.map((n) => {
        const errors = n.diagnoses.filter((d) => d.severity === "error").length;
        const warnings = n.diagnoses.length - errors;
        const status =
            errors > 0
                ? `UNHEALTHY (${n.diagnoses
                      .filter((d) => d.severity === "error")
                      .map((d) => d.fault)
                      .join(", ")})`
                : warnings > 0
                  ? `ok, ${warnings} warning${warnings > 1 ? "s" : ""}`
                  : "ok";
        return [n.node, n.role, n.host, n.service, dash(n.height), dash(n.lag), dash(n.peers), status, details(n)];
    });
    const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
    const lines = [line(head), ...body.map(line)];
    const diag = r.nodes.flatMap((n) =>
        n.diagnoses.map((d) => `${n.node}: ${d.severity} ${d.fault}: ${d.detail}\n    remedy: ${d.remedy}`),
    );
    if (diag.length > 0) lines.push("", ...diag);
    const upgrades = upgradeSummary(r.nodes);
    if (upgrades.length > 0) lines.push("", ...upgrades);
    const unhealthy = r.nodes.filter((n) => !n.healthy).length;
    lines.push(
        "",
        `${r.nodes.length} node${r.nodes.length === 1 ? "" : "s"} on ${Object.keys(r.hosts).length} host${Object.keys(r.hosts).length === 1 ? "" : "s"}, stack ${r.stack}, ${r.at}: ${unhealthy === 0 ? "all healthy" : `${unhealthy} unhealthy`}`,
    );
    return lines.join("\n") + "\n";
}
