// An EC2 host: instance, a separate encrypted data volume attached and mounted,
// a security group built from the port table, and an Elastic IP.
import * as pulumi from "@pulumi/pulumi";
import * as aws from "@pulumi/aws";
import type { HostPlan } from "../config/plan";
import type { AwsHostSpec } from "../config/schema";
import { dataDiskGb } from "../config/hardware";
import { ingressRules, sourceCidrs, WORLD_CIDRS } from "../config/ports";
import { CLOUD_DATA_MOUNT } from "./host";
import { cloudHost, HostComponent } from "./host-component";
import { ruleResourceName } from "./names";
import { firstBootData } from "./first-boot";

/** Official Debian cloud images are published by this AWS account. */
export const DEBIAN_AMI_OWNER = "136693071363";

export interface AwsHostArgs {
    readonly plan: HostPlan & { readonly spec: AwsHostSpec };
    readonly privateKey: pulumi.Output<string>;
    /** Looks up a secret config key (a release URL held in one). */
    readonly secret?: (key: string) => pulumi.Output<string>;
}

export class AwsHost extends HostComponent {
    readonly dataMountPoint = CLOUD_DATA_MOUNT;
    readonly instanceId: pulumi.Output<string>;

    constructor(name: string, args: AwsHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:host:AwsHost", name, args.plan.name, opts);
        const { spec, nodes } = args.plan;
        const region = spec.region;
        const tags = { "nodefleet:host": args.plan.name, "nodefleet:nodes": nodes.map((n) => n.name).join(" ") };
        const child = { parent: this };

        const vpcId = spec.subnetId
            ? aws.ec2.getSubnetOutput({ id: spec.subnetId, region }, child).vpcId
            : aws.ec2.getVpcOutput({ default: true, region }, child).id;
        const ami = spec.ami ?? debianAmi(region, child);
        const sg = securityGroup(name, args.plan, vpcId, tags, child);

        const first = firstBootData(name, args.plan.name, spec.sshUser, spec.hostKey, this);
        const instance = awsInstance(
            name,
            spec,
            { ami, securityGroup: sg.id, userData: first?.userData, tags: { ...tags, Name: `nodefleet-${args.plan.name}` } },
            child,
        );
        this.instanceId = instance.id;

        const { volume, attachment } = dataVolume(name, args.plan, instance, tags, child);
        const eip = new aws.ec2.Eip(`${name}-eip`, { region, domain: "vpc", instance: instance.id, tags }, child);
        this.reached(
            cloudHost(name, this, {
                plan: args.plan,
                secret: args.secret,
                publicAddress: eip.publicIp,
                ssh: { host: eip.publicIp, port: 22, user: spec.sshUser, privateKey: args.privateKey },
                first,
                hostKey: spec.hostKey,
                machine: [instance, eip],
                // Nitro instances expose EBS volumes as NVMe devices named by volume id.
                device: volume.id.apply((id) => `/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_${id.replace("-", "")}`),
                attached: [attachment, eip],
            }),
        );
        this.registerOutputs({ publicAddress: this.publicAddress, instanceId: this.instanceId });
    }
}

/** The host's instance: the config's machine and root volume, in its security group, IMDSv2 only. */
function awsInstance(
    name: string,
    spec: AwsHostSpec,
    a: {
        readonly ami: pulumi.Input<string>;
        readonly securityGroup: pulumi.Input<string>;
        readonly userData?: pulumi.Input<string>;
        readonly tags: Record<string, string>;
    },
    child: pulumi.CustomResourceOptions,
): aws.ec2.Instance {
    const root = spec.rootVolume;
    return new aws.ec2.Instance(
        `${name}-instance`,
        {
            region: spec.region,
            ami: a.ami,
            instanceType: spec.instanceType,
            availabilityZone: spec.availabilityZone,
            subnetId: spec.subnetId,
            vpcSecurityGroupIds: [a.securityGroup],
            keyName: spec.sshKeyName,
            rootBlockDevice: {
                volumeSize: root.sizeGb,
                volumeType: root.type,
                iops: root.iops,
                throughput: root.throughput,
                encrypted: true,
                deleteOnTermination: true,
            },
            metadataOptions: { httpTokens: "required" },
            userData: a.userData,
            tags: a.tags,
        },
        // A newer Debian AMI must never replace a running validator host, nor user-data (read
        // at first boot only) stop an instance made before it.
        { ...child, ignoreChanges: ["ami", "userData"] },
    );
}

