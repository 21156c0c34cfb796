// The geth -> reth switch's 14 steps, in order: one list, hostfiles/zgvalidator/steps.json, which
// the host tool (installed with it) reads too. The program names the switch's resources after
// these names; the policy pack finds the guarded step through them.
import steps from "../../hostfiles/zgvalidator/steps.json";

export const SWITCH_STEPS: readonly string[] = steps;

/** The step whose name ends in `-<what>` (e.g. "delete-geth" → "s06-delete-geth"). */
export function switchStep(what: string): string {
    const found = SWITCH_STEPS.find((s) => s.endsWith(`-${what}`));
    if (found === undefined) throw new Error(`no switch step named *-${what} in steps.json`);
    return found;
}
