// The stack config schema (key `nodefleet:fleet`). Everything that decides which
// resources exist is a plain, validated value here: nothing is created inside an apply.
// Each field's description is the operator's documentation: docs/configuration.md and
// docs/fleet.schema.json are generated from this file (`scripts/docs.sh`).
import { z } from "zod";
import * as v from "../values/validators";
import { monitoringSpec } from "./monitoring";
import { rolloutSpec } from "./rollout";
import { releaseName } from "../roles/contract";
import { ROLE_NODES, ROLES } from "../roles/registry";
import { checked, cidr, hostName, notWorld, port, releaseUrl, secretRef, unixUser } from "../values/primitives";

const adminCidrs = z
    .array(cidr)
    .min(1, "at least one admin CIDR is needed for SSH")
    .superRefine(notWorld("SSH"))
    .describe("Who may reach SSH: the only ranges the host firewall opens SSH to. Never the whole internet, in any spelling.");
const sshKeyName = z
    .string()
    .min(1)
    .describe("Name of the SSH public key already registered with the cloud provider, installed for the login user.");
const sshPrivateKeySecret = secretRef.describe(
    "Config key holding the SSH private key nodefleet logs in with (`pulumi config set --secret`).",
);

const awsRegion = z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-[0-9]$/, "not an AWS region (e.g. eu-central-1)");

const ebsVolume = z
    .strictObject({
        sizeGb: z.number().int().min(8).max(65536).describe("Size in GB."),
        type: z.enum(["gp3", "io2"]).default("gp3").describe("EBS volume type."),
        iops: z
            .number()
            .int()
            .min(100)
            .max(256000)
            .optional()
            .describe("Provisioned IOPS: gp3 3000-80000 (default 3000); required for io2."),
        throughput: z.number().int().min(125).max(2000).optional().describe("gp3 only: throughput in MiB/s, at most iops / 4."),
    })
    .superRefine((vol, ctx) => {
        if (vol.type === "gp3") {
            if (vol.iops !== undefined && (vol.iops < 3000 || vol.iops > 80000))
                ctx.addIssue({ code: "custom", path: ["iops"], message: "gp3 iops must be 3000-80000" });
            if (vol.throughput !== undefined && vol.throughput > 2000)
                ctx.addIssue({ code: "custom", path: ["throughput"], message: "gp3 throughput must be 125-2000 MiB/s" });
            const iops = vol.iops ?? 3000;
            if (vol.throughput !== undefined && vol.throughput > iops / 4) {
                ctx.addIssue({
                    code: "custom",
                    path: ["throughput"],
                    message: `gp3 throughput ${vol.throughput} MiB/s needs at least ${vol.throughput * 4} iops`,
                });
            }
        } else {
            if (vol.iops === undefined) ctx.addIssue({ code: "custom", path: ["iops"], message: "io2 volumes need iops" });
            if (vol.throughput !== undefined)
                ctx.addIssue({ code: "custom", path: ["throughput"], message: "throughput is only set on gp3 volumes" });
        }
    });

