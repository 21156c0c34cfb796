// The stack config schema (key `nodefleet:fleet`). Everything that decides which
// resources exist is a plain, validated value here: nothing is created inside an apply.
// Each field's description is the operator's documentation: docs/configuration.md and
// docs/fleet.schema.json are generated from this file (`scripts/docs.sh`).
import { z } from "zod";
import * as v from "./validators";
import { AZTEC_PORTS, STORAGE_PORTS } from "./port-defaults";
import { monitoringSpec } from "./monitoring";
import { rolloutSpec } from "./rollout";
import { checked, cidr, cometPeer, enode, hostName, ipv4, multiaddr, notWorld, port, releaseUrl, rpcUrl, secretRef, unixUser, usableAddress } from "./primitives";

const adminCidrs = z
    .array(cidr)
    .min(1, "at least one admin CIDR is needed for SSH")
    .superRefine(notWorld("SSH"))
    .describe("Who may reach SSH: the only ranges the host firewall opens SSH to. Never the whole internet, in any spelling.");
const sshKeyName = z.string().min(1).describe("Name of the SSH public key already registered with the cloud provider, installed for the login user.");
const sshPrivateKeySecret = secretRef.describe("Config key holding the SSH private key nodefleet logs in with (`pulumi config set --secret`).");

const awsRegion = z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-[0-9]$/, "not an AWS region (e.g. eu-central-1)");

