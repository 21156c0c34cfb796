// Every diagnosis code `nodefleet status` prints and the health timer writes as
// nodefleet_diagnosis{code}, with what an alert on it says: its severity, how long it must last
// before it fires, its summary and its remedy. The table is hostfiles/faults.json, which the host's
// diagnosis table (nodefleet_health.py) reads too, so an alert and `status` give one remedy. The
// alert rules (rules.ts) are made from it; unit tests hold every code the diagnosis table can
// report to exactly one alert with the same remedy, and the table to the spec's error table
// (docs/spec.md §7).
import * as fs from "node:fs";
import * as path from "node:path";
import { HOSTFILES_DIR } from "../base/render";

export interface Fault {
    readonly code: string;
    readonly severity: "error" | "warning";
    /** How long it must last before the alert fires: long for what the spec calls expected or ignorable. */
    readonly for: string;
    /** What the alert says, after "<node> on <host>: ". */
    readonly summary: string;
    readonly remedy: string;
    /** The row of docs/spec.md §7's error table it is, when it is one. */
    readonly specRow?: string;
}

/** The table as stored: every code `nodefleet status` can report, each with its remedy. */
export interface FaultEntry {
    readonly severity: "error" | "warning";
    readonly for?: string;
    readonly summary: string;
    readonly remedy: string;
    readonly specRow?: string;
    /** false: status alone reports it (no per-code alert; `note` says what alerts instead). */
    readonly alert?: false;
    readonly note?: string;
}

/** hostfiles/faults.json, the one table both languages read. */
export const FAULT_TABLE: Readonly<Record<string, FaultEntry>> = JSON.parse(fs.readFileSync(path.join(HOSTFILES_DIR, "faults.json"), "utf8"));

/** The codes that alert, one rule each, in the table's order. */
export const FAULTS: readonly Fault[] = Object.entries(FAULT_TABLE)
    .filter(([, f]) => f.alert !== false)
    .map(([code, f]) => {
        if (f.for === undefined) throw new Error(`hostfiles/faults.json: ${code}.for: required for a code that alerts`);
        return { code, severity: f.severity, for: f.for, summary: f.summary, remedy: f.remedy, ...(f.specRow === undefined ? {} : { specRow: f.specRow }) };
    });

/**
 * docs/spec.md §7's rows, each with the alert that shows it, or why no metric can. The state-root mismatch
 * stops the switch (switch-incomplete says so, with the spec's remedy); its numbers are in the switch's
 * report, not in a metric.
 */
export const SPEC_ERROR_ROWS: readonly { readonly row: string; readonly codes: readonly string[]; readonly note?: string }[] = [
    { row: "-38002 Invalid forkchoice state", codes: ["forkchoice-38002"] },
    { row: "Engine API errors between execution and consensus", codes: ["jwt-mismatch", "engine-unreachable"] },
    { row: "block number X does not match parent block number Y", codes: ["switch-incomplete"], note: "the import's retries re-trim from Y+1 by themselves; an import that makes no progress is NodefleetSwitchImportStalled" },
    { row: "mismatched block state root", codes: ["switch-incomplete"], note: "the switch stops on it (never skips the block): switch-incomplete fires, and the report names the block and both roots; the roots are not metrics" },
    { row: "missing priv_validator_state.json", codes: ["missing-priv-validator-state"] },
    { row: "Rust client has no peers", codes: ["reth-no-peers"], note: "a warning that waits 2 h: the spec calls it expected at first" },
    { row: "Storage node peers are 0", codes: ["storage-peers-0"], note: "a warning that waits 1 h: the spec calls it often ignorable" },
    { row: "Storage local block does not increase", codes: ["rpc-endpoint-down", "height-not-increasing"], note: "and NodefleetHeightStalled, from the height's history" },
];
