// The 0G chain validator role (docs/spec.md §2.6, 4.4, 4.5, 5, 7): 0gchaind and an execution client (geth or
// reth) under systemd, and the geth -> reth switch as a dependsOn chain of remote steps, one per
// step of docs/spec.md §4.5, each run by the host tool zg-validator.py (preconditions, completion markers,
// long work in transient systemd units). Rendering is pure; ValidatorNode registers the steps.
import * as pulumi from "@pulumi/pulumi";
import type { NodeSpec } from "../../config/schema";
import { Host, remoteStep } from "../../hosts/host";
import { removalValues, roleHealth, rolePrelude, type Prelude } from "../prelude";
import { driftRecord, nodeDriftGroup } from "../../hosts/drift";
import { roleTools } from "../../hosts/tools";
import { heredocSafe, OPERATOR_USER, releaseLink, wholeScript, type SecretScript } from "../../hosts/scripts";
import { HOST_LIB as LIB } from "../../base/layout";
import { contentHash, render } from "../../base/render";
import { resolveUrls, urlsHash, type SecretLookup } from "../urls";
import { RolloutGate, gateMarker, rolledBackMark, type NodeRollout, type RollbackSet } from "../../rollout/gate";
import type { RolePolicy } from "../contract";
import { renderHealthStep } from "../../health/checks";
import { VALIDATOR_SUFFIXES, validatorPaths, validatorRole } from "./contract";
import type { Handover } from "./moves";
import { switchSteps, switchTrigger } from "./switch";
import { installedRelease, type NodeComponent, type NodeSite } from "../site";
import {
    cometPort,
    engineDialUrl,
    executionPorts,
    RETH_BINARY,
    renderAppToml,
    renderConfigToml,
    renderConsensusUnit,
    renderGethUnit,
    renderRethUnit,
    unitNames,
    validatorMetrics,
    validatorRelease,
    type ValidatorRelease,
} from "./units";
import { upgradeFiles, upgradeSettings, type ValidatorUpgrade } from "./upgrade";

type ValidatorSpec = Extract<NodeSpec, { role: "validator" }>;

/** What zg-validator.py reads: /etc/nodefleet/<node>/validator.json. */
export function validatorSettingsJson(
    node: ValidatorSpec,
    mount: string,
    release: ValidatorRelease,
    carriedSigningState: unknown = null,
    metrics = false,
    upgrade?: ValidatorUpgrade,
): string {
    const p = validatorPaths(node, mount);
    const v = node.validator;
    return JSON.stringify(
        {
            node: node.name,
            operator: OPERATOR_USER,
            dataRoot: p.dataRoot,
            gethDir: p.gethDir,
            rethDir: p.rethDir,
            consensusHome: p.consensusHome,
            jwt: p.jwt,
            etcDir: p.etcDir,
            releaseDir: releaseLink(release.name),
            genesis: `${releaseLink(release.name)}/geth-genesis.json`,
            consensus: { daemon: release.consensus.binary, flagPrefix: release.consensus.flagPrefix },
            consensusGenesis: release.consensus.genesis === null ? null : `${releaseLink(release.name)}/${release.consensus.genesis}`,
            rethBinary: RETH_BINARY,
            services: unitNames(p),
            ports: { ...executionPorts(node), cometRpc: cometPort(node, VALIDATOR_SUFFIXES.cometRpc) },
            dialUrl: engineDialUrl(node),
            executionClient: v.executionClient,
            switch: v.switch ?? null,
            // The reference endpoint may carry an API key: the key step writes it to this root-only file.
            urlsFile: `${p.etcDir}/urls.json`,
            heightTolerance: v.heightTolerance,
            importRetries: v.importRetries,
            remedyRetries: 3,
            rollbackMax: 64,
            verifyTimeout: 180,
            cleanupAfterHours: 24,
            cleanup: v.cleanup,
            carriedSigningState: carriedSigningState ?? null,
            // The units the tool enables are recorded here for the drift check (and dropped when it disables them).
            driftUnits: `${driftRecord(nodeDriftGroup(node.name, "configure"))}+units`,
            // Monitored: setup makes an existing home's config.toml serve CometBFT's metrics there too.
            ...(metrics ? { metrics: { prometheusListenAddr: validatorMetrics(node).consensusListen } } : {}),
            // An upgrade at a height: the host tool arms its watcher and, at the height, swaps the units.
            ...(upgrade ? { upgrade: upgradeSettings(node, mount, upgrade) } : {}),
        },
        null,
        2,
    );
}

