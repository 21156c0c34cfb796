// What a role tells every layer beneath its own components: its settings, the ports it binds, the
// secrets it names, its hardware target, its health command, units and host tools, its rules and
// the keys it signs with. Each role's contract (components/roles/<role>/contract.ts) is data and
// small functions over that role's node; the registry (components/roles/registry.ts) lists them, so
// that the config, the hosts, health, monitoring and the rollout never branch on a role's name
// (docs/development.md, Layers).
import { z } from "zod";
import type { RpcUrl } from "../values/primitives";

export type Protocol = "tcp" | "udp";

/**
 * public: open to the internet (peer-to-peer only).
 * restricted: open to listed CIDRs only.
 * local: bound on the host, never opened in any firewall (RPC, engine, admin).
 */
export type Exposure = { kind: "public" } | { kind: "restricted"; cidrs: readonly string[] } | { kind: "local" };

export interface PortSpec {
    readonly port: number;
    readonly protocol: Protocol;
    readonly exposure: Exposure;
    readonly purpose: string;
}

export const PUBLIC: Exposure = { kind: "public" };
export const LOCAL: Exposure = { kind: "local" };

/** One port for TCP and UDP alike. */
export function both(port: number, exposure: Exposure, purpose: string): PortSpec[] {
    return [
        { port, protocol: "tcp", exposure, purpose },
        { port, protocol: "udp", exposure, purpose },
    ];
}

export const hardwareTarget = z.strictObject({
    cores: z.number().int().min(1).describe("CPU cores."),
    memoryGb: z.number().int().min(1).describe("Memory in GB."),
    diskGb: z.number().int().min(1).describe("Data disk in GB."),
});
export type HardwareTarget = z.infer<typeof hardwareTarget>;

export interface Target extends HardwareTarget {
    /** The data disk must be solid state (storage nodes: "fast SSD", docs/spec.md §8). */
    readonly ssd: boolean;
    /** Default size of the data disk when the host config names none. */
    readonly defaultDiskGb: number;
}

export const RELEASE_NAME = /^[a-z0-9][a-z0-9-]{0,30}[a-z0-9]$/;
export const RELEASE_NAME_RULE = "release names are 2-32 lowercase letters, digits and dashes";
export const releaseName = z.string().regex(RELEASE_NAME, RELEASE_NAME_RULE);

const nodeName = z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/, "node names are 2-32 lowercase letters, digits and dashes, starting with a letter");

/** The fields every node has, whatever its role: a role's node schema is these, its role and its settings. */
export const NODE_FIELDS = {
    name: nodeName.describe("The node's name: its units, data directory and resources are named after it."),
    host: z.string().min(1).describe("Name of the entry of `hosts` the node runs on; nodes sharing a host add up their hardware targets."),
    release: releaseName.optional().describe("Name of the entry of `releases` this node's host installs for it."),
};

export type SecretKind = "sshPrivateKey" | "privateKey" | "minerKey" | "validatorKey" | "blsSecretKey" | "url";

/** A secret a node names: `path` below the node (`storage.minerKeySecret`), the config key, its kind. */
export interface SecretUse {
    readonly path: string;
    readonly key: string;
    readonly kind: SecretKind;
}

/** The URL fields of `list` given as {secret: <name>}, each at `<path>[j].secret`. */
export function urlSecrets(path: string, list: readonly RpcUrl[]): SecretUse[] {
    return list.flatMap((u, j) => urlSecret(`${path}[${j}]`, u));
}

/** A URL field given as {secret: <name>}, at `<path>.secret`; none for a plain or absent URL. */
export function urlSecret(path: string, url: RpcUrl | undefined): SecretUse[] {
    return url === undefined || typeof url === "string" ? [] : [{ path: `${path}.secret`, key: url.secret, kind: "url" }];
}

/** A host tool: a file of hostfiles/ and its mode, or every module and data file of a package of it. */
export type ToolEntry = { readonly file: string; readonly mode: "0644" | "0755" } | { readonly packageDir: string };

/** The JSON-RPC client every role's tools share. */
export const RPC_TOOL: ToolEntry = { file: "nodefleet_rpc.py", mode: "0644" };
/** The unit reader of the storage and sequencer tools. */
export const UNITS_TOOL: ToolEntry = { file: "nodefleet_units.py", mode: "0644" };
/**
 * The one diagnosis table (hostfiles/nodefleet_health.py), the fault table it names remedies from
 * and that table's reader: every role's health tool reports the table's diagnoses of its facts.
 */
export const DIAGNOSIS_TOOLS: readonly ToolEntry[] = [
    { file: "nodefleet_faults.py", mode: "0644" },
    { file: "faults.json", mode: "0644" },
    { file: "nodefleet_health.py", mode: "0644" },
];

type NodeShape<R extends string, S extends z.ZodType> = typeof NODE_FIELDS & { readonly role: z.ZodLiteral<R> } & { readonly [K in R]: S };

/**
 * A role's node schema: NODE_FIELDS, its role (`describe.role`) and its settings under the role's
 * name, in that order (the order docs/configuration.md lists them in).
 */
