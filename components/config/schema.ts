// The stack config schema (key `nodefleet:fleet`). Everything that decides which
// resources exist is a plain, validated value here: nothing is created inside an apply.
import { z } from "zod";
import * as v from "./validators";
import { describeWorld, worldFamilies } from "../cidr";

/** A zod string refined by one of the validators, keeping its precise reason. */
function checked(reason: (s: string) => v.Reason) {
    return z.string().superRefine((s, ctx) => {
        const r = reason(s);
        if (r) ctx.addIssue({ code: "custom", message: r });
    });
}

export const evmAddress = checked(v.evmAddressReason);
export const httpUrl = checked(v.httpUrlReason);
export const ipv4 = checked(v.ipv4Reason);
export const cidr = checked(v.cidrReason);
export const multiaddr = checked(v.multiaddrReason);
export const enode = checked(v.enodeReason);
export const port = z.number().int().min(1).max(65535);

/**
 * Name of another config key that holds a secret (`pulumi config set --secret <name> …`).
 * Key material pasted here instead is refused: it would sit in Pulumi.<stack>.yaml in clear.
 */
export const secretRef = z.string().superRefine((s, ctx) => {
    if (v.looksLikeSecretMaterial(s)) {
        ctx.addIssue({
            code: "custom",
            message: "secret given as a plain value: store it with `pulumi config set --secret <name>` and put <name> here",
        });
    } else if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(s)) {
        ctx.addIssue({ code: "custom", message: "not a config key name (letters, digits, _ and -)" });
    }
});

/**
 * A list of CIDRs that must not add up to the whole internet: "open to the world" is decided by
 * address math on the union (`::/0`, `0::0/0`, `0.0.0.0/1` + `128.0.0.0/1` all count), reported
 * at the entry that covers a family alone, else at the list.
 */
function notWorld(what: string, advice = "") {
    return (list: readonly string[], ctx: z.RefinementCtx) => {
        const families = worldFamilies(list);
        if (families.length === 0) return;
        const alone = list.findIndex((c) => worldFamilies([c]).length === families.length);
        const path = alone >= 0 ? [alone] : [];
        ctx.addIssue({ code: "custom", path, message: `${what} must not be open to the world: ${alone >= 0 ? "this range covers" : "together these ranges cover"} ${describeWorld(families)}${advice}` });
    };
}

const adminCidrs = z.array(cidr).min(1, "at least one admin CIDR is needed for SSH").superRefine(notWorld("SSH"));

const awsRegion = z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-[0-9]$/, "not an AWS region (e.g. eu-central-1)");

const ebsVolume = z
    .strictObject({
        sizeGb: z.number().int().min(8).max(65536),
        type: z.enum(["gp3", "io2"]).default("gp3"),
        iops: z.number().int().min(100).max(256000).optional(),
        throughput: z.number().int().min(125).max(2000).optional(),
    })
    .superRefine((vol, ctx) => {
        if (vol.type === "gp3") {
            if (vol.iops !== undefined && (vol.iops < 3000 || vol.iops > 80000)) ctx.addIssue({ code: "custom", path: ["iops"], message: "gp3 iops must be 3000-80000" });
            if (vol.throughput !== undefined && vol.throughput > 2000) ctx.addIssue({ code: "custom", path: ["throughput"], message: "gp3 throughput must be 125-2000 MiB/s" });
            const iops = vol.iops ?? 3000;
            if (vol.throughput !== undefined && vol.throughput > iops / 4) {
                ctx.addIssue({ code: "custom", path: ["throughput"], message: `gp3 throughput ${vol.throughput} MiB/s needs at least ${vol.throughput * 4} iops` });
            }
        } else {
            if (vol.iops === undefined) ctx.addIssue({ code: "custom", path: ["iops"], message: "io2 volumes need iops" });
            if (vol.throughput !== undefined) ctx.addIssue({ code: "custom", path: ["throughput"], message: "throughput is only set on gp3 volumes" });
        }
    });

export const awsHost = z.strictObject({
    kind: z.literal("aws"),
    region: awsRegion,
    availabilityZone: z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$/, "not an availability zone (e.g. eu-central-1a)").optional(),
    instanceType: z.string().min(1),
    /** AMI id; when absent the newest official Debian 12 amd64 image is looked up. */
    ami: z.string().regex(/^ami-[0-9a-f]{8,17}$/, "not an AMI id").optional(),
    subnetId: z.string().regex(/^subnet-[0-9a-f]{8,17}$/, "not a subnet id").optional(),
    rootVolume: ebsVolume.default({ sizeGb: 40, type: "gp3" }),
    /** The data volume; its size defaults to the sum of the roles' disk targets. */
    dataVolume: ebsVolume.optional(),
    sshKeyName: z.string().min(1),
    sshUser: z.string().regex(/^[a-z_][a-z0-9_-]*$/).default("admin"),
    sshPrivateKeySecret: secretRef,
    adminCidrs,
});

export const hetznerLocations = ["fsn1", "nbg1", "hel1", "ash", "hil", "sin"] as const;