export const awsHost = z
    .strictObject({
        kind: z.literal("aws").describe("An EC2 instance nodefleet creates, with its security group and data volume."),
        region: awsRegion.describe("AWS region."),
        availabilityZone: z
            .string()
            .regex(/^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$/, "not an availability zone (e.g. eu-central-1a)")
            .optional()
            .describe("Availability zone; else AWS picks one in the region."),
        instanceType: z
            .string()
            .min(1)
            .describe("EC2 instance type, checked against the roles' hardware targets (the catalog in components/config/hardware.ts)."),
        ami: z
            .string()
            .regex(/^ami-[0-9a-f]{8,17}$/, "not an AMI id")
            .optional()
            .describe("AMI id; when absent the newest official Debian 12 amd64 image is looked up."),
        subnetId: z
            .string()
            .regex(/^subnet-[0-9a-f]{8,17}$/, "not a subnet id")
            .optional()
            .describe("Subnet to launch in; else the region's default VPC."),
        rootVolume: ebsVolume.default({ sizeGb: 40, type: "gp3" }).describe("The root volume."),
        dataVolume: ebsVolume
            .optional()
            .describe("The data volume, mounted at /data; its size defaults to the sum of the roles' disk targets."),
        sshKeyName,
        sshUser: unixUser.default("admin").describe("User nodefleet logs in as (with passwordless sudo); `admin` on Debian AMIs."),
        sshPrivateKeySecret,
        hostKey: checked(v.hostKeyReason, "SSH host public key")
            .optional()
            .describe(
                "Only for a server nodefleet made before it pinned host keys at first boot: its current key (`ssh-ed25519 AAAA…`, read over a path you trust). A new server needs none: nodefleet hands it a key in its user-data, then swaps to a key the server makes (docs/hosts.md).",
            ),
        adminCidrs,
    })
    .describe("A host on AWS.");

export const hetznerLocations = ["fsn1", "nbg1", "hel1", "ash", "hil", "sin"] as const;

export const hetznerHost = z
    .strictObject({
        kind: z.literal("hetzner").describe("A Hetzner Cloud server nodefleet creates, with its firewall, primary IP and volume."),
        location: z.enum(hetznerLocations).describe("Hetzner location."),
        serverType: z
            .string()
            .min(1)
            .describe("Server type, checked against the roles' hardware targets (the catalog in components/config/hardware.ts)."),
        image: z.string().default("debian-12").describe("OS image."),
        dataVolumeGb: z
            .number()
            .int()
            .min(10)
            .max(10240)
            .optional()
            .describe("Volume size in GB, mounted at /data; defaults to the sum of the roles' disk targets."),
        sshKeyName,
        sshUser: unixUser
            .default("root")
            .describe("User nodefleet logs in as: root, or a user cloud-init makes at first boot with passwordless sudo."),
        sshPrivateKeySecret,
        hostKey: checked(v.hostKeyReason, "SSH host public key")
            .optional()
            .describe(
                "Only for a server nodefleet made before it pinned host keys at first boot: its current key (`ssh-ed25519 AAAA…`, read over a path you trust). A new server needs none: nodefleet hands it a key in its user-data, then swaps to a key the server makes (docs/hosts.md).",
            ),
        adminCidrs,
    })
    .describe("A host on Hetzner Cloud.");

export const existingHost = z
    .strictObject({
        kind: z
            .literal("existing")
            .describe(
                "A server that already runs Debian 12, reached over SSH (with its SFTP subsystem, which copies the host tools: OpenSSH's sftp-server, Debian's openssh-sftp-server); nodefleet creates nothing in a cloud.",
            ),
        address: checked(v.sshAddressReason, "IP address or DNS name").describe("Address nodefleet dials over SSH."),
        port: port.default(22).describe("Port nodefleet dials (a forwarded port in the dev stack)."),
        sshdPort: port.default(22).describe("Port sshd listens on inside the host; the host firewall keeps it open to adminCidrs."),
        user: unixUser.describe("User nodefleet logs in as: root, or a user with passwordless sudo."),
        sshPrivateKeySecret: sshPrivateKeySecret
            .optional()
            .describe("Config key holding the SSH private key; or, instead, sshPrivateKeyFile."),
        sshPrivateKeyFile: z
            .string()
            .min(1)
            .optional()
            .describe(
                "Path of an SSH private key file on the machine that runs pulumi (`~/` is $HOME, relative paths are relative to the project). The dev stack uses it for its per-checkout VM key; the key still reaches state only as a secret.",
            ),
        hostKey: checked(v.hostKeyReason, "SSH host public key")
            .optional()
            .describe(
                "Pinned host key (`ssh-ed25519 AAAA…`); without it any key is accepted on first contact, and production policy refuses that.",
            ),
        firstBoot: z
            .literal("cloud-init")
            .optional()
            .describe(
                "A server you boot yourself with the cloud-init user-data nodefleet makes for it (the stack output `firstBootUserData`; docs/hosts.md): its host key is pinned from its first boot, as a cloud host's is. Instead of hostKey.",
            ),
        dataMountPoint: z
            .string()
            .regex(/^\/[A-Za-z0-9._/-]*$/, "not an absolute path")
            .default("/data")
            .describe("Mount point of the data disk; it must already exist on the host."),
        adminCidrs,
    })
    .describe("A server that already exists.");