const ebsVolume = z
    .strictObject({
        sizeGb: z.number().int().min(8).max(65536).describe("Size in GB."),
        type: z.enum(["gp3", "io2"]).default("gp3").describe("EBS volume type."),
        iops: z.number().int().min(100).max(256000).optional().describe("Provisioned IOPS: gp3 3000-80000 (default 3000); required for io2."),
        throughput: z.number().int().min(125).max(2000).optional().describe("gp3 only: throughput in MiB/s, at most iops / 4."),
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

export const awsHost = z
    .strictObject({
        kind: z.literal("aws").describe("An EC2 instance nodefleet creates, with its security group and data volume."),
        region: awsRegion.describe("AWS region."),
        availabilityZone: z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$/, "not an availability zone (e.g. eu-central-1a)").optional().describe("Availability zone; else AWS picks one in the region."),
        instanceType: z.string().min(1).describe("EC2 instance type, checked against the roles' hardware targets (the catalog in components/config/hardware.ts)."),
        ami: z.string().regex(/^ami-[0-9a-f]{8,17}$/, "not an AMI id").optional().describe("AMI id; when absent the newest official Debian 12 amd64 image is looked up."),
        subnetId: z.string().regex(/^subnet-[0-9a-f]{8,17}$/, "not a subnet id").optional().describe("Subnet to launch in; else the region's default VPC."),
        rootVolume: ebsVolume.default({ sizeGb: 40, type: "gp3" }).describe("The root volume."),
        dataVolume: ebsVolume.optional().describe("The data volume, mounted at /data; its size defaults to the sum of the roles' disk targets."),
        sshKeyName,
        sshUser: unixUser.default("admin").describe("User nodefleet logs in as (with passwordless sudo); `admin` on Debian AMIs."),
        sshPrivateKeySecret,
        hostKey: checked(v.hostKeyReason, "SSH host public key").optional().describe("Only for a server nodefleet made before it pinned host keys at first boot: its current key (`ssh-ed25519 AAAA…`, read over a path you trust). A new server needs none: nodefleet hands it a key in its user-data, then swaps to a key the server makes (docs/hosts.md)."),
        adminCidrs,
    })
    .describe("A host on AWS.");

export const hetznerLocations = ["fsn1", "nbg1", "hel1", "ash", "hil", "sin"] as const;

export const hetznerHost = z
    .strictObject({
        kind: z.literal("hetzner").describe("A Hetzner Cloud server nodefleet creates, with its firewall, primary IP and volume."),
        location: z.enum(hetznerLocations).describe("Hetzner location."),
        serverType: z.string().min(1).describe("Server type, checked against the roles' hardware targets (the catalog in components/config/hardware.ts)."),
        image: z.string().default("debian-12").describe("OS image."),
        dataVolumeGb: z.number().int().min(10).max(10240).optional().describe("Volume size in GB, mounted at /data; defaults to the sum of the roles' disk targets."),
        sshKeyName,
        sshUser: unixUser.default("root").describe("User nodefleet logs in as: root, or a user cloud-init makes at first boot with passwordless sudo."),
        sshPrivateKeySecret,
        hostKey: checked(v.hostKeyReason, "SSH host public key").optional().describe("Only for a server nodefleet made before it pinned host keys at first boot: its current key (`ssh-ed25519 AAAA…`, read over a path you trust). A new server needs none: nodefleet hands it a key in its user-data, then swaps to a key the server makes (docs/hosts.md)."),
        adminCidrs,
    })
    .describe("A host on Hetzner Cloud.");

export const existingHost = z
    .strictObject({
        kind: z.literal("existing").describe("A server that already runs Debian 12, reached over SSH (with its SFTP subsystem, which copies the host tools: OpenSSH's sftp-server, Debian's openssh-sftp-server); nodefleet creates nothing in a cloud."),
        address: checked(v.sshAddressReason, "IP address or DNS name").describe("Address nodefleet dials over SSH."),
        port: port.default(22).describe("Port nodefleet dials (a forwarded port in the dev stack)."),
        sshdPort: port.default(22).describe("Port sshd listens on inside the host; the host firewall keeps it open to adminCidrs."),
        user: unixUser.describe("User nodefleet logs in as: root, or a user with passwordless sudo."),
        sshPrivateKeySecret: sshPrivateKeySecret.optional().describe("Config key holding the SSH private key; or, instead, sshPrivateKeyFile."),
        sshPrivateKeyFile: z
            .string()
            .min(1)
            .optional()
            .describe("Path of an SSH private key file on the machine that runs pulumi (`~/` is $HOME, relative paths are relative to the project). The dev stack uses it for its per-checkout VM key; the key still reaches state only as a secret."),
        hostKey: checked(v.hostKeyReason, "SSH host public key").optional().describe("Pinned host key (`ssh-ed25519 AAAA…`); without it any key is accepted on first contact, and production policy refuses that."),
        firstBoot: z
            .literal("cloud-init")
            .optional()
            .describe("A server you boot yourself with the cloud-init user-data nodefleet makes for it (the stack output `firstBootUserData`; docs/hosts.md): its host key is pinned from its first boot, as a cloud host's is. Instead of hostKey."),
        dataMountPoint: z.string().regex(/^\/[A-Za-z0-9._/-]*$/, "not an absolute path").default("/data").describe("Mount point of the data disk; it must already exist on the host."),
        adminCidrs,
    })
    .describe("A server that already exists.");

export const hostSpec = z.discriminatedUnion("kind", [awsHost, hetznerHost, existingHost], {
    error: (issue) => (issue.code === "invalid_union" ? "kind must be one of aws, hetzner, existing" : undefined),
});

const hardwareTarget = z.strictObject({
    cores: z.number().int().min(1).describe("CPU cores."),
    memoryGb: z.number().int().min(1).describe("Memory in GB."),
    diskGb: z.number().int().min(1).describe("Data disk in GB."),
});

export const storageSettings = z
    .strictObject({
        rpcEndpoints: z
            .array(rpcUrl)
            .min(1, "at least one RPC endpoint is needed")
            .describe("Candidate EVM RPC endpoints of the 0G chain, in order of preference, each a URL or {secret: <name>} (an endpoint with an API key): `pulumi up` writes the first one that answers into config.toml (failover)."),
        logContractAddress: usableAddress.describe("The flow (log) contract: config.toml's log_contract_address."),
        mineContractAddress: usableAddress.describe("The mine (PoRA) contract: config.toml's mine_contract_address. The real node does not start without it (\"Unable to parse mine_address\"), miner key or not."),
        rewardContractAddress: usableAddress.optional().describe("The reward contract: config.toml's reward_contract_address (the node reads it when it prunes data)."),
        networkBootNodes: z.array(multiaddr).default([]).describe("libp2p boot nodes: config.toml's network_boot_nodes."),
        networkEnrAddress: ipv4.optional().describe("Public address announced to peers (network_enr_address); defaults to the host's public address."),
        p2pPort: port.default(STORAGE_PORTS.p2p).describe("libp2p TCP and discovery UDP port; open to the world."),
        rpcPort: port.default(STORAGE_PORTS.rpc).describe("The node's JSON-RPC port; local only."),
        adminRpcPort: port.default(STORAGE_PORTS.adminRpc).describe("The node's admin RPC port; local only."),
        grpcPort: port.default(STORAGE_PORTS.grpc).describe("The node's gRPC port; local only."),
        minerKeySecret: secretRef.describe("Config key holding the miner key (64 hex digits); written to config.toml readable by the service user only."),
        rpcBind: ipv4.default("127.0.0.1").describe("Address the node's RPC listens on; 127.0.0.1 unless a reverse proxy on another address needs it."),
        logSyncStartBlock: z.number().int().min(0).default(0).describe("log_sync_start_block_number: where the log sync starts (the flow contract's deploy block)."),
    })
    .describe("A 0G storage node (zgs_node).");

/**
 * The Aztec versions nodefleet knows, each with the flag and variable names it renders for it
 * (components/roles/aztec-versions.ts). 2.0.x is the spec's 2.x (alpha-testnet, a staking asset
 * handler, getInfo on a validator registry; no registry serves it: the simulator speaks it); 4.1.2
 * is what the npm registry serves (direct deposit into the rollup with a BLS key, getStatus and the
 * entry queue), checked against the real CLI. An unknown version is refused: its flags and
 * variables are not known, and a renamed one would be ignored silently.
 */
export const SEQUENCER_VERSIONS = ["2.0.x", "4.1.2"] as const;
const UNKNOWN_VERSION = `version must be one nodefleet knows: 2.0.x (the spec's 2.x), 4.1.2 (each version names its flags and variables differently; pin the one aztec-up installs)`;

const sequencerCommon = {
    l1RpcUrls: z.array(rpcUrl).min(1, "at least one L1 RPC URL is needed").describe("L1 execution RPC URLs (the node's ETHEREUM_HOSTS, in its root-only env file; each a URL or {secret: <name>})."),
    l1ConsensusHostUrls: z.array(rpcUrl).min(1, "at least one L1 beacon URL is needed").describe("L1 beacon (consensus) URLs (the node's L1_CONSENSUS_HOST_URLS, in its root-only env file; each a URL or {secret: <name>})."),
    coinbase: usableAddress.describe("Address that receives the sequencer's rewards (`--sequencer.coinbase`)."),
    validatorAddress: usableAddress.describe("The validator's (attester's) address, registered on L1 by `pulumi up` when it is not yet."),
    validatorPrivateKeySecret: secretRef.describe("Config key holding the validator's private key (0x and 64 hex digits): the node's validator key and the registration's sender; never on a command line."),
    runtime: z
        .enum(["docker", "release"])
        .default("release")
        .describe("How the node runs: `release` (the default: the release's bin/aztec under systemd with the key in a 0600 EnvironmentFile; the runtime the lab proves on hosts with the real 4.1.2) or `docker` (docker run of the image with the key in a 0600 --env-file, never the aztec wrapper, which passes env values on docker's command line; nodefleet does not install docker, and no host here runs it: its rendered unit and arguments are checked, not run)."),
    publicIp: ipv4.optional().describe("Public IP announced to peers (`--p2p.p2pIp`); defaults to the host's public address."),
    rpcAllowedCidrs: z
        .array(cidr)
        .default([])
        .superRefine(notWorld("the sequencer RPC", "; put a reverse proxy in front"))
        .describe(`Who may reach the JSON-RPC port ${AZTEC_PORTS.rpc} (empty: local only); never the whole internet. The admin port ${AZTEC_PORTS.admin} is never opened.`),
};

const sequencerV2 = z
    .strictObject({
        // Typed as a template literal so that `version === "4.1.2"` tells the two apart.
        // abort: a version that is not 2.0.x ends this branch, so the union reports the other's issues.
        version: z
            .string()
            .regex(/^2\.0\.(0|[1-9][0-9]{0,3})$/, { message: UNKNOWN_VERSION, abort: true })
            .meta({ title: "2.0.x", description: "Aztec 2.0.x: the spec's flags (`--sequencer.validatorPrivateKey` as VALIDATOR_PRIVATE_KEY, add-l1-validator through a staking asset handler)." }) as unknown as z.ZodType<`2.0.${number}`, string>,
        ...sequencerCommon,
        network: z.literal("alpha-testnet", { error: "the 2.0.x sequencer network must be alpha-testnet" }).default("alpha-testnet").describe("The Aztec network (`--network`)."),
        l1ChainId: z.literal(11155111, { error: "the 2.0.x L1 chain id must be 11155111 (Sepolia)" }).default(11155111).describe("The L1 chain id: Sepolia."),
        stakingAssetHandler: usableAddress.describe("2.0.x: the staking asset handler contract the registration goes through (`--staking-asset-handler`)."),
        registryAddress: usableAddress.describe("2.0.x: the L1 validator registry whose getInfo(address) tells whether validatorAddress is registered."),
    })
    .describe("An Aztec 2.0.x sequencer.");

const sequencerV4 = z
    .strictObject({
        version: z.literal("4.1.2", { error: UNKNOWN_VERSION }).describe("Aztec 4.1.2: `--sequencer.validatorPrivateKeys` as VALIDATOR_PRIVATE_KEYS, add-l1-validator as a direct deposit into the rollup with a BLS key."),
        ...sequencerCommon,
        network: z
            .enum(["testnet", "mainnet", "local"])
            .describe("The Aztec network (`--network`): `testnet` (L1 Sepolia) or `mainnet` take the network's bootnodes and registry from Aztec's published network config; `local` is an L1 of your own (a dev chain), named by `registryAddress` and `l1ChainId`."),
        l1ChainId: z.number().int().min(1).max(2 ** 53 - 1).describe("The L1 chain id (`--l1-chain-id`; 11155111 for testnet, 1 for mainnet); the registration refuses an L1 that answers another."),
        registryAddress: usableAddress.optional().describe("4.1.2 with network `local`: the L1 registry of your deployment (REGISTRY_CONTRACT_ADDRESS; 4.1.2 drops its `--registry-address` flag)."),
        l1SlotSeconds: z
            .number()
            .int()
            .min(1)
            .max(3600)
            .optional()
            .describe("4.1.2 with network `local`: how many seconds your L1 makes a block in (the node's ETHEREUM_SLOT_DURATION; 12 when absent). The node times its proposals by it: with 12 on an L1 of 2 s blocks each proposal lands a slot early and is dropped."),
        rollupAddress: usableAddress.describe("4.1.2: the rollup contract the registration deposits into (`add-l1-validator --rollup`) and whose getStatus(address) and entry queue tell whether validatorAddress is registered."),
        withdrawerAddress: usableAddress.describe("4.1.2: who may withdraw the stake (`--withdrawer`)."),
        blsSecretKeySecret: secretRef.describe("4.1.2: config key holding the attester's BLS secret key (a BN254 scalar, 0x and up to 64 hex digits) the registration proves possession of; never on a command line."),
    })
    .superRefine((s, ctx) => {
        const expected = { testnet: 11155111, mainnet: 1 }[s.network as "testnet" | "mainnet"];
        if (expected !== undefined && s.l1ChainId !== expected)
            ctx.addIssue({ code: "custom", path: ["l1ChainId"], message: `network ${s.network} runs on L1 chain ${expected}, not ${s.l1ChainId}` });
        if (s.network === "local" && s.registryAddress === undefined)
            ctx.addIssue({ code: "custom", path: ["registryAddress"], message: "network local needs the registry of your L1 deployment (registryAddress)" });
        if (s.network !== "local" && s.registryAddress !== undefined)
            ctx.addIssue({ code: "custom", path: ["registryAddress"], message: `network ${s.network} takes its registry from the network config; registryAddress is only for network local` });
        if (s.network !== "local" && s.l1SlotSeconds !== undefined)
            ctx.addIssue({ code: "custom", path: ["l1SlotSeconds"], message: `network ${s.network} runs on L1 slots of 12 s; l1SlotSeconds is only for network local` });
    })
    .describe("An Aztec 4.1.2 sequencer.");

// A union, not a discriminated one (2.0.x is a pattern): parseFleet reports the issues of the
// branch whose version matched, or the unknown version.
export const sequencerSettings = z
    .union([sequencerV2, sequencerV4], { error: (issue) => (issue.code === "invalid_union" ? UNKNOWN_VERSION : undefined) })
    .describe("An Aztec sequencer node; its `version` decides the flags, variables and registration nodefleet renders.");

/** <prefix><suffix> ports, prefix 1-64 so that <prefix>660 stays <= 65535 (docs/spec.md §8). */
export const portPrefix = z
    .union([z.number(), z.string()])
    .describe("The validator's port prefix P: its ports are P + a fixed suffix (P303 execution p2p, P656 CometBFT p2p, the rest local only); 1-64.")
    .transform((p, ctx) => {
        const text = String(p);
        if (!/^[1-9][0-9]?$/.test(text) || Number(text) > 64) {
            ctx.addIssue({ code: "custom", message: `port prefix ${text} must be a number 1-64 so that every <prefix><suffix> port (up to <prefix>660) is a valid port` });
            return z.NEVER;
        }
        return Number(text);
    });

const RELEASE_NAME = /^[a-z0-9][a-z0-9-]{0,30}[a-z0-9]$/;
const RELEASE_NAME_RULE = "release names are 2-32 lowercase letters, digits and dashes";

export const validatorSettings = z
    .strictObject({
        portPrefix,
        executionClient: z.enum(["geth", "reth"]).default("geth").describe("The execution client the validator runs (after the switch, when one is asked)."),
        switch: z
            .enum(["migrate", "rollback", "cleanup"])
            .optional()
            .describe("The geth -> reth switch: `migrate` (with executionClient: reth) runs its 14 steps, `rollback` (executionClient: geth) restores geth from the backup, `cleanup` (executionClient: reth) removes the export files after 24 h of reth running. See docs/switch.md."),
        switchAttempt: z
            .number()
            .int()
            .min(1)
            .max(1000)
            .default(1)
            .describe("Which attempt of the switch this is. Pulumi's state records each completed step (it is not run again and previews as unchanged), so going back to a mode already recorded for this attempt (migrate again after a rollback, rollback again after a failed migrate) needs a new attempt: raise it by one. See docs/switch.md."),
        lowDowntime: z
            .boolean()
            .default(false)
            .describe("With `switch: migrate`: the low-downtime switch (steps l01..l14): the running geth exports the chain and reth imports it while 0gchaind keeps committing on geth; the validator stops only for the cutover (the blocks made meanwhile exported and imported, the head's hash compared). geth's datadir is kept whole as the way back (no backup copy); needs 2x the geth datadir free and geth's IPC socket. Choose it when the switch starts: the two modes never mix on a host. See docs/switch.md."),
        referenceRpcUrl: rpcUrl.optional().describe("A URL or {secret: <name>}: a public endpoint of the chain: step 10 also checks reth's block hash at the imported head against it (besides geth's), and reports the gap to its head as the catch-up 0gchaind drives."),
        consensusRpcUrl: rpcUrl
            .optional()
            .describe("A URL or {secret: <name>}: a CometBFT RPC of the validator's network that the machine running pulumi reaches (a sentry's, or a public one; not this validator's own, which listens on its loopback). With a `rollout` section, preview and up read the network's validator set there (`/status`, `/validators`) and keep what each batch takes offline within `rollout.maxOfflinePower`. Unset: the validator's voting power is not known and the rollout counts it as a node only."),
        heightTolerance: z.number().int().min(0).max(64).default(5).describe("How many blocks the execution client may be behind the reference (else the noted head) when the -38002 remedy starts 0gchaind again."),
        importRetries: z.number().int().min(0).max(20).default(5).describe("Re-imports after an import that did not complete (reth's `mismatched parent hash` or `block number X does not match parent block number Y`, a kill, a host restart), each from the last block every stage of reth finished."),
        cleanup: z
            .strictObject({
                removeGethBinary: z.boolean().default(false).describe("Also remove the geth binary."),
                removeBackup: z.boolean().default(false).describe("Also remove geth's data backup (the way back)."),
            })
            .default({ removeGethBinary: false, removeBackup: false })
            .describe("What `switch: cleanup` removes besides the RLP export files."),
        abandonHost: hostName
            .optional()
            .describe("The override for a validator moving off a host nodefleet cannot reach or no longer has in the config: that host's name. nodefleet then does not stop 0gchaind there first; set it only when that host is gone for good or its 0gchaind is stopped and its key removed (one key must never sign on two machines). See docs/operations.md."),
        bootnode: enode.describe("The execution client's boot node."),
        consensusSeeds: z
            .array(cometPeer)
            .max(32)
            .default([])
            .describe("The consensus daemon's CometBFT seed nodes (`--p2p.seeds`), each `<node id>@<host>:<port>`; empty: the consensus home's own config.toml decides."),
        consensusPeers: z
            .array(cometPeer)
            .max(32)
            .default([])
            .describe("The consensus daemon's CometBFT persistent peers (`--p2p.persistent_peers`), each `<node id>@<host>:<port>`: the network's nodes it always keeps a connection to."),
        validatorKeySecret: secretRef.describe("Config key holding priv_validator_key.json (the CometBFT validator key); never on two hosts."),
        publicIp: ipv4.optional().describe("Public IP announced to peers; defaults to the host's public address."),
        hardware: hardwareTarget.partial().optional().describe("This validator's hardware target, where it differs from the default 8 cores / 32 GB / 1000 GB."),
        upgrade: z
            .strictObject({
                release: z.string().regex(RELEASE_NAME, RELEASE_NAME_RULE).describe("The entry of `releases` the node moves to at the height (its host installs it ahead, beside the running one)."),
                height: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe("The network's agreed upgrade height: the node commits it on its release, then stops and starts the new one, which signs the next height."),
            })
            .optional()
            .describe("An upgrade at an agreed height: `pulumi up` installs the release beforehand and arms a watcher on the host (nothing restarts); at the height the watcher stops the consensus daemon and starts the execution client and the daemon on the new release. Afterwards name the release in the node's `release` and remove this. See docs/rollouts.md."),
    })
    .superRefine((s, ctx) => {
        const needs = { migrate: "reth", rollback: "geth", cleanup: "reth" } as const;
        if (s.switch !== undefined && s.executionClient !== needs[s.switch]) {
            ctx.addIssue({ code: "custom", path: ["switch"], message: `switch: ${s.switch} goes with executionClient: ${needs[s.switch]} (the client the validator runs afterwards), not ${s.executionClient}` });
        }
        if (s.upgrade !== undefined && (s.switch === "migrate" || s.switch === "rollback")) {
            ctx.addIssue({ code: "custom", path: ["upgrade"], message: `an upgrade at a height and switch: ${s.switch} change the node's units both: finish the switch first (or schedule the upgrade after it)` });
        }
        if (s.lowDowntime && s.switch !== "migrate") {
            ctx.addIssue({ code: "custom", path: ["lowDowntime"], message: `lowDowntime chooses how switch: migrate runs; it means nothing with switch: ${s.switch ?? "(none)"} (rollback and cleanup know the mode from the host): remove it` });
        }
    })
    .describe("A 0G chain validator: 0gchaind with geth or reth.");

/**
 * Node software: a release archive (.tar.gz) fetched by URL on the host and checked against its
 * sha256, given inline or as a SHA256SUMS-format file (as releases publish them) on the machine
 * that runs pulumi, looked up by the URL's file name.
 */
export const release = z
    .strictObject({
        url: releaseUrl.optional().describe("Where the host downloads the .tar.gz archive: a URL, or `{secret: <name>}` when it carries a credential (`user:password@`, a token in its query), which plain config refuses. Or, instead, `file` under the stack's `releaseMirror`."),
        file: z
            .string()
            .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,126}\.tar\.gz$/, "a file name of letters, digits, '.', '_', '+' and '-' ending in .tar.gz, with no '/'")
            .optional()
            .describe("The archive's file name under the stack's `releaseMirror` (the host downloads <releaseMirror><file>): what promotion carries from stack to stack, never an address. Instead of url."),
        version: z
            .string()
            .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/, "a version of letters, digits, '.', '_', '+' and '-'")
            .optional()
            .describe("The release's version, as its publisher names it (`v1.1.0`): with its name and sha256, what identifies it when it is promoted (scripts/promote.mjs)."),
        simulator: z
            .literal(true)
            .optional()
            .describe("The release carries a simulator of the lab's (lab/sim) in place of real software: promotion never carries it out of the dev stack."),
        sha256: z.string().regex(/^[0-9a-f]{64}$/, "not a sha256 (64 lowercase hex characters)").optional().describe("The archive's sha256; or, instead, sha256File."),
        sha256File: z.string().min(1).optional().describe("A SHA256SUMS-format file on the machine that runs pulumi; the line for the URL's file name is used."),
        consensus: z
            .strictObject({
                daemon: z
                    .enum(["0gchaind", "beacond"])
                    .default("0gchaind")
                    .describe("The consensus daemon in the release's bin/: `0gchaind` (0G's, flags `--chaincfg.*`; the spec's) or `beacond` (BeaconKit's, the open core of 0gchaind, flags `--beacon-kit.*`; the lab's dev chain)."),
                chainSpec: z
                    .enum(["mainnet", "testnet", "devnet"])
                    .optional()
                    .describe("The chain spec the daemon runs: 0gchaind's `--chaincfg.chain-spec`, beacond's CHAIN_SPEC environment variable (v1.1 has no flag). Unset: the daemon's default (mainnet)."),
                genesis: z
                    .string()
                    .regex(/^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*\.json$/, "a path inside the release: names of letters, digits, '.', '_' and '-' separated by '/', not starting with '/' or '.', ending in .json")
                    .optional()
                    .describe("The network's consensus genesis inside the release (as 0G's release ships it under `0g-home/`): installed as the home's config/genesis.json where it has none; a home with another genesis is refused, never overwritten. Unset: the home brings its own."),
            })
            .optional()
            .describe("A validator release only: the consensus daemon it carries. Unset: 0gchaind with its default chain spec."),
    })
    .describe("Node software: a release archive, installed only when its sha256 matches.");