export function roleNode<R extends string, S extends z.ZodType>(
    role: R,
    describe: { readonly role: string; readonly node: string },
    settings: S,
) {
    const { name, host, release } = NODE_FIELDS;
    const shape = { name, role: z.literal(role).describe(describe.role), host, release, [role]: settings } as unknown as NodeShape<R, S>;
    return z.strictObject(shape).describe(describe.node);
}

/** The releases a fleet names, as far as a role's rules read them. */
export type ReleaseFacts = Readonly<Record<string, { readonly consensus?: { readonly daemon: string } }>>;

/** What every node has, whatever its role. */
export interface NodeBase {
    readonly name: string;
    readonly role: string;
    readonly host: string;
    readonly release?: string | undefined;
}

/** How a change that restarts a role's nodes rolls through them (docs/rollouts.md), every setting resolved. */
export interface RolePolicy {
    /** A count of nodes, or a percentage of the role's nodes ("25%"). */
    readonly batchSize: number | string;
    readonly healthyWithinSeconds: number;
    readonly soakSeconds: number;
    readonly onFailure: "halt" | "rollback";
}

/** A node with its index in `nodes`, for messages that name it (`nodes[3].validator.upgrade`). */
export interface Indexed<N> {
    readonly node: N;
    readonly i: number;
}

/** A key a node signs with: what keeps one key from signing on two machines, across shards too. */
export interface SigningKey<N> {
    /** The settings field that names the key's secret (`validatorKeySecret`). */
    readonly secretField: string;
    secret(node: N): string;
    /** The settings field of the key's public address, when the config gives it (`validatorAddress`). */
    readonly addressField?: string;
    /** The public identity of the key's plain value (`0g-consensus:<address>`), or undefined when it cannot be read. */
    identity(value: string): string | undefined;
    /** The key's CometBFT consensus address (uppercase hex), for a key that votes in a network; undefined when unreadable. */
    consensusAddress?(value: string): string | undefined;
    /** Why the key does not match the address the config gives for it (`at`: the node's path), or undefined. */
    mismatch?(node: N, value: string, at: string): string | undefined;
}

/** A chain node's metrics ports, scraped by monitoring's cometbft and execution jobs. */
export interface ChainMetrics {
    readonly consensus: number;
    readonly execution: number;
}

/** An upgrade at an agreed height (docs/rollouts.md, "Upgrades at a height"). */
export interface HeightUpgrade {
    readonly release: string;
    readonly height: number;
}

export interface RoleContract<N extends NodeBase> {
    readonly role: N["role"];
    /** The schema of a node of this role: NODE_FIELDS, its role and its settings under the role's name. */
    readonly node: z.ZodType<N>;
    /** Why a node of this role needs a release, or undefined when it needs none. */
    readonly releaseRequired?: string;
    /** Its rollout's defaults: what an operator would pick for this role's nodes. */
    readonly rollout: RolePolicy;
    /** Whether its release may carry a consensus daemon. */
    readonly consensusRelease: boolean;
    /** The Pulumi type of the role's component (`nodefleet:role:StorageNode`): what the policy pack knows a node by. */
    readonly componentType: string;
    /** Its hardware target (docs/spec.md §8), and `target(node)`: a node's, where a node may set its own. */
    readonly baseTarget: Target;
    target(node: N): Target;
    /** Every port a node binds, with how far it may be reached. */
    ports(node: N): PortSpec[];
    /** Its metrics ports, opened to the monitoring host alone when the fleet is monitored. */
    chainMetrics?(node: N): ChainMetrics;
    /** The URL fields it names as {secret: <name>}. */
    urlSecrets(node: N): SecretUse[];
    /** The keys it names (its key material's secrets). */
    keySecrets(node: N): SecretUse[];
    readonly signing?: SigningKey<N>;
    /** What the config alone finds wrong with one node (`at`: its path, `nodes[3]`). */
    rules(node: N, at: string): string[];
    /** What the config alone finds wrong across the role's nodes. */
    fleetRules?(nodes: readonly Indexed<N>[], releases: ReleaseFacts, issues: string[], warnings: string[]): void;
    /** A release its host installs ahead, beside the running one, and the field that names it. */
    upgrade?(node: N): (HeightUpgrade & { readonly field: string }) | undefined;
    /**
     * For a node that votes in a CometBFT network (its power counted by the rollout, its upgrade
     * heights checked): that network's RPC and the field that names it, or undefined when not given.
     */
    network?(node: N): { readonly url: RpcUrl; readonly field: string } | undefined;
    /**
     * Whether its nodes move host with a handover (one key on one machine): each one's host is kept
     * in the stack's outputs (validatorHosts).
     */
    readonly movable: boolean;
    /** Its read-only health command, an argv (no shell on the host). */
    health(node: N): readonly string[];
    /** Its long-running services, as its units are named: what a gate watches for a crash loop. */
    units(node: N): readonly string[];
    /** The host tools its steps install and run, in bundle order. */
    readonly tools: readonly ToolEntry[];
}