export const hostSpec = z.discriminatedUnion("kind", [awsHost, hetznerHost, existingHost], {
    error: (issue) => (issue.code === "invalid_union" ? "kind must be one of aws, hetzner, existing" : undefined),
});

/**
 * Node software: a release archive (.tar.gz) fetched by URL on the host and checked against its
 * sha256, given inline or as a SHA256SUMS-format file (as releases publish them) on the machine
 * that runs pulumi, looked up by the URL's file name.
 */
export const release = z
    .strictObject({
        url: releaseUrl
            .optional()
            .describe(
                "Where the host downloads the .tar.gz archive: a URL, or `{secret: <name>}` when it carries a credential (`user:password@`, a token in its query), which plain config refuses. Or, instead, `file` under the stack's `releaseMirror`.",
            ),
        file: z
            .string()
            .regex(
                /^[A-Za-z0-9][A-Za-z0-9._+-]{0,126}\.tar\.gz$/,
                "a file name of letters, digits, '.', '_', '+' and '-' ending in .tar.gz, with no '/'",
            )
            .optional()
            .describe(
                "The archive's file name under the stack's `releaseMirror` (the host downloads <releaseMirror><file>): what promotion carries from stack to stack, never an address. Instead of url.",
            ),
        version: z
            .string()
            .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/, "a version of letters, digits, '.', '_', '+' and '-'")
            .optional()
            .describe(
                "The release's version, as its publisher names it (`v1.1.0`): with its name and sha256, what identifies it when it is promoted (scripts/promote.mjs).",
            ),
        simulator: z
            .literal(true)
            .optional()
            .describe(
                "The release carries a simulator of the lab's (lab/sim) in place of real software: promotion never carries it out of the dev stack.",
            ),
        sha256: z
            .string()
            .regex(/^[0-9a-f]{64}$/, "not a sha256 (64 lowercase hex characters)")
            .optional()
            .describe("The archive's sha256; or, instead, sha256File."),
        sha256File: z
            .string()
            .min(1)
            .optional()
            .describe("A SHA256SUMS-format file on the machine that runs pulumi; the line for the URL's file name is used."),
        consensus: z
            .strictObject({
                daemon: z
                    .enum(["0gchaind", "beacond"])
                    .default("0gchaind")
                    .describe(
                        "The consensus daemon in the release's bin/: `0gchaind` (0G's, flags `--chaincfg.*`; the spec's) or `beacond` (BeaconKit's, the open core of 0gchaind, flags `--beacon-kit.*`; the lab's dev chain).",
                    ),
                chainSpec: z
                    .enum(["mainnet", "testnet", "devnet"])
                    .optional()
                    .describe(
                        "The chain spec the daemon runs: 0gchaind's `--chaincfg.chain-spec`, beacond's CHAIN_SPEC environment variable (v1.1 has no flag). Unset: the daemon's default (mainnet).",
                    ),
                genesis: z
                    .string()
                    .regex(
                        /^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*\.json$/,
                        "a path inside the release: names of letters, digits, '.', '_' and '-' separated by '/', not starting with '/' or '.', ending in .json",
                    )
                    .optional()
                    .describe(
                        "The network's consensus genesis inside the release (as 0G's release ships it under `0g-home/`): installed as the home's config/genesis.json where it has none; a home with another genesis is refused, never overwritten. Unset: the home brings its own.",
                    ),
            })
            .optional()
            .describe("A validator release only: the consensus daemon it carries. Unset: 0gchaind with its default chain spec."),
    })
    .describe("Node software: a release archive, installed only when its sha256 matches.");