export const hetznerHost = z.strictObject({
    kind: z.literal("hetzner"),
    location: z.enum(hetznerLocations),
    serverType: z.string().min(1),
    image: z.string().default("debian-12"),
    /** Hetzner volume size in GB (10-10240); defaults to the sum of the roles' disk targets. */
    dataVolumeGb: z.number().int().min(10).max(10240).optional(),
    sshKeyName: z.string().min(1),
    sshUser: z.string().regex(/^[a-z_][a-z0-9_-]*$/).default("root"),
    sshPrivateKeySecret: secretRef,
    adminCidrs,
});

export const existingHost = z.strictObject({
    kind: z.literal("existing"),
    address: checked(v.sshAddressReason),
    /** Port nodefleet dials (a forwarded port in the dev stack). */
    port: port.default(22),
    /** Port sshd listens on inside the host; the firewall keeps it open to admin CIDRs. */
    sshdPort: port.default(22),
    user: z.string().regex(/^[a-z_][a-z0-9_-]*$/, "not a Unix user name"),
    /** Config key holding the SSH private key; or, instead, sshPrivateKeyFile. */
    sshPrivateKeySecret: secretRef.optional(),
    /**
     * Path of an SSH private key file on the machine that runs pulumi (`~/` expands to $HOME,
     * relative paths are relative to the project). Used by the dev stack, whose VM key is made
     * per checkout; the key still reaches state only as a secret.
     */
    sshPrivateKeyFile: z.string().min(1).optional(),
    /** Pinned host key; without it any key is accepted on first contact. */
    hostKey: checked(v.hostKeyReason).optional(),
    /** Mount point of the data disk (must already exist on the host). */
    dataMountPoint: z.string().regex(/^\/[A-Za-z0-9._/-]*$/, "not an absolute path").default("/data"),
    adminCidrs,
});

export const hostSpec = z.discriminatedUnion("kind", [awsHost, hetznerHost, existingHost], {
    error: (issue) => (issue.code === "invalid_union" ? "kind must be one of aws, hetzner, existing" : undefined),
});

const hardwareTarget = z.strictObject({
    cores: z.number().int().min(1),
    memoryGb: z.number().int().min(1),
    diskGb: z.number().int().min(1),
});

export const storageSettings = z.strictObject({
    /** Candidate EVM RPC endpoints, in order of preference (failover, seed 7). */
    rpcEndpoints: z.array(httpUrl).min(1, "at least one RPC endpoint is needed"),
    logContractAddress: evmAddress,
    mineContractAddress: evmAddress.optional(),
    networkBootNodes: z.array(multiaddr).default([]),
    networkEnrAddress: ipv4.optional(),
    p2pPort: port.default(1234),
    rpcPort: port.default(5678),
    adminRpcPort: port.default(5679),
    grpcPort: port.default(50051),
    minerKeySecret: secretRef,
    /** Address the node's RPC listens on; 127.0.0.1 unless a reverse proxy needs more (seed 5). */
    rpcBind: ipv4.default("127.0.0.1"),
    /** log_sync_start_block_number: where the log sync starts (the flow contract's deploy block). */
    logSyncStartBlock: z.number().int().min(0).default(0),
});

