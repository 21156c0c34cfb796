// The fault table, hostfiles/faults.json: every diagnosis code `nodefleet status` prints and the
// health timer writes as nodefleet_diagnosis{code}, with its severity, how long an alert on it
// waits, its summary and its remedy. The host's diagnosis table (nodefleet_health.py) reads the
// same file, so an alert and `status` give one remedy; this module is the one reader of it on this
// side (the config's alert names, the alert rules, the docs). Kept in the config layer: the config
// checks its alert names against it.
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
export const FAULT_TABLE: Readonly<Record<string, FaultEntry>> = JSON.parse(
    fs.readFileSync(path.join(HOSTFILES_DIR, "faults.json"), "utf8"),
);

/** The codes that alert, one rule each, in the table's order. */
export const FAULTS: readonly Fault[] = Object.entries(FAULT_TABLE)
    .filter(([, f]) => f.alert !== false)
    .map(([code, f]) => {
        if (f.for === undefined) throw new Error(`hostfiles/faults.json: ${code}.for: required for a code that alerts`);
        return {
            code,
            severity: f.severity,
            for: f.for,
            summary: f.summary,
            remedy: f.remedy,
            ...(f.specRow === undefined ? {} : { specRow: f.specRow }),
        };
    });
