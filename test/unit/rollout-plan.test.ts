// The rollout's config section and its plan: batch sizes from counts and percentages,
// the stable order, per-role settings over fleet-wide ones over the defaults, and the plan's text.
// Pure. The gate steps and their dependsOn chains: rollout-gates.test.ts.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { checkRollout, rolePolicy, rolloutSpec } from "../../components/config/rollout";
import { storageRole } from "../../components/roles/storage/contract";
import { batchSizeOf, describeRollout, planRollout, rolloutOrder, type RolloutNode } from "../../components/rollout/plan";

const fleet = (storage: number, sequencers = 0, validators = 0): RolloutNode[] => [
    ...Array.from({ length: storage }, (_, i) => ({ name: `storage-${i + 1}`, role: "storage" as const })),
    ...Array.from({ length: sequencers }, (_, i) => ({ name: `sequencer-${i + 1}`, role: "sequencer" as const })),
    ...Array.from({ length: validators }, (_, i) => ({ name: `validator-${i + 1}`, role: "validator" as const })),
];

describe("rollout config", () => {
    it("takes counts and percentages, and refuses what is neither, naming the field", () => {
        assert.ok(rolloutSpec.safeParse({ batchSize: 3, roles: { storage: { batchSize: "25%" } } }).success);
        for (const [input, path, message] of [
            [{ batchSize: 0 }, ["batchSize"], /a count of nodes is 1 or more/],
            [{ batchSize: "0%" }, ["batchSize"], /a percentage is 1% to 100%/],
            [{ batchSize: "150%" }, ["batchSize"], /a percentage is 1% to 100%/],
            [{ batchSize: 2.5 }, ["batchSize"], /expected a number of nodes \(1 or more\) or a percentage/],
            [{ batchSize: true }, ["batchSize"], /expected a number of nodes \(1 or more\) or a percentage of the role's nodes/],
            [{ roles: { miner: {} } }, ["roles"], /Unrecognized key/],
            [{ roles: { storage: { onFailure: "retry" } } }, ["roles", "storage", "onFailure"], /halt|rollback/],
            [{ soakSeconds: -1 }, ["soakSeconds"], />=0|too small/i],
            [{ healthyWithinSeconds: 5 }, ["healthyWithinSeconds"], />=10|too small/i],
            [{ order: ["a", "a"] }, ["order"], /each node once/],
        ] as const) {
            const r = rolloutSpec.safeParse(input);
            assert.equal(r.success, false, JSON.stringify(input));
            const issue = r.error!.issues[0]!;
            assert.deepEqual(issue.path, path, JSON.stringify(input));
            assert.match(issue.message, message, JSON.stringify(input));
        }
    });

    it("a role's setting wins over the fleet-wide one, which wins over the role's default", () => {
        assert.deepEqual(rolePolicy(undefined, "storage"), storageRole.rollout);
        assert.deepEqual(rolePolicy(undefined, "validator").batchSize, 1);
        const spec = rolloutSpec.parse({ soakSeconds: 30, onFailure: "rollback", roles: { storage: { batchSize: 2, soakSeconds: 0 } } });
        assert.deepEqual(rolePolicy(spec, "storage"), { batchSize: 2, healthyWithinSeconds: 900, soakSeconds: 0, onFailure: "rollback" });
        assert.deepEqual(rolePolicy(spec, "sequencer"), { batchSize: 1, healthyWithinSeconds: 600, soakSeconds: 30, onFailure: "rollback" });
    });

    it("names an order entry that is no node", () => {
        const issues: string[] = [];
        checkRollout(rolloutSpec.parse({ order: ["storage-2", "storage-9"] }), [{ name: "storage-1", role: "storage" }, { name: "storage-2", role: "storage" }], issues);
        assert.deepEqual(issues, ['rollout.order[1]: no node named "storage-9" under nodes']);
    });
});

describe("rollout plan", () => {
    it("batch sizes: a count at most the role, a percentage of the role rounded up, at least one", () => {
        assert.equal(batchSizeOf(1, 10), 1);
        assert.equal(batchSizeOf(20, 3), 3);
        assert.equal(batchSizeOf("25%", 4), 1);
        assert.equal(batchSizeOf("25%", 5), 2);
        assert.equal(batchSizeOf("25%", 100), 25);
        assert.equal(batchSizeOf("1%", 3), 1);
        assert.equal(batchSizeOf("100%", 7), 7);
    });

    it("orders by the config's order first, then by name, whatever order the nodes come in", () => {
        assert.deepEqual(rolloutOrder(["s-b", "s-c", "s-a"]), ["s-a", "s-b", "s-c"]);
        assert.deepEqual(rolloutOrder(["s-b", "s-c", "s-a"], ["s-c", "zzz"]), ["s-c", "s-a", "s-b"]);
        // Code point order, not the locale's: the same on every machine.
        assert.deepEqual(rolloutOrder(["b", "B", "a"]), ["B", "a", "b"]);
    });

    it("batches only the nodes that change; a percentage counts the whole role; each role apart", () => {
        const nodes = fleet(8, 2, 1);
        const changing = new Set(["storage-3", "storage-1", "storage-7", "storage-8", "sequencer-2", "sequencer-1"]);
        const plan = planRollout(nodes, changing);
        assert.deepEqual(plan.map((r) => r.role), ["storage", "sequencer"], "the validator does not change: no rollout for it");
        const storage = plan.find((r) => r.role === "storage")!;
        assert.equal(storage.batchSize, 2, "25% of 8 storage nodes");
        assert.deepEqual(storage.batches, [["storage-1", "storage-3"], ["storage-7", "storage-8"]]);
        assert.deepEqual(plan.find((r) => r.role === "sequencer")!.batches, [["sequencer-1"], ["sequencer-2"]]);
        assert.deepEqual(planRollout(nodes, new Set()), []);
    });

    it("the preview's text names every batch in order with its policy", () => {
        const spec = rolloutSpec.parse({ order: ["storage-3"], roles: { storage: { batchSize: "50%", onFailure: "rollback" } } });
        const lines = describeRollout(planRollout(fleet(3), new Set(["storage-1", "storage-2", "storage-3"]), spec));
        assert.deepEqual(lines, ["rollout storage: 3 node(s) in 2 batch(es) of up to 2 (50% of the role), each healthy within 900 s and for 60 s, on failure rollback: 1. storage-3, storage-1; 2. storage-2"]);
        assert.deepEqual(describeRollout([]), ["rollout: no node restarts"]);
    });
});
