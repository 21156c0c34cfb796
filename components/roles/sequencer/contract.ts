// The sequencer role's contract (components/roles/contract.ts): an Aztec sequencer, its settings
// by version, where it lives on its host, the ports it binds, the keys it signs with and its health
// command, units and tools.
import { z } from "zod";
import { cidr, ipv4, notWorld, rpcUrl, secretRef, usableAddress } from "../../values/primitives";
import { AZTEC_PORTS } from "../../values/port-defaults";
import { addressOfPrivateKey, privateKeyReason } from "../../values/validators";
import { HOST_LIB, nodeDataDir } from "../../base/layout";
import {
    both,
    DIAGNOSIS_TOOLS,
    LOCAL,
    PUBLIC,
    RPC_TOOL,
    UNITS_TOOL,
    urlSecrets,
    type Exposure,
    type RoleContract,
    roleNode,
    type SecretUse,
} from "../contract";

/**
 * The Aztec versions nodefleet knows, each with the flag and variable names it renders for it
 * (components/roles/sequencer/aztec-versions.ts). 2.0.x is the spec's 2.x (alpha-testnet, a staking asset
 * handler, getInfo on a validator registry; no registry serves it: the simulator speaks it); 4.1.2
 * is what the npm registry serves (direct deposit into the rollup with a BLS key, getStatus and the
 * entry queue), checked against the real CLI. An unknown version is refused: its flags and
 * variables are not known, and a renamed one would be ignored silently.
 */
export const SEQUENCER_VERSIONS = ["2.0.x", "4.1.2"] as const;
const UNKNOWN_VERSION = `version must be one nodefleet knows: 2.0.x (the spec's 2.x), 4.1.2 (each version names its flags and variables differently; pin the one aztec-up installs)`;

const sequencerCommon = {
    l1RpcUrls: z
        .array(rpcUrl)
        .min(1, "at least one L1 RPC URL is needed")
        .describe("L1 execution RPC URLs (the node's ETHEREUM_HOSTS, in its root-only env file; each a URL or {secret: <name>})."),
    l1ConsensusHostUrls: z
        .array(rpcUrl)
        .min(1, "at least one L1 beacon URL is needed")
        .describe(
            "L1 beacon (consensus) URLs (the node's L1_CONSENSUS_HOST_URLS, in its root-only env file; each a URL or {secret: <name>}).",
        ),
    coinbase: usableAddress.describe("Address that receives the sequencer's rewards (`--sequencer.coinbase`)."),
    validatorAddress: usableAddress.describe("The validator's (attester's) address, registered on L1 by `pulumi up` when it is not yet."),
    validatorPrivateKeySecret: secretRef.describe(
        "Config key holding the validator's private key (0x and 64 hex digits): the node's validator key and the registration's sender; never on a command line.",
    ),
    runtime: z
        .enum(["docker", "release"])
        .default("release")
        .describe(
            "How the node runs: `release` (the default: the release's bin/aztec under systemd with the key in a 0600 EnvironmentFile; the runtime the lab proves on hosts with the real 4.1.2) or `docker` (docker run of the image with the key in a 0600 --env-file, never the aztec wrapper, which passes env values on docker's command line; nodefleet does not install docker, and no host here runs it: its rendered unit and arguments are checked, not run).",
        ),
    publicIp: ipv4.optional().describe("Public IP announced to peers (`--p2p.p2pIp`); defaults to the host's public address."),
    rpcAllowedCidrs: z
        .array(cidr)
        .default([])
        .superRefine(notWorld("the sequencer RPC", "; put a reverse proxy in front"))
        .describe(
            `Who may reach the JSON-RPC port ${AZTEC_PORTS.rpc} (empty: local only); never the whole internet. The admin port ${AZTEC_PORTS.admin} is never opened.`,
        ),
};

const sequencerV2 = z
    .strictObject({
        // Typed as a template literal so that `version === "4.1.2"` tells the two apart.
        // abort: a version that is not 2.0.x ends this branch, so the union reports the other's issues.
        version: z
            .string()
            .regex(/^2\.0\.(0|[1-9][0-9]{0,3})$/, { message: UNKNOWN_VERSION, abort: true })
            .meta({
                title: "2.0.x",
                description:
                    "Aztec 2.0.x: the spec's flags (`--sequencer.validatorPrivateKey` as VALIDATOR_PRIVATE_KEY, add-l1-validator through a staking asset handler).",
            }) as unknown as z.ZodType<`2.0.${number}`, string>,
        ...sequencerCommon,
        network: z
            .literal("alpha-testnet", { error: "the 2.0.x sequencer network must be alpha-testnet" })
            .default("alpha-testnet")
            .describe("The Aztec network (`--network`)."),
        l1ChainId: z
            .literal(11155111, { error: "the 2.0.x L1 chain id must be 11155111 (Sepolia)" })
            .default(11155111)
            .describe("The L1 chain id: Sepolia."),
        stakingAssetHandler: usableAddress.describe(
            "2.0.x: the staking asset handler contract the registration goes through (`--staking-asset-handler`).",
        ),
        registryAddress: usableAddress.describe(
            "2.0.x: the L1 validator registry whose getInfo(address) tells whether validatorAddress is registered.",
        ),
    })
    .describe("An Aztec 2.0.x sequencer.");