/** The newest official Debian 12 image for x86_64 in the region. */
function debianAmi(region: string, opts: pulumi.InvokeOptions): pulumi.Output<string> {
    const filters = [
        { name: "name", values: ["debian-12-amd64-*"] },
        { name: "architecture", values: ["x86_64"] },
    ];
    return aws.ec2.getAmiOutput({ owners: [DEBIAN_AMI_OWNER], mostRecent: true, region, filters }, opts).id;
}

/** The host's security group: one ingress rule per port of the port table and source range, egress to the world. */
function securityGroup(
    name: string,
    plan: AwsHostArgs["plan"],
    vpcId: pulumi.Input<string>,
    tags: Record<string, string>,
    child: pulumi.CustomResourceOptions,
): aws.ec2.SecurityGroup {
    const { spec, nodes } = plan;
    const region = spec.region;
    const sg = new aws.ec2.SecurityGroup(`${name}-sg`, { region, vpcId, description: `nodefleet host ${plan.name}`, tags }, child);
    for (const rule of ingressRules(spec, nodes, plan.monitoring)) {
        for (const cidr of sourceCidrs(rule)) {
            const v6 = cidr.includes(":");
            new aws.vpc.SecurityGroupIngressRule(
                ruleResourceName(name, rule, cidr),
                {
                    region,
                    securityGroupId: sg.id,
                    ipProtocol: rule.protocol,
                    fromPort: rule.port,
                    toPort: rule.port,
                    ...(v6 ? { cidrIpv6: cidr } : { cidrIpv4: cidr }),
                    description: rule.description,
                    tags,
                },
                child,
            );
        }
    }
    for (const cidr of WORLD_CIDRS) {
        const v6 = cidr.includes(":");
        new aws.vpc.SecurityGroupEgressRule(
            `${name}-out-${v6 ? "ipv6" : "ipv4"}`,
            {
                region,
                securityGroupId: sg.id,
                ipProtocol: "-1",
                ...(v6 ? { cidrIpv6: cidr } : { cidrIpv4: cidr }),
                description: "all egress",
                tags,
            },
            child,
        );
    }
    return sg;
}

/** The encrypted data volume, protected, attached to the instance. */
function dataVolume(
    name: string,
    plan: AwsHostArgs["plan"],
    instance: aws.ec2.Instance,
    tags: Record<string, string>,
    child: pulumi.CustomResourceOptions,
) {
    const { spec, nodes } = plan;
    const region = spec.region;
    const vol = spec.dataVolume ?? { sizeGb: dataDiskGb(spec, nodes), type: "gp3" as const };
    const volume = new aws.ebs.Volume(
        `${name}-data`,
        {
            region,
            availabilityZone: instance.availabilityZone,
            size: vol.sizeGb,
            type: vol.type,
            iops: vol.iops,
            throughput: vol.throughput,
            encrypted: true,
            tags: { ...tags, Name: `nodefleet-${plan.name}-data` },
        },
        // Chain data: destroying it takes a deliberate `pulumi state unprotect`.
        { ...child, protect: true },
    );
    const attachment = new aws.ec2.VolumeAttachment(
        `${name}-data-attach`,
        { region, deviceName: "/dev/sdf", volumeId: volume.id, instanceId: instance.id, stopInstanceBeforeDetaching: true },
        child,
    );
    return { volume, attachment };
}
