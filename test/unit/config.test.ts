// Every config rule with a rejected and an accepted case. Pure: no Pulumi involved.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { parseFleet } from "../../components/config/fleet";
import { FleetConfigError } from "../../components/config/errors";
import { formatPath } from "../../components/config/paths";
import { CONFIG_ENV_LIMIT, configEnvBytes, configSizeProblem } from "../../components/config/definition";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ADDR, PEER_ID, ENODE, NODE_ID, SECRETS, FAKE_SSH_KEY, baseFleet, secretSource, awsHost, existingHost, hetznerHost, validatorNode, validatorKeyJson, sequencerV4Settings } from "../support/fixtures";

// SSH key files for the sshPrivateKeyFile cases: one usable, one readable by others, one not a key.
const keyDir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-keys-"));
const keyFile = (name: string, content: string, mode: number) => {
    const p = path.join(keyDir, name);
    fs.writeFileSync(p, content, { mode });
    fs.chmodSync(p, mode);
    return p;
};
const KEY_OK = keyFile("ok", FAKE_SSH_KEY, 0o600);
const KEY_OPEN = keyFile("open", FAKE_SSH_KEY, 0o644);
const KEY_BAD = keyFile("bad", "hunter2", 0o600);
const SUMS = keyFile("SHA256SUMS", `${"ab".repeat(32)}  aristotle-v1.0.6.tar.gz\n${"cd".repeat(32)} *zgs_node-v1.1.0.tar.gz\n`, 0o644);
const withRelease = (f: any, release: any, node = 2) => {
    f.releases = { ...f.releases, "0g-chain": release };
    f.nodes[node].release = "0g-chain";
};
const useKeyFile = (f: any, file: string) => {
    delete f.hosts["h-storage"].sshPrivateKeySecret;
    f.hosts["h-storage"].sshPrivateKeyFile = file;
};

type Mutate = (f: any) => void;
interface Case {
    readonly name: string;
    readonly mutate: Mutate;
    /** Expected "<path>: <reason>" fragment, or null when the config is accepted. */
    readonly error: string | null;
    readonly secrets?: Record<string, string>;
    readonly plainKeys?: readonly string[];
}

const S = 0, Q = 1, V = 2; // index of storage, sequencer, validator node in baseFleet()

