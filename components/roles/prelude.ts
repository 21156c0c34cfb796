// The first steps every role shares: its release on the host -> teardown (holds only the removal
// for `pulumi destroy`; its create never changes, so it is never replaced, and destroy stops the
// node after the steps above it are gone) -> its key (a secret script, output unlogged).
import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { Host, remoteStep, stepReport } from "../hosts/host";
import type { SecretScript } from "../hosts/scripts";
import { nodeDriftGlob, nodeDriftGroup } from "../hosts/drift";
import { gateMarker, RolloutGate, type NodeRollout, type RolloutGateArgs } from "../rollout/gate";

/** A role's node as its first steps need it: what every role's node args hold. */
export interface PreludeSite {
    readonly node: { readonly name: string };
    /** The release it runs, resolved once by the fleet (its host installs it). */
    readonly release: { readonly name: string };
    readonly host: Host;
    readonly user: string;
    /** Set when the fleet rolls changes out: the key step waits for the batch before it. */
    readonly rollout?: Pick<NodeRollout, "after"> | undefined;
}

/** The role's own part of its first steps. */
export interface PreludeSteps {
    /** The teardown step's first word: "storage", "sequencer", "validator". */
    readonly label: string;
    readonly removeScript: string;
    /**
     * The key step's name suffix ("miner-key", "validator-key") and its script: its body runs from
     * the host's bundle, its secrets come on the step's stdin, a secret.
     */
    readonly keyStep: string;
    readonly keyScript: pulumi.Output<SecretScript>;
    /** What else must finish before the key is written (a validator's handover on the host it leaves). */
    readonly keyAfter?: readonly pulumi.Input<pulumi.Resource>[];
}

export interface Prelude {
    readonly base: { readonly connection: Host["connection"]; readonly user: string };
    readonly key: command.remote.Command;
}

export function rolePrelude(parent: pulumi.Resource, name: string, site: PreludeSite, a: PreludeSteps): Prelude {
    const { node, host } = site;
    const after = host.releases.get(site.release.name);
    if (after === undefined)
        throw new Error(`unreachable: ${node.name}: host ${host.hostName} does not install release ${site.release.name}`);
    const base = { connection: host.connection, user: site.user };
    const teardown = remoteStep(
        `${name}-teardown`,
        { ...base, script: `echo '${a.label} ${node.name}: teardown registered'\n`, onDelete: a.removeScript, deleteBundle: host.tools },
        { parent, dependsOn: [after] },
    );
    const key = remoteStep(
        `${name}-${a.keyStep}`,
        {
            ...base,
            // The body is rendered without the secrets (its renderer's contract; the bundle checks it).
            script: pulumi.unsecret(a.keyScript.apply((s) => s.body)),
            secrets: pulumi.secret(a.keyScript.apply((s) => s.secrets)),
            sensitive: true,
            bundle: host.tools,
            drift: { drift: host.drift, group: nodeDriftGroup(node.name, "key") },
        },
        { parent, dependsOn: [teardown, ...(a.keyAfter ?? []), ...(site.rollout?.after ?? [])] },
    );
    return { base, key };
}

/** A role's node as its gate needs it: the node, its host, the user, and the rollout when it is gated. */
export interface GatedNode {
    readonly node: RolloutGateArgs["node"];
    readonly host: Host;
    readonly user: string;
    readonly rollout?: NodeRollout | undefined;
}

/**
 * The node's health step after `after` (taken again when `inputsHash` changes: what the node runs),
 * its report, and its gate when the fleet rolls changes out (its `rollout`), given the steps it judges.
 */
export function roleHealth(
    parent: pulumi.Resource,
    name: string,
    a: GatedNode & {
        readonly base: Prelude["base"];
        readonly script: string;
        readonly inputsHash: pulumi.Input<string>[];
        readonly after: pulumi.Resource;
    },
    gate: Omit<RolloutGateArgs, "node" | "host" | "user" | "rollout" | "health">,
): { readonly report: pulumi.Output<Record<string, unknown>>; readonly gate?: RolloutGate } {
    const health = remoteStep(
        `${name}-health`,
        { ...a.base, script: a.script, inputsHash: a.inputsHash },
        { parent, dependsOn: [a.after] },
    );
    const report = stepReport(health, "health report");
    const rollout = a.rollout;
    if (rollout === undefined) return { report };
    const args = { node: a.node, host: a.host, user: a.user, rollout, health, ...gate };
    return { report, gate: new RolloutGate(`${name}-gate`, args, { parent }) };
}

/**
 * What every role's removal script (`pulumi destroy`) is told besides its own paths: the host, the
 * node, its drift records and gate marker.
 */
export function removalValues(host: string, node: { readonly name: string }) {
    return { host, node: node.name, drift: nodeDriftGlob(node.name), gate: gateMarker(node.name) };
}
