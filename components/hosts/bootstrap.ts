// The bootstrap every host kind shares, as an ordered chain of remote steps.
import * as pulumi from "@pulumi/pulumi";
import type { HostPlan } from "../config/plan";
import { FIREWALL_DRIFT_GROUP, renderBootstrap, renderFirewallScripts, renderRelease, type SecretScript } from "./scripts";
import { remoteStep } from "./host";
import { Connection } from "./connection";
import { contentHash, shellWord } from "../base/render";
import { HostDrift } from "./drift";
import { gateTools, HostBundle, monitoringTools, roleTools } from "./tools";

export interface BootstrapArgs {
    readonly plan: HostPlan;
    readonly connection: pulumi.Output<Connection>;
    /** The same connection with the key as given: the drift check runs OpenSSH's client with it. */
    readonly checkConnection: pulumi.Output<Connection>;
    readonly user: string;
    readonly mount: string;
    /** Whether this host gets the nftables firewall (existing hosts; clouds use theirs). */
    readonly hostFirewall: boolean;
    /** The host's bundle (hostBundle), copied before the bootstrap. */
    readonly bundle: HostBundle;
    /** Looks up a secret config key: a release's URL held in one. */
    readonly secret?: (key: string) => pulumi.Output<string>;
}

export interface Bootstrapped {
    /** The host is bootstrapped and firewalled. */
    readonly ready: pulumi.Resource;
    /** One install step per release the host's nodes use, by release name; each after `ready`. */
    readonly releases: ReadonlyMap<string, pulumi.Resource>;
    /** The host's drift check (read by `pulumi refresh`). */
    readonly drift: HostDrift;
    /** The host's bundle: the tools its nodes' steps install and the scripts they run (tools.ts). */
    readonly tools: HostBundle;
}

/**
 * A host's bundle (tools.ts): the tools its nodes use and the scripts of its steps, copied by the
 * host's first step (after `after`), before the preflight and the bootstrap, which run from it. It
 * is copied before anything else runs, not beside it: with its nodes' chains side by side, a host
 * holds at most two SSH connections at once (docs/development.md).
 */
export function hostBundle(
    name: string,
    plan: HostPlan,
    connection: pulumi.Output<Connection>,
    parent: pulumi.Resource,
    after: readonly pulumi.Resource[],
): HostBundle {
    const tools = [
        ...[...new Set(plan.nodes.map((n) => n.role))].flatMap((role) => roleTools(role)),
        ...(plan.monitoring ? monitoringTools() : []),
    ];
    // A gated host's gates put the gate and the diagnosis table (the latter may be there for monitoring).
    if (plan.gated) tools.push(...gateTools().filter((t) => !tools.some((u) => u.name === t.name)));
    const machine = pulumi.unsecret(connection.apply((c) => `${c.host}:${c.port ?? 22}`));
    return new HostBundle(`${name}-tools`, { connection, tools, machine, after }, { parent });
}

/**
 * (the bundle's copy ->) base packages + user + data dirs -> (existing hosts) firewall apply ->
 * firewall confirm, then the releases the host's nodes use. Each script runs from the bundle.
 */
export function bootstrapSteps(name: string, args: BootstrapArgs, parent: pulumi.Resource, after: pulumi.Resource[]): Bootstrapped {
    const base = { connection: args.connection, user: args.user };
    const bundle = args.bundle;
    const drift = new HostDrift(`${name}-drift`, { host: args.plan.name, connection: args.checkConnection }, { parent });
    const bootstrap = remoteStep(
        `${name}-bootstrap`,
        { ...base, script: renderBootstrap(args.plan, args.mount), bundle },
        { parent, dependsOn: after },
    );
    const ready = args.hostFirewall ? firewallSteps(name, args, base, parent, bootstrap, drift) : bootstrap;
    const releases = new Map<string, pulumi.Resource>();
    for (const r of args.plan.releases) {
        const scripts = renderRelease(args.plan.name, r);
        // The removal is held by a step whose create never changes, so it never runs on a
        // replacement: the install step is replaced (run again) by a new version, a new install
        // script or a repair, and the removal of its original would delete what it just installed.
        // The install removes the release's other versions itself.
        const teardown = remoteStep(
            `${name}-release-${r.name}-teardown`,
            {
                ...base,
                script: `echo ${shellWord(`release ${r.name}: teardown registered`)}\n`,
                onDelete: scripts.remove,
                deleteBundle: bundle,
            },
            { parent, dependsOn: [ready] },
        );
        // A URL held in a secret comes on the step's stdin, a secret; the step's output is then not logged.
        const secretUrl = scripts.secretUrlKey === undefined ? undefined : releaseUrlSecret(args, scripts.secretUrlKey, r.name);
        releases.set(
            r.name,
            remoteStep(
                `${name}-release-${r.name}`,
                {
                    ...base,
                    script: scripts.install,
                    bundle,
                    drift: { drift, group: scripts.driftGroup },
                    ...(secretUrl ? { secrets: secretUrl, sensitive: true } : {}),
                },
                { parent, dependsOn: [teardown] },
            ),
        );
    }
    return { ready, releases, drift, tools: bundle };
}

/** The secrets of a release install whose URL is held in the config key `key`. */
function releaseUrlSecret(args: BootstrapArgs, key: string, release: string): pulumi.Output<SecretScript["secrets"]> {
    if (args.secret === undefined)
        throw new Error(`unreachable: release ${release}: its URL is a secret and the host was given no secret lookup`);
    return pulumi.secret(args.secret(key).apply((url): SecretScript["secrets"] => ({ url: `${url}\n` })));
}

function firewallSteps(
    name: string,
    args: BootstrapArgs,
    base: { connection: pulumi.Output<Connection>; user: string },
    parent: pulumi.Resource,
    bootstrap: pulumi.Resource,
    drift: HostDrift,
): pulumi.Resource {
    const fw = renderFirewallScripts(args.plan);
    // Holds only the removal for `pulumi destroy`; its create never changes, so it is
    // never replaced, and the table is never dropped while the apply step is replaced.
    const teardown = remoteStep(
        `${name}-firewall-teardown`,
        { ...base, script: "echo 'firewall: teardown registered'", onDelete: fw.remove, deleteBundle: args.bundle },
        { parent, dependsOn: [bootstrap] },
    );
    const apply = remoteStep(
        `${name}-firewall-apply`,
        { ...base, script: fw.apply, bundle: args.bundle },
        { parent, dependsOn: [teardown] },
    );
    // A fresh SSH connection after the apply: if it cannot get in, the revert fires. It records the
    // table for the drift check, and run again (a repair) loads the confirmed ruleset again.
    return remoteStep(
        `${name}-firewall-confirm`,
        {
            ...base,
            script: fw.confirm,
            bundle: args.bundle,
            inputsHash: [contentHash(fw.ruleset)],
            drift: { drift, group: FIREWALL_DRIFT_GROUP },
        },
        { parent, dependsOn: [apply] },
    );
}
