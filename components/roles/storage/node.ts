// The 0G storage node role (docs/spec.md §1, 2.1-2.3, 6, 7, 8): config.toml from the fleet config, the
// miner key in a root-only file that goes into config.toml on the host (zgs_node v1.1.0 reads it
// from there alone), a systemd unit, RPC endpoint failover, the snapshot guard, and a health
// report. Rendering is pure; StorageNode registers the steps.
import * as pulumi from "@pulumi/pulumi";
import type { NodeSpec } from "../../config/schema";
import { Host, remoteStep } from "../../hosts/host";
import { removalValues, roleHealth, rolePrelude } from "../prelude";
import { driftRecord, nodeDriftGroup } from "../../hosts/drift";
import { roleTools } from "../../hosts/tools";
import { heredocSafe, OPERATOR_USER, releaseDir, wholeScript, type SecretScript } from "../../hosts/scripts";
import { HOST_LIB } from "../../base/layout";
import type { ResolvedRelease } from "../../config/plan";
import { render, contentHash } from "../../base/render";
import { urlsHash } from "../urls";
import { RolloutGate, gateMarker, rolledBackMark, type NodeRollout, type RollbackSet } from "../../rollout/gate";
import type { RolePolicy } from "../contract";
import { renderHealthStep } from "../../health/checks";
import { storagePaths, storageRole } from "./contract";
import { resolveUrls } from "../urls";
import { installedRelease, type NodeComponent, type NodeSite } from "../site";

type StorageSpec = Extract<NodeSpec, { role: "storage" }>;

/** config.toml with the endpoint placeholder that zgs-endpoint fills in on the host. */
export function renderStorageConfig(node: StorageSpec, mount: string): string {
    const p = storagePaths(node, mount);
    const s = node.storage;
    return render("zgs-config.toml", {
        node: node.name,
        networkDir: `${p.dataDir}/network`,
        p2pPort: s.p2pPort,
        enrAddress: s.networkEnrAddress ?? "",
        bootNodes: s.networkBootNodes,
        logContractAddress: s.logContractAddress,
        mineContractAddress: s.mineContractAddress,
        rewardContractAddress: s.rewardContractAddress ?? "",
        logSyncStartBlock: s.logSyncStartBlock,
        dbDir: p.dbDir,
        logConfigFile: p.logConfigFile,
        logDir: `${p.dataDir}/log`,
        rpcListen: `${s.rpcBind}:${s.rpcPort}`,
        adminListen: `127.0.0.1:${s.adminRpcPort}`,
        grpcListen: `127.0.0.1:${s.grpcPort}`,
    });
}

/** The release a storage node runs: its name and digest (its unit starts the binary of that version's directory). */
export type StorageRelease = Pick<ResolvedRelease, "name" | "sha256">;

/**
 * The node's units. The service starts zgs_node from its release version's own directory, not
 * through the release's link: a new version changes the unit, so the node's configure step
 * restarts it onto that version (gated, with a `rollout`), and a node not yet moved keeps the
 * version it runs (the install keeps a version a unit still names).
 */
export function renderStorageUnits(node: StorageSpec, mount: string, release: StorageRelease) {
    const p = storagePaths(node, mount);
    const common = { node: node.name, endpointScript: `${HOST_LIB}/zgs-endpoint.py` };
    return {
        unit: render("zgs.service", {
            ...common,
            operator: OPERATOR_USER,
            runDir: p.runDir,
            binary: `${releaseDir(release)}/zgs_node`,
            stopScript: `${HOST_LIB}/zgs-stop.py`,
        }),
        failoverService: render("zgs-failover.service", common),
        failoverTimer: render("zgs-failover.timer", common),
    };
}

/**
 * What a storage node's gate keeps and puts back under `onFailure: rollback`: every file its
 * configure step writes (units, config template and config.toml, log config, the tools' settings),
 * the unit naming the release version it ran (kept on the host while a kept unit names it), and
 * its service and failover timer restarted. The key step's files (miner key, endpoints) are not
 * rolled back: config.toml as kept holds the key and endpoint it ran with, so the miner key is
 * pinned (a node whose key changed since is not rolled back onto the old one).
 */
