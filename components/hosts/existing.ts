// An existing server reached over SSH: nothing is created; the hardware preflight runs
// on the host before anything is installed, then the common bootstrap and nftables.
import * as pulumi from "@pulumi/pulumi";
import type { HostPlan } from "../config/plan";
import type { ExistingHostSpec } from "../config/schema";
import { hostTarget } from "../config/hardware";
import { renderPreflight } from "./scripts";
import { Host, sshConnection, remoteStep } from "./host";
import { Connection } from "./connection";
import { bootstrapSteps, hostBundle } from "./bootstrap";
import type { HostBundle } from "./tools";
import type { HostDrift } from "./drift";
import { firstBootData, pinHostKey } from "./first-boot";

export interface ExistingHostArgs {
    readonly plan: HostPlan & { readonly spec: ExistingHostSpec };
    readonly hardwareCheck: "enforce" | "warn";
    readonly privateKey: pulumi.Output<string>;
    /** Looks up a secret config key (a release URL held in one). */
    readonly secret?: (key: string) => pulumi.Output<string>;
}

export class ExistingHost extends pulumi.ComponentResource implements Host {
    readonly hostName: string;
    readonly connection: pulumi.Output<Connection>;
    readonly publicAddress: pulumi.Output<string>;
    readonly dataMountPoint: string;
    readonly ready: pulumi.Resource;
    readonly releases: ReadonlyMap<string, pulumi.Resource>;
    readonly drift: HostDrift;
    readonly tools: HostBundle;
    /** What the preflight measured on the host (cores, memory, disk, rotational). */
    readonly hardwareFacts: pulumi.Output<string>;
    /** With `firstBoot: cloud-init`: the user-data to boot the server with (a secret). */
    readonly firstBootUserData?: pulumi.Output<string>;
    readonly learnedHostKey?: pulumi.Output<string>;

    constructor(name: string, args: ExistingHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:host:ExistingHost", name, {}, opts);
        const spec = args.plan.spec;
        this.hostName = args.plan.name;
        this.dataMountPoint = spec.dataMountPoint;
        this.publicAddress = pulumi.output(spec.address);
        const ssh = { host: spec.address, port: spec.port, user: spec.user, privateKey: args.privateKey, hostKey: spec.hostKey };
        // A server booted with nodefleet's user-data: its key pinned from the first boot (first-boot.ts).
        const first = spec.firstBoot === "cloud-init" ? firstBootData(name, args.plan.name, spec.user, undefined, this) : undefined;
        const pinned = first === undefined ? undefined : pinHostKey(name, args.plan.name, ssh, first, undefined, this, []);
        this.connection = pinned?.connection ?? sshConnection(ssh);
        this.firstBootUserData = first?.userData;
        this.learnedHostKey = pinned?.hostKey;

        const bundle = hostBundle(name, args.plan, this.connection, this, pinned?.after ?? []);
        const preflight = remoteStep(
            `${name}-preflight`,
            { connection: this.connection, user: spec.user, script: renderPreflight(args.plan.name, args.hardwareCheck, spec.dataMountPoint, hostTarget(args.plan.nodes)), bundle },
            { parent: this },
        );
        this.hardwareFacts = preflight.stdout;
        const steps = bootstrapSteps(name, { plan: args.plan, secret: args.secret, connection: this.connection, checkConnection: pinned?.checkConnection ?? sshConnection(ssh, "as given"), user: spec.user, mount: spec.dataMountPoint, hostFirewall: true, bundle }, this, [preflight]);
        this.ready = steps.ready;
        this.releases = steps.releases;
        this.drift = steps.drift;
        this.tools = steps.tools;
        this.registerOutputs({ publicAddress: this.publicAddress, hardwareFacts: this.hardwareFacts });
    }
}
