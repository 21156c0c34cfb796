// Plain-value fleet fixtures for tests. All keys here are public test vectors or
// shaped placeholders: none controls funds or a validator anywhere.
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import { parseFleet } from "../../components/config/fleet";
import { FleetConfigError } from "../../components/config/errors";
import { type SecretSource } from "../../components/config/secrets";
import type { ReleaseSpec } from "../../components/config/schema";
import { cometAddressOf, ed25519PublicOfSeed } from "../../components/values/validators";
import { validatorRelease, type ValidatorRelease } from "../../components/roles/validator/units";

/** EIP-55 test vectors from the EIP itself. */
export const ADDR = {
    a: "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    b: "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    c: "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    d: "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
};

export const PEER_ID = "16Uiu2HAmLhLvBoYaoZfaMUKuibM6ac163GwKY74c5kiSLg5KvLpY";
/** The generator point of secp256k1 (the public key of private key 1): a valid node id. */
export const NODE_ID = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8";
export const ENODE = `enode://${NODE_ID}@203.0.113.7:30303`;
export const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAjoItmZ1hDAIPrQMjZojipAN1jxJnAeZNSeyWSQFzpA";

/** Shaped like an OpenSSH key; never a usable one. */
export const FAKE_SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nbm90LWEtcmVhbC1rZXk=\n-----END OPENSSH PRIVATE KEY-----";

/** A real priv_validator_key.json (ed25519, as 0gchaind writes it) from a deterministic seed: a test key, nobody's validator. */
export function validatorKeyJson(seed: string): string {
    const secret = crypto.createHash("sha256").update(`nodefleet test validator ${seed}`).digest();
    const pub = ed25519PublicOfSeed(secret);
    return JSON.stringify({
        address: cometAddressOf(pub),
        pub_key: { type: "tendermint/PubKeyEd25519", value: pub.toString("base64") },
        priv_key: { type: "tendermint/PrivKeyEd25519", value: Buffer.concat([secret, pub]).toString("base64") },
    });
}

/** The address of SECRETS.sequencerKey (the key of the web3.js documentation's example account). */
export const SEQUENCER_KEY_ADDRESS = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23";

export const SECRETS: Record<string, string> = {
    sshKey: FAKE_SSH_KEY,
    minerKey: "11".repeat(32),
    sequencerKey: "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
    validatorKey: validatorKeyJson("aa"),
    validatorKey2: validatorKeyJson("bb"),
    blsKey: "0x2a1f5c0e6b7d8e9f00112233445566778899aabbccddeeff0011223344556677",
};

/** A SecretSource over a map; keys listed in `plain` are reported as not encrypted. */
export function secretSource(values: Record<string, string> = SECRETS, plain: readonly string[] = []): SecretSource {
    return {
        get: (k) => values[k],
        isSecret: (k) => k in values && !plain.includes(k),
        secretNames: () => Object.keys(values).filter((k) => !plain.includes(k)),
    };
}

/** Releases by name; the checksums are placeholders (no archive is fetched in unit tests). */
export const RELEASES = () => ({
    zgs: { url: "https://github.com/0glabs/0g-storage-node/releases/download/v1.1.0/zgs_node-v1.1.0.tar.gz", sha256: "5a".repeat(32) },
    aztec: { url: "https://releases.example.org/aztec/aztec-v2.0.2.tar.gz", sha256: "a2".repeat(32) },
    "0g-chain": { url: "https://github.com/0glabs/0g-chain/releases/download/v1.0.6/aristotle-v1.0.6.tar.gz", sha256: "06".repeat(32) },
});

/** The 0g-chain release of RELEASES as a validator's host installs it, with `spec`'s consensus daemon. */
export const chainRelease = (spec?: Pick<ReleaseSpec, "consensus">): ValidatorRelease =>
    validatorRelease({ name: "0g-chain", sha256: RELEASES()["0g-chain"].sha256 }, spec);

/** The aztec release of RELEASES as a sequencer's host installs it. */
export const aztecRelease = () => ({ name: "aztec", sha256: RELEASES().aztec.sha256 });

