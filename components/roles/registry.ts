// The roles nodefleet runs, each a folder of components/roles/ whose contract.ts says what the
// layers beneath its components need to know (components/roles/contract.ts). A new role is a new
// folder and one line here; the compiler then names every table of its contract still to fill.
import type { NodeBase, RoleContract } from "./contract";
import { storageRole } from "./storage/contract";
import { sequencerRole } from "./sequencer/contract";
import { validatorRole } from "./validator/contract";

export const ROLES = [storageRole, sequencerRole, validatorRole] as const;

export type Role = (typeof ROLES)[number]["role"];

/** Each role's node schema, in the registry's order: the members of the config's node union. */
type NodesOf<T extends readonly unknown[]> = { -readonly [K in keyof T]: T[K] extends { readonly node: infer S } ? S : never };
export type RoleNodeSchemas = NodesOf<typeof ROLES>;
export const ROLE_NODES = ROLES.map((r) => r.node) as unknown as RoleNodeSchemas;

/** The contracts as one type, for what goes over every role (each takes its own role's nodes). */
export const CONTRACTS: readonly RoleContract<NodeBase>[] = ROLES;

const BY_ROLE = new Map<string, RoleContract<NodeBase>>(CONTRACTS.map((r) => [r.role, r]));

/** The contract of a node's role, for that node (its role picks the contract, so the node fits it). */
export function contractOf<N extends NodeBase>(node: N): RoleContract<N> {
    const contract = BY_ROLE.get(node.role);
    if (contract === undefined) throw new Error(`no role named ${node.role} (known: ${[...BY_ROLE.keys()].join(", ")})`);
    return contract as unknown as RoleContract<N>;
}

/** The contract of a role by its name, or undefined (a raw config's node may name any role). */
export function roleContract(role: unknown): RoleContract<NodeBase> | undefined {
    return typeof role === "string" ? BY_ROLE.get(role) : undefined;
}
