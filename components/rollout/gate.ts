// A node's rollout gate (docs/rollouts.md): a step after the node's health step that
// waits, on the host, for the node to answer healthy to its role's health tool (the one `nodefleet
// status` and the health timer run, through the one diagnosis table) within the role's deadline
// and to stay so for its soak, else fails naming the node's diagnoses. The next batch's nodes wait
// for it (their key steps depend on it), so a failed gate leaves them as they are. It runs again
// exactly when what restarts the node changed (its triggers are those of the restarting steps),
// and the node's first deploy passes ungated (a marker on the host records that deploy).
import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { NodeSpec } from "../config/schema";
import type { RolePolicy } from "../roles/contract";
import { Host, movedUnder, remoteStep } from "../hosts/host";
import { driftRecord, nodeDriftGroup } from "../hosts/drift";
import { gateTools } from "../hosts/tools";
import { checkArgv, serviceUnits } from "../health/checks";
import { render } from "../base/render";
import { GATE_DIR } from "../hosts/scripts";
import { HOST_LIB } from "../base/layout";

/**
 * A node's first-deploy marker. Beside it, with
 * `onFailure: rollback` `<marker>.prev` (the files the node ran when it last passed its gate) and
 * `<marker>.rolled-back` (the node was rolled back and not changed since).
 */
export function gateMarker(node: string): string {
    return `${GATE_DIR}/${node}`;
}

/**
 * The mark of a node its gate rolled back, for its configure step to clear (a run of it applies a
 * new change), under `onFailure: rollback`; "" (nothing to clear) otherwise.
 */
export function rolledBackMark(node: string, onFailure: RolePolicy["onFailure"] | undefined): string {
    return onFailure === "rollback" ? `${gateMarker(node)}.rolled-back` : "";
}

/** Where a node's gate keeps the files it rolls back to (`onFailure: rollback`). */
export function keptDir(node: string): string {
    return `${gateMarker(node)}.prev`;
}

/** What a node's gate puts back and restarts when its rollout rolls back (`onFailure: rollback`). */
export interface RollbackSet {
    /** The files the node reads, as absolute paths (its configure step's). */
    readonly files: readonly string[];
    /** The units restarted on them. */
    readonly restart: readonly string[];
    /**
     * The key step's files the node reads (keys, endpoints): never put back, and a rollback is
     * refused when one changed since the files were kept (the kept ones ran with what it held then).
     */
    readonly pins: readonly string[];
    /**
     * A local port the last `restart` unit waits for (a validator's consensus daemon, for its
     * execution client's engine port: the order of its configure step).
     */
    readonly awaitPort?: number;
}

/**
 * How often a gate asks the node's health tool: a fifth of the soak, so that a soak is judged on five
 * answers or more, and a crash loop or a healthy answer is seen within seconds when the soak is
 * short; never more often than every 2 s (each answer runs the tool: a process and its RPC
 * calls) nor less often than every 10 s (the default soaks, 60 s and 120 s: every 10 s).
 */
export function gateEverySeconds(soakSeconds: number): number {
    return Math.min(10, Math.max(2, Math.floor(soakSeconds / 5)));
}

/**
 * The gate step's script for `node` under `policy`. Its tools go into the host's tool directory
 * beside every other step's: `put()` stages each file under a name of its own, so steps of one host
 * putting the same tool at once do not collide.
 */
export function renderGate(node: NodeSpec, policy: RolePolicy, rollback?: RollbackSet): string {
    if (policy.onFailure === "rollback" && rollback === undefined)
        throw new Error(`unreachable: ${node.name}: onFailure rollback for a role that cannot roll back (checkRollout refuses it)`);
    const keep =
        policy.onFailure === "rollback" && rollback
            ? [
                  "--keep",
                  keptDir(node.name),
                  ...rollback.files.flatMap((f) => ["--file", f]),
                  ...rollback.restart.flatMap((u) => ["--restart", u]),
                  ...rollback.pins.flatMap((f) => ["--pin", f]),
                  ...(rollback.awaitPort === undefined ? [] : ["--await-port", String(rollback.awaitPort)]),
              ]
            : [];
    return render("gate.sh", {
        role: node.role,
        node: node.name,
        within: policy.healthyWithinSeconds,
        soak: policy.soakSeconds,
        every: gateEverySeconds(policy.soakSeconds),
        marker: gateMarker(node.name),
        keep,
        units: serviceUnits(node),
        check: checkArgv(node),
        lib: HOST_LIB,
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
 * What a gated role says of itself for its gate: every role gives the same things, and the gate
 * component alone turns them into the gate step, so the roles' gates cannot differ.
 */
export interface RolloutGateArgs {
    readonly node: NodeSpec;
    readonly host: Host;
    readonly user: string;
    readonly rollout: NodeRollout;
    /** Digests of what the node reads besides its key and configure step's script (endpoints, a version). */
    readonly reads: readonly pulumi.Input<string>[];
    /** The key step: a new key restarts the node. */
    readonly key: pulumi.CustomResource;
    /**
     * The configure step: replaced (a new id) each time it runs, so the gate checks every run that
     * could restart the node, also one back to files whose gate passed before (a failed gate keeps
     * the inputs of its last pass in Pulumi's state, and would otherwise see nothing new there).
     */
    readonly configure: pulumi.CustomResource;
    /** The node's health step, which the gate follows. */
    readonly health: pulumi.Resource;
    /** What the gate puts back and restarts under `onFailure: rollback`. */
    readonly rollback: () => RollbackSet;
}

/**
 * A node's rollout gate: one step (`step`, named as the component) after the node's health step.
 * Made as a child of its role's component; the step keeps the address it had when the role made
 * it directly (an alias to that parent), so an existing stack neither replaces it nor runs it again.
 */
export class RolloutGate extends pulumi.ComponentResource {
    /** The gate step: the next batch's key steps depend on it. */
    readonly step: command.remote.Command;

    constructor(name: string, args: RolloutGateArgs, opts: pulumi.ComponentResourceOptions & { readonly parent: pulumi.Resource }) {
        super("nodefleet:rollout:Gate", name, {}, opts);
        const { node, host, rollout } = args;
        const rollback = rollout.policy.onFailure === "rollback" ? args.rollback() : undefined;
        this.step = remoteStep(
            name,
            {
                connection: host.connection,
                user: args.user,
                script: renderGate(node, rollout.policy, rollback),
                bundle: host.tools,
                inputsHash: [...args.reads, args.key.id, args.configure.id],
                drift: { drift: host.drift, group: nodeDriftGroup(node.name, "gate") },
            },
            { ...movedUnder(this, opts.parent), dependsOn: [args.health] },
        );
        this.registerOutputs({});
    }
}