const releaseName = z.string().regex(RELEASE_NAME, RELEASE_NAME_RULE);
const nodeRelease = releaseName.optional().describe("Name of the entry of `releases` this node's host installs for it.");

const nodeName = z.string().regex(/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/, "node names are 2-32 lowercase letters, digits and dashes, starting with a letter");
const hostRef = z.string().min(1).describe("Name of the entry of `hosts` the node runs on; nodes sharing a host add up their hardware targets.");
const nodeNameField = nodeName.describe("The node's name: its units, data directory and resources are named after it.");

export const nodeSpec = z.discriminatedUnion(
    "role",
    [
        z.strictObject({ name: nodeNameField, role: z.literal("storage").describe("A 0G storage node."), host: hostRef, release: nodeRelease, storage: storageSettings }).describe("A storage node."),
        z.strictObject({ name: nodeNameField, role: z.literal("sequencer").describe("An Aztec sequencer."), host: hostRef, release: nodeRelease, sequencer: sequencerSettings }).describe("A sequencer node."),
        z.strictObject({ name: nodeNameField, role: z.literal("validator").describe("A 0G chain validator."), host: hostRef, release: nodeRelease, validator: validatorSettings }).describe("A validator node."),
    ],
    { error: (issue) => (issue.code === "invalid_union" ? "role must be one of storage, sequencer, validator" : undefined) },
);