const sequencerV4 = z
    .strictObject({
        version: z
            .literal("4.1.2", { error: UNKNOWN_VERSION })
            .describe(
                "Aztec 4.1.2: `--sequencer.validatorPrivateKeys` as VALIDATOR_PRIVATE_KEYS, add-l1-validator as a direct deposit into the rollup with a BLS key.",
            ),
        ...sequencerCommon,
        network: z
            .enum(["testnet", "mainnet", "local"])
            .describe(
                "The Aztec network (`--network`): `testnet` (L1 Sepolia) or `mainnet` take the network's bootnodes and registry from Aztec's published network config; `local` is an L1 of your own (a dev chain), named by `registryAddress` and `l1ChainId`.",
            ),
        l1ChainId: z
            .number()
            .int()
            .min(1)
            .max(2 ** 53 - 1)
            .describe(
                "The L1 chain id (`--l1-chain-id`; 11155111 for testnet, 1 for mainnet); the registration refuses an L1 that answers another.",
            ),
        registryAddress: usableAddress
            .optional()
            .describe(
                "4.1.2 with network `local`: the L1 registry of your deployment (REGISTRY_CONTRACT_ADDRESS; 4.1.2 drops its `--registry-address` flag).",
            ),
        l1SlotSeconds: z
            .number()
            .int()
            .min(1)
            .max(3600)
            .optional()
            .describe(
                "4.1.2 with network `local`: how many seconds your L1 makes a block in (the node's ETHEREUM_SLOT_DURATION; 12 when absent). The node times its proposals by it: with 12 on an L1 of 2 s blocks each proposal lands a slot early and is dropped.",
            ),
        rollupAddress: usableAddress.describe(
            "4.1.2: the rollup contract the registration deposits into (`add-l1-validator --rollup`) and whose getStatus(address) and entry queue tell whether validatorAddress is registered.",
        ),
        withdrawerAddress: usableAddress.describe("4.1.2: who may withdraw the stake (`--withdrawer`)."),
        blsSecretKeySecret: secretRef.describe(
            "4.1.2: config key holding the attester's BLS secret key (a BN254 scalar, 0x and up to 64 hex digits) the registration proves possession of; never on a command line.",
        ),
    })
    .superRefine((s, ctx) => {
        const expected = { testnet: 11155111, mainnet: 1 }[s.network as "testnet" | "mainnet"];
        if (expected !== undefined && s.l1ChainId !== expected)
            ctx.addIssue({
                code: "custom",
                path: ["l1ChainId"],
                message: `network ${s.network} runs on L1 chain ${expected}, not ${s.l1ChainId}`,
            });
        if (s.network === "local" && s.registryAddress === undefined)
            ctx.addIssue({
                code: "custom",
                path: ["registryAddress"],
                message: "network local needs the registry of your L1 deployment (registryAddress)",
            });
        if (s.network !== "local" && s.registryAddress !== undefined)
            ctx.addIssue({
                code: "custom",
                path: ["registryAddress"],
                message: `network ${s.network} takes its registry from the network config; registryAddress is only for network local`,
            });
        if (s.network !== "local" && s.l1SlotSeconds !== undefined)
            ctx.addIssue({
                code: "custom",
                path: ["l1SlotSeconds"],
                message: `network ${s.network} runs on L1 slots of 12 s; l1SlotSeconds is only for network local`,
            });
    })
    .describe("An Aztec 4.1.2 sequencer.");

// A union, not a discriminated one (2.0.x is a pattern): parseFleet reports the issues of the
// branch whose version matched, or the unknown version.
export const sequencerSettings = z
    .union([sequencerV2, sequencerV4], { error: (issue) => (issue.code === "invalid_union" ? UNKNOWN_VERSION : undefined) })
    .describe("An Aztec sequencer node; its `version` decides the flags, variables and registration nodefleet renders.");

export const sequencerNode = roleNode("sequencer", { role: "An Aztec sequencer.", node: "A sequencer node." }, sequencerSettings);
export type SequencerNode = z.infer<typeof sequencerNode>;

