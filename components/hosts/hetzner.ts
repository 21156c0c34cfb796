// A Hetzner Cloud host: server with a primary IPv4, a volume attached and mounted,
// and a Hetzner firewall built from the port table.
import * as pulumi from "@pulumi/pulumi";
import * as hcloud from "@pulumi/hcloud";
import type { HostPlan } from "../config/fleet";
import type { HetznerHostSpec } from "../config/schema";
import { dataDiskGb } from "../hardware";
import { ingressRules, sourceCidrs, WORLD_CIDRS } from "../ports";
import { renderDataVolume } from "./scripts";
import { Host, sshConnection, remoteStep, Connection, CLOUD_DATA_MOUNT } from "./host";
import { bootstrapSteps } from "./bootstrap";

/** Primary IPs are created in a datacenter; one per location is enough. */
export const HETZNER_DATACENTERS: Record<HetznerHostSpec["location"], string> = {
    fsn1: "fsn1-dc14",
    nbg1: "nbg1-dc3",
    hel1: "hel1-dc2",
    ash: "ash-dc1",
    hil: "hil-dc1",
    sin: "sin-dc1",
};

export interface HetznerHostArgs {
    readonly plan: HostPlan & { readonly spec: HetznerHostSpec };
    readonly privateKey: pulumi.Output<string>;
}

/** Hetzner firewall rules from the port table, plus ICMP (path MTU discovery, ping). */
export function hetznerFirewallRules(plan: HostPlan): hcloud.types.input.FirewallRule[] {
    const rules: hcloud.types.input.FirewallRule[] = ingressRules(plan.spec, plan.nodes).map((r) => ({
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

    constructor(name: string, args: HetznerHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:host:HetznerHost", name, {}, opts);
        const { spec, nodes } = args.plan;
        this.hostName = args.plan.name;
        const labels = { "nodefleet-host": args.plan.name };
        const child = { parent: this };

        const firewall = new hcloud.Firewall(`${name}-fw`, { name: `nodefleet-${args.plan.name}`, rules: hetznerFirewallRules(args.plan), labels }, child);
        const ip = new hcloud.PrimaryIp(
            `${name}-ip`,
            { name: `nodefleet-${args.plan.name}`, type: "ipv4", assigneeType: "server", datacenter: HETZNER_DATACENTERS[spec.location], autoDelete: false, labels },
            child,
        );
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
                labels,
            },
            // A new image release must never rebuild a running node.
            { ...child, ignoreChanges: ["image"] },
        );
        const volume = new hcloud.Volume(
            `${name}-data`,
            { name: `nodefleet-${args.plan.name}-data`, size: dataDiskGb(spec, nodes), location: spec.location, deleteProtection: true, labels },
            { ...child, protect: true },
        );
        const attachment = new hcloud.VolumeAttachment(`${name}-data-attach`, { volumeId: volume.id.apply(Number), serverId: server.id.apply(Number), automount: false }, child);

        this.publicAddress = ip.ipAddress;
        this.connection = sshConnection({ host: ip.ipAddress, port: 22, user: spec.sshUser, privateKey: args.privateKey });
        const device = volume.id.apply((id) => `/dev/disk/by-id/scsi-0HC_Volume_${id}`);
        const mountData = remoteStep(
            `${name}-data-volume`,
            { connection: this.connection, user: spec.sshUser, script: device.apply((d) => renderDataVolume(args.plan.name, d, CLOUD_DATA_MOUNT)) },
            { parent: this, dependsOn: [attachment] },
        );
        const steps = bootstrapSteps(name, { plan: args.plan, connection: this.connection, user: spec.sshUser, mount: CLOUD_DATA_MOUNT, hostFirewall: false }, this, [mountData]);
        this.ready = steps.ready;
        this.releases = steps.releases;
        this.registerOutputs({ publicAddress: this.publicAddress });
    }
}
