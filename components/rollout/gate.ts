// A node's rollout gate (issue 42, docs/rollouts.md): a step after the node's health step that
// waits, on the host, for the node to answer healthy to its role's health tool (the one `nodefleet
// status` and the health timer run, through the one diagnosis table) within the role's deadline
// and to stay so for its soak, else fails naming the node's diagnoses. The next batch's nodes wait
// for it (their key steps depend on it), so a failed gate leaves them as they are. It runs again
// exactly when what restarts the node changed (its triggers are those of the restarting steps),
// and the node's first deploy passes ungated (a marker on the host records that deploy).
import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { NodeSpec } from "../config/schema";
import type { RolePolicy } from "../config/rollout";
import { Host, remoteStep } from "../hosts/host";
import { driftRecord, nodeDriftGroup } from "../hosts/drift";
import { hostTool, type HostTool } from "../hosts/tools";
import { monitoringTools } from "../monitoring/install";
import { checkArgv } from "../monitoring/checks";
import { render } from "../render";

/** Where each node's first-deploy marker is kept on its host. */
export const GATE_DIR = "/var/lib/nodefleet/gate";

/** The tools a gate puts on its host: the gate, and the diagnosis table it reads answers with. */
export function gateTools(): readonly HostTool[] {
    return [hostTool("nodefleet_gate.py", "0644"), ...monitoringTools()];
}

/**
 * The gate step's script for `node` under `policy`. Its tools go into a directory of the node's
 * own: the gates of a host's nodes run side by side, and two steps putting one file at once
 * collide on its temporary name (seen on the dev VMs: storage-1's and sequencer-1's gates).
 */
export function renderGate(node: NodeSpec, policy: RolePolicy): string {
    return render("gate.sh", {
        role: node.role,
        node: node.name,
        within: policy.healthyWithinSeconds,
        soak: policy.soakSeconds,
        marker: `${GATE_DIR}/${node.name}`,
        check: checkArgv(node),
        lib: `${GATE_DIR}/${node.name}.tools`,
        tools: gateTools(),
        driftRecord: driftRecord(nodeDriftGroup(node.name, "gate")),
    });
}

/** What a role is given when the fleet rolls it out: what its restarting steps wait for, its policy. */
export interface NodeRollout {
    /** The gates of the previous batch of the node's role (empty in the first batch). */
    readonly after: readonly pulumi.Input<pulumi.Resource>[];
    readonly policy: RolePolicy;
}

/**
 * The gate step, after the node's health step. `restarts`: the triggers of what restarts the node
 * (its configure script's digest, and what else its role restarts it for), so that the gate runs
 * after exactly those changes.
 */
export function gateStep(name: string, node: NodeSpec, host: Host, user: string, policy: RolePolicy, restarts: readonly pulumi.Input<string>[], after: pulumi.Resource, parent: pulumi.Resource): command.remote.Command {
    return remoteStep(
        `${name}-gate`,
        { connection: host.connection, user, script: renderGate(node, policy), bundle: host.tools, inputsHash: [...restarts], drift: { drift: host.drift, group: nodeDriftGroup(node.name, "gate") } },
        { parent, dependsOn: [after] },
    );
}
