// A Hetzner Cloud host: server with a primary IPv4, a volume attached and mounted,
// and a Hetzner firewall built from the port table.
import * as pulumi from "@pulumi/pulumi";
import * as hcloud from "@pulumi/hcloud";
import type { HostPlan } from "../config/plan";
import type { HetznerHostSpec } from "../config/schema";
import { dataDiskGb } from "../config/hardware";
import { ingressRules, sourceCidrs, WORLD_CIDRS } from "../config/ports";
import { CLOUD_DATA_MOUNT } from "./host";
import { cloudHost, HostComponent } from "./host-component";
import { firstBootData } from "./first-boot";

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

/** The host's data volume, protected (it holds the chain data), and its attachment to the server. */
function hetznerVolume(
    name: string,
    plan: HetznerHostArgs["plan"],
    server: hcloud.Server,
    labels: Record<string, string>,
    child: pulumi.CustomResourceOptions,
) {
    const { spec, nodes } = plan;
    const volume = new hcloud.Volume(
        `${name}-data`,
        {
            name: `nodefleet-${plan.name}-data`,
            size: dataDiskGb(spec, nodes),
            location: spec.location,
            deleteProtection: true,
            labels,
        },
        { ...child, protect: true },
    );
    const attachment = new hcloud.VolumeAttachment(
        `${name}-data-attach`,
        { volumeId: volume.id.apply(Number), serverId: server.id.apply(Number), automount: false },
        child,
    );
    return { volume, attachment };
}

export class HetznerHost extends HostComponent {
    readonly dataMountPoint = CLOUD_DATA_MOUNT;

    constructor(name: string, args: HetznerHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:host:HetznerHost", name, args.plan.name, opts);
        const { spec } = args.plan;
        const labels = { "nodefleet-host": args.plan.name };
        const child = { parent: this };

        const firewall = new hcloud.Firewall(
            `${name}-fw`,
            { name: `nodefleet-${args.plan.name}`, rules: hetznerFirewallRules(args.plan), labels },
            child,
        );
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
        const { volume, attachment } = hetznerVolume(name, args.plan, server, labels, child);

        this.reached(
            cloudHost(name, this, {
                plan: args.plan,
                secret: args.secret,
                publicAddress: ip.ipAddress,
                ssh: { host: ip.ipAddress, port: 22, user: spec.sshUser, privateKey: args.privateKey },
                first,
                hostKey: spec.hostKey,
                machine: [server],
                device: volume.id.apply((id) => `/dev/disk/by-id/scsi-0HC_Volume_${id}`),
                attached: [attachment],
            }),
        );
        this.registerOutputs({ publicAddress: this.publicAddress });
    }
}