export interface SequencerPaths {
    readonly service: string;
    readonly container: string;
    readonly dataDir: string;
    /** DATA_DIRECTORY: without it the node may keep its data in a temporary directory. */
    readonly dataDirectory: string;
    readonly etcDir: string;
    readonly envFile: string;
    readonly registerEnvFile: string;
    /** The registration's settings (no key), kept for the health check's look-up on L1. */
    readonly registrationFile: string;
    /** 4.x: the admin API's key, made on the host; the node gets its hash. */
    readonly adminKeyFile: string;
}

export function sequencerPaths(node: SequencerNode, mount: string): SequencerPaths {
    const dataDir = nodeDataDir(mount, node.name);
    const etcDir = `/etc/nodefleet/${node.name}`;
    return {
        service: `aztec-${node.name}.service`,
        container: `aztec-${node.name}`,
        dataDir,
        dataDirectory: `${dataDir}/data`,
        etcDir,
        envFile: `${etcDir}/aztec.env`,
        registerEnvFile: `${etcDir}/register.env`,
        adminKeyFile: `${etcDir}/admin-api.key`,
        registrationFile: `${etcDir}/registration.json`,
    };
}

/** docs/spec.md §8: 8 cores / 16 GB / 1 TB. */
const TARGET = { cores: 8, memoryGb: 16, diskGb: 1000, ssd: false, defaultDiskGb: 1000 } as const;

export const sequencerRole = {
    role: "sequencer",
    node: sequencerNode,
    componentType: "nodefleet:role:SequencerNode",
    baseTarget: TARGET,
    releaseRequired: "the host installs the aztec CLI and its version manager (aztec-up) from a release (see releases)",
    // A sequencer down is a missed duty: one at a time.
    rollout: { batchSize: 1, healthyWithinSeconds: 600, soakSeconds: 120, onFailure: "halt" },
    consensusRelease: false,
    target: () => TARGET,
    ports(node) {
        const s = node.sequencer;
        const rpc: Exposure = s.rpcAllowedCidrs.length > 0 ? { kind: "restricted", cidrs: s.rpcAllowedCidrs } : LOCAL;
        return [
            ...both(AZTEC_PORTS.p2p, PUBLIC, "sequencer p2p"),
            { port: AZTEC_PORTS.rpc, protocol: "tcp", exposure: rpc, purpose: "sequencer JSON-RPC" },
            { port: AZTEC_PORTS.admin, protocol: "tcp", exposure: LOCAL, purpose: "sequencer admin" },
        ];
    },
    urlSecrets: (node) => [
        ...urlSecrets("sequencer.l1RpcUrls", node.sequencer.l1RpcUrls),
        ...urlSecrets("sequencer.l1ConsensusHostUrls", node.sequencer.l1ConsensusHostUrls),
    ],
    keySecrets(node) {
        const s = node.sequencer;
        const uses: SecretUse[] = [{ path: "sequencer.validatorPrivateKeySecret", key: s.validatorPrivateKeySecret, kind: "privateKey" }];
        if (s.version === "4.1.2") uses.push({ path: "sequencer.blsSecretKeySecret", key: s.blsSecretKeySecret, kind: "blsSecretKey" });
        return uses;
    },
    signing: {
        secretField: "validatorPrivateKeySecret",
        secret: (node) => node.sequencer.validatorPrivateKeySecret,
        addressField: "validatorAddress",
        identity: (key) => (/^(0x)?[0-9a-fA-F]{64}$/.test(key) ? `aztec-attester:${addressOfPrivateKey(key).toLowerCase()}` : undefined),
        /**
         * The key must be the key of the address that names it: the validatorAddress is the attester
         * (and in 2.0.x the proposer) whose key signs as the validator and sends the registration; a
         * mismatch registers one address and signs with another. The message gives the key's address
         * (public) and neither key.
         */
        mismatch(node, key, at) {
            const s = node.sequencer;
            if (privateKeyReason(key) !== undefined) return undefined; // the key's format is the secrets check's
            const own = addressOfPrivateKey(key);
            if (own.toLowerCase() === s.validatorAddress.toLowerCase()) return undefined;
            return `${at}.sequencer.validatorAddress: ${s.validatorAddress} is not the address of the key ${at}.sequencer.validatorPrivateKeySecret names; that key's address is ${own} (what \`cast wallet address --private-key\` prints for it). Put that address here, or name the key of ${s.validatorAddress}`;
        },
    },
    rules: () => [],
    movable: false,
    health: (node) => ["python3", `${HOST_LIB}/aztec-health.py`, node.name],
    units: (node) => [sequencerPaths(node, "/").service],
    tools: [
        RPC_TOOL,
        UNITS_TOOL,
        ...DIAGNOSIS_TOOLS,
        { file: "aztec-register.py", mode: "0755" },
        { file: "aztec-argv.mjs", mode: "0644" },
        { file: "aztec-health.py", mode: "0755" },
    ],
} satisfies RoleContract<SequencerNode>;
