// What the fleet gives the component of any role: the host the node runs on and what the node
// needs of the fleet; and what the fleet reads back from it (components/roles/nodes.ts builds it).
import type * as pulumi from "@pulumi/pulumi";
import type { HostPlan, ResolvedRelease } from "../config/plan";
import type { ReleaseSpec } from "../config/schema";
import type { Host } from "../hosts/host";
import type { NodeRollout, RolloutGate } from "../rollout/gate";
import type { ValidatorMoves } from "./validator/moves";

export interface NodeSite {
    /** The plan of the host it runs on (the releases the host installs, its monitoring). */
    readonly plan: HostPlan;
    readonly host: Host;
    /** The user nodefleet logs in as on that host. */
    readonly user: string;
    /** A secret config key's value, as a secret Output. */
    readonly secret: (key: string) => pulumi.Output<string>;
    /** The fleet's releases by name, as the config gives them. */
    readonly releases: Readonly<Record<string, ReleaseSpec>>;
    /** Set when the fleet rolls changes out (its `rollout` section): the node is gated. */
    readonly rollout?: NodeRollout;
    /** The validators moving host this run, and their handovers. */
    readonly moves: ValidatorMoves;
}

/** What the fleet reads of a node's component: its gate, its health report, and its role's reports. */
export interface NodeComponent {
    readonly gate?: RolloutGate;
    readonly health: pulumi.Output<Record<string, unknown>>;
    /** A sequencer's validator registration. */
    readonly registration?: pulumi.Output<Record<string, unknown>>;
    /** A validator's switch, when one is configured. */
    readonly switchReport?: pulumi.Output<Record<string, unknown>> | undefined;
}

/** The release a node runs, as its host installs it (digest resolved). */
export function installedRelease(plan: HostPlan, node: { readonly name: string; readonly release?: string | undefined }): ResolvedRelease {
    const release = plan.releases.find((r) => r.name === node.release);
    if (release === undefined) throw new Error(`unreachable: ${node.name}: its release is checked by parseFleet and installed by its host`);
    return release;
}
