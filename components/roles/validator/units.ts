// A validator's units and default config files, rendered from its release: the execution client's
// (geth or reth) and the consensus daemon's (0gchaind or BeaconKit's beacond), and the app.toml and
// config.toml written into a consensus home that has none. Pure rendering; the role (validator.ts)
// and an upgrade at a height (validator-upgrade.ts) stage them on the host.
import type { NodeSpec, ReleaseSpec } from "../../config/schema";
import type { ResolvedRelease } from "../../config/plan";
import { prefixed, validatorMetricsPorts, VALIDATOR_SUFFIXES } from "./contract";
import { OPERATOR_USER, releaseDir, releaseLink } from "../../hosts/scripts";
import { HOST_LIB } from "../../base/layout";
import { render } from "../../base/render";
import { validatorPaths, type ValidatorPaths } from "./contract";

type ValidatorSpec = Extract<NodeSpec, { role: "validator" }>;

/** The dev and Galileo testnet chain id the 0G release's geth genesis carries. */
export const ZG_CHAIN_ID = 16661;

/**
 * The consensus daemon a validator's release carries in bin/: 0G's 0gchaind (the spec's) or
 * BeaconKit's beacond, its open core, whose flags are 0gchaind's with the prefix `beacon-kit`
 * for `chaincfg`. The unit, the app.toml and every host tool follow it.
 */
export interface ConsensusDaemon {
    readonly binary: "0gchaind" | "beacond";
    readonly flagPrefix: "chaincfg" | "beacon-kit";
    /** The network's consensus genesis inside the release (relative), or null: the home brings its own. */
    readonly genesis: string | null;
    /** 0gchaind's `--chaincfg.chain-spec`, beacond's CHAIN_SPEC; null: the daemon's default. */
    readonly chainSpec: "mainnet" | "testnet" | "devnet" | null;
}

/**
 * A validator's release: its name (the host's install of it), its digest (its daemons start from
 * that version's own directory) and its consensus daemon.
 */
export interface ValidatorRelease {
    readonly name: string;
    readonly sha256: string;
    readonly consensus: ConsensusDaemon;
}

/** `installed`: the release as its host installs it (the digest resolved); `spec`: its config entry. */
export function validatorRelease(
    installed: Pick<ResolvedRelease, "name" | "sha256">,
    spec?: Pick<ReleaseSpec, "consensus">,
): ValidatorRelease {
    const binary = spec?.consensus?.daemon ?? "0gchaind";
    return {
        name: installed.name,
        sha256: installed.sha256,
        consensus: {
            binary,
            flagPrefix: binary === "beacond" ? "beacon-kit" : "chaincfg",
            chainSpec: spec?.consensus?.chainSpec ?? null,
            genesis: spec?.consensus?.genesis ?? null,
        },
    };
}

/**
 * Where the execution and consensus units start their binaries: the release version's own
 * directory, not its link. A new version changes both units, so the configure step restarts the
 * node onto it (execution client first, the consensus daemon held meanwhile; gated with a
 * `rollout`), and a node not yet moved keeps running the version it started from (the install
 * keeps a version a unit names). Files read once at init (genesis, KZG setup) stay under the link.
 */
const binDir = (release: ValidatorRelease) => `${releaseDir(release)}/bin`;

/** docs/spec.md §4.5 step 1: the Rust client is copied here from the release. */
export const RETH_BINARY = "/usr/local/bin/reth";

/** The node's three units, keyed as the host tool and the scripts name them. */
export const unitNames = (p: ValidatorPaths) => ({ geth: p.gethService, reth: p.rethService, consensus: p.consensusService });

/** <prefix><suffix> ports of the execution client. */
export function executionPorts(node: ValidatorSpec) {
    const at = (s: number) => prefixed(node.validator.portPrefix, s);
    return {
        http: at(VALIDATOR_SUFFIXES.elHttp),
        ws: at(VALIDATOR_SUFFIXES.elWs),
        engine: at(VALIDATOR_SUFFIXES.engine),
        p2p: at(VALIDATOR_SUFFIXES.elP2p),
    };
}

/**
 * Where a validator serves its metrics when the fleet is monitored: on every address, the host
 * firewall opening the ports to the monitoring host alone (ports.ts monitoringRules). Unmonitored,
 * none (the units and config.toml are rendered as without monitoring, byte for byte).
 */
export function validatorMetrics(node: ValidatorSpec) {
    const p = validatorMetricsPorts(node.validator.portPrefix);
    return { address: "0.0.0.0", port: p.execution, listen: `0.0.0.0:${p.execution}`, consensusListen: `:${p.consensus}` };
}