export const fleetSpec = z
    .strictObject({
        hardwareCheck: z.enum(["enforce", "warn"]).default("enforce").describe("`enforce` fails the preview on a host below its roles' hardware targets; `warn` only reports it."),
        shards: z
            .array(z.string().regex(/^[a-z0-9-]{1,64}$/, "a stack name: lowercase letters, digits and dashes"))
            .min(2, "a fleet split into shards has two stacks or more")
            .refine((a) => new Set(a).size === a.length, "each stack once")
            .optional()
            .describe("The stacks this fleet is split into, this one among them (docs/gitops.md, Shards). Each reads the others' Pulumi.<stack>.yaml and last outputs and refuses a node, key or host another shard holds: one key never signs on two machines."),
        secretsDir: z
            .string()
            .regex(/^[^\0\r\n]+$/, "a directory path on one line")
            .optional()
            .describe(
                "A directory on the machine that runs Pulumi (`~/` is the home directory, a relative path is relative to the project, which must not hold it) where a secret the fleet names may be a file of that name instead of a config key: mode 600 files in a mode 700 directory. For fleets whose keys do not fit in the stack config (docs/configuration.md, \"A fleet in a file\"). A name is a config key or a file, never both.",
            ),
        hosts: z
            .record(hostName, hostSpec)
            .describe("The machines, by name (2-32 lowercase letters, digits and dashes)."),
        nodes: z.array(nodeSpec).min(1, "a fleet needs at least one node").describe("The nodes, each on one of the hosts."),
        releases: z.record(releaseName, release).default({}).describe("Node software by name; a node names the release its host installs for it."),
        releaseMirror: z
            .string()
            .refine((u) => v.httpUrlReason(u) === undefined && v.urlCredentialReason(u, false) === undefined && u.endsWith("/"), "an http or https URL of a directory, ending in '/', with no credential in it")
            .optional()
            .describe("Where this stack's hosts fetch releases given by `file` (a mirror of the releases you run, reachable from the hosts): each stack names its own, so promotion moves what a release is (name, version, sha256, file), never where a stack keeps it."),
        privateMirrorCidrs: z
            .array(cidr)
            .default([])
            .describe("Private address ranges this stack's hosts reach a release mirror in (a mirror inside your network). Promotion into this stack refuses a release address in any other private, loopback, link-local or lab range, naming it."),
        monitoring: monitoringSpec.optional().describe("Prometheus, Alertmanager and node_exporter for the fleet (docs/monitoring.md). Unset: no monitoring is installed."),
        rollout: rolloutSpec.optional().describe("Health-gated rollouts (docs/rollouts.md): a change that restarts nodes goes through each role batch by batch, each node's gate waiting for it to be healthy. Unset: every node's steps run at once, ungated."),
    })
    .describe("The fleet: the value of the stack config key `nodefleet:fleet`, or the content of the project file `nodefleet:fleetFile` names.");

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
