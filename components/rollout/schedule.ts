// A `rollout` section's schedule, made before the fleet registers anything: each role's batches
// (plan.ts) checked against the validators' voting power (power.ts). A refused plan stops the
// program here, so nothing of it is half made.
import * as pulumi from "@pulumi/pulumi";
import type { FleetPlan } from "../config/fleet";
import { deferred, type Deferred } from "../base/deferred";
import { describeRollout, planRollout, type RoleRollout } from "./plan";
import { describePower, powerViolations, validatorPowers, type ValidatorPower } from "./power";
import type { NodeRollout } from "./gate";

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

/**
 * The gates of a planned rollout as the fleet makes its nodes: each node's key step waits for the
 * gates of the batch before it, which resolve as their roles make them (a host is built before
 * the next, so a gate is a promise until its node's role is made). The order is logged, as
 * preview shows it. Without a rollout no node is gated.
 */
export class GateSchedule {
    private readonly gated = new Map<
        string,
        { readonly after: Promise<pulumi.Resource>[]; readonly policy: NodeRollout["policy"]; readonly gate: Deferred<pulumi.Resource> }
    >();

    constructor(rollout: PlannedRollout | undefined, logTo: pulumi.Resource) {
        if (rollout === undefined) return;
        const { roles, power } = rollout;
        for (const line of describeRollout(roles))
            pulumi.log.info(`${line} (a node whose steps do not change passes its place at once)`, logTo);
        for (const line of describePower(power)) pulumi.log.info(line, logTo);
        for (const role of roles) {
            let previous: Promise<pulumi.Resource>[] = [];
            for (const batch of role.batches) {
                previous = batch.map((name) => {
                    const gate = deferred<pulumi.Resource>();
                    this.gated.set(name, { after: previous, policy: role.policy, gate });
                    return gate.promise;
                });
            }
        }
    }

    /** The rollout of a node (none when it is not gated), and the recording of its gate once its role has made it. */
    node(node: string): { readonly rollout?: NodeRollout; readonly made: (gate: pulumi.Resource | undefined) => void } {
        const r = this.gated.get(node);
        if (r === undefined) return { made: () => undefined };
        return {
            rollout: { after: r.after, policy: r.policy },
            made: (gate) => {
                if (gate === undefined) throw new Error(`unreachable: ${node} is gated and its role made no gate`);
                r.gate.resolve(gate);
            },
        };
    }
}
