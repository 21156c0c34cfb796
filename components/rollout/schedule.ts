// A `rollout` section's schedule, made before the fleet registers anything: each role's batches
// (plan.ts) checked against the validators' voting power (power.ts). A refused plan stops the
// program here, so nothing of it is half made.
import * as pulumi from "@pulumi/pulumi";
import type { FleetPlan } from "../config/fleet";
import { planRollout, type RoleRollout } from "./plan";
import { powerViolations, validatorPowers, type ValidatorPower } from "./power";

/** The batches of every role, with the validators' voting power they were checked against. */
export interface PlannedRollout {
    readonly roles: RoleRollout[];
    readonly power: ReadonlyMap<string, ValidatorPower>;
}

/**
 * Every node of each role in batches (a node whose steps do not change passes its place at once),
 * refused when a batch would take more of a validator network's voting power offline than
 * `rollout.maxOfflinePower`. Undefined without a `rollout` section.
 */
export async function plannedRollout(plan: FleetPlan): Promise<PlannedRollout | undefined> {
    const spec = plan.spec.rollout;
    if (spec === undefined) return undefined;
    const nodes = plan.spec.nodes.map((n) => ({ name: n.name, role: n.role }));
    const roles = planRollout(nodes, new Set(nodes.map((n) => n.name)), spec);
    // Told as a config error (no stack trace): the message names the field and the reason.
    const power = await validatorPowers(plan, (message) => pulumi.log.warn(message)).catch((e: unknown) => {
        throw e instanceof Error ? new pulumi.RunError(e.message) : e;
    });
    const refused = powerViolations(roles, power, Number(spec.maxOfflinePower.slice(0, -1)));
    if (refused.length > 0) throw new pulumi.RunError(refused.join("\n"));
    return { roles, power };
}
