// Where each role's node lives on its host: its units, directories and files. The role contracts
// every layer above reads (the roles' steps, the health checks, monitoring and the rollout gates),
// so that none of them needs a role's component.
import type { NodeSpec } from "../config/schema";
import { nodeDataDir } from "../hosts/scripts";

type StorageSpec = Extract<NodeSpec, { role: "storage" }>;
type SequencerSpec = Extract<NodeSpec, { role: "sequencer" }>;
type ValidatorSpec = Extract<NodeSpec, { role: "validator" }>;

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

export function storagePaths(node: StorageSpec, mount: string): StoragePaths {
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

export function sequencerPaths(node: SequencerSpec, mount: string): SequencerPaths {
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

export interface ValidatorPaths {
    /** The node data root: the units' working directory. */
    readonly dataRoot: string;
    readonly gethDir: string;
    readonly rethDir: string;
    readonly consensusHome: string;
    /** The one JWT secret file both the execution client and 0gchaind read (docs/spec.md §5). */
    readonly jwt: string;
    readonly gethService: string;
    readonly rethService: string;
    readonly consensusService: string;
    /** Staged unit files, settings and default config files: /etc/nodefleet/<node>. */
    readonly etcDir: string;
}

export function validatorPaths(node: ValidatorSpec, mount: string): ValidatorPaths {
    const dataRoot = nodeDataDir(mount, node.name);
    return {
        dataRoot,
        gethDir: `${dataRoot}/geth`,
        rethDir: `${dataRoot}/reth`,
        consensusHome: `${dataRoot}/0gchaind`,
        jwt: `${dataRoot}/jwt.hex`,
        gethService: `geth-${node.name}.service`,
        rethService: `reth-${node.name}.service`,
        consensusService: `0gchaind-${node.name}.service`,
        etcDir: `/etc/nodefleet/${node.name}`,
    };
}
