// The validator role's contract (components/roles/contract.ts): a 0G chain validator (0gchaind with
// geth or reth), its settings, where it lives on its host, the ports its prefix gives it, the key it
// signs with, its rules across the fleet (upgrades at a height, shared peers) and its health
// command, units and tools.
import * as path from "node:path";
import { z } from "zod";
import { cometPeer, enode, hostName, ipv4, rpcUrl, secretRef } from "../../values/primitives";
import { validatorKeyAddress } from "../../values/validators";
import { HOST_LIB, nodeDataDir } from "../../base/layout";
import {
    both,
    DIAGNOSIS_TOOLS,
    hardwareTarget,
    LOCAL,
    PUBLIC,
    RELEASE_NAME,
    RELEASE_NAME_RULE,
    RPC_TOOL,
    urlSecret,
    type Indexed,
    type ReleaseFacts,
    type RoleContract,
    roleNode,
    type ChainMetrics,
} from "../contract";

/** <prefix><suffix> ports, prefix 1-64 so that <prefix>660 stays <= 65535 (docs/spec.md §8). */
export const portPrefix = z
    .union([z.number(), z.string()])
    .describe(
        "The validator's port prefix P: its ports are P + a fixed suffix (P303 execution p2p, P656 CometBFT p2p, the rest local only); 1-64.",
    )
    .transform((p, ctx) => {
        const text = String(p);
        if (!/^[1-9][0-9]?$/.test(text) || Number(text) > 64) {
            ctx.addIssue({
                code: "custom",
                message: `port prefix ${text} must be a number 1-64 so that every <prefix><suffix> port (up to <prefix>660) is a valid port`,
            });
            return z.NEVER;
        }
        return Number(text);
    });

