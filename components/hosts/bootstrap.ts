// The bootstrap every host kind shares, as an ordered chain of remote steps.
import * as pulumi from "@pulumi/pulumi";
import type { HostPlan } from "../config/fleet";
import { renderBootstrap, renderFirewallScripts, renderRelease } from "./scripts";
import { Connection, remoteStep } from "./host";
import { contentHash } from "../render";

export interface BootstrapArgs {
    readonly plan: HostPlan;
    readonly connection: pulumi.Output<Connection>;
    readonly user: string;
    readonly mount: string;
    /** Whether this host gets the nftables firewall (existing hosts; clouds use theirs). */
    readonly hostFirewall: boolean;
}

export interface Bootstrapped {
    /** The host is bootstrapped and firewalled. */
    readonly ready: pulumi.Resource;
    /** One install step per release the host's nodes use, by release name; each after `ready`. */
    readonly releases: ReadonlyMap<string, pulumi.Resource>;
}

/**
 * base packages + user + data dirs -> (existing hosts) firewall apply -> firewall confirm,
 * then the releases its nodes use.
 */
export function bootstrapSteps(name: string, args: BootstrapArgs, parent: pulumi.Resource, after: pulumi.Resource[]): Bootstrapped {
    const base = { connection: args.connection, user: args.user };
    const bootstrap = remoteStep(`${name}-bootstrap`, { ...base, script: renderBootstrap(args.plan, args.mount) }, { parent, dependsOn: after });
    const ready = args.hostFirewall ? firewallSteps(name, args, base, parent, bootstrap) : bootstrap;
    const releases = new Map<string, pulumi.Resource>();
    for (const r of args.plan.releases) {
        const scripts = renderRelease(args.plan.name, r);
        releases.set(r.name, remoteStep(`${name}-release-${r.name}`, { ...base, script: scripts.install, onDelete: scripts.remove }, { parent, dependsOn: [ready] }));
    }
    return { ready, releases };
}

function firewallSteps(name: string, args: BootstrapArgs, base: { connection: pulumi.Output<Connection>; user: string }, parent: pulumi.Resource, bootstrap: pulumi.Resource): pulumi.Resource {
    const fw = renderFirewallScripts(args.plan);
    // Holds only the removal for `pulumi destroy`; its create never changes, so it is
    // never replaced, and the table is never dropped while the apply step is replaced.
    const teardown = remoteStep(
        `${name}-firewall-teardown`,
        { ...base, script: "echo 'firewall: teardown registered'", onDelete: fw.remove },
        { parent, dependsOn: [bootstrap] },
    );
    const apply = remoteStep(`${name}-firewall-apply`, { ...base, script: fw.apply }, { parent, dependsOn: [teardown] });
    // A fresh SSH connection after the apply: if it cannot get in, the revert fires.
    return remoteStep(
        `${name}-firewall-confirm`,
        { ...base, script: fw.confirm, inputsHash: [contentHash(fw.ruleset)] },
        { parent, dependsOn: [apply] },
    );
}
