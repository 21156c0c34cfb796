// A Hetzner Cloud host: server with a primary IPv4, a volume attached and mounted,
// and a Hetzner firewall built from the port table.
import * as pulumi from "@pulumi/pulumi";
import * as hcloud from "@pulumi/hcloud";
import type { HostPlan } from "../config/plan";
import type { HetznerHostSpec } from "../config/schema";
import { dataDiskGb } from "../config/hardware";
import { ingressRules, sourceCidrs, WORLD_CIDRS } from "../config/ports";
import { renderDataVolume } from "./scripts";
import { Host, remoteStep, CLOUD_DATA_MOUNT } from "./host";
import { Connection } from "./connection";
import { bootstrapSteps, hostBundle } from "./bootstrap";
import type { HostBundle } from "./tools";
import type { HostDrift } from "./drift";
import { firstBootData, pinHostKey } from "./first-boot";

/**
 * The hcloud provider plugin nodefleet runs and is tested with (the cli tier previews Hetzner hosts
 * with it: lab/toolchain.sh hcloud builds it from the pinned upstream source; a connected runner
 * gets it with `pulumi plugin install resource hcloud 1.39.1`). The SDK from the npm registry is
 * 1.41.0, whose default provider would ask for plugin 1.41.0, of which no source is at hand here:
 * the SDK's resource types drive the plugin named here, which checks the inputs against its own
 * schema and warns about deprecated ones (test/cli/hetzner-preview.test.ts fails on any warning).
 */
export const HCLOUD_PLUGIN_VERSION = "1.39.1";

/** The Hetzner hosts' provider: the token from HCLOUD_TOKEN, as the default provider read it. */
export function hetznerProvider(parent: pulumi.Resource): hcloud.Provider {
    return new hcloud.Provider("hcloud", {}, { parent, version: HCLOUD_PLUGIN_VERSION });
}

export interface HetznerHostArgs {
    readonly plan: HostPlan & { readonly spec: HetznerHostSpec };
    readonly privateKey: pulumi.Output<string>;
    /** Looks up a secret config key (a release URL held in one). */
    readonly secret?: (key: string) => pulumi.Output<string>;
}

/** Hetzner firewall rules from the port table, plus ICMP (path MTU discovery, ping). */
export function hetznerFirewallRules(plan: HostPlan): hcloud.types.input.FirewallRule[] {
    const rules: hcloud.types.input.FirewallRule[] = ingressRules(plan.spec, plan.nodes, plan.monitoring).map((r) => ({
        direction: "in",
        protocol: r.protocol,
        port: String(r.port),
        sourceIps: [...sourceCidrs(r)],
        description: r.description,
    }));
    rules.push({ direction: "in", protocol: "icmp", sourceIps: [...WORLD_CIDRS], description: "ICMP" });
    return rules;
}

export class HetznerHost extends pulumi.ComponentResource implements Host {
    readonly hostName: string;
    readonly connection: pulumi.Output<Connection>;
    readonly publicAddress: pulumi.Output<string>;
    readonly dataMountPoint = CLOUD_DATA_MOUNT;
    readonly ready: pulumi.Resource;
    readonly releases: ReadonlyMap<string, pulumi.Resource>;
    readonly drift: HostDrift;
    readonly tools: HostBundle;
    readonly learnedHostKey?: pulumi.Output<string>;

    constructor(name: string, args: HetznerHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:host:HetznerHost", name, {}, opts);
        const { spec, nodes } = args.plan;
        this.hostName = args.plan.name;
        const labels = { "nodefleet-host": args.plan.name };
        const child = { parent: this };

        const firewall = new hcloud.Firewall(`${name}-fw`, { name: `nodefleet-${args.plan.name}`, rules: hetznerFirewallRules(args.plan), labels }, child);
        const ip = new hcloud.PrimaryIp(
            `${name}-ip`,
            // By location: Hetzner removed datacenters from its API after 1 July 2026 (the real
            // provider warns that `datacenter` is deprecated); `assigneeType` only goes with an
            // assigneeId (the server takes this IP through its publicNets, not the other way).
            { name: `nodefleet-${args.plan.name}`, type: "ipv4", location: spec.location, autoDelete: false, labels },
            child,
        );
        const first = firstBootData(name, args.plan.name, spec.sshUser, spec.hostKey, this);
        const server = new hcloud.Server(
            `${name}-server`,
            {
                name: `nodefleet-${args.plan.name}`,
                serverType: spec.serverType,
                image: spec.image,
                location: spec.location,
                sshKeys: [spec.sshKeyName],
                firewallIds: [firewall.id.apply(Number)],
                publicNets: [{ ipv4Enabled: true, ipv4: ip.id.apply(Number), ipv6Enabled: true }],
                userData: first?.userData,
                labels,
            },
            // A new image release must never rebuild a running node, nor user-data (read at first
            // boot only) a server made before it.
            { ...child, ignoreChanges: ["image", "userData"] },
        );
        const volume = new hcloud.Volume(
            `${name}-data`,
            { name: `nodefleet-${args.plan.name}-data`, size: dataDiskGb(spec, nodes), location: spec.location, deleteProtection: true, labels },
            { ...child, protect: true },
        );
        const attachment = new hcloud.VolumeAttachment(`${name}-data-attach`, { volumeId: volume.id.apply(Number), serverId: server.id.apply(Number), automount: false }, child);

        this.publicAddress = ip.ipAddress;
        const ssh = { host: ip.ipAddress, port: 22, user: spec.sshUser, privateKey: args.privateKey };
        const pinned = pinHostKey(name, args.plan.name, ssh, first, spec.hostKey, this, [server]);
        this.connection = pinned.connection;
        if (first !== undefined) this.learnedHostKey = pinned.hostKey;
        const device = volume.id.apply((id) => `/dev/disk/by-id/scsi-0HC_Volume_${id}`);
        const mountData = remoteStep(
            `${name}-data-volume`,
            { connection: this.connection, user: spec.sshUser, script: device.apply((d) => renderDataVolume(args.plan.name, d, CLOUD_DATA_MOUNT)) },
            { parent: this, dependsOn: [attachment, ...pinned.after] },
        );
        const steps = bootstrapSteps(name, { plan: args.plan, secret: args.secret, connection: this.connection, checkConnection: pinned.checkConnection, user: spec.sshUser, mount: CLOUD_DATA_MOUNT, hostFirewall: false, bundle: hostBundle(name, args.plan, this.connection, this, [mountData]) }, this, [mountData]);
        this.ready = steps.ready;
        this.releases = steps.releases;
        this.drift = steps.drift;
        this.tools = steps.tools;
        this.registerOutputs({ publicAddress: this.publicAddress });
    }
}
