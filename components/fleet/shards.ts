// Shards: one fleet split into several stacks (`fleet.shards`, the same list in each), each a stack
// of its own (its config, state, policy pack and pipeline job), updated side by side. What must
// hold across them: one key never signs on two machines, and a host belongs to one stack. Each
// shard checks it against the others in two ways, before it registers anything:
//   - their config files (Pulumi.<shard>.yaml in the project, the same commit): no validator or
//     sequencer of the same name or key secret, no sequencer of the same address, no existing
//     host at the same address and port;
//   - their last outputs (`signingKeys`, read through a stack reference): no signing key this shard
//     configures is one another shard's last `up` left running. This is what makes a move between
//     shards safe: the shard that gains the node is refused until the one that lost it has run
//     its `up` (which stopped the node there).
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import type { FleetPlan } from "../config/fleet";
import { FleetDefinitionError, fleetOfStackFile } from "../config/definition";
import type { FleetSpec } from "../config/schema";
import { contractOf, roleContract } from "../roles/registry";

/** A key that signs, as the stack output `signingKeys` names it: public, never the key. */
export type SigningKey = string;

/** The other shards of this stack's fleet (none when it is not split). */
export function siblingShards(spec: FleetSpec, stack: string): string[] {
    const shards = spec.shards;
    if (shards === undefined) return [];
    if (!shards.includes(stack))
        throw new pulumi.RunError(
            `shards: lists ${shards.join(", ")}, not this stack (${stack}): every shard names all the stacks of the fleet, itself among them`,
        );
    return shards.filter((s) => s !== stack);
}

/**
 * The public identity of each signing key this stack configures, by node: a 0G validator's
 * consensus address (from its priv_validator_key.json), an Aztec sequencer's attester address
 * (from its private key). `value` reads a secret config key's plain value; nothing of it but the
 * derived address leaves this function.
 */
export function signingKeys(spec: FleetSpec, value: (key: string) => string | undefined): Record<string, SigningKey> {
    const out: Record<string, SigningKey> = {};
    for (const node of spec.nodes) {
        const signing = contractOf(node).signing;
        if (signing === undefined) continue;
        const key = value(signing.secret(node));
        const identity = key === undefined ? undefined : signing.identity(key);
        if (identity !== undefined) out[node.name] = identity;
    }
    return out;
}

interface ShardFacts {
    readonly nodes: Map<string, string>;
    readonly keySecrets: Map<string, string>;
    readonly addresses: Map<string, string>;
    readonly hosts: Map<string, string>;
    readonly shards: readonly string[] | undefined;
}

/** What a shard's config says that another shard must not also say (read without its secrets). */
function facts(fleet: unknown): ShardFacts {
    const f = (fleet ?? {}) as { nodes?: unknown; hosts?: unknown; shards?: unknown };
    const nodes = new Map<string, string>();
    const keySecrets = new Map<string, string>();
    const addresses = new Map<string, string>();
    const hosts = new Map<string, string>();
    for (const n of Array.isArray(f.nodes) ? f.nodes : []) {
        const node = (n ?? {}) as Record<string, unknown>;
        const signing = roleContract(node.role)?.signing;
        if (typeof node.name !== "string" || signing === undefined) continue;
        nodes.set(node.name, node.name);
        const settings = (node[node.role as string] ?? {}) as Record<string, unknown>;
        const secret = settings[signing.secretField];
        if (typeof secret === "string") keySecrets.set(secret, node.name);
        const address = signing.addressField === undefined ? undefined : settings[signing.addressField];
        if (typeof address === "string") addresses.set(address.toLowerCase(), node.name);
    }
    for (const [name, h] of Object.entries(typeof f.hosts === "object" && f.hosts !== null ? f.hosts : {})) {
        const host = (h ?? {}) as { kind?: unknown; address?: unknown; port?: unknown };
        if (host.kind === "existing" && typeof host.address === "string")
            hosts.set(`${host.address.toLowerCase()}:${typeof host.port === "number" ? host.port : 22}`, name);
    }
    return { nodes, keySecrets, addresses, hosts, shards: Array.isArray(f.shards) ? f.shards.map(String) : undefined };
}

/**
 * The other shards' config files against this one's: every conflict, each naming the field here,
 * the shard and what it holds there. `dir`: the project (where the Pulumi.<stack>.yaml files are).
 */
