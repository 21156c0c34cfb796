// A long scenario's tests in order, each starting from what the one before it left. Every test
// runs, in every run: a test that cannot run in CI's time is a defect to fix, not to skip. The one
// reason a test does not run is `unless`: a precondition that an earlier test, by failing, left
// unmet (its skip names it; the failure is the earlier test's).
import { it } from "node:test";

type Fn = () => unknown;

export class Steps {
    constructor(private readonly now = () => Date.now() / 1000) {}

    /** Registers the test; what it returns says whether the test ran and passed. */
    test(name: string, spec: { timeout?: number; unless?: () => string | null }, fn: Fn): () => boolean {
        let passed = false;
        it(name, spec.timeout === undefined ? {} : { timeout: spec.timeout }, async (t) => {
            const unmet = spec.unless?.() ?? null;
            if (unmet !== null) {
                process.stderr.write(`# skipped: ${name.slice(0, 80)}: ${unmet}\n`);
                t.skip(unmet);
                return;
            }
            const t0 = this.now();
            await fn();
            passed = true;
            process.stderr.write(`# took ${Math.round(this.now() - t0)} s: ${name.slice(0, 80)}\n`);
        });
        return () => passed;
    }
}