export const validatorSettings = z
    .strictObject({
        portPrefix,
        executionClient: z
            .enum(["geth", "reth"])
            .default("geth")
            .describe("The execution client the validator runs (after the switch, when one is asked)."),
        switch: z
            .enum(["migrate", "rollback", "cleanup"])
            .optional()
            .describe(
                "The geth -> reth switch: `migrate` (with executionClient: reth) runs its 14 steps, `rollback` (executionClient: geth) restores geth from the backup, `cleanup` (executionClient: reth) removes the export files after 24 h of reth running. See docs/switch.md.",
            ),
        switchAttempt: z
            .number()
            .int()
            .min(1)
            .max(1000)
            .default(1)
            .describe(
                "Which attempt of the switch this is. Pulumi's state records each completed step (it is not run again and previews as unchanged), so going back to a mode already recorded for this attempt (migrate again after a rollback, rollback again after a failed migrate) needs a new attempt: raise it by one. See docs/switch.md.",
            ),
        lowDowntime: z
            .boolean()
            .default(false)
            .describe(
                "With `switch: migrate`: the low-downtime switch (steps l01..l14): the running geth exports the chain and reth imports it while 0gchaind keeps committing on geth; the validator stops only for the cutover (the blocks made meanwhile exported and imported, the head's hash compared). geth's datadir is kept whole as the way back (no backup copy); needs 2x the geth datadir free and geth's IPC socket. Choose it when the switch starts: the two modes never mix on a host. See docs/switch.md.",
            ),
        referenceRpcUrl: rpcUrl
            .optional()
            .describe(
                "A URL or {secret: <name>}: a public endpoint of the chain: step 10 also checks reth's block hash at the imported head against it (besides geth's), and reports the gap to its head as the catch-up 0gchaind drives.",
            ),
        consensusRpcUrl: rpcUrl
            .optional()
            .describe(
                "A URL or {secret: <name>}: a CometBFT RPC of the validator's network that the machine running pulumi reaches (a sentry's, or a public one; not this validator's own, which listens on its loopback). With a `rollout` section, preview and up read the network's validator set there (`/status`, `/validators`) and keep what each batch takes offline within `rollout.maxOfflinePower`. Unset: the validator's voting power is not known and the rollout counts it as a node only.",
            ),
        heightTolerance: z
            .number()
            .int()
            .min(0)
            .max(64)
            .default(5)
            .describe(
                "How many blocks the execution client may be behind the reference (else the noted head) when the -38002 remedy starts 0gchaind again.",
            ),
        importRetries: z
            .number()
            .int()
            .min(0)
            .max(20)
            .default(5)
            .describe(
                "Re-imports after an import that did not complete (reth's `mismatched parent hash` or `block number X does not match parent block number Y`, a kill, a host restart), each from the last block every stage of reth finished.",
            ),
        cleanup: z
            .strictObject({
                removeGethBinary: z.boolean().default(false).describe("Also remove the geth binary."),
                removeBackup: z.boolean().default(false).describe("Also remove geth's data backup (the way back)."),
            })
            .default({ removeGethBinary: false, removeBackup: false })
            .describe("What `switch: cleanup` removes besides the RLP export files."),
        abandonHost: hostName
            .optional()
            .describe(
                "The override for a validator moving off a host nodefleet cannot reach or no longer has in the config: that host's name. nodefleet then does not stop 0gchaind there first; set it only when that host is gone for good or its 0gchaind is stopped and its key removed (one key must never sign on two machines). See docs/operations.md.",
            ),
        bootnode: enode.describe("The execution client's boot node."),
        consensusSeeds: z
            .array(cometPeer)
            .max(32)
            .default([])
            .describe(
                "The consensus daemon's CometBFT seed nodes (`--p2p.seeds`), each `<node id>@<host>:<port>`; empty: the consensus home's own config.toml decides.",
            ),
        consensusPeers: z
            .array(cometPeer)
            .max(32)
            .default([])
            .describe(
                "The consensus daemon's CometBFT persistent peers (`--p2p.persistent_peers`), each `<node id>@<host>:<port>`: the network's nodes it always keeps a connection to.",
            ),
        validatorKeySecret: secretRef.describe(
            "Config key holding priv_validator_key.json (the CometBFT validator key); never on two hosts.",
        ),
        publicIp: ipv4.optional().describe("Public IP announced to peers; defaults to the host's public address."),
        hardware: hardwareTarget
            .partial()
            .optional()
            .describe("This validator's hardware target, where it differs from the default 8 cores / 32 GB / 1000 GB."),
        upgrade: z
            .strictObject({
                release: z
                    .string()
                    .regex(RELEASE_NAME, RELEASE_NAME_RULE)
                    .describe(
                        "The entry of `releases` the node moves to at the height (its host installs it ahead, beside the running one).",
                    ),
                height: z
                    .number()
                    .int()
                    .min(1)
                    .max(Number.MAX_SAFE_INTEGER)
                    .describe(
                        "The network's agreed upgrade height: the node commits it on its release, then stops and starts the new one, which signs the next height.",
                    ),
            })
            .optional()
            .describe(
                "An upgrade at an agreed height: `pulumi up` installs the release beforehand and arms a watcher on the host (nothing restarts); at the height the watcher stops the consensus daemon and starts the execution client and the daemon on the new release. Afterwards name the release in the node's `release` and remove this. See docs/rollouts.md.",
            ),
    })
    .superRefine((s, ctx) => {
        const needs = { migrate: "reth", rollback: "geth", cleanup: "reth" } as const;
        if (s.switch !== undefined && s.executionClient !== needs[s.switch]) {
            ctx.addIssue({
                code: "custom",
                path: ["switch"],
                message: `switch: ${s.switch} goes with executionClient: ${needs[s.switch]} (the client the validator runs afterwards), not ${s.executionClient}`,
            });
        }
        if (s.upgrade !== undefined && (s.switch === "migrate" || s.switch === "rollback")) {
            ctx.addIssue({
                code: "custom",
                path: ["upgrade"],
                message: `an upgrade at a height and switch: ${s.switch} change the node's units both: finish the switch first (or schedule the upgrade after it)`,
            });
        }
        if (s.lowDowntime && s.switch !== "migrate") {
            ctx.addIssue({
                code: "custom",
                path: ["lowDowntime"],
                message: `lowDowntime chooses how switch: migrate runs; it means nothing with switch: ${s.switch ?? "(none)"} (rollback and cleanup know the mode from the host): remove it`,
            });
        }
    })
    .describe("A 0G chain validator: 0gchaind with geth or reth.");

export const validatorNode = roleNode("validator", { role: "A 0G chain validator.", node: "A validator node." }, validatorSettings);
export type ValidatorNode = z.infer<typeof validatorNode>;

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

