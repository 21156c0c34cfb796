// The rows of `nodefleet status`: what each node's health answer (the facts its host tool reads on
// the host: zgs-health.py, aztec-health.py, zg-validator.py status) means, with the spec's error
// table applied (docs/spec.md §7: condition -> remedy). The table itself is hostfiles/nodefleet_health.py,
// the module the health timer runs on every host to write the same rows as metrics for the alerts:
// one table, so status and the alerts name every fault alike. Status runs it here, on this
// machine, once per round for every node (python3, as on the hosts).
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { HOSTFILES_DIR } from "../components/base/render";
import type { Role } from "../components/roles/registry";

export interface Diagnosis {
    /** A stable name for monitoring rules (`rpc-endpoint-down`, `forkchoice-38002`, …). */
    readonly fault: string;
    /** error: the node is not doing its job (the command exits non-zero); warning: worth a look. */
    readonly severity: "error" | "warning";
    readonly detail: string;
    readonly remedy: string;
}

/** An upgrade at a height as the host tool reports it: pending (armed), swapping, done, missed, or not armed. */
export interface UpgradeState {
    readonly release: string;
    readonly height: number;
    readonly state: string;
    readonly blocksLeft: number | null;
    /** The release staged and the watcher running. */
    readonly ready: boolean;
}

/** A running export or import of the switch, as the host tool's Meter last measured it. */
export interface JobProgress {
    readonly job: string;
    readonly done: number | null;
    readonly total: number | null;
    readonly percent: number | null;
    readonly rate: number | null;
    readonly etaSeconds: number | null;
    /** When the job's unit started and when these figures were measured (UTC); null when unknown. */
    readonly started: string | null;
    readonly at: string | null;
}

export interface SwitchProgress {
    readonly mode: string;
    readonly stepsDone: number;
    readonly steps: number;
    readonly lastStep: string | null;
    readonly complete: boolean;
    readonly running: JobProgress[];
}

export interface NodeRow {
    readonly node: string;
    readonly role: Role;
    readonly host: string;
    /** The node's service state: active, inactive, failed, … or unreachable / unknown. */
    readonly service: string;
    /** storage: log sync height; sequencer: proven L2 block; validator: execution client height. */
    readonly height: number | null;
    /** Blocks behind the network head: storage against its chain endpoint, validator against referenceRpcUrl. */
    readonly lag: number | null;
    readonly peers: number | null;
    readonly storage?: { readonly synced: boolean; readonly endpoint: string | null };
    /** latestBlock: the newest L2 block the node has (2.0.x latest, 4.1.2 proposed), null when its answer has none. */
    readonly sequencer?: {
        readonly provenBlock: number | null;
        readonly latestBlock: number | null;
        readonly siblingPath: boolean | null;
        readonly peerId: string | null;
        /**
         * What L1 says of the validator: NONE, VALIDATING, …, `QUEUED #n`; unknown when L1 did not
         * answer; null before any registration step.
         */
        readonly registration: string | null;
    };
    readonly validator?: {
        readonly client: string | null;
        readonly consensusHeight: number | null;
        readonly catchingUp: boolean | null;
        readonly switch: SwitchProgress | null;
        /** An upgrade at a height, when one is configured (hostfiles/zgvalidator/upgrade.py). */
        readonly upgrade?: UpgradeState;
    };
    readonly diagnoses: Diagnosis[];
    readonly healthy: boolean;
}

/** One node to row: its health tool's answer, a run of it, or why the check gave none. */
export type Asked = { readonly node: string; readonly role: Role; readonly host: string } & (
    | { readonly answer: unknown }
    | { readonly failed: string }
    | { readonly unreachable: string }
    /** A run of the node's health check on its host (hostfiles/nodefleet_checks.py's result; null: none came back). */
    | { readonly argv: readonly string[]; readonly result: unknown }
);

export const HEALTH_MODULE = path.join(HOSTFILES_DIR, "nodefleet_health.py");
/** Its metrics half: the rows as textfile metrics, their catalogue, the health timer's run. */
export const METRICS_MODULE = path.join(HOSTFILES_DIR, "nodefleet_metrics.py");

/** Every node's row, in order, from one run of the host module. */
export function diagnoseAll(items: readonly Asked[]): NodeRow[] {
    if (items.length === 0) return [];
    const r = spawnSync("python3", ["-S", HEALTH_MODULE, "rows"], {
        input: JSON.stringify({ rows: items }),
        encoding: "utf8",
        maxBuffer: 1024 * 1024 * 1024,
    });
    if (r.error !== undefined || r.status !== 0)
        throw new Error(`${HEALTH_MODULE} could not make the rows: ${r.error?.message ?? r.stderr.trim().split("\n").pop()}`);
    const rows = (JSON.parse(r.stdout) as { rows: NodeRow[] }).rows;
    if (rows.length !== items.length) throw new Error(`${HEALTH_MODULE} gave ${rows.length} rows for ${items.length} nodes`);
    return rows;
}

/** A node's row from its host tool's answer. */
export function diagnose(node: string, role: Role, host: string, answer: Record<string, unknown>): NodeRow {
    return diagnoseAll([{ node, role, host, answer }])[0]!;
}