const cases: Case[] = [
    // EVM addresses
    { name: "lowercase address", mutate: (f) => (f.nodes[Q].sequencer.coinbase = ADDR.b.toLowerCase()), error: null },
    { name: "checksummed address", mutate: (f) => (f.nodes[Q].sequencer.coinbase = ADDR.d), error: null },
    { name: "address too short", mutate: (f) => (f.nodes[Q].sequencer.coinbase = "0x1234"), error: "nodes[1].sequencer.coinbase: not an EVM address" },
    { name: "address without 0x", mutate: (f) => (f.nodes[Q].sequencer.coinbase = ADDR.b.slice(2) + "00"), error: "nodes[1].sequencer.coinbase: not an EVM address" },
    { name: "bad EIP-55 checksum", mutate: (f) => (f.nodes[Q].sequencer.coinbase = ADDR.b.replace("fB", "Fb")), error: "nodes[1].sequencer.coinbase: EVM address has mixed case but its EIP-55 checksum does not match" },
    { name: "bad log contract", mutate: (f) => (f.nodes[S].storage.logContractAddress = "0xZZ"), error: "nodes[0].storage.logContractAddress: not an EVM address" },
    // The real zgs_node v1.1.0 exits at start without it ("Unable to parse mine_address").
    { name: "storage without a mine contract", mutate: (f) => delete f.nodes[S].storage.mineContractAddress, error: "nodes[0].storage.mineContractAddress: required" },
    { name: "bad reward contract", mutate: (f) => (f.nodes[S].storage.rewardContractAddress = "0x1234"), error: "nodes[0].storage.rewardContractAddress: not an EVM address" },
    // private keys (secret values)
    { name: "sequencer key ok", mutate: () => {}, error: null },
    { name: "sequencer key too short", mutate: () => {}, secrets: { ...SECRETS, sequencerKey: "0x1234" }, error: "nodes[1].sequencer.validatorPrivateKeySecret: the secret it names: not a 0x-prefixed 32-byte hex private key" },
    { name: "sequencer key zero", mutate: () => {}, secrets: { ...SECRETS, sequencerKey: "0x" + "0".repeat(64) }, error: "private key is outside the secp256k1 range" },
    { name: "sequencer key above curve order", mutate: () => {}, secrets: { ...SECRETS, sequencerKey: "0x" + "f".repeat(64) }, error: "private key is outside the secp256k1 range" },
    { name: "miner key with 0x", mutate: () => {}, secrets: { ...SECRETS, minerKey: "0x" + "11".repeat(32) }, error: "nodes[0].storage.minerKeySecret: the secret it names: not a miner key" },
    { name: "ssh key not PEM", mutate: () => {}, secrets: { ...SECRETS, sshKey: "hunter2" }, error: "hosts.h-storage.sshPrivateKeySecret: the secret it names: not a PEM/OpenSSH private key block" },
    { name: "validator key not JSON", mutate: () => {}, secrets: { ...SECRETS, validatorKey: "{nope" }, error: "nodes[2].validator.validatorKeySecret: the secret it names: not JSON" },
    // secrets as plain values
    { name: "private key pasted into a secret ref", mutate: (f) => (f.nodes[Q].sequencer.validatorPrivateKeySecret = SECRETS.sequencerKey), error: "nodes[1].sequencer.validatorPrivateKeySecret: secret given as a plain value" },
    { name: "PEM pasted into a secret ref", mutate: (f) => (f.hosts["h-storage"].sshPrivateKeySecret = SECRETS.sshKey), error: "hosts.h-storage.sshPrivateKeySecret: secret given as a plain value" },
    { name: "secret key stored in plain text", mutate: () => {}, plainKeys: ["minerKey"], error: "nodes[0].storage.minerKeySecret: the config key it names is stored in plain text" },
    { name: "secret key missing", mutate: (f) => (f.nodes[Q].sequencer.validatorPrivateKeySecret = "nosuchKey"), error: "nodes[1].sequencer.validatorPrivateKeySecret: the config key it names is not set" },
    { name: "secret ref with bad characters", mutate: (f) => (f.nodes[Q].sequencer.validatorPrivateKeySecret = "my key"), error: "nodes[1].sequencer.validatorPrivateKeySecret: not a config key name" },
    // URLs
    { name: "http URL", mutate: (f) => (f.nodes[S].storage.rpcEndpoints = ["http://127.0.0.1:8545"]), error: null },
    { name: "ws URL where http is required", mutate: (f) => (f.nodes[S].storage.rpcEndpoints = ["ws://127.0.0.1:8546"]), error: "nodes[0].storage.rpcEndpoints[0]: URL scheme must be http or https, not ws" },
    { name: "not a URL", mutate: (f) => (f.nodes[Q].sequencer.l1ConsensusHostUrls = ["beacon"]), error: "nodes[1].sequencer.l1ConsensusHostUrls[0]: not a URL" },
    { name: "no RPC endpoint", mutate: (f) => (f.nodes[S].storage.rpcEndpoints = []), error: "nodes[0].storage.rpcEndpoints: at least one RPC endpoint is needed" },
    // multiaddrs
    { name: "multiaddr with tcp", mutate: (f) => (f.nodes[S].storage.networkBootNodes = [`/ip4/203.0.113.10/tcp/1234/p2p/${PEER_ID}`]), error: "nodes[0].storage.networkBootNodes[0]: not a multiaddr of the form /ip4/<ip>/udp/<port>/p2p/<peer_id>" },
    { name: "multiaddr bad ip", mutate: (f) => (f.nodes[S].storage.networkBootNodes = [`/ip4/203.0.113.300/udp/1234/p2p/${PEER_ID}`]), error: "nodes[0].storage.networkBootNodes[0]: multiaddr ip 203.0.113.300 is not an IPv4 address" },
    { name: "multiaddr bad port", mutate: (f) => (f.nodes[S].storage.networkBootNodes = [`/ip4/203.0.113.1/udp/70000/p2p/${PEER_ID}`]), error: "multiaddr port 70000 is not in 1-65535" },
    { name: "multiaddr bad peer id", mutate: (f) => (f.nodes[S].storage.networkBootNodes = ["/ip4/203.0.113.1/udp/1234/p2p/16Uiu2HAm0OIl"]), error: "is not a base58 libp2p peer id" },
    { name: "boot nodes without ENR address", mutate: (f) => delete f.nodes[S].storage.networkEnrAddress, error: "nodes[0].storage.networkEnrAddress: required when networkBootNodes is set" },
    { name: "no boot nodes and no ENR address", mutate: (f) => { delete f.nodes[S].storage.networkEnrAddress; f.nodes[S].storage.networkBootNodes = []; }, error: null },
    // enodes
    { name: "enode with discport", mutate: (f) => (f.nodes[V].validator.bootnode = ENODE + "?discport=30301"), error: null },
    { name: "enode short id", mutate: (f) => (f.nodes[V].validator.bootnode = "enode://abcd@203.0.113.7:30303"), error: "nodes[2].validator.bootnode: enode node id must be 128 hex digits" },
    { name: "enode hostname", mutate: (f) => (f.nodes[V].validator.bootnode = `enode://${NODE_ID}@boot.example.org:30303`), error: "enode host boot.example.org is not an IPv4 address" },
    { name: "enode port 0", mutate: (f) => (f.nodes[V].validator.bootnode = `enode://${NODE_ID}@203.0.113.7:0`), error: "port 0 is not in 1-65535" },
    { name: "enode node id not on the curve (geth refuses it)", mutate: (f) => (f.nodes[V].validator.bootnode = `enode://${"ab".repeat(64)}@203.0.113.7:30303`), error: "enode node id is not a secp256k1 public key" },
    // port prefix
    { name: "prefix as string", mutate: (f) => (f.nodes[V].validator.portPrefix = "47"), error: null },
    { name: "prefix 64 (64660 fits)", mutate: (f) => (f.nodes[V].validator.portPrefix = 64), error: null },
    { name: "prefix 65 (65545 does not fit)", mutate: (f) => (f.nodes[V].validator.portPrefix = 65), error: "nodes[2].validator.portPrefix: port prefix 65 must be a number 1-64" },
    { name: "prefix 0", mutate: (f) => (f.nodes[V].validator.portPrefix = 0), error: "port prefix 0 must be a number 1-64" },
    { name: "prefix with leading zero", mutate: (f) => (f.nodes[V].validator.portPrefix = "05"), error: "port prefix 05 must be a number 1-64" },
    { name: "prefix fraction", mutate: (f) => (f.nodes[V].validator.portPrefix = 5.5), error: "port prefix 5.5 must be a number 1-64" },
    // sequencer chain id and network
    { name: "chain id 11155111", mutate: (f) => (f.nodes[Q].sequencer.l1ChainId = 11155111), error: null },
    { name: "chain id mainnet", mutate: (f) => (f.nodes[Q].sequencer.l1ChainId = 1), error: "nodes[1].sequencer.l1ChainId: the 2.0.x L1 chain id must be 11155111" },
    { name: "network other than alpha-testnet", mutate: (f) => (f.nodes[Q].sequencer.network = "mainnet"), error: "nodes[1].sequencer.network: the 2.0.x sequencer network must be alpha-testnet" },
    // sequencer versions: each known version with its own settings; others refused with the list
    { name: "sequencer version unknown", mutate: (f) => (f.nodes[Q].sequencer.version = "3.0.0"), error: "nodes[1].sequencer.version: version must be one nodefleet knows: 2.0.x" },
    { name: "sequencer version latest", mutate: (f) => (f.nodes[Q].sequencer.version = "latest"), error: "nodes[1].sequencer.version: version must be one nodefleet knows: 2.0.x" },
    { name: "sequencer version missing", mutate: (f) => delete f.nodes[Q].sequencer.version, error: "nodes[1].sequencer.version: version must be one nodefleet knows" },
    { name: "sequencer 2.0.3 (the spec's 2.x)", mutate: (f) => (f.nodes[Q].sequencer.version = "2.0.3"), error: null },
    { name: "sequencer version 2.1.0", mutate: (f) => (f.nodes[Q].sequencer.version = "2.1.0"), error: "nodes[1].sequencer.version: version must be one nodefleet knows" },
    { name: "sequencer version 4.1.3", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), version: "4.1.3" }), error: "nodes[1].sequencer.version: version must be one nodefleet knows" },
    { name: "sequencer 4.1.2", mutate: (f) => (f.nodes[Q].sequencer = sequencerV4Settings()), error: null },
    { name: "sequencer 4.1.2 with 2.0.2's settings", mutate: (f) => (f.nodes[Q].sequencer.version = "4.1.2"), error: "nodes[1].sequencer.rollupAddress: required" },
    { name: "sequencer 4.1.2 without a BLS key", mutate: (f) => { const s: any = sequencerV4Settings(); delete s.blsSecretKeySecret; f.nodes[Q].sequencer = s; }, error: "nodes[1].sequencer.blsSecretKeySecret: " },
    { name: "sequencer 4.1.2 BLS key not a scalar", mutate: (f) => (f.nodes[Q].sequencer = sequencerV4Settings()), secrets: { ...SECRETS, blsKey: "0x" + "f".repeat(64) }, error: "nodes[1].sequencer.blsSecretKeySecret: the secret it names: BLS secret key is outside the BN254 scalar field" },
    { name: "sequencer 4.1.2 BLS key not hex", mutate: (f) => (f.nodes[Q].sequencer = sequencerV4Settings()), secrets: { ...SECRETS, blsKey: "12345" }, error: "nodes[1].sequencer.blsSecretKeySecret: the secret it names: not a 0x-prefixed hex BLS secret key" },
    { name: "sequencer 4.1.2 BLS key in plain text", mutate: (f) => (f.nodes[Q].sequencer = sequencerV4Settings()), plainKeys: ["blsKey"], error: "nodes[1].sequencer.blsSecretKeySecret: the config key it names is stored in plain text" },
    { name: "sequencer 4.1.2 testnet on mainnet's chain id", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), l1ChainId: 1 }), error: "nodes[1].sequencer.l1ChainId: network testnet runs on L1 chain 11155111, not 1" },
    { name: "sequencer 4.1.2 local without a registry", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), network: "local", l1ChainId: 16661 }), error: "nodes[1].sequencer.registryAddress: network local needs the registry" },
    { name: "validator consensus peers and seeds", mutate: (f) => Object.assign(f.nodes[V].validator, { consensusPeers: [`${"ab".repeat(20)}@10.0.0.7:26656`], consensusSeeds: [`${"cd".repeat(20)}@seed-1.example.org:26656`] }), error: null },
    { name: "validator consensus peer with an uppercase node id", mutate: (f) => (f.nodes[V].validator.consensusPeers = [`${"AB".repeat(20)}@10.0.0.7:26656`]), error: "nodes[2].validator.consensusPeers[0]: the node id must be 40 lowercase hex digits" },
    { name: "validator consensus peer without a port", mutate: (f) => (f.nodes[V].validator.consensusPeers = [`${"ab".repeat(20)}@10.0.0.7`]), error: "nodes[2].validator.consensusPeers[0]: not a CometBFT peer of the form <node id>@<host>:<port>" },
    { name: "validator consensus seed with a hostile host", mutate: (f) => (f.nodes[V].validator.consensusSeeds = [`${"ab".repeat(20)}@x;rm -rf /:26656`]), error: "nodes[2].validator.consensusSeeds[0]: host x;rm -rf / is neither an IPv4 address nor a DNS name" },
    { name: "validator consensus seed on port 0", mutate: (f) => (f.nodes[V].validator.consensusSeeds = [`${"ab".repeat(20)}@10.0.0.7:0`]), error: "nodes[2].validator.consensusSeeds[0]: " },
    { name: "validator release with beacond on devnet", mutate: (f) => (f.releases["0g-chain"].consensus = { daemon: "beacond", chainSpec: "devnet" }), error: null },
    { name: "validator release with an unknown daemon", mutate: (f) => (f.releases["0g-chain"].consensus = { daemon: "gaiad" }), error: "releases.0g-chain.consensus.daemon: " },
    { name: "validator release with an unknown chain spec", mutate: (f) => (f.releases["0g-chain"].consensus = { chainSpec: "galileo" }), error: "releases.0g-chain.consensus.chainSpec: " },
    { name: "validator release with its network's consensus genesis", mutate: (f) => (f.releases["0g-chain"].consensus = { daemon: "beacond", genesis: "0g-home/0gchaind-home/config/genesis.json" }), error: null },
    { name: "validator release genesis outside the release", mutate: (f) => (f.releases["0g-chain"].consensus = { genesis: "../../etc/nodefleet/genesis.json" }), error: "releases.0g-chain.consensus.genesis: a path inside the release: " },
    { name: "validator release genesis as an absolute path", mutate: (f) => (f.releases["0g-chain"].consensus = { genesis: "/etc/genesis.json" }), error: "releases.0g-chain.consensus.genesis: a path inside the release: " },
    { name: "validator release genesis with a shell word", mutate: (f) => (f.releases["0g-chain"].consensus = { genesis: "g$(id).json" }), error: "releases.0g-chain.consensus.genesis: a path inside the release: " },
    { name: "validator release genesis not a .json file", mutate: (f) => (f.releases["0g-chain"].consensus = { genesis: "0g-home/config/genesis.toml" }), error: "releases.0g-chain.consensus.genesis: a path inside the release: " },
    { name: "storage release with a consensus daemon", mutate: (f) => (f.releases.zgs.consensus = { daemon: "beacond" }), error: "releases.zgs.consensus: only a validator's release carries a consensus daemon, and storage nodes[0] installs this one" },
    { name: "sequencer 4.1.2 local with a registry", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), network: "local", l1ChainId: 16661, registryAddress: ADDR.b }), error: null },
    { name: "sequencer 4.1.2 local with its L1's block time", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), network: "local", l1ChainId: 16661, registryAddress: ADDR.b, l1SlotSeconds: 2 }), error: null },
    { name: "sequencer 4.1.2 local with a zero block time", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), network: "local", l1ChainId: 16661, registryAddress: ADDR.b, l1SlotSeconds: 0 }), error: "nodes[1].sequencer.l1SlotSeconds: " },
    { name: "sequencer 4.1.2 testnet with an L1 block time", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), l1SlotSeconds: 2 }), error: "nodes[1].sequencer.l1SlotSeconds: network testnet runs on L1 slots of 12 s" },
    { name: "sequencer 4.1.2 testnet with a registry", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), registryAddress: ADDR.b }), error: "nodes[1].sequencer.registryAddress: network testnet takes its registry from the network config" },
    { name: "sequencer 4.1.2 network alpha-testnet", mutate: (f) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), network: "alpha-testnet" }), error: "nodes[1].sequencer.network: " },
    { name: "sequencer RPC open to the world", mutate: (f) => (f.nodes[Q].sequencer.rpcAllowedCidrs = ["0.0.0.0/0"]), error: "nodes[1].sequencer.rpcAllowedCidrs[0]: the sequencer RPC must not be open to the world" },
    { name: "sequencer without a release", mutate: (f) => delete f.nodes[Q].release, error: "nodes[1].release: required: the host installs the aztec CLI and its version manager (aztec-up)" },
    { name: "sequencer without a registry", mutate: (f) => delete f.nodes[Q].sequencer.registryAddress, error: "nodes[1].sequencer.registryAddress: " },
    { name: "sequencer runtime unknown", mutate: (f) => (f.nodes[Q].sequencer.runtime = "podman"), error: "nodes[1].sequencer.runtime: " },
    { name: "sequencer runtime release", mutate: (f) => (f.nodes[Q].sequencer.runtime = "release"), error: null },
    { name: "sequencer RPC to a private range", mutate: (f) => (f.nodes[Q].sequencer.rpcAllowedCidrs = ["10.0.0.0/8"]), error: null },
    // names and references
    { name: "duplicate node names", mutate: (f) => (f.nodes[V].name = "storage-1"), error: 'nodes[2].name: duplicate node name "storage-1" (also nodes[0])' },
    { name: "uppercase node name", mutate: (f) => (f.nodes[V].name = "Validator"), error: "nodes[2].name: node names are 2-32 lowercase letters" },
    { name: "unknown host reference", mutate: (f) => (f.nodes[V].host = "h-nope"), error: 'nodes[2].host: no host named "h-nope"' },
    { name: "unknown role", mutate: (f) => (f.nodes[V].role = "prover"), error: "nodes[2].role: role must be one of storage, sequencer, validator" },
    { name: "unknown key (typo)", mutate: (f) => (f.nodes[S].storage.blockchain_rpc_endpont = "x"), error: "nodes[0].storage: unknown key blockchain_rpc_endpont" },
    { name: "missing role settings", mutate: (f) => delete f.nodes[Q].sequencer, error: "nodes[1].sequencer: required" },
    { name: "empty fleet", mutate: (f) => (f.nodes = []), error: "nodes: a fleet needs at least one node" },
    // ports on one host
    { name: "two validators on one host, different prefixes", mutate: (f) => f.nodes.push({ ...validatorNode(), name: "validator-2", host: "h-validator", validator: { ...validatorNode().validator, portPrefix: 57, validatorKeySecret: "validatorKey2" } }), error: null },
    { name: "two validators on one host, same prefix", mutate: (f) => f.nodes.push({ ...validatorNode(), name: "validator-2", host: "h-validator", validator: { ...validatorNode().validator, validatorKeySecret: "validatorKey2" } }), error: "nodes[3]: port 56303/tcp (execution p2p) is already used by nodes[2] (execution p2p) on host h-validator" },
    { name: "storage p2p on the sshd port", mutate: (f) => (f.nodes[S].storage.p2pPort = 22), error: "nodes[0]: port 22/tcp (storage p2p) is already used by sshd on host h-storage" },
    { name: "storage rpc on its own p2p port", mutate: (f) => (f.nodes[S].storage.rpcPort = 1234), error: "nodes[0]: port 1234/tcp (storage RPC) is already used by nodes[0] (storage p2p)" },
    // validator keys
    { name: "same validator key on two nodes", mutate: (f) => f.nodes.push({ ...validatorNode(), name: "validator-2", host: "h-validator", validator: { ...validatorNode().validator, portPrefix: 57 } }), error: "nodes[3].validator.validatorKeySecret: the same validator key as nodes[2].validator.validatorKeySecret" },
    { name: "same validator key under two config names", secrets: { ...SECRETS, validatorKey2: validatorKeyJson("aa") }, mutate: (f) => f.nodes.push({ ...validatorNode(), name: "validator-2", host: "h-validator", validator: { ...validatorNode().validator, portPrefix: 57, validatorKeySecret: "validatorKey2" } }), error: "the same validator key as nodes[2]" },
    // hosts
    { name: "SSH open to the world", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["0.0.0.0/0"]), error: "hosts.h-storage.adminCidrs[0]: SSH must not be open to the world" },
    { name: "CIDR with host bits", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["198.51.100.7/24"]), error: "hosts.h-storage.adminCidrs[0]: host bits are set in 198.51.100.7/24" },
    { name: "IPv6 admin CIDR", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["2001:db8::/32"]), error: null },
    { name: "no admin CIDR", mutate: (f) => (f.hosts["h-storage"].adminCidrs = []), error: "hosts.h-storage.adminCidrs: at least one admin CIDR is needed for SSH" },
    { name: "bad host key", mutate: (f) => (f.hosts["h-storage"].hostKey = "ssh-ed25519 AAAAB3NzaC1yc2E="), error: "hosts.h-storage.hostKey: SSH host key blob does not match its type" },
    { name: "unknown host kind", mutate: (f) => (f.hosts["h-storage"].kind = "gcp"), error: "hosts.h-storage.kind: kind must be one of aws, hetzner, existing" },
    { name: "aws host meeting the target", mutate: (f) => (f.hosts["h-validator"] = awsHost()), error: null },
    { name: "aws host below target", mutate: (f) => (f.hosts["h-validator"] = { ...awsHost(), instanceType: "m6i.xlarge" }), error: "hosts.h-validator.instanceType: cores: has 4, needs 8 (short by 4)" },
    { name: "aws arm64 type", mutate: (f) => (f.hosts["h-validator"] = { ...awsHost(), instanceType: "m7g.2xlarge" }), error: "hosts.h-validator.instanceType: architecture arm64: node releases are x86_64 only" },
    { name: "aws unknown type", mutate: (f) => (f.hosts["h-validator"] = { ...awsHost(), instanceType: "z9.huge" }), error: "hosts.h-validator.instanceType: instance type z9.huge is not in the catalog" },
    { name: "aws data volume too small", mutate: (f) => (f.hosts["h-validator"] = { ...awsHost(), dataVolume: { sizeGb: 200 } }), error: "data disk: has 200 GB, needs 1000 GB" },
    { name: "aws gp3 throughput above iops/4", mutate: (f) => (f.hosts["h-validator"] = { ...awsHost(), dataVolume: { sizeGb: 1000, throughput: 1000 } }), error: "hosts.h-validator.dataVolume.throughput: gp3 throughput 1000 MiB/s needs at least 4000 iops" },
    { name: "aws io2 without iops", mutate: (f) => (f.hosts["h-validator"] = { ...awsHost(), dataVolume: { sizeGb: 1000, type: "io2" } }), error: "hosts.h-validator.dataVolume.iops: io2 volumes need iops" },
    { name: "aws bad region", mutate: (f) => (f.hosts["h-validator"] = { ...awsHost(), region: "frankfurt" }), error: "hosts.h-validator.region: not an AWS region" },
    { name: "hetzner host meeting the target", mutate: (f) => (f.hosts["h-storage"] = hetznerHost()), error: null },
    { name: "hetzner below target for storage memory", mutate: (f) => (f.hosts["h-storage"] = { ...hetznerHost(), serverType: "cpx41" }), error: "hosts.h-storage.serverType: memory: has 16 GB, needs 32 GB" },
    { name: "hetzner bad location", mutate: (f) => (f.hosts["h-storage"] = { ...hetznerHost(), location: "mars1" }), error: "hosts.h-storage.location" },
    { name: "two roles share a host: targets add up", mutate: (f) => { f.hosts["h-storage"] = hetznerHost(); f.nodes[Q].host = "h-storage"; delete f.hosts["h-sequencer"]; }, error: "hosts.h-storage.serverType: cores: has 8, needs 16" },
    { name: "validator target lowered in config", mutate: (f) => { f.hosts["h-validator"] = { ...awsHost(), instanceType: "m6i.xlarge" }; f.nodes[V].validator.hardware = { cores: 4, memoryGb: 16 }; }, error: null },
    // SSH key from a file (existing hosts)
    { name: "ssh key file", mutate: (f) => useKeyFile(f, KEY_OK), error: null },
    { name: "ssh key file missing", mutate: (f) => useKeyFile(f, path.join(keyDir, "nope")), error: `hosts.h-storage.sshPrivateKeyFile: ${path.join(keyDir, "nope")}: no such file` },
    { name: "ssh key file readable by others", mutate: (f) => useKeyFile(f, KEY_OPEN), error: "readable by group or others (mode 644); chmod 600 it" },
    { name: "ssh key file not a key", mutate: (f) => useKeyFile(f, KEY_BAD), error: `${KEY_BAD}: not a PEM/OpenSSH private key block` },
    { name: "ssh key file and secret both", mutate: (f) => (f.hosts["h-storage"].sshPrivateKeyFile = KEY_OK), error: "hosts.h-storage: give sshPrivateKeySecret or sshPrivateKeyFile, not both" },
    { name: "no ssh key at all", mutate: (f) => delete f.hosts["h-storage"].sshPrivateKeySecret, error: "hosts.h-storage: needs sshPrivateKeySecret or sshPrivateKeyFile" },
    { name: "ssh key file on a cloud host", mutate: (f) => (f.hosts["h-storage"] = { ...hetznerHost(), sshPrivateKeyFile: KEY_OK }), error: "hosts.h-storage: unknown key sshPrivateKeyFile" },
    // releases (node software by URL + sha256)
    { name: "release with sha256", mutate: (f) => withRelease(f, { url: "https://example.org/aristotle-v1.0.6.tar.gz", sha256: "ab".repeat(32) }), error: null },
    { name: "release with a SHA256SUMS file", mutate: (f) => withRelease(f, { url: "https://example.org/dl/aristotle-v1.0.6.tar.gz", sha256File: SUMS }), error: null },
    { name: "release without checksum", mutate: (f) => withRelease(f, { url: "https://example.org/a.tar.gz" }), error: "releases.0g-chain: give exactly one of sha256 or sha256File; a release is never installed unchecked" },
    { name: "release with both checksums", mutate: (f) => withRelease(f, { url: "https://example.org/a.tar.gz", sha256: "ab".repeat(32), sha256File: SUMS }), error: "releases.0g-chain: give exactly one of sha256 or sha256File" },
    { name: "release sha256 uppercase/short", mutate: (f) => withRelease(f, { url: "https://example.org/a.tar.gz", sha256: "AB12" }), error: "releases.0g-chain.sha256: not a sha256 (64 lowercase hex characters)" },
    { name: "release file without the archive", mutate: (f) => withRelease(f, { url: "https://example.org/other.tar.gz", sha256File: SUMS }), error: `releases.0g-chain.sha256File: ${SUMS} has no entry for other.tar.gz` },
    { name: "release file missing", mutate: (f) => withRelease(f, { url: "https://example.org/a.tar.gz", sha256File: path.join(keyDir, "nope") }), error: "releases.0g-chain.sha256File:" },
    { name: "release url not http", mutate: (f) => withRelease(f, { url: "ftp://example.org/a.tar.gz", sha256: "ab".repeat(32) }), error: "releases.0g-chain.url: URL scheme must be http or https, not ftp" },
    { name: "node names an unknown release", mutate: (f) => (f.nodes[0].release = "zgs-2"), error: 'nodes[0].release: no release named "zgs-2" under releases (known: zgs, aztec, 0g-chain)' },
    { name: "validator switch: migrate with executionClient geth", mutate: (f) => Object.assign(f.nodes[2].validator, { switch: "migrate" }), error: "nodes[2].validator.switch: switch: migrate goes with executionClient: reth (the client the validator runs afterwards), not geth" },
    { name: "validator switch: rollback with executionClient reth", mutate: (f) => Object.assign(f.nodes[2].validator, { switch: "rollback", executionClient: "reth" }), error: "nodes[2].validator.switch: switch: rollback goes with executionClient: geth" },
    { name: "validator switch attempt 0", mutate: (f) => Object.assign(f.nodes[2].validator, { switchAttempt: 0 }), error: "nodes[2].validator.switchAttempt:" },
    { name: "validator switch attempt not a whole number", mutate: (f) => Object.assign(f.nodes[2].validator, { switchAttempt: 1.5 }), error: "nodes[2].validator.switchAttempt:" },
    { name: "validator lowDowntime without switch: migrate", mutate: (f) => Object.assign(f.nodes[2].validator, { lowDowntime: true }), error: "nodes[2].validator.lowDowntime: lowDowntime chooses how switch: migrate runs; it means nothing with switch: (none)" },
    { name: "validator lowDowntime with a rollback", mutate: (f) => Object.assign(f.nodes[2].validator, { executionClient: "geth", switch: "rollback", lowDowntime: true }), error: "nodes[2].validator.lowDowntime: lowDowntime chooses how switch: migrate runs; it means nothing with switch: rollback" },
    { name: "validator switch unknown", mutate: (f) => Object.assign(f.nodes[2].validator, { switch: "upgrade" }), error: "nodes[2].validator.switch:" },
    { name: "validator heightTolerance too large", mutate: (f) => Object.assign(f.nodes[2].validator, { heightTolerance: 1000 }), error: "nodes[2].validator.heightTolerance:" },
    { name: "validator referenceRpcUrl not a URL", mutate: (f) => Object.assign(f.nodes[2].validator, { referenceRpcUrl: "evmrpc.0g.ai" }), error: "nodes[2].validator.referenceRpcUrl:" },
    { name: "validator cleanup option misspelt", mutate: (f) => Object.assign(f.nodes[2].validator, { cleanup: { removeBackups: true } }), error: "nodes[2].validator.cleanup:" },
    { name: "validator without a release", mutate: (f) => delete f.nodes[2].release, error: "nodes[2].release: required: the host installs 0gchaind, geth and reth from the 0G release package" },
    { name: "storage node without a release", mutate: (f) => delete f.nodes[0].release, error: "nodes[0].release: required: the host installs the storage node's software (zgs_node) from a release" },
    // Hostile input (issue: no config value reaches a host unquoted). Each of these got through before.
    { name: "release url with a newline (shell injection in the install script's comment)", mutate: (f) => withRelease(f, { url: "https://example.org/a.tar.gz\ntouch /tmp/pwned", sha256: "ab".repeat(32) }), error: "releases.0g-chain.url: contains a control or line-separator character (U+000A) at position 29" },
    { name: "RPC URL with a trailing space", mutate: (f) => (f.nodes[S].storage.rpcEndpoints = ["http://127.0.0.1:8545 "]), error: "nodes[0].storage.rpcEndpoints[0]: ends with whitespace" },
    { name: "URL not in canonical form", mutate: (f) => (f.nodes[S].storage.rpcEndpoints = ["HTTP://RPC.Example.org:80/a/../b"]), error: "nodes[0].storage.rpcEndpoints[0]: URL is not in its canonical form; write it as http://rpc.example.org/b" },
    { name: "a tab inside a free-text field", mutate: (f) => (f.hosts["h-storage"].user = "no\tde"), error: "hosts.h-storage.user: contains a control or line-separator character (U+0009)" },
    { name: "a Unicode line separator", mutate: (f) => (f.nodes[S].storage.logContractAddress = `${ADDR.b}\u2028`), error: "nodes[0].storage.logContractAddress: contains a control or line-separator character (U+2028)" },
    { name: "a NUL in a host name key", mutate: (f) => { f.hosts["h-\u0000x"] = f.hosts["h-storage"]; }, error: "hosts: a key contains a control or line-separator character (U+0000)" },
    { name: "SSH open to the world as two halves", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["0.0.0.0/1", "128.0.0.0/1"]), error: "hosts.h-storage.adminCidrs: SSH must not be open to the world: together these ranges cover every IPv4 address" },
    { name: "SSH open to the world as 0::0/0", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["0::0/0"]), error: "hosts.h-storage.adminCidrs[0]: SSH must not be open to the world: this range covers every IPv4 and IPv6 address" },
    { name: "SSH open to the world through IPv4-mapped IPv6", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["::ffff:0.0.0.0/96"]), error: "hosts.h-storage.adminCidrs[0]: SSH must not be open to the world: this range covers every IPv4 address" },
    { name: "prefix length with a leading zero", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["0.0.0.0/00"]), error: "hosts.h-storage.adminCidrs[0]: not a CIDR (address/prefix length, the length without leading zeros)" },
    { name: "IPv6 CIDR with host bits", mutate: (f) => (f.hosts["h-storage"].adminCidrs = ["2001:db8::1/32"]), error: "hosts.h-storage.adminCidrs[0]: host bits are set in 2001:db8::1/32" },
    { name: "sequencer RPC open to the world as ::/1 + 8000::/1 (::/1 alone holds every IPv4-mapped address)", mutate: (f) => (f.nodes[Q].sequencer.rpcAllowedCidrs = ["10.0.0.0/8", "::/1", "8000::/1"]), error: "nodes[1].sequencer.rpcAllowedCidrs: the sequencer RPC must not be open to the world: together these ranges cover every IPv4 and IPv6 address; put a reverse proxy in front" },
    { name: "a node on a host named like an object property", mutate: (f) => (f.nodes[V].host = "constructor"), error: 'nodes[2].host: no host named "constructor" under hosts' },
    { name: "a node naming a release like an object property", mutate: (f) => (f.nodes[V].release = "constructor"), error: 'nodes[2].release: no release named "constructor" under releases' },
    { name: "a host named like an object property", mutate: (f) => { f.hosts.constructor = f.hosts["h-validator"]; delete f.hosts["h-validator"]; f.nodes[V].host = "constructor"; }, error: null },
    { name: "two existing hosts at one address and port", mutate: (f) => (f.hosts["h-validator"].address = "192.0.2.10"), error: "hosts.h-validator.address: the same machine as hosts.h-storage (same address and SSH port)" },
    { name: "the same machine spelled as IPv4-mapped IPv6", mutate: (f) => (f.hosts["h-validator"].address = "::ffff:192.0.2.10"), error: "hosts.h-validator.address: the same machine as hosts.h-storage" },
    { name: "one address, two forwarded SSH ports (the dev stack's VMs)", mutate: (f) => { f.hosts["h-validator"].address = "192.0.2.10"; f.hosts["h-validator"].port = 2202; }, error: null },
    { name: "a port number given as a string", mutate: (f) => (f.nodes[S].storage.rpcPort = "8080"), error: 'nodes[0].storage.rpcPort: expected a number, got the string "8080"' },
    { name: "a fraction where a whole number is needed", mutate: (f) => (f.nodes[S].storage.rpcPort = 80.5), error: "nodes[0].storage.rpcPort: expected a whole number, got the number 80.5" },
    { name: "a list where a map is needed", mutate: (f) => (f.hosts = []), error: "hosts: expected a map of names to values, got a list" },
    { name: "a bad host name", mutate: (f) => { f.hosts.Host_1 = f.hosts["h-storage"]; }, error: "hosts.Host_1: host names are 2-32 lowercase letters, digits and dashes" },
    { name: "a secret name field holding a number", mutate: (f) => (f.nodes[S].storage.minerKeySecret = 1234567890123), error: "nodes[0].storage.minerKeySecret: expected a string, got a number" },
];

