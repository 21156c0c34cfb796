import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { Budget, deadlineFromEnv, skipReason, type Planned } from "../support/budget";

const plan: Planned[] = [
    { name: "up", cost: 400, optional: false },
    { name: "drift", cost: 100, optional: true },
    { name: "switch", cost: 300, optional: false },
    { name: "handover", cost: 600, optional: true },
    { name: "destroy", cost: 100, optional: false },
];

describe("test budget (CI's 90 minutes)", () => {
    it("without a deadline every test runs, and a required test runs whatever is left", () => {
        assert.equal(skipReason(plan, 1, 1000, undefined, 1.25), null);
        assert.equal(skipReason(plan, 0, 1000, 1001, 1.25), null);
        assert.equal(skipReason(plan, 4, 1000, 900, 1.25), null);
    });

    it("an optional test runs when it and the required tests after it fit, with the slack", () => {
        // drift 100 + switch 300 + destroy 100 = 500, x1.25 = 625 (handover, optional, not counted).
        assert.equal(skipReason(plan, 1, 0, 625, 1.25), null);
        const why = skipReason(plan, 1, 0, 624, 1.25);
        assert.equal(why, "test budget: 624 s left before the deadline; this test takes about 100 s and the required tests after it 400 s (x1.25: 625 s)");
        // handover 600 + destroy 100 = 700, x1.25 = 875.
        assert.equal(skipReason(plan, 3, 100, 975, 1.25), null);
        assert.match(skipReason(plan, 3, 100.5, 975, 1.25)!, /^test budget: 874 s left/);
    });

    it("reads the deadline as epoch seconds and refuses anything else, naming the variable", () => {
        assert.equal(deadlineFromEnv({}), undefined);
        assert.equal(deadlineFromEnv({ NODEFLEET_TEST_DEADLINE: "" }), undefined);
        assert.equal(deadlineFromEnv({ NODEFLEET_TEST_DEADLINE: "1790000000" }), 1790000000);
        assert.throws(() => deadlineFromEnv({ NODEFLEET_TEST_DEADLINE: "in an hour" }), /NODEFLEET_TEST_DEADLINE: epoch seconds expected/);
    });
});

describe("test budget in a scenario: the optional test that does not fit is skipped, the required one runs", () => {
    const ran: string[] = [];
    // 100 s left; the optional test needs (50 + 40) x 1.25 = 113.
    const budget = new Budget(1000, 1.25, () => 900);
    const optional = budget.test("optional", { cost: 50, optional: true }, () => ran.push("optional"));
    const required = budget.test("required", { cost: 40 }, () => ran.push("required"));
    const unmet = budget.test("needs the optional one", { cost: 1, optional: true, unless: () => (optional() ? null : "the optional test did not pass") }, () => ran.push("dependent"));
    it("ran only the required test", () => {
        assert.deepEqual(ran, ["required"]);
        assert.deepEqual([optional(), required(), unmet()], [false, true, false]);
        assert.deepEqual(budget.plan.map((p) => [p.name, p.cost, p.optional]), [["optional", 50, true], ["required", 40, false], ["needs the optional one", 1, true]]);
    });
});
