// What every host kind does alike once its machine is there: the Host fields the roles read (its
// connection, bootstrap, releases, drift check and tool bundle), and for cloud machines the steps
// from a reachable address to a bootstrapped host. The kinds differ only in how the machine comes
// to be (aws.ts, hetzner.ts) or is reached (existing.ts).
import * as pulumi from "@pulumi/pulumi";
import type { HostPlan } from "../config/plan";
import type { Connection } from "./connection";
import { CLOUD_DATA_MOUNT, remoteStep, type ConnectionParts, type Host } from "./host";
import { bootstrapSteps, hostBundle, type Bootstrapped } from "./bootstrap";
import { renderDataVolume } from "./scripts";
import { pinHostKey, type FirstBootData } from "./first-boot";

/** A host as the roles see it, once its kind has reached and bootstrapped it. */
export interface Reached extends Bootstrapped {
    readonly connection: pulumi.Output<Connection>;
    readonly publicAddress: pulumi.Output<string>;
    readonly learnedHostKey?: pulumi.Output<string>;
}

/**
 * The component of every host kind: its type names the kind (and keeps its resources' URNs); the
 * kind's constructor makes the machine's resources, then hands what it reached to `reached`, once.
 */
export abstract class HostComponent extends pulumi.ComponentResource implements Host {
    readonly hostName: string;
    abstract readonly dataMountPoint: string;
    private host?: Reached;

    protected constructor(type: string, name: string, hostName: string, opts?: pulumi.ComponentResourceOptions) {
        super(type, name, {}, opts);
        this.hostName = hostName;
    }

    protected reached(host: Reached): void {
        if (this.host !== undefined) throw new Error(`unreachable: host ${this.hostName} reached twice`);
        this.host = host;
    }

    private get built(): Reached {
        if (this.host === undefined) throw new Error(`unreachable: host ${this.hostName} read before its steps were made`);
        return this.host;
    }

    get connection(): pulumi.Output<Connection> {
        return this.built.connection;
    }
    get publicAddress(): pulumi.Output<string> {
        return this.built.publicAddress;
    }
    get learnedHostKey(): pulumi.Output<string> | undefined {
        return this.built.learnedHostKey;
    }
    get ready(): pulumi.Resource {
        return this.built.ready;
    }
    get releases(): Bootstrapped["releases"] {
        return this.built.releases;
    }
    get drift(): Bootstrapped["drift"] {
        return this.built.drift;
    }
    get tools(): Bootstrapped["tools"] {
        return this.built.tools;
    }
}

/** A cloud machine as its provider made it: where SSH reaches it and where its data volume appears. */
export interface CloudMachine {
    readonly plan: HostPlan;
    readonly secret?: (key: string) => pulumi.Output<string>;
    readonly publicAddress: pulumi.Output<string>;
    readonly ssh: ConnectionParts;
    /** Its first-boot key (first-boot.ts), unless the config pins the host key. */
    readonly first: FirstBootData | undefined;
    readonly hostKey: string | undefined;
    /** What the host-key step waits for (the machine and its address). */
    readonly machine: pulumi.Resource[];
    /** The data volume's device on the host, and what makes it appear there (its attachment). */
    readonly device: pulumi.Output<string>;
    readonly attached: pulumi.Resource[];
}

/** A cloud machine's key pinned -> its data volume mounted -> the bootstrap; no host firewall (the provider's). */
export function cloudHost(name: string, parent: pulumi.Resource, m: CloudMachine): Reached {
    const pinned = pinHostKey(name, m.plan.name, m.ssh, m.first, m.hostKey, parent, m.machine);
    const connection = pinned.connection;
    const mountData = remoteStep(
        `${name}-data-volume`,
        { connection, user: m.ssh.user, script: m.device.apply((d) => renderDataVolume(m.plan.name, d, CLOUD_DATA_MOUNT)) },
        { parent, dependsOn: [...m.attached, ...pinned.after] },
    );
    const bundle = hostBundle(name, m.plan, connection, parent, [mountData]);
    const args = {
        plan: m.plan,
        secret: m.secret,
        connection,
        checkConnection: pinned.checkConnection,
        user: m.ssh.user,
        mount: CLOUD_DATA_MOUNT,
        hostFirewall: false,
        bundle,
    };
    const steps = bootstrapSteps(name, args, parent, [mountData]);
    return { ...steps, connection, publicAddress: m.publicAddress, ...(m.first !== undefined ? { learnedHostKey: pinned.hostKey } : {}) };
}
