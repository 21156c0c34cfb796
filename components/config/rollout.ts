// The fleet config's `rollout` section: how a change that restarts nodes is rolled
// through a role, batch by batch, each batch gated on its nodes' health. Fleet-wide settings, each
// overridable per role; what is not set comes from the role's default (validators and sequencers
// one at a time; storage nodes a quarter of the role at a time). The section turns the gates on:
// without it, every node's steps run at once, as before (docs/rollouts.md).
import { z } from "zod";
import type { RolePolicy } from "../roles/contract";
import { roleContract, ROLES, type Role } from "../roles/registry";

/** A batch size: a count of nodes, or a percentage of the role's nodes ("25%", rounded up, at least one). */
export const batchSize = z
    .union(
        [
            z.number().int().min(1, "a count of nodes is 1 or more").max(10_000),
            z.string().regex(/^([1-9][0-9]?|100)%$/, "a percentage is 1% to 100%, a whole number and %"),
        ],
        {
            error: (issue) =>
                issue.code === "invalid_union"
                    ? 'expected a number of nodes (1 or more) or a percentage of the role\'s nodes ("25%")'
                    : undefined,
        },
    )
    .meta({ title: "nodes per batch: a count, or a percentage" });
export type BatchSize = z.infer<typeof batchSize>;

const settings = {
    batchSize: batchSize
        .optional()
        .describe(
            "How many of the role's nodes restart at once: a count, or a percentage of the role's nodes (rounded up, at least one). Unset: storage 25%, sequencers and validators 1.",
        ),
    healthyWithinSeconds: z
        .number()
        .int()
        .min(10)
        .max(86_400)
        .optional()
        .describe(
            "How long a restarted node has to become healthy (as `nodefleet status` calls it) before its gate fails. Unset: storage 900, sequencers and validators 600.",
        ),
    soakSeconds: z
        .number()
        .int()
        .min(0)
        .max(86_400)
        .optional()
        .describe(
            "How long a node must stay healthy after its first healthy answer before the next batch starts. Unset: storage 60, sequencers and validators 120.",
        ),
    onFailure: z
        .enum(["halt", "rollback"])
        .optional()
        .describe(
            "What a failed gate does: `halt` (the default) stops the up there, naming the node and its diagnoses; later batches keep what they run. `rollback` also puts that node back on the files and release it ran when it last passed its gate, restarts it and checks it again (the up still fails). A validator is never rolled back across an execution-client switch or onto a key that changed since (its gate halts instead, naming why), and its signing state and JWT are never put back.",
        ),
};

export const rolloutSpec = z
    .strictObject({
        ...settings,
        maxOfflinePower: z
            .string()
            .regex(/^([1-9][0-9]?|100)%$/, "a percentage is 1% to 100%, a whole number and %")
            .default("30%")
            .describe(
                "The most of a validator network's voting power one batch may take offline at once, read from each validator's `consensusRpcUrl`; a plan that exceeds it is refused at preview with the figures. CometBFT stops committing with a third or more offline: 30% keeps a margin. Above 33% accepts that the network halts while a batch restarts (a network where one validator holds that much).",
            ),
        order: z
            .array(z.string().min(1))
            .default([])
            .refine((a) => new Set(a).size === a.length, "each node once")
            .describe("Nodes to roll first, in this order (names of `nodes`); the rest of each role follows by name."),
        roles: z
            .strictObject(
                Object.fromEntries(
                    ROLES.map(({ role: r }) => [
                        r,
                        z.strictObject(settings).optional().describe(`The ${r} nodes' settings, over the fleet-wide ones.`),
                    ]),
                ) as Record<Role, z.ZodOptional<z.ZodObject<typeof settings>>>,
            )
            .default({})
            .describe("Per role, settings over the fleet-wide ones."),
    })
    .describe("How changes that restart nodes are rolled out: batch by batch, each gated on health.");
export type RolloutSpec = z.infer<typeof rolloutSpec>;

/** A role's policy: its own settings, else the fleet-wide ones, else the role's defaults (its contract's). */
export function rolePolicy(spec: RolloutSpec | undefined, role: Role): RolePolicy {
    const own = spec?.roles[role] ?? {};
    const pick = <K extends keyof RolePolicy>(k: K): RolePolicy[K] =>
        (own[k] ?? spec?.[k] ?? roleContract(role)!.rollout[k]) as RolePolicy[K];
    return {
        batchSize: pick("batchSize"),
        healthyWithinSeconds: pick("healthyWithinSeconds"),
        soakSeconds: pick("soakSeconds"),
        onFailure: pick("onFailure"),
    };
}

/**
 * Problems the schema cannot see: an `order` name that is no node.
 */
export function checkRollout(spec: RolloutSpec | undefined, nodes: readonly { name: string; role: string }[], issues: string[]): void {
    if (spec === undefined) return;
    const known = new Set(nodes.map((n) => n.name));
    spec.order.forEach((name, i) => {
        if (!known.has(name)) issues.push(`rollout.order[${i}]: no node named "${name}" under nodes`);
    });
}