export function storageRollbackSet(node: StorageSpec, mount: string): RollbackSet {
    const p = storagePaths(node, mount);
    const units = [p.service, p.failoverService, p.failoverTimer].map((u) => `/etc/systemd/system/${u}`);
    return {
        files: [...units, p.templateFile, p.configFile, p.logConfigFile, `${p.etcDir}/storage.json`],
        restart: [p.service, p.failoverTimer],
        pins: [p.minerKeyFile],
    };
}

/**
 * The configure step's script: every file of the node, the guard, the endpoint, (re)start.
 * A node that does not run after its restart (a release that exits at start) is warned of, and left
 * to the health step (renderStorageHealth), or, gated and past its first deploy, to its gate.
 * `onFailure`: the role's, when the node is gated; with `rollback` the script also clears the mark
 * of a rollback first: what it applies is a new change, for the gate to check.
 */
export function renderStorageConfigure(a: {
    readonly host: string;
    readonly node: StorageSpec;
    readonly mount: string;
    readonly release: StorageRelease;
    readonly onFailure?: RolePolicy["onFailure"];
}): string {
    const { host, node, mount, release, onFailure } = a;
    const p = storagePaths(node, mount);
    const units = renderStorageUnits(node, mount, release);
    const D = "NODEFLEET_EOF";
    const storageJson = JSON.stringify(
        {
            template: p.templateFile,
            config: p.configFile,
            urls: p.urlsFile,
            minerKey: p.minerKeyFile,
            service: p.service,
            // zgs-endpoint records config.toml here (it renders the file on the host).
            driftRecord: `${driftRecord(nodeDriftGroup(node.name, "configure"))}+endpoint`,
        },
        null,
        2,
    );
    return render("storage-configure.sh", {
        host,
        driftRecord: driftRecord(nodeDriftGroup(node.name, "configure")),
        node: node.name,
        service: p.service,
        dataDir: p.dataDir,
        dbDir: p.dbDir,
        runDir: p.runDir,
        etcDir: p.etcDir,
        operator: OPERATOR_USER,
        binary: `${releaseDir(release)}/zgs_node`,
        templateFile: p.templateFile,
        logConfigFile: p.logConfigFile,
        failoverService: p.failoverService,
        failoverTimer: p.failoverTimer,
        configTemplate: heredocSafe(renderStorageConfig(node, mount), D),
        logConfig: heredocSafe("info", D),
        storageJson: heredocSafe(storageJson, D),
        lib: HOST_LIB,
        tools: roleTools("storage"),
        unit: heredocSafe(units.unit, D),
        failoverUnit: heredocSafe(units.failoverService, D),
        failoverTimerUnit: heredocSafe(units.failoverTimer, D),
        rolledBack: rolledBackMark(node.name, onFailure),
        gated: onFailure !== undefined,
    });
}

/**
 * The health step's script: the node's health report, then a failure when zgs_node does not run
 * (the configure step only warns), unless the node is gated and past its first deploy (`onFailure`
 * set: the role's): its gate judges it.
 */
export function renderStorageHealth(node: StorageSpec, mount: string, onFailure?: RolePolicy["onFailure"]): string {
    return renderHealthStep(
        node,
        ["python3", `${HOST_LIB}/zgs-health.py`, node.name, "--wait", "60"],
        [storagePaths(node, mount).service],
        onFailure === undefined ? undefined : gateMarker(node.name),
    );
}

/** What `pulumi destroy` runs: units, key and config removed; chain data kept. */
export function renderStorageRemove(host: string, node: StorageSpec, mount: string): string {
    const { service, failoverService, failoverTimer, etcDir, dataDir, runDir } = storagePaths(node, mount);
    return render("storage-remove.sh", { ...removalValues(host, node), service, failoverService, failoverTimer, etcDir, dataDir, runDir });
}

/**
 * The key step's script: the miner key's file and the RPC endpoints' file, both root-only. Its body
 * holds no secret; its secrets are the key and the endpoints.
 */
