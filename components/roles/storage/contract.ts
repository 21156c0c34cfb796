// The storage role's contract (components/roles/contract.ts): a 0G storage node (zgs_node), its
// settings, where it lives on its host, the ports it binds, the secrets it names and its health
// command, units and tools.
import { z } from "zod";
import { ipv4, multiaddr, port, rpcUrl, secretRef, usableAddress } from "../../values/primitives";
import { STORAGE_PORTS } from "../../values/port-defaults";
import { HOST_LIB, nodeDataDir } from "../../base/layout";
import { both, DIAGNOSIS_TOOLS, LOCAL, PUBLIC, RPC_TOOL, UNITS_TOOL, urlSecrets, type RoleContract, roleNode } from "../contract";

export const storageSettings = z
    .strictObject({
        rpcEndpoints: z
            .array(rpcUrl)
            .min(1, "at least one RPC endpoint is needed")
            .describe(
                "Candidate EVM RPC endpoints of the 0G chain, in order of preference, each a URL or {secret: <name>} (an endpoint with an API key): `pulumi up` writes the first one that answers into config.toml (failover).",
            ),
        logContractAddress: usableAddress.describe("The flow (log) contract: config.toml's log_contract_address."),
        mineContractAddress: usableAddress.describe(
            'The mine (PoRA) contract: config.toml\'s mine_contract_address. The real node does not start without it ("Unable to parse mine_address"), miner key or not.',
        ),
        rewardContractAddress: usableAddress
            .optional()
            .describe("The reward contract: config.toml's reward_contract_address (the node reads it when it prunes data)."),
        networkBootNodes: z.array(multiaddr).default([]).describe("libp2p boot nodes: config.toml's network_boot_nodes."),
        networkEnrAddress: ipv4
            .optional()
            .describe("Public address announced to peers (network_enr_address); defaults to the host's public address."),
        p2pPort: port.default(STORAGE_PORTS.p2p).describe("libp2p TCP and discovery UDP port; open to the world."),
        rpcPort: port.default(STORAGE_PORTS.rpc).describe("The node's JSON-RPC port; local only."),
        adminRpcPort: port.default(STORAGE_PORTS.adminRpc).describe("The node's admin RPC port; local only."),
        grpcPort: port.default(STORAGE_PORTS.grpc).describe("The node's gRPC port; local only."),
        minerKeySecret: secretRef.describe(
            "Config key holding the miner key (64 hex digits); written to config.toml readable by the service user only.",
        ),
        rpcBind: ipv4
            .default("127.0.0.1")
            .describe("Address the node's RPC listens on; 127.0.0.1 unless a reverse proxy on another address needs it."),
        logSyncStartBlock: z
            .number()
            .int()
            .min(0)
            .default(0)
            .describe("log_sync_start_block_number: where the log sync starts (the flow contract's deploy block)."),
    })
    .describe("A 0G storage node (zgs_node).");

export const storageNode = roleNode("storage", { role: "A 0G storage node.", node: "A storage node." }, storageSettings);
export type StorageNode = z.infer<typeof storageNode>;

export interface StoragePaths {
    readonly service: string;
    readonly dataDir: string;
    readonly runDir: string;
    readonly dbDir: string;
    readonly etcDir: string;
    /** Root-only: the miner key (64 hex digits), written by the key step; zgs-endpoint puts it into config.toml. */
    readonly minerKeyFile: string;
    /** Root-only: the RPC endpoints (they may carry API keys), written by the key step. */
    readonly urlsFile: string;
    /** config.toml with the endpoint placeholder (the configure step's), and the config.toml zgs-endpoint renders from it. */
    readonly templateFile: string;
    readonly configFile: string;
    readonly logConfigFile: string;
    /** The RPC endpoint failover's units. */
    readonly failoverService: string;
    readonly failoverTimer: string;
}

export function storagePaths(node: StorageNode, mount: string): StoragePaths {
    const dataDir = nodeDataDir(mount, node.name);
    return {
        service: `zgs-${node.name}.service`,
        dataDir,
        runDir: `${dataDir}/run`,
        dbDir: `${dataDir}/db`,
        etcDir: `/etc/nodefleet/${node.name}`,
        minerKeyFile: `/etc/nodefleet/${node.name}/miner.key`,
        urlsFile: `/etc/nodefleet/${node.name}/urls.json`,
        templateFile: `${dataDir}/run/config.toml.nodefleet`,
        configFile: `${dataDir}/run/config.toml`,
        logConfigFile: `${dataDir}/run/log_config`,
        failoverService: `zgs-${node.name}-failover.service`,
        failoverTimer: `zgs-${node.name}-failover.timer`,
    };
}

/** docs/spec.md §8: 8 cores / 32 GB / 500 GB (1 TB recommended) fast SSD. */
const TARGET = { cores: 8, memoryGb: 32, diskGb: 500, ssd: true, defaultDiskGb: 1000 } as const;

export const storageRole = {
    role: "storage",
    node: storageNode,
    componentType: "nodefleet:role:StorageNode",
    baseTarget: TARGET,
    releaseRequired: "the host installs the storage node's software (zgs_node) from a release (see releases)",
    // Storage nodes lose only their own PoRA rewards while down, so a quarter at a time; one must
    // catch up to fewer than 5 blocks behind: its time to healthy is longer.
    rollout: { batchSize: "25%", healthyWithinSeconds: 900, soakSeconds: 60, onFailure: "halt" },
    consensusRelease: false,
    target: () => TARGET,
    ports(node) {
        const s = node.storage;
        return [
            // libp2p TCP and discovery UDP share one port (zgs_node's network settings).
            ...both(s.p2pPort, PUBLIC, "storage p2p"),
            { port: s.rpcPort, protocol: "tcp", exposure: LOCAL, purpose: "storage RPC" },
            { port: s.adminRpcPort, protocol: "tcp", exposure: LOCAL, purpose: "storage admin RPC" },
            { port: s.grpcPort, protocol: "tcp", exposure: LOCAL, purpose: "storage gRPC" },
        ];
    },
    urlSecrets: (node) => urlSecrets("storage.rpcEndpoints", node.storage.rpcEndpoints),
    keySecrets: (node) => [{ path: "storage.minerKeySecret", key: node.storage.minerKeySecret, kind: "minerKey" }],
    rules(node, at) {
        if (node.storage.networkBootNodes.length > 0 && !node.storage.networkEnrAddress) {
            return [`${at}.storage.networkEnrAddress: required when networkBootNodes is set (UDP discovery needs both)`];
        }
        return [];
    },
    movable: false,
    health: (node) => ["python3", `${HOST_LIB}/zgs-health.py`, node.name],
    units: (node) => [storagePaths(node, "/").service],
    tools: [
        RPC_TOOL,
        UNITS_TOOL,
        ...DIAGNOSIS_TOOLS,
        { file: "zgs-endpoint.py", mode: "0755" },
        { file: "zgs-health.py", mode: "0755" },
        { file: "zgs-stop.py", mode: "0755" },
    ],
} satisfies RoleContract<StorageNode>;
