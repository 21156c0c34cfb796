// A long scenario's tests in order, each starting from what the one before it left. Every test
// runs, in every run: a test that cannot run in CI's time is a defect to fix, not to skip. The one
// reason a test does not run is `unless`: a precondition that an earlier test, by failing, left
// unmet (its skip names it; the failure is the earlier test's).
import { it } from "node:test";

type Fn = () => unknown;

export class Steps {
    /**
     * `watch`: called after each test that ran, passed or not, with its name; a line it returns is
     * written to stderr (the lane's log): what a later failure is then read against.
     */
    constructor(
        private readonly now = () => Date.now() / 1000,
        private readonly watch?: (name: string) => string | null,
    ) {}

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
            try {
                await fn();
                passed = true;
                process.stderr.write(`# took ${Math.round(this.now() - t0)} s: ${name.slice(0, 80)}\n`);
            } finally {
                const seen = this.watch?.(name) ?? null;
                if (seen !== null) process.stderr.write(`${seen}\n`);
            }
        });
        return () => passed;
    }
}
