// The geth -> reth switch's steps, in order, for each mode: one file, hostfiles/zgvalidator/steps.json,
// which the host tool (installed with it) reads too. The program names the switch's resources after
// these names; the policy pack finds the guarded step through them.
import steps from "../../../hostfiles/zgvalidator/steps.json";

/** The ordered switch (docs/spec.md §4.5's 14 steps). */
export const SWITCH_STEPS: readonly string[] = steps.ordered;
/** The low-downtime switch (`lowDowntime: true`): export and import while the validator runs, then a short cutover. */
export const LOW_DOWNTIME_STEPS: readonly string[] = steps.lowDowntime;

/** The ordered switch's step whose name ends in `-<what>` (e.g. "delete-geth" → "s06-delete-geth"). */
export function switchStep(what: string): string {
    const found = SWITCH_STEPS.find((s) => s.endsWith(`-${what}`));
    if (found === undefined) throw new Error(`no switch step named *-${what} in steps.json`);
    return found;
}