export function storageKeyScript(node: StorageSpec, mount: string, minerKey: string, endpoints: readonly string[]): SecretScript {
    const p = storagePaths(node, mount);
    if (!/^[0-9a-fA-F]{64}$/.test(minerKey)) throw new Error(`${node.name}: the miner key must be 64 hex characters`);
    const urlsJson = JSON.stringify({ rpcEndpoints: endpoints }, null, 2);
    const body = render("storage-key.sh", {
        driftRecord: driftRecord(nodeDriftGroup(node.name, "key")),
        node: node.name,
        service: p.service,
        etcDir: p.etcDir,
        minerKeyFile: p.minerKeyFile,
        urlsFile: p.urlsFile,
        lib: HOST_LIB,
    });
    return { body, secrets: { key: heredocSafe(minerKey, "NODEFLEET_EOF"), urls: heredocSafe(urlsJson, "NODEFLEET_EOF") } };
}

/** The key step's script as its host runs it, whole (storageKeyScript). */
export function renderStorageKey(node: StorageSpec, mount: string, minerKey: string, endpoints: readonly string[]): string {
    return wholeScript(storageKeyScript(node, mount, minerKey, endpoints));
}

export interface StorageNodeArgs {
    readonly node: StorageSpec;
    readonly host: Host;
    readonly user: string;
    readonly minerKey: pulumi.Output<string>;
    /** The RPC endpoints' values, in order (a secret: one may carry an API key). */
    readonly endpoints: pulumi.Output<string[]>;
    /** The release it runs, resolved (the host installs it). */
    readonly release: StorageRelease;
    /** Set when the fleet rolls changes out (its `rollout` section): the node is gated. */
    readonly rollout?: NodeRollout;
}

/**
 * teardown (destroy only) -> [the previous batch's gates] -> miner key -> configure (files, guard,
 * endpoint, start/restart) -> health report -> [gate].
 */
export class StorageNode extends pulumi.ComponentResource {
    /** The health report of the last deploy (zgs-health.py), parsed. */
    readonly health: pulumi.Output<Record<string, unknown>>;
    /** The rollout gate, when the node is gated. */
    readonly gate?: RolloutGate;

    constructor(name: string, args: StorageNodeArgs, opts?: pulumi.ComponentResourceOptions) {
        super(storageRole.componentType, name, {}, opts);
        const { node, host } = args;
        const { base, key } = rolePrelude(this, name, args, {
            label: "storage",
            removeScript: renderStorageRemove(host.hostName, node, host.dataMountPoint),
            keyStep: "miner-key",
            keyScript: pulumi.all([args.minerKey, args.endpoints]).apply(([k, e]) => storageKeyScript(node, host.dataMountPoint, k, e)),
        });
        const onFailure = args.rollout?.policy.onFailure;
        const configureScript = renderStorageConfigure({
            host: host.hostName,
            node,
            mount: host.dataMountPoint,
            release: args.release,
            onFailure,
        });
        // Re-run (choose the endpoint again) when an endpoint changes: the key step rewrote the file it
        // reads; and the health report is taken again, as after any change of what the node reads.
        const endpointsHash = urlsHash(args.endpoints);
        const configure = remoteStep(
            `${name}-configure`,
            {
                ...base,
                script: configureScript,
                bundle: host.tools,
                inputsHash: [endpointsHash],
                drift: { drift: host.drift, group: nodeDriftGroup(node.name, "configure") },
            },
            { parent: this, dependsOn: [key] },
        );
        // What the node reads: its files and its endpoints. The health report is taken again when it
        // changes, and (with the key, which the key step renders into config.toml) it restarts the node.
        const readAgain = [contentHash(configureScript), endpointsHash];
        const { report, gate } = roleHealth(
            this,
            name,
            { ...args, base, script: renderStorageHealth(node, host.dataMountPoint, onFailure), inputsHash: readAgain, after: configure },
            { reads: readAgain, key, configure, rollback: () => storageRollbackSet(node, host.dataMountPoint) },
        );
        this.health = report;
        this.gate = gate;
        this.registerOutputs({ health: this.health });
    }
}

/** The fleet's storage node (components/roles/nodes.ts). */
export function buildStorageNode(name: string, node: StorageSpec, site: NodeSite, opts: pulumi.ComponentResourceOptions): NodeComponent {
    const { host, user, secret, rollout } = site;
    const args = {
        node,
        host,
        user,
        minerKey: secret(node.storage.minerKeySecret),
        endpoints: resolveUrls(node.storage.rpcEndpoints, secret),
        release: installedRelease(site.plan, node),
        rollout,
    };
    return new StorageNode(name, args, opts);
}
