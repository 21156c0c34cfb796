// The fault codes the host tools can report, read from their sources: the diagnosis table's
// (nodefleet_health.py) and a rollout gate's own (nodefleet_gate.py: not-committing), each made by
// a `diag("<code>"` call. What the fault table, its docs and its alerts are checked against.
import * as fs from "node:fs";
import * as path from "node:path";
import { HOSTFILES_DIR } from "../../components/base/render";

const MODULES = ["nodefleet_health.py", "nodefleet_gate.py"].map((f) => path.join(HOSTFILES_DIR, f));

export function diagnosisCodes(): Set<string> {
    const source = MODULES.map((f) => fs.readFileSync(f, "utf8")).join("\n");
    return new Set([...source.matchAll(/diag\("([a-z0-9-]+)"/g)].map((m) => m[1]!));
}