function unitContext(node: ValidatorSpec, mount: string, release: ValidatorRelease, publicIp: string, metrics: boolean) {
    const p = validatorPaths(node, mount);
    return {
        node: node.name,
        operator: OPERATOR_USER,
        dataRoot: p.dataRoot,
        jwt: p.jwt,
        ports: executionPorts(node),
        bootnode: node.validator.bootnode,
        publicIp,
        bin: binDir(release),
        metrics: metrics ? validatorMetrics(node) : false,
    };
}

/** reth's unit with exactly the parameters and unit settings of docs/spec.md §2.6 (and `--metrics` when monitored). */
export function renderRethUnit(node: ValidatorSpec, mount: string, release: ValidatorRelease, publicIp: string, metrics = false): string {
    const c = unitContext(node, mount, release, publicIp, metrics);
    const p = validatorPaths(node, mount);
    return render("reth.service", {
        ...c,
        binary: RETH_BINARY,
        genesis: `${releaseLink(release.name)}/geth-genesis.json`,
        datadir: p.rethDir,
        ipcpath: `${p.rethDir}/reth.ipc`,
    });
}

/** geth's unit: the pre-migration state and the rollback target, on the same ports and JWT file. */
export function renderGethUnit(node: ValidatorSpec, mount: string, release: ValidatorRelease, publicIp: string, metrics = false): string {
    const c = unitContext(node, mount, release, publicIp, metrics);
    return render("geth.service", { ...c, binary: `${c.bin}/geth`, datadir: validatorPaths(node, mount).gethDir, networkId: ZG_CHAIN_ID });
}

/**
 * The consensus daemon's unit: the JWT file the execution client reads (docs/spec.md §5) and the release's
 * KZG trusted setup as flags, in the daemon's prefix; the chain spec as its flag (0gchaind) or
 * its environment variable (beacond v1.1 reads only CHAIN_SPEC).
 */
export function renderConsensusUnit(node: ValidatorSpec, mount: string, release: ValidatorRelease): string {
    const p = validatorPaths(node, mount);
    const c = release.consensus;
    return render("0gchaind.service", {
        node: node.name,
        operator: OPERATOR_USER,
        dataRoot: p.dataRoot,
        home: p.consensusHome,
        jwt: p.jwt,
        daemon: c.binary,
        binary: `${binDir(release)}/${c.binary}`,
        flags: consensusFlags(c),
        kzg: kzgTrustedSetup(release),
        chainSpecFlag: (c.binary === "0gchaind" && c.chainSpec) || "",
        chainSpecEnv: (c.binary === "beacond" && c.chainSpec) || "",
        seeds: node.validator.consensusSeeds.join(","),
        peers: node.validator.consensusPeers.join(","),
        stopScript: `${HOST_LIB}/consensus-stop.py`,
        rpcUrl: `http://127.0.0.1:${cometPort(node, VALIDATOR_SUFFIXES.cometRpc)}`,
    });
}

/** The daemon's flags nodefleet sets, in its prefix. */
export function consensusFlags(c: ConsensusDaemon) {
    return {
        jwt: `--${c.flagPrefix}.engine.jwt-secret-path`,
        kzg: `--${c.flagPrefix}.kzg.trusted-setup-path`,
        chainSpec: `--${c.flagPrefix}.chain-spec`,
        seeds: "--p2p.seeds",
        peers: "--p2p.persistent_peers",
    };
}

/** The KZG trusted setup the release ships (0G's releases and the lab's alike). */
const kzgTrustedSetup = (release: ValidatorRelease) => `${releaseLink(release.name)}/kzg-trusted-setup.json`;

export const cometPort = (node: ValidatorSpec, suffix: number) => prefixed(node.validator.portPrefix, suffix);

/** app.toml for a consensus home that has none (an existing one is only edited, never replaced). */
export function renderAppToml(node: ValidatorSpec, mount: string, release: ValidatorRelease): string {
    return render("0gchaind-app.toml", {
        node: node.name,
        daemon: release.consensus.binary,
        dialUrl: engineDialUrl(node),
        jwt: validatorPaths(node, mount).jwt,
        kzg: kzgTrustedSetup(release),
    });
}

export function renderConfigToml(node: ValidatorSpec, metrics = false): string {
    return render("0gchaind-config.toml", {
        node: node.name,
        prometheusListen: metrics ? validatorMetrics(node).consensusListen : false,
        rpcLaddr: `tcp://127.0.0.1:${cometPort(node, VALIDATOR_SUFFIXES.cometRpc)}`,
        p2pLaddr: `tcp://0.0.0.0:${cometPort(node, VALIDATOR_SUFFIXES.cometP2p)}`,
    });
}

/** Where 0gchaind reaches the execution client's engine API: app.toml's `rpc-dial-url`, set by the host tool too. */
export function engineDialUrl(node: ValidatorSpec): string {
    return `http://localhost:${executionPorts(node).engine}`;
}
