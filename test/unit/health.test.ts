// The host's diagnosis table (hostfiles/nodefleet_health.py, what the health timer writes as
// metrics) against status/diagnose.ts on answers of every shape: fast-check builds answers from the
// fields each role's diagnosis reads, with values of the right type, the wrong type, null and
// nothing, seeded; both must give the same row for each. The recorded answers are compared in
// status.test.ts. What this cannot prove: the tools' real answers (the e2e tier reads them on VMs).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fc from "fast-check";
import { assertSameRows, type Asked } from "../support/health";
import type { Role } from "../../status/diagnose";

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
const VALIDATOR = fields(["client", "services", "units", "executionError", "consensusError", "consensus", "diagnoses", "privValidatorState", "consensusProcessesWithThisKey", "executionHeight", "networkHeight", "networkError", "peers", "migration", "running"], {
    client: fc.oneof(fc.constantFrom("geth", "reth"), json),
    units: fc.record({ geth: fc.oneof(unit, json), reth: fc.oneof(unit, json), consensus: fc.oneof(unit, json) }, { requiredKeys: [] }),
    services: fc.dictionary(unit, fc.oneof(fc.constantFrom("active", "failed", "inactive"), json), { maxKeys: 3 }),
    consensus: fc.record({ height: json, catchingUp: json }, { requiredKeys: [] }),
    diagnoses: fc.array(fc.oneof(fc.record({ fault: fc.constantFrom("forkchoice-38002", "jwt-mismatch", "engine-unreachable", "reth-no-peers", "other"), detail: json, advice: json, remedied: json }, { requiredKeys: ["fault"] }), json), { maxLength: 3 }),
    privValidatorState: fc.record({ exists: json, path: json }, { requiredKeys: [] }),
    migration: fc.oneof(fc.record({ mode: fc.oneof(fc.constantFrom("ordered", "lowDowntime"), json), complete: json, steps: fc.dictionary(fc.constantFrom("s01-stop", "s02-backup", "l03-x"), json, { maxKeys: 3 }) }, { requiredKeys: [] }), json),
    running: fc.dictionary(fc.constantFrom("export", "import"), fc.record({ unit: json, job: json, done: json, total: json, percent: json, rate: json, etaSeconds: json, started: json, at: json }, { requiredKeys: [] }), { maxKeys: 2 }),
});

function sample(role: Role, answers: fc.Arbitrary<unknown>, n: number): Asked[] {
    return fc.sample(answers, { seed: SEED, numRuns: n }).map((answer, i) => ({ node: `${role}-${i}`, role, host: "h", answer }));
}

describe("health: the host's diagnosis table agrees with status's on answers of every shape", () => {
    it("storage, sequencer and validator answers (seeded), between them reaching most faults", () => {
        const faults = assertSameRows([
            ...sample("storage", fields(STORAGE), 400),
            ...sample("sequencer", fields(SEQUENCER), 400),
            ...sample("validator", VALIDATOR, 600),
        ]);
        assert.ok(faults.size >= 22, `the answers reached only ${faults.size} faults: ${[...faults].sort().join(", ")}`);
    });
});
