// An existing server reached over SSH: nothing is created; the hardware preflight runs
// on the host before anything is installed, then the common bootstrap and nftables.
import * as pulumi from "@pulumi/pulumi";
import type { HostPlan } from "../config/plan";
import type { ExistingHostSpec } from "../config/schema";
import { hostTarget } from "../config/hardware";
import { renderPreflight } from "./scripts";
import { sshConnection, remoteStep } from "./host";
import { bootstrapSteps, hostBundle } from "./bootstrap";
import { HostComponent } from "./host-component";
import { firstBootData, pinHostKey } from "./first-boot";

export interface ExistingHostArgs {
    readonly plan: HostPlan & { readonly spec: ExistingHostSpec };
    readonly hardwareCheck: "enforce" | "warn";
    readonly privateKey: pulumi.Output<string>;
    /** Looks up a secret config key (a release URL held in one). */
    readonly secret?: (key: string) => pulumi.Output<string>;
}

export class ExistingHost extends HostComponent {
    readonly dataMountPoint: string;
    /** What the preflight measured on the host (cores, memory, disk, rotational). */
    readonly hardwareFacts: pulumi.Output<string>;
    /** With `firstBoot: cloud-init`: the user-data to boot the server with (a secret). */
    readonly firstBootUserData?: pulumi.Output<string>;

    constructor(name: string, args: ExistingHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:host:ExistingHost", name, args.plan.name, opts);
        const spec = args.plan.spec;
        this.dataMountPoint = spec.dataMountPoint;
        const ssh = { host: spec.address, port: spec.port, user: spec.user, privateKey: args.privateKey, hostKey: spec.hostKey };
        // A server booted with nodefleet's user-data: its key pinned from the first boot (first-boot.ts).
        const first = spec.firstBoot === "cloud-init" ? firstBootData(name, args.plan.name, spec.user, undefined, this) : undefined;
        const pinned = first === undefined ? undefined : pinHostKey(name, args.plan.name, ssh, first, undefined, this, []);
        const connection = pinned?.connection ?? sshConnection(ssh);
        this.firstBootUserData = first?.userData;

        const bundle = hostBundle(name, args.plan, connection, this, pinned?.after ?? []);
        const preflight = remoteStep(
            `${name}-preflight`,
            {
                connection,
                user: spec.user,
                script: renderPreflight(args.plan.name, args.hardwareCheck, spec.dataMountPoint, hostTarget(args.plan.nodes)),
                bundle,
            },
            { parent: this },
        );
        this.hardwareFacts = preflight.stdout;
        const checkConnection = pinned?.checkConnection ?? sshConnection(ssh, "as given");
        const bootstrap = {
            plan: args.plan,
            secret: args.secret,
            connection,
            checkConnection,
            user: spec.user,
            mount: spec.dataMountPoint,
            hostFirewall: true,
            bundle,
        };
        const steps = bootstrapSteps(name, bootstrap, this, [preflight]);
        this.reached({
            ...steps,
            connection,
            publicAddress: pulumi.output(spec.address),
            ...(pinned !== undefined ? { learnedHostKey: pinned.hostKey } : {}),
        });
        this.registerOutputs({ publicAddress: this.publicAddress, hardwareFacts: this.hardwareFacts });
    }
}