export interface ValidatorConfigureArgs {
    /** The host's name in the config (for its messages). */
    readonly host: string;
    readonly node: ValidatorSpec;
    /** The host's data mount. */
    readonly mount: string;
    readonly release: ValidatorRelease;
    /** The address its peers reach it at (the config's publicIp, else the host's). */
    readonly publicIp: string;
    /** Moving in: the signing state the handover on the host it leaves reported. */
    readonly carriedSigningState?: unknown;
    /** The fleet is monitored: the node serves its metrics. */
    readonly metrics?: boolean;
    /** The role's, when the node is gated. */
    readonly onFailure?: RolePolicy["onFailure"];
    /** An upgrade at a height: its release's units and watcher staged beside the running ones. */
    readonly upgrade?: ValidatorUpgrade;
}

/** The configure step: host tools, settings, staged units and default config, then `setup`. */
export function renderValidatorConfigure(a: ValidatorConfigureArgs): string {
    const { host, node, mount, release, publicIp, carriedSigningState = null, metrics = false, onFailure, upgrade } = a;
    const p = validatorPaths(node, mount);
    const D = "NODEFLEET_EOF";
    const staged = upgrade && upgradeFiles(node, mount, upgrade, publicIp, metrics);
    const safe = (f: { name: string; text: string }) => ({ name: f.name, text: heredocSafe(f.text, D) });
    return render("validator-configure.sh", {
        host,
        rolledBack: rolledBackMark(node.name, onFailure),
        driftRecord: driftRecord(nodeDriftGroup(node.name, "configure")),
        node: node.name,
        lib: LIB,
        etcDir: p.etcDir,
        services: unitNames(p),
        tools: roleTools("validator"),
        settings: heredocSafe(validatorSettingsJson(node, mount, release, carriedSigningState, metrics, upgrade), D),
        appToml: heredocSafe(renderAppToml(node, mount, release), D),
        configToml: heredocSafe(renderConfigToml(node, metrics), D),
        consensusUnit: heredocSafe(renderConsensusUnit(node, mount, release), D),
        gethUnit: heredocSafe(renderGethUnit(node, mount, release, publicIp, metrics), D),
        rethUnit: heredocSafe(renderRethUnit(node, mount, release, publicIp, metrics), D),
        upgrade: staged ? { dir: staged.dir, units: staged.units.map(safe), watcher: safe(staged.watcher) } : false,
    });
}

/**
 * What a validator's gate keeps and puts back under `onFailure: rollback`: the units its setup
 * installs (they name the release version's directory, kept on the host while a kept unit names
 * it) and what its configure step stages (the settings the host tool reads, the default config
 * files, the staged units), so that the next configure step sees what the node runs; restarted in
 * the configure step's order, the execution client first, the consensus daemon once the engine port
 * answers. Never put back: the validator key, `priv_validator_state.json` (what it signed) and the
 * JWT, none of them a file here. Pinned, so that a rollback is refused when one changed since the
 * files were kept: the validator key (the kept files ran with the old key, which may run on another
 * machine by now) and the switch state (a rollback across a geth -> reth switch would start units of
 * the other client: the switch has its own rollback).
 */
export function validatorRollbackSet(node: ValidatorSpec, mount: string): RollbackSet {
    const p = validatorPaths(node, mount);
    const units = [p.gethService, p.rethService, p.consensusService];
    const el = node.validator.executionClient === "reth" ? p.rethService : p.gethService;
    return {
        files: [
            ...units.map((u) => `/etc/systemd/system/${u}`),
            `${p.etcDir}/validator.json`,
            `${p.etcDir}/app.toml`,
            `${p.etcDir}/config.toml`,
            ...units.map((u) => `${p.etcDir}/${u}`),
        ],
        restart: [el, p.consensusService],
        pins: [`${p.consensusHome}/config/priv_validator_key.json`, `${p.dataRoot}/.nodefleet-switch/state.json`],
        awaitPort: executionPorts(node).engine,
    };
}

