// The components of the roles, by role: how the fleet makes a node's component without branching
// on its role. Each entry is its role folder's builder; the compiler asks for one per role of the
// registry (components/roles/registry.ts).
import type * as pulumi from "@pulumi/pulumi";
import type { NodeSpec } from "../config/schema";
import type { Role } from "./registry";
import type { NodeComponent, NodeSite } from "./site";
import { buildStorageNode } from "./storage/node";
import { buildSequencerNode } from "./sequencer/node";
import { buildValidatorNode } from "./validator/node";

type Builder<N> = (name: string, node: N, site: NodeSite, opts: pulumi.ComponentResourceOptions) => NodeComponent;

const BUILDERS: { readonly [R in Role]: Builder<Extract<NodeSpec, { role: R }>> } = {
    storage: buildStorageNode,
    sequencer: buildSequencerNode,
    validator: buildValidatorNode,
};

/** A node's component, made by its role's builder. */
export function buildNode(name: string, node: NodeSpec, site: NodeSite, opts: pulumi.ComponentResourceOptions): NodeComponent {
    return (BUILDERS[node.role] as Builder<NodeSpec>)(name, node, site, opts);
}
