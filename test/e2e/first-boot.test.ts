// E2E tier: a cloud host's first boot (test/scenarios/first-boot.ts) on the lab's hosts dev-3 and
// dev-4, with a stack of its own: it runs beside the dev stack's scenarios (scripts/lib/e2e-lane.sh),
// on the dev chain and artifact server the lane started for both, and touches none of their hosts.
// Ends with its hosts shut down, whichever way it ends.
import { after, before, describe } from "node:test";
import { sh } from "../support/cli";
import { aStackOfItsOwn, VM } from "../support/lab";
import { Steps } from "../support/steps";
import { firstBootScenario } from "../scenarios/first-boot";

describe("a cloud host's first boot, on a stack of its own beside the dev stack", { timeout: 40 * 60_000 }, () => {
    const steps = new Steps();
    before(() => aStackOfItsOwn("first-boot"));
    after(() => {
        for (const vm of ["dev-3", "dev-4"]) sh("bash", [VM, "stop", vm], { allowFail: true, timeoutMs: 120_000 });
    });
    firstBootScenario(steps);
});
