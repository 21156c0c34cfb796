// The host's diagnosis table (hostfiles/nodefleet_health.py, which the health timer runs on each
// host) beside status/diagnose.ts: the rows Python gives for a batch of answers, and the check that
// both give the same row for each. Until `nodefleet status` reads its rows from the host module too,
// the two must agree on every answer the tests know.
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { diagnose, type NodeRow, type Role } from "../../status/diagnose";

const ROOT = path.resolve(__dirname, "../../..");
export const HEALTH_PY = path.join(ROOT, "hostfiles", "nodefleet_health.py");

export interface Asked {
    readonly node: string;
    readonly role: Role;
    readonly host: string;
    readonly answer: unknown;
}

/** The host module's rows for these answers, in one python3 run. */
export function pythonRows(items: readonly Asked[]): unknown[] {
    const r = spawnSync("python3", [HEALTH_PY, "rows"], { input: JSON.stringify({ rows: items }), encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
    assert.equal(r.status, 0, r.stderr);
    return (JSON.parse(r.stdout) as { rows: unknown[] }).rows;
}

/** Each answer's row from status/diagnose.ts and from the host module: the same, field by field. Returns the faults they found. */
export function assertSameRows(items: readonly Asked[]): Set<string> {
    const found = new Set<string>();
    // As the answers reach both: through JSON (status parses the host's stdout; so does Python).
    const parsed = JSON.parse(JSON.stringify(items)) as Asked[];
    const py = pythonRows(parsed);
    parsed.forEach((item, i) => {
        const ts = JSON.parse(JSON.stringify(diagnose(item.node, item.role, item.host, item.answer as Record<string, unknown>))) as NodeRow;
        assert.deepEqual(py[i], ts, `${item.role} answer ${JSON.stringify(item.answer).slice(0, 400)}`);
        for (const d of ts.diagnoses) found.add(d.fault);
    });
    return found;
}