function run(c: Case) {
    const fleet = baseFleet();
    c.mutate(fleet);
    return parseFleet(fleet, secretSource(c.secrets ?? SECRETS, c.plainKeys ?? []));
}

describe("fleet config validation", () => {
    for (const c of cases) {
        it(`${c.error === null ? "accepts" : "rejects"}: ${c.name}`, () => {
            if (c.error === null) {
                assert.doesNotThrow(() => run(c));
                return;
            }
            assert.throws(
                () => run(c),
                (e: unknown) => {
                    assert.ok(e instanceof FleetConfigError, `expected FleetConfigError, got ${String(e)}`);
                    assert.ok(e.issues.some((i) => i.includes(c.error!)), `no issue contains ${JSON.stringify(c.error)}; got:\n${e.issues.join("\n")}`);
                    return true;
                },
            );
        });
    }

    it("counts at least 40 rejected and accepted cases together", () => {
        assert.ok(cases.length >= 40);
        assert.ok(cases.filter((c) => c.error === null).length >= 10);
    });

    it("never echoes a value pasted into a …Secret field, even one not recognised as key material", () => {
        // 63 hex digits starting with a letter: a valid key name, not a key shape looksLikeSecretMaterial knows.
        const pasted = "f" + "0123456789abcdef".repeat(4).slice(0, 62);
        for (const mutate of [
            (f: any) => (f.nodes[S].storage.minerKeySecret = pasted),
            (f: any) => (f.hosts["h-storage"].sshPrivateKeySecret = `${pasted} `),
            (f: any) => (f.nodes[Q].sequencer.validatorPrivateKeySecret = `${pasted}\n`),
            (f: any) => (f.nodes[V].validator.validatorKeySecret = `${pasted}!`),
        ]) {
            const fleet = baseFleet();
            mutate(fleet);
            const text = (() => {
                try {
                    parseFleet(fleet, secretSource(SECRETS));
                } catch (e) {
                    return String((e as Error).message);
                }
                assert.fail("expected an error");
            })();
            for (let i = 0; i + 8 <= pasted.length; i++) assert.ok(!text.includes(pasted.slice(i, i + 8)), `the error shows part of the value:\n${text}`);
            assert.match(text, /Secret: /);
        }
    });

    it("never echoes a secret value in an error", () => {
        const leaky = { ...SECRETS, sequencerKey: "0x" + "f".repeat(64), minerKey: "0xdeadbeef" };
        try {
            parseFleet(baseFleet(), secretSource(leaky));
            assert.fail("expected an error");
        } catch (e) {
            const text = String((e as Error).message);
            assert.ok(!text.includes("f".repeat(64)));
            assert.ok(!text.includes("deadbeef"));
        }
    });

    it("reports every problem at once, not only the first", () => {
        const f = baseFleet();
        f.nodes[V].validator.bootnode = "enode://x";
        f.hosts["h-storage"].adminCidrs = ["0.0.0.0/0"];
        try {
            parseFleet(f, secretSource());
            assert.fail("expected an error");
        } catch (e) {
            assert.equal((e as FleetConfigError).issues.length, 2);
        }
    });

    it("hardwareCheck warn turns a shortfall into a warning", () => {
        const f = baseFleet();
        f.hardwareCheck = "warn";
        f.hosts["h-validator"] = { ...awsHost(), instanceType: "t3.medium" };
        const fleet = parseFleet(f, secretSource());
        assert.ok(fleet.warnings.some((w) => w.startsWith("hosts.h-validator.instanceType: cores: has 2, needs 8") && w.endsWith("(hardwareCheck: warn)")));
    });

    it("an unpinned existing host key is a warning", () => {
        const f = baseFleet();
        delete f.hosts["h-storage"].hostKey;
        assert.ok(parseFleet(f, secretSource()).warnings.some((w) => w.startsWith("hosts.h-storage.hostKey: not pinned")));
    });

    it("a host with no node is a warning (kept so a validator that moved off it can be handed over)", () => {
        const f = baseFleet();
        f.nodes = f.nodes.filter((n: any) => n.host !== "h-storage");
        delete f.releases.zgs;
        assert.ok(parseFleet(f, secretSource()).warnings.some((w) => w.startsWith("hosts.h-storage: no node runs on this host; remove it once nothing is handed over from it")));
    });

    it("two validators on one host that reach the same CometBFT peer are a warning (one connection per address by default)", () => {
        const f = baseFleet();
        const v1 = f.nodes.find((n: any) => n.role === "validator");
        const PEER = "b3581dcebce0d9bf849de9abf619bed44a35dc07@10.0.2.2:26756";
        v1.validator.consensusPeers = [PEER];
        const v2 = JSON.parse(JSON.stringify(v1));
        Object.assign(v2, { name: "validator-2" });
        Object.assign(v2.validator, { portPrefix: 57, validatorKeySecret: "validatorKey2", consensusPeers: [], consensusSeeds: [PEER.replace("@10.0.2.2:26756", "@10.0.2.2:26656")] });
        f.nodes.push(v2);
        const warned = parseFleet(f, secretSource()).warnings.filter((w) => w.includes("allow_duplicate_ip"));
        assert.deepEqual(warned, [`nodes[${f.nodes.length - 1}].validator.consensusSeeds[0]: validator-2 and validator-1 (nodes[${f.nodes.indexOf(v1)}].validator.consensusPeers[0]) on host ${v1.host} both reach the peer b3581dcebce0d9bf849de9abf619bed44a35dc07, which by CometBFT's default (p2p.allow_duplicate_ip = false) accepts one of them from one address: give each its own address, or the peer allow_duplicate_ip`]);
        v2.host = "h-validator-2";
        f.hosts["h-validator-2"] = existingHost("192.0.2.22");
        assert.deepEqual(parseFleet(f, secretSource()).warnings.filter((w) => w.includes("allow_duplicate_ip")), [], "on hosts of their own");
    });

    it("fills defaults and normalises the port prefix", () => {
        const f = baseFleet();
        f.nodes[V].validator.portPrefix = "47";
        const fleet = parseFleet(f, secretSource());
        assert.equal(fleet.spec.hardwareCheck, "enforce");
        const v = fleet.spec.nodes[V];
        assert.ok(v.role === "validator");
        assert.equal(v.validator.portPrefix, 47);
        assert.equal(v.validator.executionClient, "geth");
        const s = fleet.spec.nodes[S];
        assert.ok(s.role === "storage");
        assert.equal(s.storage.p2pPort, 1234);
        // A sequencer that names no runtime runs the release's bin/aztec: the runtime the lab runs on hosts.
        const { runtime: _r, ...unnamed } = f.nodes[Q].sequencer;
        const q = parseFleet({ ...f, nodes: f.nodes.map((n: any, i: number) => (i === Q ? { ...n, sequencer: unnamed } : n)) }, secretSource()).spec.nodes[Q];
        assert.ok(q.role === "sequencer");
        assert.equal(q.sequencer.runtime, "release");
        assert.deepEqual(fleet.hosts.map((h) => [h.name, h.nodes.map((n) => n.name)]), [
            ["h-storage", ["storage-1"]],
            ["h-sequencer", ["sequencer-1"]],
            ["h-validator", ["validator-1"]],
        ]);
    });

    it("formats paths the way operators read them", () => {
        assert.equal(formatPath(["nodes", 2, "sequencer", "coinbase"]), "nodes[2].sequencer.coinbase");
        assert.equal(formatPath([]), "fleet");
    });
});

