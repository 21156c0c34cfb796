// The Aztec sequencer role (docs/spec.md §1, 2.4, 2.5, 4.1, 4.3, 4.4, 5, 8, 9): a systemd unit with the
// start flags of docs/spec.md §2.4 and the validator key in a root-only environment file, the version
// manager on a version change, the validator registration, and a health report. Rendering is
// pure; SequencerNode registers the steps.
import * as pulumi from "@pulumi/pulumi";
import { Host, remoteStep, stepReport } from "../../hosts/host";
import { removalValues, roleHealth, rolePrelude, type Prelude } from "../prelude";
import { driftRecord, nodeDriftGroup } from "../../hosts/drift";
import { roleTools } from "../../hosts/tools";
import { heredocSafe, OPERATOR_USER, releaseDir, releaseLink, wholeScript, type SecretScript } from "../../hosts/scripts";
import { HOST_LIB as LIB } from "../../base/layout";
import type { ResolvedRelease } from "../../config/plan";
import { AZTEC_PORTS } from "../../values/port-defaults";
import { render, contentHash, envFileValue } from "../../base/render";
import { dialectOf, registrationArgs, sequencerEnvironment, sequencerStartArgs, versionFamily, type SequencerSpec } from "./aztec-versions";
import { blsSecretKeyReason } from "../../values/validators";
import { resolveUrls, urlsHash, type SecretLookup } from "../urls";
import { RolloutGate, gateMarker, rolledBackMark, type NodeRollout, type RollbackSet } from "../../rollout/gate";
import type { RolePolicy } from "../contract";
import { renderHealthStep } from "../../health/checks";
import { sequencerPaths, sequencerRole } from "./contract";
import { installedRelease, type NodeComponent, type NodeSite } from "../site";

/** The node image the docker runtime runs; its tag is the configured version. */
export const AZTEC_IMAGE = "aztecprotocol/aztec";

/** The release a sequencer runs: its name and digest (the host installs it). */
export type SequencerRelease = Pick<ResolvedRelease, "name" | "sha256">;

/**
 * The release runtime's unit starts `aztec` from the release version's own directory, not its
 * link: a new release changes the unit, so the configure step restarts the node onto it (gated,
 * with a `rollout`), and a node not yet moved keeps running the version it started from (the
 * install keeps a version a unit names). One-shot commands (registration, aztec-up) take the link.
 */
const unitBinaryOf = (release: SequencerRelease) => `${releaseDir(release)}/bin/aztec`;
const binaryOf = (release: string) => `${releaseLink(release)}/bin/aztec`;
const imageOf = (node: SequencerSpec) => `${AZTEC_IMAGE}:${node.sequencer.version}`;

export function renderSequencerUnit(node: SequencerSpec, mount: string, release: SequencerRelease, publicIp: string): string {
    const p = sequencerPaths(node, mount);
    const s = node.sequencer;
    return render("aztec.service", {
        node: node.name,
        // The version family, not the version: a patch release changes no line of the release runtime's unit.
        family: versionFamily(node),
        keyEnv: dialectOf(node).validatorKeyEnv,
        docker: s.runtime === "docker",
        operator: OPERATOR_USER,
        container: p.container,
        image: imageOf(node),
        binary: unitBinaryOf(release),
        dataDir: p.dataDir,
        envFile: p.envFile,
        network: s.network,
        env: sequencerEnvironment(node, p.dataDirectory),
        startArgs: sequencerStartArgs(node, publicIp),
    });
}

/** What the health script reads: /etc/nodefleet/<node>/sequencer.json. */
export function sequencerJson(node: SequencerSpec, mount: string): string {
    const p = sequencerPaths(node, mount);
    // api: the version family, whose RPC shapes the health script reads (hostfiles/aztec-health.py).
    return JSON.stringify({ node: node.name, service: p.service, rpcPort: AZTEC_PORTS.rpc, api: versionFamily(node) }, null, 2);
}