export const sequencerSettings = z.strictObject({
    network: z.literal("alpha-testnet", { error: "the sequencer network must be alpha-testnet (seed 2.4)" }).default("alpha-testnet"),
    l1RpcUrls: z.array(httpUrl).min(1, "at least one L1 RPC URL is needed"),
    l1ConsensusHostUrls: z.array(httpUrl).min(1, "at least one L1 beacon URL is needed"),
    l1ChainId: z.literal(11155111, { error: "the L1 chain id must be 11155111 (Sepolia, seed 2.5)" }).default(11155111),
    coinbase: evmAddress,
    validatorAddress: evmAddress,
    stakingAssetHandler: evmAddress,
    /** The L1 validator registry whose getInfo(address) tells whether validatorAddress is registered (seed 4.3). */
    registryAddress: evmAddress,
    validatorPrivateKeySecret: secretRef,
    /**
     * How the node runs: `docker` (production: docker run with the key in a 0600 --env-file, never
     * the aztec wrapper, which passes env values on docker's command line) or `release` (the
     * release's bin/aztec under systemd with the key in a 0600 EnvironmentFile; the dev stack's
     * simulator).
     */
    runtime: z.enum(["docker", "release"]).default("docker"),
    /** Public IP announced to peers; defaults to the host's public address. */
    publicIp: ipv4.optional(),
    /** Who may reach the JSON-RPC port 8080; never the whole internet (seed 5). */
    rpcAllowedCidrs: z
        .array(cidr)
        .default([])
        .superRefine(notWorld("the sequencer RPC", "; put a reverse proxy in front")),
    version: z.string().regex(/^(latest|[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?)$/, "not a version (latest or x.y.z)").default("latest"),
});

/** <prefix><suffix> ports, prefix 1-64 so that <prefix>660 stays <= 65535 (seed 8). */
export const portPrefix = z
    .union([z.number(), z.string()])
    .transform((p, ctx) => {
        const text = String(p);
        if (!/^[1-9][0-9]?$/.test(text) || Number(text) > 64) {
            ctx.addIssue({ code: "custom", message: `port prefix ${text} must be a number 1-64 so that every <prefix><suffix> port (up to <prefix>660) is a valid port` });
            return z.NEVER;
        }
        return Number(text);
    });

export const validatorSettings = z
    .strictObject({
        portPrefix,
        /** The execution client the validator runs (after the switch, when one is asked). */
        executionClient: z.enum(["geth", "reth"]).default("geth"),
        /**
         * The geth -> reth switch (seed 4.5): `migrate` (executionClient: reth) runs the 14 steps,
         * `rollback` (executionClient: geth) restores geth from the backup, `cleanup`
         * (executionClient: reth) removes the export files after 24 h of reth running.
         */
        switch: z.enum(["migrate", "rollback", "cleanup"]).optional(),
        /** A public endpoint of the chain: the reference height of step 10 (else the noted head). */
        referenceRpcUrl: httpUrl.optional(),
        /** How many blocks reth may be behind the reference height before 0gchaind starts (step 10). */
        heightTolerance: z.number().int().min(0).max(64).default(5),
        /** Re-imports after `block number X does not match parent block number Y` (step 9). */
        importRetries: z.number().int().min(0).max(20).default(5),
        /** What cleanup removes besides the RLP export files. */
        cleanup: z.strictObject({ removeGethBinary: z.boolean().default(false), removeBackup: z.boolean().default(false) }).default({ removeGethBinary: false, removeBackup: false }),
        bootnode: enode,
        validatorKeySecret: secretRef,
        publicIp: ipv4.optional(),
        hardware: hardwareTarget.partial().optional(),
    })
    .superRefine((s, ctx) => {
        const needs = { migrate: "reth", rollback: "geth", cleanup: "reth" } as const;
        if (s.switch !== undefined && s.executionClient !== needs[s.switch]) {
            ctx.addIssue({ code: "custom", path: ["switch"], message: `switch: ${s.switch} goes with executionClient: ${needs[s.switch]} (the client the validator runs afterwards), not ${s.executionClient}` });
        }
    });

/**
 * Node software: a release archive (.tar.gz) fetched by URL on the host and checked against its
 * sha256, given inline or as a SHA256SUMS-format file (as releases publish them) on the machine
 * that runs pulumi, looked up by the URL's file name.
 */
export const release = z.strictObject({
    url: httpUrl,
    sha256: z.string().regex(/^[0-9a-f]{64}$/, "not a sha256 (64 lowercase hex characters)").optional(),
    sha256File: z.string().min(1).optional(),
});
const releaseName = z.string().regex(/^[a-z0-9][a-z0-9-]{0,30}[a-z0-9]$/, "release names are 2-32 lowercase letters, digits and dashes");

const nodeName = z.string().regex(/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/, "node names are 2-32 lowercase letters, digits and dashes, starting with a letter");
const hostRef = z.string().min(1);

export const nodeSpec = z.discriminatedUnion(
    "role",
    [
        z.strictObject({ name: nodeName, role: z.literal("storage"), host: hostRef, release: releaseName.optional(), storage: storageSettings }),
        z.strictObject({ name: nodeName, role: z.literal("sequencer"), host: hostRef, release: releaseName.optional(), sequencer: sequencerSettings }),
        z.strictObject({ name: nodeName, role: z.literal("validator"), host: hostRef, release: releaseName.optional(), validator: validatorSettings }),
    ],
    { error: (issue) => (issue.code === "invalid_union" ? "role must be one of storage, sequencer, validator" : undefined) },
);

export const fleetSpec = z.strictObject({
    /** enforce (default) fails the preview on a host below target; warn only reports it. */
    hardwareCheck: z.enum(["enforce", "warn"]).default("enforce"),
    hosts: z.record(z.string().regex(/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/, "host names are 2-32 lowercase letters, digits and dashes"), hostSpec),
    nodes: z.array(nodeSpec).min(1, "a fleet needs at least one node"),
    /** Node software by name; a node names the release its host installs for it. */
    releases: z.record(releaseName, release).default({}),
});

export type FleetSpec = z.infer<typeof fleetSpec>;
export type ReleaseSpec = z.infer<typeof release>;
export type HostSpec = z.infer<typeof hostSpec>;
export type AwsHostSpec = z.infer<typeof awsHost>;
export type HetznerHostSpec = z.infer<typeof hetznerHost>;
export type ExistingHostSpec = z.infer<typeof existingHost>;
export type NodeSpec = z.infer<typeof nodeSpec>;
export type Role = NodeSpec["role"];
export type StorageSettings = z.infer<typeof storageSettings>;
export type SequencerSettings = z.infer<typeof sequencerSettings>;
export type ValidatorSettings = z.infer<typeof validatorSettings>;
export type HardwareTarget = z.infer<typeof hardwareTarget>;