export function shardConfigConflicts(spec: FleetSpec, stack: string, dir: string): string[] {
    const mine = facts(spec);
    const problems: string[] = [];
    for (const shard of siblingShards(spec, stack)) {
        const file = path.join(dir, `Pulumi.${shard}.yaml`);
        let theirs: ShardFacts;
        try {
            const doc = parseYaml(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | null;
            theirs = facts(fleetOfStackFile(doc?.config, dir).raw);
        } catch (e) {
            const why = e instanceof FleetDefinitionError ? e.message : ((e as NodeJS.ErrnoException).code ?? "not YAML");
            problems.push(
                `shards: shard ${shard}: cannot read its fleet from Pulumi.${shard}.yaml (${why}): every shard's config is in the project`,
            );
            continue;
        }
        const sameList = theirs.shards !== undefined && [...theirs.shards].sort().join(",") === [...(spec.shards ?? [])].sort().join(",");
        if (!sameList)
            problems.push(
                `shards: shard ${shard} lists ${theirs.shards === undefined ? "no shards" : theirs.shards.join(", ")}, this stack ${spec.shards!.join(", ")}: every shard names the same stacks`,
            );
        spec.nodes.forEach((node, i) => {
            const signing = contractOf(node).signing;
            if (signing === undefined) return;
            if (theirs.nodes.has(node.name))
                problems.push(
                    `nodes[${i}].name: ${node.name} is also a node of shard ${shard}: a ${node.role} belongs to one shard; to move it, remove it there and run that shard's up first`,
                );
            const other = theirs.keySecrets.get(signing.secret(node));
            if (other !== undefined)
                problems.push(
                    `nodes[${i}].${node.role}.${signing.secretField}: shard ${shard}'s ${other} signs with the key of the same config key: one key must never sign on two machines`,
                );
            const address =
                signing.addressField === undefined
                    ? undefined
                    : (node as unknown as Record<string, Record<string, unknown>>)[node.role]![signing.addressField];
            const same = typeof address === "string" ? theirs.addresses.get(address.toLowerCase()) : undefined;
            if (same !== undefined)
                problems.push(
                    `nodes[${i}].${node.role}.${signing.addressField}: shard ${shard}'s ${same} has the same address: one key must never sign on two machines`,
                );
        });
        for (const [where, name] of mine.hosts) {
            const other = theirs.hosts.get(where);
            if (other !== undefined)
                problems.push(`hosts.${name}: ${where} is also shard ${shard}'s host ${other}: a host belongs to one shard`);
        }
    }
    return problems;
}

/**
 * The other shards' last outputs against this stack's signing keys: refused when one of them
 * runs a key this stack configures. A shard that has never run an `up` has no outputs: nothing runs there.
 */
export async function shardOutputConflicts(siblings: readonly string[], mine: Record<string, SigningKey>): Promise<string[]> {
    const byKey = new Map(Object.entries(mine).map(([node, key]) => [key, node]));
    const problems: string[] = [];
    for (const shard of siblings) {
        const ref = new pulumi.StackReference(`${pulumi.getOrganization()}/${pulumi.getProject()}/${shard}`);
        const out = (await ref.getOutputDetails("signingKeys")).value as unknown;
        if (out === undefined || out === null) continue;
        if (typeof out !== "object" || Array.isArray(out))
            throw new pulumi.RunError(
                `shard ${shard}: its stack output signingKeys is not a map of node to key: nodefleet cannot tell which keys sign there`,
            );
        for (const [theirNode, key] of Object.entries(out as Record<string, unknown>)) {
            const node = byKey.get(String(key));
            if (node !== undefined)
                problems.push(
                    `${node}: its key (${String(key)}) signs in shard ${shard} as ${theirNode}, as that shard's last up left it: one key must never sign on two machines. Remove ${theirNode} from Pulumi.${shard}.yaml and run that shard's up (it stops the node there), then run this one's`,
                );
        }
    }
    return problems;
}

/** Both checks of a sharded stack; a RunError naming every conflict, before anything is registered. */
export async function checkShards(
    plan: FleetPlan,
    value: (key: string) => string | undefined,
    dir = process.cwd(),
): Promise<Record<string, SigningKey>> {
    const keys = signingKeys(plan.spec, value);
    const siblings = siblingShards(plan.spec, pulumi.getStack());
    if (siblings.length === 0) return keys;
    const problems = [...shardConfigConflicts(plan.spec, pulumi.getStack(), dir), ...(await shardOutputConflicts(siblings, keys))];
    if (problems.length > 0)
        throw new pulumi.RunError(`this stack is a shard of ${plan.spec.shards!.join(", ")}; refused:\n  ${problems.join("\n  ")}`);
    return keys;
}