/** The registration step's script: aztec-register.py with its settings on stdin (docs/spec.md §2.5). */
export function renderSequencerRegistration(node: SequencerSpec, mount: string, release: string): string {
    const p = sequencerPaths(node, mount);
    const s = node.sequencer;
    const dialect = dialectOf(node);
    const contracts =
        s.version !== "4.1.2"
            ? { registryAddress: s.registryAddress, stakingAssetHandler: s.stakingAssetHandler }
            : { rollupAddress: s.rollupAddress };
    const settings = JSON.stringify(
        {
            dialect: dialect.registration,
            runtime: s.runtime,
            binary: binaryOf(release),
            // The docker runtime runs <image>:<the version aztec-up installed last> (not part of this
            // script, so a version change does not re-run the registration).
            image: AZTEC_IMAGE,
            versionFile: `${p.etcDir}/version`,
            dataDir: p.dataDir,
            l1ChainId: s.l1ChainId,
            validatorAddress: s.validatorAddress,
            ...contracts,
            registerEnvFile: p.registerEnvFile,
            // 4.x: the BLS key reaches the CLI's in-process argv through this preload, never its command line.
            argvPreload: dialect.registration === "rollup-deposit" ? `${LIB}/aztec-argv.mjs` : null,
            args: registrationArgs(node),
        },
        null,
        2,
    );
    return render("sequencer-register.sh", {
        node: node.name,
        script: `${LIB}/aztec-register.py`,
        etcDir: p.etcDir,
        settingsFile: p.registrationFile,
        settings: heredocSafe(settings, "NODEFLEET_EOF"),
    });
}

/**
 * What a sequencer's gate keeps and puts back under `onFailure: rollback`: its unit (which names the
 * release version's directory, kept on the host while a kept unit names it, or the image of its
 * version, which docker still has or pulls again), the health script's settings, and the version
 * aztec-up installed last and the one the node was started with (so that the next configure step
 * sees what the node runs); the Aztec node restarted. Its env file is the key step's (the key, the L1
 * endpoints, under the names its version reads): never put back, and pinned: a node whose key,
 * endpoints or version family changed with the change is not rolled back onto files that ran with
 * others (the old key may run on another machine by now).
 */
export function sequencerRollbackSet(node: SequencerSpec, mount: string): RollbackSet {
    const p = sequencerPaths(node, mount);
    return {
        files: [`/etc/systemd/system/${p.service}`, `${p.etcDir}/sequencer.json`, `${p.etcDir}/version`, `${p.etcDir}/started-version`],
        restart: [p.service],
        pins: [p.envFile],
    };
}

/**
 * The configure step's script: unit and host scripts, then start, or restart on a unit/version
 * change. `onFailure`: the role's, when the node is gated; with `rollback` the script also clears
 * the mark of a rollback first: what it applies is a new change, for the gate to check.
 */
export function renderSequencerConfigure(a: {
    readonly host: string;
    readonly node: SequencerSpec;
    readonly mount: string;
    readonly release: SequencerRelease;
    readonly publicIp: string;
    readonly onFailure?: RolePolicy["onFailure"];
}): string {
    const { host, node, mount, release, publicIp, onFailure } = a;
    const p = sequencerPaths(node, mount);
    const D = "NODEFLEET_EOF";
    const docker = node.sequencer.runtime === "docker";
    return render("sequencer-configure.sh", {
        host,
        driftRecord: driftRecord(nodeDriftGroup(node.name, "configure")),
        node: node.name,
        service: p.service,
        etcDir: p.etcDir,
        dataDir: p.dataDir,
        dataDirectory: p.dataDirectory,
        operator: OPERATOR_USER,
        // The docker runtime's container runs as root; the release binary as the operator user.
        runAs: docker ? "root" : OPERATOR_USER,
        docker,
        binary: unitBinaryOf(release),
        sequencerJson: heredocSafe(sequencerJson(node, mount), D),
        lib: LIB,
        tools: roleTools("sequencer"),
        unit: heredocSafe(renderSequencerUnit(node, mount, release, publicIp), D),
        rolledBack: rolledBackMark(node.name, onFailure),
    });
}

/**
 * The health step's script: the node's health report, then a failure when the Aztec node does not
 * run (the configure step only warns), unless the node is `gated` and past its first deploy: its
 * gate judges it.
 */
export function renderSequencerHealth(node: SequencerSpec, mount: string, gated: boolean): string {
    return renderHealthStep(
        node,
        ["python3", `${LIB}/aztec-health.py`, node.name, "--wait", "90"],
        [sequencerPaths(node, mount).service],
        gated ? gateMarker(node.name) : undefined,
    );
}

/** The L1 endpoints' values (a URL may carry an API key: they travel with the keys). */
export interface L1Urls {
    readonly l1RpcUrls: readonly string[];
    readonly l1ConsensusHostUrls: readonly string[];
}

/** An environment file's lines: NAME=VALUE each, as systemd and the registration read them. */
function envFileText(lines: readonly (readonly [string, string])[]): string {
    if (lines.length === 0) throw new Error("unreachable: an environment file with no line");
    return lines.map(([k, v]) => `${envFileValue(k)}=${envFileValue(v)}\n`).join("");
}