export function validatorPaths(node: ValidatorNode, mount: string): ValidatorPaths {
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

/** docs/spec.md §8 port suffixes, joined to the operator's prefix as text: prefix 56 + 545 = 56545. */
export const VALIDATOR_SUFFIXES = {
    elHttp: 545,
    elWs: 546,
    engine: 551,
    elP2p: 303,
    cometP2p: 656,
    cometRpc: 657,
    proxyApp: 658,
    prometheus: 660,
    /** nodefleet's own choice (the community scheme has no suffix for it): the execution client's metrics. */
    elMetrics: 661,
} as const;

export function prefixed(prefix: number, suffix: number): number {
    return Number(`${prefix}${suffix}`);
}

/** A validator's metrics ports, served when the fleet is monitored: CometBFT's and the execution client's. */
export function validatorMetricsPorts(prefix: number): ChainMetrics {
    return { consensus: prefixed(prefix, VALIDATOR_SUFFIXES.prometheus), execution: prefixed(prefix, VALIDATOR_SUFFIXES.elMetrics) };
}

/** A validator key file's consensus address, ed25519 or BLS12-381 (the address the file says, once checked against its key). */
function consensusAddress(json: string): string | undefined {
    try {
        return validatorKeyAddress(json);
    } catch {
        return undefined;
    }
}

/** docs/spec.md §8: 8 cores / 32 GB / 1 TB SSD, unless the node sets its own. */
const TARGET = { cores: 8, memoryGb: 32, diskGb: 1000, ssd: true, defaultDiskGb: 1000 } as const;

/** The validator's scripts the host runs as commands (the consensus daemon's unit runs consensus-stop.py as its ExecStop). */
const SCRIPTS = ["trim_export.py", "set-rpc-dial-url.py", "consensus-height-rollback.py", "consensus-stop.py", "zg-validator.py"];

export const validatorRole = {
    role: "validator",
    node: validatorNode,
    componentType: "nodefleet:role:ValidatorNode",
    baseTarget: TARGET,
    releaseRequired: "the host installs 0gchaind, geth and reth from the 0G release package (1.0.6 or later, see releases)",
    // A validator down is a missed vote: one at a time.
    rollout: { batchSize: 1, healthyWithinSeconds: 600, soakSeconds: 120, onFailure: "halt" },
    consensusRelease: true,
    target(node) {
        const h = node.validator.hardware;
        if (!h) return TARGET;
        const diskGb = h.diskGb ?? TARGET.diskGb;
        return { ...TARGET, ...h, diskGb, defaultDiskGb: Math.max(TARGET.defaultDiskGb, diskGb) };
    },
    ports(node) {
        const at = (suffix: number) => prefixed(node.validator.portPrefix, suffix);
        const x = VALIDATOR_SUFFIXES;
        const metrics = validatorMetricsPorts(node.validator.portPrefix);
        return [
            ...both(at(x.elP2p), PUBLIC, "execution p2p"),
            { port: at(x.cometP2p), protocol: "tcp", exposure: PUBLIC, purpose: "CometBFT p2p" },
            { port: at(x.elHttp), protocol: "tcp", exposure: LOCAL, purpose: "execution HTTP RPC" },
            { port: at(x.elWs), protocol: "tcp", exposure: LOCAL, purpose: "execution WebSocket RPC" },
            { port: at(x.engine), protocol: "tcp", exposure: LOCAL, purpose: "engine API (authrpc)" },
            { port: at(x.cometRpc), protocol: "tcp", exposure: LOCAL, purpose: "CometBFT RPC" },
            { port: at(x.proxyApp), protocol: "tcp", exposure: LOCAL, purpose: "CometBFT proxy_app" },
            // Bound only when the fleet is monitored; then opened to the monitoring host alone (monitoringRules).
            { port: metrics.consensus, protocol: "tcp", exposure: LOCAL, purpose: "CometBFT prometheus metrics" },
            { port: metrics.execution, protocol: "tcp", exposure: LOCAL, purpose: "execution client metrics" },
        ];
    },
    chainMetrics: (node) => validatorMetricsPorts(node.validator.portPrefix),
    urlSecrets: (node) => [
        ...urlSecret("validator.referenceRpcUrl", node.validator.referenceRpcUrl),
        ...urlSecret("validator.consensusRpcUrl", node.validator.consensusRpcUrl),
    ],
    keySecrets: (node) => [{ path: "validator.validatorKeySecret", key: node.validator.validatorKeySecret, kind: "validatorKey" }],
    signing: {
        secretField: "validatorKeySecret",
        secret: (node) => node.validator.validatorKeySecret,
        identity(json) {
            const address = consensusAddress(json);
            return address === undefined ? undefined : `0g-consensus:${address}`;
        },
        consensusAddress,
    },
    rules(node, at) {
        // abandonHost names the host a validator leaves (checked against the last up's
        // validatorHosts in components/fleet/fleet.ts); never the one it runs on.
        if (node.validator.abandonHost !== node.host) return [];
        return [
            `${at}.validator.abandonHost: "${node.host}" is the host this validator runs on (${at}.host); abandonHost names the host it leaves`,
        ];
    },
    fleetRules(nodes, releases, issues, warnings) {
        checkUpgrades(nodes, releases, issues);
        checkSharedPeers(nodes, warnings);
    },
    upgrade: (node) => (node.validator.upgrade === undefined ? undefined : { ...node.validator.upgrade, field: "validator.upgrade" }),
    network: (node) =>
        node.validator.consensusRpcUrl === undefined
            ? undefined
            : { url: node.validator.consensusRpcUrl, field: "validator.consensusRpcUrl" },
    movable: true,
    health: (node) => [
        "python3",
        "-S",
        `${HOST_LIB}/zg-validator.py`,
        path.posix.join(validatorPaths(node, "/").etcDir, "validator.json"),
        "status",
    ],
    units(node) {
        // Both execution clients (only the one it runs is started) and its consensus daemon.
        const p = validatorPaths(node, "/");
        return [p.gethService, p.rethService, p.consensusService];
    },
    tools: [RPC_TOOL, ...DIAGNOSIS_TOOLS, ...SCRIPTS.map((file) => ({ file, mode: "0755" as const })), { packageDir: "zgvalidator" }],
} satisfies RoleContract<ValidatorNode>;

// The rules of upgrades at a height (`validator.upgrade`, docs/rollouts.md) the config alone can
// check: the release is another one, with the same consensus daemon, and the validators of one
// network (one `consensusRpcUrl`) agree on a single upgrade. The height against the network's own
// is checked at preview (rollout/upgrade-height.ts) and on the host (zgvalidator/upgrade.py).
function checkUpgrades(nodes: readonly Indexed<ValidatorNode>[], releases: ReleaseFacts, issues: string[]): void {
    const byNetwork = new Map<string, { at: string; what: string }>();
    for (const { node, i } of nodes) {
        if (node.validator.upgrade === undefined) continue;
        const up = node.validator.upgrade;
        const at = `nodes[${i}].validator.upgrade`;
        if (up.release === node.release)
            issues.push(`${at}.release: ${node.name} already runs ${up.release}: an upgrade moves it to another release`);
        const daemon = (name: string | undefined) => (name === undefined ? undefined : (releases[name]?.consensus?.daemon ?? "0gchaind"));
        const from = daemon(node.release);
        const to = daemon(up.release);
        if (Object.hasOwn(releases, up.release) && from !== undefined && to !== from) {
            issues.push(
                `${at}.release: ${up.release} carries ${to} and ${node.name} runs ${from}: an upgrade at a height keeps the consensus daemon (its home, key and flags)`,
            );
        }
        const rpc = node.validator.consensusRpcUrl;
        if (rpc === undefined) continue;
        const network = typeof rpc === "string" ? rpc : `secret ${rpc.secret}`;
        const what = `${up.release} at height ${up.height}`;
        const seen = byNetwork.get(network);
        if (seen === undefined) byNetwork.set(network, { at, what });
        else if (seen.what !== what)
            issues.push(
                `${at}: ${what}, while ${seen.at} of the same network (its consensusRpcUrl) asks ${seen.what}: one upgrade at a time per network`,
            );
    }
}

// Validators that share a host and name the same CometBFT peer or seed: the peer, with CometBFT's
// default `p2p.allow_duplicate_ip = false`, keeps one connection per address, and the other node
// fails its handshake (docs/roles.md, "The consensus daemon"). A warning, not a refusal: the peer
// may allow duplicates, and a host may have addresses of its own per node behind it.
function checkSharedPeers(nodes: readonly Indexed<ValidatorNode>[], warnings: string[]): void {
    const seen = new Map<string, { readonly name: string; readonly at: string }>();
    for (const { node, i } of nodes) {
        for (const field of ["consensusPeers", "consensusSeeds"] as const) {
            node.validator[field].forEach((peer, k) => {
                const id = peer.split("@")[0]!.toLowerCase();
                const key = `${node.host}\n${id}`;
                const first = seen.get(key);
                if (first === undefined) seen.set(key, { name: node.name, at: `nodes[${i}].validator.${field}[${k}]` });
                else if (first.name !== node.name) {
                    warnings.push(
                        `nodes[${i}].validator.${field}[${k}]: ${node.name} and ${first.name} (${first.at}) on host ${node.host} both reach the peer ${id}, which by CometBFT's default (p2p.allow_duplicate_ip = false) accepts one of them from one address: give each its own address, or the peer allow_duplicate_ip`,
                    );
                }
            });
        }
    }
}