/** The key step's script: its body (no secret) and its secrets, the key and the reference endpoint. */
export function validatorKeyScript(node: ValidatorSpec, mount: string, key: string, referenceRpcUrl: string | null = null): SecretScript {
    const p = validatorPaths(node, mount);
    const body = render("validator-key.sh", {
        driftRecord: driftRecord(nodeDriftGroup(node.name, "key")),
        urlsFile: `${p.etcDir}/urls.json`,
        etcDir: p.etcDir,
        node: node.name,
        operator: OPERATOR_USER,
        dataRoot: p.dataRoot,
        home: p.consensusHome,
        keyFile: `${p.consensusHome}/config/priv_validator_key.json`,
        service: p.consensusService,
    });
    return {
        body,
        secrets: {
            key: heredocSafe(key, "NODEFLEET_EOF"),
            urls: heredocSafe(JSON.stringify({ referenceRpcUrl }, null, 2), "NODEFLEET_EOF"),
        },
    };
}

/** The key step's script as its host runs it, whole (validatorKeyScript). */
export function renderValidatorKey(node: ValidatorSpec, mount: string, key: string, referenceRpcUrl: string | null = null): string {
    return wholeScript(validatorKeyScript(node, mount, key, referenceRpcUrl));
}

export function renderValidatorRemove(host: string, node: ValidatorSpec, mount: string): string {
    const p = validatorPaths(node, mount);
    return render("validator-remove.sh", { ...removalValues(host, node), dataRoot: p.dataRoot, etcDir: p.etcDir, services: unitNames(p) });
}

/**
 * The health step's script: `zg-validator.py health` (its report, the forkchoice remedy), then a
 * failure when the execution client the config names or the consensus daemon does not run (setup
 * only warns), unless the node is `gated` and past its first deploy: its gate judges it. After a
 * switch's steps the client named is the one they left running (migrate and cleanup: reth;
 * rollback: geth).
 */
export function renderValidatorHealth(node: ValidatorSpec, gated: boolean): string {
    const p = validatorPaths(node, "/");
    const el = node.validator.executionClient === "reth" ? p.rethService : p.gethService;
    return renderHealthStep(
        node,
        ["python3", "-S", `${LIB}/zg-validator.py`, `${p.etcDir}/validator.json`, "health"],
        [el, p.consensusService],
        gated ? gateMarker(node.name) : undefined,
    );
}

export interface ValidatorNodeArgs {
    readonly node: ValidatorSpec;
    readonly host: Host;
    readonly user: string;
    /** The release it runs: its digest and consensus daemon (the host installs it). */
    readonly release: ValidatorRelease;
    /** priv_validator_key.json, as a secret. */
    readonly validatorKey: pulumi.Output<string>;
    /** Secret config values by key (the reference endpoint may be one). */
    readonly secret: SecretLookup;
    /** When the validator moves here from another host: the handover there, run before the key is written here. */
    readonly handover?: Handover;
    /** The fleet is monitored: the node serves its metrics (validatorMetrics). */
    readonly metrics?: boolean;
    /** Set when the fleet rolls changes out (its `rollout` section): the node is gated. */
    readonly rollout?: NodeRollout;
    /** An upgrade at a height (config `validator.upgrade`): its release is installed by the host too. */
    readonly upgrade?: ValidatorUpgrade;
}

/** The install step of an upgrade's release on the host (the configure step stages its units after it). */
function upgradeInstall(host: Host, upgrade: ValidatorUpgrade | undefined): pulumi.Resource[] {
    if (upgrade === undefined) return [];
    const step = host.releases.get(upgrade.release.name);
    if (step === undefined)
        throw new Error(`unreachable: host ${host.hostName} does not install the upgrade's release ${upgrade.release.name}`);
    return [step];
}

/** The configure step's script: the node's files, with its public address and the signing state a move carries. */
function validatorConfigureScript(args: ValidatorNodeArgs): pulumi.Output<string> {
    const { node, host, release } = args;
    const mount = host.dataMountPoint;
    const publicIp = node.validator.publicIp !== undefined ? pulumi.output(node.validator.publicIp) : host.publicAddress;
    const carried = args.handover?.signingState ?? pulumi.output(null);
    const onFailure = args.rollout?.policy.onFailure;
    return pulumi.all([publicIp, carried]).apply(([ip, state]) =>
        renderValidatorConfigure({
            host: host.hostName,
            node,
            mount,
            release,
            publicIp: ip,
            carriedSigningState: state,
            metrics: args.metrics ?? false,
            onFailure,
            upgrade: args.upgrade,
        }),
    );
}