export const storageNode = () => ({
    name: "storage-1",
    role: "storage",
    host: "h-storage",
    release: "zgs",
    storage: {
        rpcEndpoints: ["https://evmrpc-testnet.0g.ai", "http://10.0.0.9:8545"],
        logContractAddress: ADDR.a,
        mineContractAddress: ADDR.b,
        networkBootNodes: [`/ip4/203.0.113.10/udp/1234/p2p/${PEER_ID}`],
        networkEnrAddress: "198.51.100.4",
        minerKeySecret: "minerKey",
    },
});

export const sequencerNode = () => ({
    name: "sequencer-1",
    role: "sequencer",
    host: "h-sequencer",
    release: "aztec",
    sequencer: {
        version: "2.0.2",
        l1RpcUrls: ["https://sepolia.example.org/rpc"],
        l1ConsensusHostUrls: ["https://beacon.example.org"],
        coinbase: ADDR.b,
        validatorAddress: SEQUENCER_KEY_ADDRESS,
        stakingAssetHandler: ADDR.d,
        registryAddress: ADDR.a,
        validatorPrivateKeySecret: "sequencerKey",
        // The fixtures' sequencer names the docker runtime: its unit and arguments are checked here,
        // where no host runs them; the default (release) is the one the dev stack runs on hosts.
        runtime: "docker",
    },
});

/** The sequencer settings of Aztec 4.1.2 (what the registry serves): direct deposit into a rollup, a BLS key. */
export const sequencerV4Settings = () => {
    const { stakingAssetHandler: _h, registryAddress: _r, ...common } = sequencerNode().sequencer;
    return { ...common, version: "4.1.2", network: "testnet", l1ChainId: 11155111, rollupAddress: ADDR.a, withdrawerAddress: ADDR.d, blsSecretKeySecret: "blsKey" };
};

export const validatorNode = () => ({
    name: "validator-1",
    role: "validator",
    host: "h-validator",
    release: "0g-chain",
    validator: { portPrefix: 56, bootnode: ENODE, validatorKeySecret: "validatorKey" },
});

export const existingHost = (address = "192.0.2.10") => ({
    kind: "existing",
    address,
    user: "root",
    sshPrivateKeySecret: "sshKey",
    hostKey: HOST_KEY,
    adminCidrs: ["198.51.100.0/24"],
});

export const awsHost = () => ({
    kind: "aws",
    region: "eu-central-1",
    instanceType: "m6i.2xlarge",
    sshKeyName: "ops",
    sshPrivateKeySecret: "sshKey",
    adminCidrs: ["198.51.100.0/24"],
});

export const hetznerHost = () => ({
    kind: "hetzner",
    location: "fsn1",
    serverType: "ccx33",
    sshKeyName: "ops",
    sshPrivateKeySecret: "sshKey",
    adminCidrs: ["198.51.100.0/24"],
});

/** One node of each role, each on its own existing host. Deep-copied on every call. */
export function baseFleet(): any {
    return {
        hosts: {
            "h-storage": existingHost("192.0.2.10"),
            "h-sequencer": existingHost("192.0.2.11"),
            "h-validator": existingHost("192.0.2.12"),
        },
        nodes: [storageNode(), sequencerNode(), validatorNode()],
        releases: RELEASES(),
    };
}

/** A sequencer's L1 endpoints as the key step gets them (the fixtures' are plain URLs). */
export function l1Urls(node: { sequencer: { l1RpcUrls: readonly unknown[]; l1ConsensusHostUrls: readonly unknown[] } }) {
    const plain = (list: readonly unknown[]) => list.map((u) => (typeof u === "string" ? u : assert.fail("a secret URL: resolve it in the test")));
    return { l1RpcUrls: plain(node.sequencer.l1RpcUrls), l1ConsensusHostUrls: plain(node.sequencer.l1ConsensusHostUrls) };
}

/** The issues parseFleet reports for a fleet config (none: []); any other error is thrown. */
export function configIssues(f: unknown, secrets: Record<string, string> = SECRETS, plain: readonly string[] = []): string[] {
    try {
        parseFleet(f, secretSource(secrets, plain));
    } catch (e) {
        if (e instanceof FleetConfigError) return [...e.issues];
        throw e;
    }
    return [];
}
