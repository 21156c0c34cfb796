// The spec's error table (docs/spec.md §7) and the alert of each of its rows, from the fault table
// (config/faults.ts). The alert rules (rules.ts) are made from that table; unit tests hold every
// code the diagnosis table can report to exactly one alert with the same remedy, and the table to
// the spec's error table.
/**
 * docs/spec.md §7's rows, each with the alert that shows it, or why no metric can. The state-root mismatch
 * stops the switch (switch-incomplete says so, with the spec's remedy); its numbers are in the switch's
 * report, not in a metric.
 */
export const SPEC_ERROR_ROWS: readonly { readonly row: string; readonly codes: readonly string[]; readonly note?: string }[] = [
    { row: "-38002 Invalid forkchoice state", codes: ["forkchoice-38002"] },
    { row: "Engine API errors between execution and consensus", codes: ["jwt-mismatch", "engine-unreachable"] },
    {
        row: "block number X does not match parent block number Y",
        codes: ["switch-incomplete"],
        note: "the import's retries re-trim from Y+1 by themselves; an import that makes no progress is NodefleetSwitchImportStalled",
    },
    {
        row: "mismatched block state root",
        codes: ["switch-incomplete"],
        note: "the switch stops on it (never skips the block): switch-incomplete fires, and the report names the block and both roots; the roots are not metrics",
    },
    { row: "missing priv_validator_state.json", codes: ["missing-priv-validator-state"] },
    { row: "Rust client has no peers", codes: ["reth-no-peers"], note: "a warning that waits 2 h: the spec calls it expected at first" },
    { row: "Storage node peers are 0", codes: ["storage-peers-0"], note: "a warning that waits 1 h: the spec calls it often ignorable" },
    {
        row: "Storage local block does not increase",
        codes: ["rpc-endpoint-down", "height-not-increasing"],
        note: "and NodefleetHeightStalled, from the height's history",
    },
];
