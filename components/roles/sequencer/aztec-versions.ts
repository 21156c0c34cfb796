// What each Aztec version nodefleet knows reads: the start flags, the variable that carries the
// validator key, and how the registration works and is looked up. Each version gets
// its primary names, never a name it reads only as a fallback of another: a fallback renamed or
// dropped in the next release would be ignored without a word. The 4.1.2 table is checked
// against the real CLI's option parser and config mappings by the cli tier's contract tests
// (test/cli/aztec-contract.test.ts); 2.0.x is the spec's text, served by no registry, and only
// the simulator (lab/sim/nodefleet_sim/aztec.py) speaks it.
import type { NodeSpec } from "../../config/schema";
import { AZTEC_PORTS } from "../../values/port-defaults";

export type SequencerSpec = Extract<NodeSpec, { role: "sequencer" }>;

export interface AztecDialect {
    /** The variable of the node's root-only env file that holds the validator key. */
    readonly validatorKeyEnv: string;
    /** The variable add-l1-validator reads its sender key from when --private-key is absent. */
    readonly senderKeyEnv: "PRIVATE_KEY";
    /** How aztec-register.py registers and looks the validator up (hostfiles/aztec-register.py). */
    readonly registration: "staking-asset-handler" | "rollup-deposit";
    /**
     * Whether the node's admin API takes the hash of a key nodefleet makes on the host
     * (AZTEC_ADMIN_API_KEY_HASH): 4.1.2 otherwise makes a key itself and prints it into its log.
     */
    readonly adminKeyHash: boolean;
}

export const AZTEC_DIALECTS: Record<"2.0.x" | "4.1.2", AztecDialect> = {
    // docs/spec.md §2.4 names the flag --sequencer.validatorPrivateKey; its variable is VALIDATOR_PRIVATE_KEY.
    "2.0.x": {
        validatorKeyEnv: "VALIDATOR_PRIVATE_KEY",
        senderKeyEnv: "PRIVATE_KEY",
        registration: "staking-asset-handler",
        adminKeyHash: false,
    },
    // 4.x: --sequencer.validatorPrivateKeys / VALIDATOR_PRIVATE_KEYS (a list; VALIDATOR_PRIVATE_KEY
    // is only its fallback in @aztec/validator-client's config).
    "4.1.2": { validatorKeyEnv: "VALIDATOR_PRIVATE_KEYS", senderKeyEnv: "PRIVATE_KEY", registration: "rollup-deposit", adminKeyHash: true },
};

/** The version family a version belongs to: what decides the names (a 2.0.x patch release changes none). */
export const versionFamily = (node: SequencerSpec): "2.0.x" | "4.1.2" => (node.sequencer.version === "4.1.2" ? "4.1.2" : "2.0.x");

export const dialectOf = (node: SequencerSpec): AztecDialect => AZTEC_DIALECTS[versionFamily(node)];

/** The variables of the unit (not secret). */
export function sequencerEnvironment(node: SequencerSpec, dataDirectory: string): [string, string][] {
    const env: [string, string][] = [
        ["DATA_DIRECTORY", dataDirectory],
        ["P2P_PORT", String(AZTEC_PORTS.p2p)],
        ["AZTEC_PORT", String(AZTEC_PORTS.rpc)],
        ["AZTEC_ADMIN_PORT", String(AZTEC_PORTS.admin)],
        ["LOG_JSON", "1"],
    ];
    const s = node.sequencer;
    if (s.version === "4.1.2") {
        // 4.1.2 parses --registry-address but never puts it into the node's config (it reads
        // l1Contracts.registryAddress, which only REGISTRY_CONTRACT_ADDRESS fills): found by the
        // contract tests, and by the real node refusing to start without a registry.
        if (s.registryAddress !== undefined) env.push(["REGISTRY_CONTRACT_ADDRESS", s.registryAddress]);
        // 4.1.2 starts no P2P subsystem unless told to (P2P_ENABLED, default false; neither --network
        // nor the network's config sets it): no listener on 40400, no peerId, no gossip. Found by the
        // real node.
        env.push(["P2P_ENABLED", "true"]);
        // An L1 of one's own may make blocks faster than Ethereum's 12 s; the node reads the slot from
        // its environment, not from the rollup (the real node on the dev L1's 2 s blocks).
        if (s.l1SlotSeconds !== undefined) env.push(["ETHEREUM_SLOT_DURATION", String(s.l1SlotSeconds)]);
    }
    return env;
}

/**
 * `aztec start`'s arguments (after the program). The key and the L1 endpoints (a URL may carry an
 * API key) are not among them: they come from the root-only env file, as VALIDATOR_PRIVATE_KEY(S),
 * ETHEREUM_HOSTS and L1_CONSENSUS_HOST_URLS.
 */
export function sequencerStartArgs(node: SequencerSpec, publicIp: string): string[] {
    const s = node.sequencer;
    const tail = ["--sequencer.coinbase", s.coinbase, "--p2p.p2pIp", publicIp];
    if (s.version !== "4.1.2") return ["start", "--node", "--archiver", "--sequencer", "--network", s.network, ...tail];
    return ["start", "--node", "--archiver", "--sequencer", "--network", s.network, "--l1-chain-id", String(s.l1ChainId), ...tail];
}

/**
 * `aztec add-l1-validator`'s arguments: no key and no URL among them (the sender key is PRIVATE_KEY,
 * the L1 endpoints ETHEREUM_HOSTS, both from the registration's root-only env file; the BLS key
 * arrives through the argv preload).
 */
export function registrationArgs(node: SequencerSpec): string[] {
    const s = node.sequencer;
    if (s.version !== "4.1.2")
        return [
            "add-l1-validator",
            "--attester",
            s.validatorAddress,
            "--proposer-eoa",
            s.validatorAddress,
            "--staking-asset-handler",
            s.stakingAssetHandler,
            "--l1-chain-id",
            String(s.l1ChainId),
        ];
    return [
        "add-l1-validator",
        "--l1-chain-id",
        String(s.l1ChainId),
        "--attester",
        s.validatorAddress,
        "--withdrawer",
        s.withdrawerAddress,
        "--rollup",
        s.rollupAddress,
    ];
}
