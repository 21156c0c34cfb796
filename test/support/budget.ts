// The test budget: which of a long scenario's optional tests fit in the time left.
//
// CI has 90 minutes for every tier, and on its 2-core runner the e2e scenario on emulated VMs
// alone can take longer than what is left of them. scripts/test.sh sets NODEFLEET_TEST_DEADLINE
// (epoch seconds) in CI. A scenario declares each test's cost (seconds, measured in CI) and
// whether the tests after it need it. Before an optional test starts, the budget checks that the
// test and every required test after it still fit before the deadline, the costs taken with a
// slack; if not, the test is skipped with the numbers in its reason. Required tests always run.
// Without a deadline (a developer's run) everything runs.
import { it } from "node:test";

export interface Planned {
    name: string;
    /** Seconds this test took in CI (the figure to update when it changes). */
    cost: number;
    /** Skipped when the time left cannot hold it; required tests always run. */
    optional: boolean;
}

/** Why `entry` should not start at `now` (epoch seconds), or null when it fits. */
export function skipReason(plan: Planned[], index: number, now: number, deadline: number | undefined, slack: number): string | null {
    const entry = plan[index]!;
    if (!entry.optional || deadline === undefined) return null;
    const after = plan.slice(index + 1).filter((p) => !p.optional).reduce((s, p) => s + p.cost, 0);
    const need = Math.ceil((entry.cost + after) * slack);
    const left = Math.floor(deadline - now);
    if (left >= need) return null;
    return `test budget: ${left} s left before the deadline; this test takes about ${entry.cost} s and the required tests after it ${after} s (x${slack}: ${need} s)`;
}

/** The deadline from the environment: epoch seconds, or undefined when unset or empty. */
export function deadlineFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
    const raw = env.NODEFLEET_TEST_DEADLINE;
    if (raw === undefined || raw === "") return undefined;
    if (!/^\d+$/.test(raw)) throw new Error(`NODEFLEET_TEST_DEADLINE: epoch seconds expected, got ${JSON.stringify(raw)}`);
    return Number(raw);
}

type Fn = () => unknown;
interface Options { timeout?: number }

/**
 * A scenario's tests in order, each declared with its cost. `test(...)` registers and declares
 * it (a describe body runs whole before its first test starts, so every cost is known then).
 * `unless` skips a test whose precondition an earlier skipped or failed test left unmet.
 */
export class Budget {
    readonly plan: Planned[] = [];

    constructor(
        private readonly deadline = deadlineFromEnv(),
        private readonly slack = 1.25,
        private readonly now = () => Date.now() / 1000,
    ) {}

    /** Registers the test; what it returns says whether the test ran and passed. */
    test(name: string, spec: { cost: number; optional?: boolean; timeout?: number; unless?: () => string | null }, fn: Fn): () => boolean {
        let passed = false;
        const index = this.plan.push({ name, cost: spec.cost, optional: spec.optional ?? false }) - 1;
        const options: Options = spec.timeout === undefined ? {} : { timeout: spec.timeout };
        it(name, options, async (t) => {
            const unmet = spec.unless?.() ?? null;
            const why = unmet ?? skipReason(this.plan, index, this.now(), this.deadline, this.slack);
            if (why !== null) {
                process.stderr.write(`# skipped: ${name.slice(0, 80)}: ${why}\n`);
                t.skip(why);
                return;
            }
            const t0 = this.now();
            await fn();
            passed = true;
            process.stderr.write(`# took ${Math.round(this.now() - t0)} s (declared ${spec.cost} s): ${name.slice(0, 80)}\n`);
        });
        return () => passed;
    }
}