export const nodeSpec = z.discriminatedUnion("role", ROLE_NODES, {
    error: (issue) => (issue.code === "invalid_union" ? `role must be one of ${ROLES.map((r) => r.role).join(", ")}` : undefined),
});

export const fleetSpec = z
    .strictObject({
        hardwareCheck: z
            .enum(["enforce", "warn"])
            .default("enforce")
            .describe("`enforce` fails the preview on a host below its roles' hardware targets; `warn` only reports it."),
        shards: z
            .array(z.string().regex(/^[a-z0-9-]{1,64}$/, "a stack name: lowercase letters, digits and dashes"))
            .min(2, "a fleet split into shards has two stacks or more")
            .refine((a) => new Set(a).size === a.length, "each stack once")
            .optional()
            .describe(
                "The stacks this fleet is split into, this one among them (docs/gitops.md, Shards). Each reads the others' Pulumi.<stack>.yaml and last outputs and refuses a node, key or host another shard holds: one key never signs on two machines.",
            ),
        secretsDir: z
            .string()
            .regex(/^[^\0\r\n]+$/, "a directory path on one line")
            .optional()
            .describe(
                'A directory on the machine that runs Pulumi (`~/` is the home directory, a relative path is relative to the project, which must not hold it) where a secret the fleet names may be a file of that name instead of a config key: mode 600 files in a mode 700 directory. For fleets whose keys do not fit in the stack config (docs/configuration.md, "A fleet in a file"). A name is a config key or a file, never both.',
            ),
        hosts: z.record(hostName, hostSpec).describe("The machines, by name (2-32 lowercase letters, digits and dashes)."),
        nodes: z.array(nodeSpec).min(1, "a fleet needs at least one node").describe("The nodes, each on one of the hosts."),
        releases: z
            .record(releaseName, release)
            .default({})
            .describe("Node software by name; a node names the release its host installs for it."),
        releaseMirror: z
            .string()
            .refine(
                (u) => v.httpUrlReason(u) === undefined && v.urlCredentialReason(u, false) === undefined && u.endsWith("/"),
                "an http or https URL of a directory, ending in '/', with no credential in it",
            )
            .optional()
            .describe(
                "Where this stack's hosts fetch releases given by `file` (a mirror of the releases you run, reachable from the hosts): each stack names its own, so promotion moves what a release is (name, version, sha256, file), never where a stack keeps it.",
            ),
        privateMirrorCidrs: z
            .array(cidr)
            .default([])
            .describe(
                "Private address ranges this stack's hosts reach a release mirror in (a mirror inside your network). Promotion into this stack refuses a release address in any other private, loopback, link-local or lab range, naming it.",
            ),
        monitoring: monitoringSpec
            .optional()
            .describe("Prometheus, Alertmanager and node_exporter for the fleet (docs/monitoring.md). Unset: no monitoring is installed."),
        rollout: rolloutSpec
            .optional()
            .describe(
                "Health-gated rollouts (docs/rollouts.md): a change that restarts nodes goes through each role batch by batch, each node's gate waiting for it to be healthy. Unset: every node's steps run at once, ungated.",
            ),
    })
    .describe(
        "The fleet: the value of the stack config key `nodefleet:fleet`, or the content of the project file `nodefleet:fleetFile` names.",
    );

export type FleetSpec = z.infer<typeof fleetSpec>;
export type ReleaseSpec = z.infer<typeof release>;
export type HostSpec = z.infer<typeof hostSpec>;
export type AwsHostSpec = z.infer<typeof awsHost>;
export type HetznerHostSpec = z.infer<typeof hetznerHost>;
export type ExistingHostSpec = z.infer<typeof existingHost>;
export type NodeSpec = z.infer<typeof nodeSpec>;
export type Role = NodeSpec["role"];
