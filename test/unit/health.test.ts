// The diagnosis table (hostfiles/nodefleet_health.py: `nodefleet status` and the health timer
// both run it) on answers of every shape: fast-check builds answers from the fields each role's
// diagnosis reads, with values of the right type, the wrong type, null and nothing (seeded). No
// answer breaks it; a stopped service is never healthy; every fault it names has an alert; the
// metrics of the rows have each series once. The recorded answers' rows are in status.test.ts.
// What this cannot prove: the tools' real answers (the e2e tier reads them on VMs).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fc from "fast-check";
import { diagnoseAll, METRICS_MODULE, type Asked, type NodeRow } from "../../status/diagnose";
import type { Role } from "../../components/roles/registry";
import { FAULTS } from "../../components/config/faults";

const SEED = 41;
const json = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -5, max: 5000 }),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -10, max: 1e6 }),
    fc.constantFrom("", "active", "inactive", "failed", "geth", "reth", "lowDowntime", "ordered", "Unable to get chain id", "insufficient funds", "minerId", "make sure 56303/tcp"),
    fc.string({ maxLength: 12 }),
    fc.array(fc.integer(), { maxLength: 2 }),
    fc.dictionary(fc.constantFrom("ok", "status", "x"), fc.oneof(fc.boolean(), fc.string({ maxLength: 4 })), { maxKeys: 2 }),
);
const fields = (names: readonly string[], extra: Record<string, fc.Arbitrary<unknown>> = {}) =>
    fc.record(Object.fromEntries(names.map((n) => [n, extra[n] ?? json])), { requiredKeys: [] });

const STORAGE = ["service", "endpoint", "active", "state", "endpointError", "startError", "statusError", "chainHead", "logSyncHeight", "confirmations", "sampleSeconds", "increasing", "connectedPeers"];
const SEQUENCER = ["service", "active", "state", "l1Unreachable", "provenBlock", "siblingPath", "siblingPathError", "peerId", "latestBlock", "registration", "tipsError"];
const unit = fc.constantFrom("reth-v.service", "geth-v.service", "0gchaind-v.service");
const FOUND = fc.constantFrom("forkchoice-38002", "jwt-mismatch", "engine-unreachable", "reth-no-peers", "other");
const VALIDATOR = fields(["client", "services", "units", "executionError", "consensusError", "consensus", "findings", "diagnoses", "privValidatorState", "consensusProcessesWithThisKey", "executionHeight", "networkHeight", "networkError", "peers", "migration", "running"], {
    client: fc.oneof(fc.constantFrom("geth", "reth"), json),
    units: fc.record({ geth: fc.oneof(unit, json), reth: fc.oneof(unit, json), consensus: fc.oneof(unit, json) }, { requiredKeys: [] }),
    services: fc.dictionary(unit, fc.oneof(fc.constantFrom("active", "failed", "inactive"), json), { maxKeys: 3 }),
    consensus: fc.record({ height: json, catchingUp: json }, { requiredKeys: [] }),
    findings: fc.array(fc.oneof(fc.record({ fault: FOUND, detail: json, remedied: json, p2pPort: json, dialUrl: json, tries: json }, { requiredKeys: ["fault"] }), json), { maxLength: 3 }),
    // A host tool older than `findings` listed its faults here, with words of its own.
    diagnoses: fc.array(fc.oneof(fc.record({ fault: FOUND, detail: json, advice: json, remedied: json }, { requiredKeys: ["fault"] }), json), { maxLength: 3 }),
    privValidatorState: fc.record({ exists: json, path: json }, { requiredKeys: [] }),
    migration: fc.oneof(fc.record({ mode: fc.oneof(fc.constantFrom("ordered", "lowDowntime"), json), complete: json, steps: fc.dictionary(fc.constantFrom("s01-stop", "s02-backup", "l03-x"), json, { maxKeys: 3 }) }, { requiredKeys: [] }), json),
    running: fc.dictionary(fc.constantFrom("export", "import"), fc.record({ unit: json, job: json, done: json, total: json, percent: json, rate: json, etaSeconds: json, started: json, at: json }, { requiredKeys: [] }), { maxKeys: 2 }),
});

function sample(role: Role, answers: fc.Arbitrary<unknown>, n: number): Asked[] {
    // Through JSON, as answers reach the table (status parses the host's stdout).
    return JSON.parse(JSON.stringify(fc.sample(answers, { seed: SEED, numRuns: n }).map((answer, i) => ({ node: `${role}-${i}`, role, host: "h", answer })))) as Asked[];
}

const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

describe("health: the diagnosis table on answers of every shape", () => {
    const asked = [...sample("storage", fields(STORAGE), 400), ...sample("sequencer", fields(SEQUENCER), 400), ...sample("validator", VALIDATOR, 600)];
    const rows: NodeRow[] = diagnoseAll(asked);

    it("no answer breaks it, and between them the answers reach most faults", () => {
        assert.equal(rows.length, asked.length);
        for (const r of rows) assert.ok(!r.diagnoses.some((d) => /could not be read/.test(d.detail)), JSON.stringify(r));
        const faults = new Set(rows.flatMap((r) => r.diagnoses.map((d) => d.fault)));
        assert.ok(faults.size >= 22, `the answers reached only ${faults.size} faults: ${[...faults].sort().join(", ")}`);
    });

    it("healthy means no diagnosis of severity error; a stopped service is never healthy", () => {
        rows.forEach((r, i) => {
            assert.equal(r.healthy, !r.diagnoses.some((d) => d.severity === "error"), JSON.stringify(r));
            const a = obj((asked[i] as { answer: unknown }).answer);
            if (r.role !== "validator" && a.active === false) assert.equal(r.healthy, false, JSON.stringify(a));
            if (r.role === "validator") {
                const units = obj(a.units);
                const services = obj(a.services);
                const el = a.client === "geth" || a.client === "reth" ? units[a.client] : undefined;
                const watched = [el, units.consensus].filter((u): u is string => typeof u === "string");
                if (watched.some((u) => services[u] !== "active")) assert.equal(r.healthy, false, JSON.stringify(a));
            }
        });
    });

    it("every fault it names has an alert (host-unreachable: NodefleetHostDown)", () => {
        const codes = new Set([...FAULTS.map((f) => f.code), "host-unreachable"]);
        for (const r of rows) for (const d of r.diagnoses) assert.ok(codes.has(d.fault), d.fault);
    });

    it("the metrics of all these rows name each series once", () => {
        const out = spawnSync("python3", [METRICS_MODULE, "metrics"], { input: JSON.stringify({ at: 0, rows: asked }), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
        assert.equal(out.status, 0, out.stderr);
        const samples = out.stdout.split("\n").filter((l) => l !== "" && !l.startsWith("#")).map((l) => l.slice(0, l.lastIndexOf(" ")));
        assert.ok(samples.length > 5000, `${samples.length} samples`);
        assert.equal(new Set(samples).size, samples.length);
    });
});