/** The key step's script as its host runs it, whole (sequencerKeyScript). */
export function renderSequencerKey(
    node: SequencerSpec,
    mount: string,
    key: string,
    blsSecretKey: string | undefined,
    urls: L1Urls,
): string {
    return wholeScript(sequencerKeyScript(node, mount, key, blsSecretKey, urls));
}

/**
 * The key step's script: the node's and the registration's root-only env files, named as this
 * version reads them: the keys, and the L1 endpoints as ETHEREUM_HOSTS and L1_CONSENSUS_HOST_URLS
 * (the primary variables of --l1-rpc-urls and --l1-consensus-host-urls, so no URL is on the node's
 * or the CLI's command line). Its body holds no secret; its secrets are the two files' lines.
 */
export function sequencerKeyScript(
    node: SequencerSpec,
    mount: string,
    key: string,
    blsSecretKey: string | undefined,
    urls: L1Urls,
): SecretScript {
    const p = sequencerPaths(node, mount);
    const dialect = dialectOf(node);
    if (!/^0x[0-9a-fA-F]{64}$/.test(key))
        throw new Error(`${node.name}: the validator private key must be 0x followed by 64 hex characters`);
    const l1: [string, string] = ["ETHEREUM_HOSTS", urls.l1RpcUrls.join(",")];
    const nodeEnv: [string, string][] = [
        [dialect.validatorKeyEnv, key],
        l1,
        ["L1_CONSENSUS_HOST_URLS", urls.l1ConsensusHostUrls.join(",")],
    ];
    const registerEnv: [string, string][] = [[dialect.senderKeyEnv, key], l1];
    if (dialect.registration === "rollup-deposit") {
        const reason = blsSecretKey === undefined ? "it is missing" : blsSecretKeyReason(blsSecretKey);
        if (reason) throw new Error(`${node.name}: the BLS secret key: ${reason}`);
        registerEnv.push(["NODEFLEET_BLS_SECRET_KEY", blsSecretKey!]);
    }
    const body = render("sequencer-key.sh", {
        driftRecord: driftRecord(nodeDriftGroup(node.name, "key")),
        node: node.name,
        service: p.service,
        etcDir: p.etcDir,
        envFile: p.envFile,
        registerEnvFile: p.registerEnvFile,
        adminKey: dialect.adminKeyHash,
        adminKeyFile: p.adminKeyFile,
    });
    return { body, secrets: { node_env: envFileText(nodeEnv), register_env: envFileText(registerEnv) } };
}

export function renderSequencerVersion(node: SequencerSpec, release: string): string {
    return render("sequencer-version.sh", {
        node: node.name,
        version: node.sequencer.version,
        aztecUp: `${releaseLink(release)}/bin/aztec-up`,
        etcDir: sequencerPaths(node, "/").etcDir,
    });
}

/** What `pulumi destroy` runs: unit, key files and config removed; data kept. */
export function renderSequencerRemove(host: string, node: SequencerSpec, mount: string): string {
    const { service, etcDir, dataDir } = sequencerPaths(node, mount);
    return render("sequencer-remove.sh", { ...removalValues(host, node), service, etcDir, dataDir });
}

export interface SequencerNodeArgs {
    readonly node: SequencerSpec;
    readonly host: Host;
    readonly user: string;
    readonly validatorKey: pulumi.Output<string>;
    /** The release it runs, resolved (the host installs it). */
    readonly release: SequencerRelease;
    /** 4.x: the attester's BLS secret key (registration). */
    readonly blsSecretKey?: pulumi.Output<string>;
    /** Secret config values by key (an L1 URL may be one). */
    readonly secret: SecretLookup;
    /** Set when the fleet rolls changes out (its `rollout` section): the node is gated. */
    readonly rollout?: NodeRollout;
}

/** The sequencer's teardown and key steps: its keys and L1 URLs written into its env files. */
function sequencerPrelude(
    parent: pulumi.Resource,
    name: string,
    args: SequencerNodeArgs,
    l1RpcUrls: pulumi.Output<string[]>,
    l1ConsensusHostUrls: pulumi.Output<string[]>,
): Prelude {
    const { node, host } = args;
    const mount = host.dataMountPoint;
    return rolePrelude(parent, name, args, {
        label: "sequencer",
        removeScript: renderSequencerRemove(host.hostName, node, mount),
        keyStep: "validator-key",
        keyScript: pulumi
            .all([args.validatorKey, args.blsSecretKey ?? pulumi.output(undefined), l1RpcUrls, l1ConsensusHostUrls])
            .apply(([k, bls, rpc, beacon]) => sequencerKeyScript(node, mount, k, bls, { l1RpcUrls: rpc, l1ConsensusHostUrls: beacon })),
    });
}

