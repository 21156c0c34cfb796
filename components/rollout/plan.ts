// A rollout's plan: per role, the nodes a change restarts, in batches, in a stable
// order (the config's `rollout.order` first, then by name). Pure. What a node's change is, and
// which nodes have one, is the caller's: nodes that restart nothing are not held back and are in
// no batch.
import { rolePolicy, type BatchSize, type RolloutSpec } from "../config/rollout";
import type { RolePolicy } from "../roles/contract";
import { ROLES, type Role } from "../roles/registry";

export interface RolloutNode {
    readonly name: string;
    readonly role: Role;
}

export interface RoleRollout {
    readonly role: Role;
    readonly policy: RolePolicy;
    /** Nodes per batch (the policy's batch size for this role's size). */
    readonly batchSize: number;
    /** The nodes of each batch, in order; batch k+1 starts once every gate of batch k has passed. */
    readonly batches: readonly (readonly string[])[];
}

/**
 * Nodes per batch for a role of `roleSize` nodes: a count as given (at most the role), a
 * percentage of the role rounded up (at least one). The percentage is of the role, not of the
 * nodes that change: a quarter of a 100-node role is 25 whether 3 or 100 of them change.
 */
export function batchSizeOf(size: BatchSize, roleSize: number): number {
    if (roleSize <= 0) return 1;
    if (typeof size === "number") return Math.min(size, roleSize);
    const percent = Number(size.slice(0, -1));
    return Math.max(1, Math.ceil((roleSize * percent) / 100));
}

/** The stable order: the names of `order` first, as listed, then the rest by name (code point order). */
export function rolloutOrder(names: readonly string[], order: readonly string[] = []): string[] {
    const listed = order.filter((n) => names.includes(n));
    const rest = names.filter((n) => !order.includes(n)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return [...listed, ...rest];
}

/**
 * Per role with a node that changes: its batches. `nodes` is every node of the fleet (a role's
 * size counts them all); `changing` names those whose change restarts them.
 */
export function planRollout(nodes: readonly RolloutNode[], changing: ReadonlySet<string>, spec?: RolloutSpec): RoleRollout[] {
    const out: RoleRollout[] = [];
    for (const { role } of ROLES) {
        const all = nodes.filter((n) => n.role === role).map((n) => n.name);
        const moving = rolloutOrder(
            all.filter((n) => changing.has(n)),
            spec?.order,
        );
        if (moving.length === 0) continue;
        const policy = rolePolicy(spec, role);
        const size = batchSizeOf(policy.batchSize, all.length);
        const batches: string[][] = [];
        for (let i = 0; i < moving.length; i += size) batches.push(moving.slice(i, i + size));
        out.push({ role, policy, batchSize: size, batches });
    }
    return out;
}

/** The plan as preview shows it: a line per role, its batches in order. */
export function describeRollout(plan: readonly RoleRollout[]): string[] {
    if (plan.length === 0) return ["rollout: no node restarts"];
    return plan.map((r) => {
        const p = r.policy;
        const batches = r.batches.map((b, i) => `${i + 1}. ${b.join(", ")}`).join("; ");
        const size = typeof p.batchSize === "number" ? `${r.batchSize}` : `${r.batchSize} (${p.batchSize} of the role)`;
        return `rollout ${r.role}: ${r.batches.flat().length} node(s) in ${r.batches.length} batch(es) of up to ${size}, each healthy within ${p.healthyWithinSeconds} s and for ${p.soakSeconds} s, on failure ${p.onFailure}: ${batches}`;
    });
}