describe("the stack config's size", () => {
    it("is refused over the cap Linux puts on the one environment variable that carries it, and warned of at three quarters", () => {
        // The cap itself, as execve enforces it: the variable's `NAME=value` string, NUL included.
        const run = (value: string) => spawnSync(process.execPath, ["-e", "process.exit(0)"], { env: { PATH: process.env.PATH, PULUMI_CONFIG: value } });
        const config = (bytes: number) => ({ "nodefleet:k": "x".repeat(bytes - configEnvBytes({ "nodefleet:k": "" })) });
        const at = config(CONFIG_ENV_LIMIT);
        assert.equal(configEnvBytes(at), CONFIG_ENV_LIMIT);
        assert.equal(run(JSON.stringify(at)).status, 0);
        const over = config(CONFIG_ENV_LIMIT + 1);
        assert.equal((run(JSON.stringify(over)).error as NodeJS.ErrnoException | undefined)?.code, "E2BIG", "one byte over: argument list too long");
        assert.equal(configSizeProblem(CONFIG_ENV_LIMIT)?.refused, false);
        const refused = configSizeProblem(configEnvBytes(over))!;
        assert.equal(refused.refused, true);
        assert.match(refused.message, /^the stack's config is 128\.0 KiB, over the 128\.0 KiB Linux allows one environment variable: .*argument list too long.*nodefleet:fleetFile.*secretsDir/);
        assert.equal(configSizeProblem(96 * 1024 - 1), undefined);
        assert.match(configSizeProblem(96 * 1024)!.message, /^the stack's config is 96\.0 KiB, near the 128\.0 KiB/);
        // Go's JSON encoder (the language host's) writes <, > and & as \u003c: six bytes each.
        assert.equal(configEnvBytes({ a: "<&>" }) - configEnvBytes({ a: "abc" }), 15);
    });
});