/**
 * teardown (destroy only) -> [the previous batch's gates] -> key -> version (aztec-up) -> configure
 * (unit, start/restart) -> registration -> health -> [gate].
 */
export class SequencerNode extends pulumi.ComponentResource {
    /** The health report of the last deploy (aztec-health.py), parsed. */
    readonly health: pulumi.Output<Record<string, unknown>>;
    /** The rollout gate, when the node is gated. */
    readonly gate?: RolloutGate;
    /** What the registration step found and did. */
    readonly registration: pulumi.Output<Record<string, unknown>>;

    constructor(name: string, args: SequencerNodeArgs, opts?: pulumi.ComponentResourceOptions) {
        super(sequencerRole.componentType, name, {}, opts);
        const { node, host } = args;
        const mount = host.dataMountPoint;
        const l1RpcUrls = resolveUrls(node.sequencer.l1RpcUrls, args.secret);
        const l1ConsensusHostUrls = resolveUrls(node.sequencer.l1ConsensusHostUrls, args.secret);
        const { base, key } = sequencerPrelude(this, name, args, l1RpcUrls, l1ConsensusHostUrls);
        const urlsChanged = urlsHash(pulumi.all([l1RpcUrls, l1ConsensusHostUrls]).apply(([a, b]) => [...a, "", ...b]));
        const version = remoteStep(
            `${name}-version`,
            { ...base, script: renderSequencerVersion(node, args.release.name), bundle: host.tools },
            { parent: this, dependsOn: [key] },
        );
        const publicIp = node.sequencer.publicIp !== undefined ? pulumi.output(node.sequencer.publicIp) : host.publicAddress;
        const onFailure = args.rollout?.policy.onFailure;
        const configureScript = publicIp.apply((ip) =>
            renderSequencerConfigure({ host: host.hostName, node, mount, release: args.release, publicIp: ip, onFailure }),
        );
        // The version is part of the configure inputs: a new version restarts the node once, there.
        const configure = remoteStep(
            `${name}-configure`,
            {
                ...base,
                script: configureScript,
                bundle: host.tools,
                inputsHash: [contentHash(node.sequencer.version)],
                drift: { drift: host.drift, group: nodeDriftGroup(node.name, "configure") },
            },
            { parent: this, dependsOn: [version] },
        );
        const register = remoteStep(
            `${name}-registration`,
            // Asked again when an L1 endpoint changes (the key step rewrote the env file it reads).
            { ...base, script: renderSequencerRegistration(node, mount, args.release.name), inputsHash: [urlsChanged] },
            { parent: this, dependsOn: [configure] },
        );
        // What the node runs: its unit and files, its version, its L1 endpoints. The health report is
        // taken again when it changes, and (with its keys, which the key step writes into its env file) it restarts the node.
        const readAgain = [configureScript.apply((s) => contentHash(s)), contentHash(node.sequencer.version), urlsChanged];
        const health = renderSequencerHealth(node, mount, args.rollout !== undefined);
        const { report, gate } = roleHealth(
            this,
            name,
            { ...args, base, script: health, inputsHash: readAgain, after: register },
            { reads: readAgain, key, configure, rollback: () => sequencerRollbackSet(node, mount) },
        );
        this.registration = stepReport(register, "registration report");
        this.health = report;
        this.gate = gate;
        this.registerOutputs({ health: this.health, registration: this.registration });
    }
}

/** The fleet's sequencer (components/roles/nodes.ts): 4.x registers with a BLS key too. */
export function buildSequencerNode(
    name: string,
    node: SequencerSpec,
    site: NodeSite,
    opts: pulumi.ComponentResourceOptions,
): NodeComponent {
    const { host, user, secret, rollout } = site;
    const blsSecretKey = node.sequencer.version === "4.1.2" ? secret(node.sequencer.blsSecretKeySecret) : undefined;
    const args = {
        node,
        host,
        user,
        release: installedRelease(site.plan, node),
        validatorKey: secret(node.sequencer.validatorPrivateKeySecret),
        blsSecretKey,
        secret,
        rollout,
    };
    return new SequencerNode(name, args, opts);
}