/** The validator's teardown and key steps; moving here, its key is written after the handover on the host it leaves. */
function validatorPrelude(parent: pulumi.Resource, name: string, args: ValidatorNodeArgs, reference: pulumi.Output<string[]>): Prelude {
    const { node, host } = args;
    const mount = host.dataMountPoint;
    return rolePrelude(parent, name, args, {
        label: "validator",
        removeScript: renderValidatorRemove(host.hostName, node, mount),
        keyStep: "validator-key",
        keyScript: pulumi.all([args.validatorKey, reference]).apply(([k, r]) => validatorKeyScript(node, mount, k, r[0] ?? null)),
        keyAfter: args.handover ? [args.handover.step] : [],
    });
}

/**
 * teardown (destroy only) + [handover on the host it leaves] -> key -> configure (setup) -> [switch:
 * migrate: s01 .. s14 (l01 .. l14 with lowDowntime) | rollback | cleanup] -> health -> [gate].
 * Gated, the key step waits for the previous batch's gates too.
 */
export class ValidatorNode extends pulumi.ComponentResource {
    readonly health: pulumi.Output<Record<string, unknown>>;
    /** The rollout gate, when the node is gated. */
    readonly gate?: RolloutGate;
    /** The switch's report (per-step times, noted head, imported height, downtime), when one is configured. */
    readonly switchReport: pulumi.Output<Record<string, unknown>> | undefined;

    constructor(name: string, args: ValidatorNodeArgs, opts?: pulumi.ComponentResourceOptions) {
        super(validatorRole.componentType, name, {}, opts);
        const { node, host } = args;
        const mount = host.dataMountPoint;
        const reference = resolveUrls(node.validator.referenceRpcUrl === undefined ? [] : [node.validator.referenceRpcUrl], args.secret);
        const release = args.release;
        const { base, key } = validatorPrelude(this, name, args, reference);
        const configureScript = validatorConfigureScript(args);
        const referenceHash = urlsHash(reference);
        const configure = remoteStep(
            `${name}-configure`,
            {
                ...base,
                script: configureScript,
                // Moving in, the script carries the signing state the handover on the host it leaves
                // read: bundled, the host's copy (and its releases' installs) would wait for that handover.
                ...(args.handover ? {} : { bundle: host.tools }),
                inputsHash: [referenceHash],
                drift: { drift: host.drift, group: nodeDriftGroup(node.name, "configure") },
            },
            { parent: this, dependsOn: [key, ...upgradeInstall(host, args.upgrade)] },
        );
        const sw = node.validator.switch;
        const attempt = switchTrigger(node);
        const { last, report } = switchSteps(this, name, { node, base, mount, release, after: configure });
        const files = configureScript.apply((s) => contentHash(s));
        // Health is taken again when what the node runs changed: its files, the switch, or its
        // reference endpoint. What restarts the node: its files (setup restarts the daemons whose
        // files changed: its configure step), its reference endpoint and key. A switch changes its
        // files too (their settings carry it), so its gate runs after the switch's steps and holds the
        // next batch until the switched node is healthy; a rollback across the switch is refused (its
        // state is pinned).
        const health = renderValidatorHealth(node, args.rollout !== undefined);
        const checked = roleHealth(
            this,
            name,
            { ...args, base, script: health, inputsHash: [files, ...(sw ? [`${sw} ${attempt}`] : []), referenceHash], after: last },
            { reads: [files, referenceHash], key, configure, rollback: () => validatorRollbackSet(node, mount) },
        );
        this.health = checked.report;
        this.gate = checked.gate;
        this.switchReport = report;
        this.registerOutputs({ health: this.health, switch: report });
    }
}

/**
 * The fleet's validator (components/roles/nodes.ts): its releases as its host installs them, each
 * with its config entry's consensus daemon, and the handover it waits for when it moves here.
 */
export function buildValidatorNode(
    name: string,
    node: ValidatorSpec,
    site: NodeSite,
    opts: pulumi.ComponentResourceOptions,
): NodeComponent {
    const named = (r: string | undefined) =>
        validatorRelease(installedRelease(site.plan, { name: node.name, release: r }), r === undefined ? undefined : site.releases[r]);
    const up = node.validator.upgrade;
    const upgrade = up && { release: named(up.release), height: up.height };
    return new ValidatorNode(
        name,
        {
            node,
            host: site.host,
            user: site.user,
            release: named(node.release),
            validatorKey: site.secret(node.validator.validatorKeySecret),
            secret: site.secret,
            handover: site.moves.arriving(node.name),
            metrics: site.plan.monitoring !== undefined,
            rollout: site.rollout,
            upgrade,
        },
        opts,
    );
}
