// Drift that sees the hosts. Every remote step that puts something on a host records it there (each
// file's sha256, mode and owner, the units it left enabled and running, the firewall table's digest,
// each release's file digests: never contents) under DRIFT_DIR/<group>/. One HostDrift resource per
// host reads the host against those records when Pulumi refreshes it (never on preview or up: a
// no-op up opens no SSH session), over SSH as `nodefleet status` goes, so `pulumi refresh` shows a drifted
// host as a diff of its `drift` output. The next `pulumi up` (after that refresh, or as
// `pulumi up --refresh`) counts one repair for each drifted group; the steps of that group take the
// count in their triggers and run again, putting the host back.
import * as pulumi from "@pulumi/pulumi";
import { TOOL_HASH, type DriftProps } from "./drift-check";
import type { Connection } from "./connection";

/** Where steps record what they put on a host, one directory per group. */
export const DRIFT_DIR = "/var/lib/nodefleet/drift";

/** The record directory of a group ("storage-1.configure", "firewall", "release.0g-chain", …). */
export function driftRecord(group: string): string {
    if (!/^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(group))
        throw new Error(`drift group ${JSON.stringify(group)}: letters, digits, '.', '_', '+', '-' only`);
    return `${DRIFT_DIR}/${group}`;
}

/**
 * The drift check's provider as the state keeps it: a loader of drift-check.ts. Pulumi serializes a
 * dynamic provider into every resource's inputs and outputs with all its code uses; the check itself
 * (the SSH client, the answer's cleaning, the host tool) took 14 KB a host, twice. This loader
 * runs in the dynamic provider's process, which starts in the project's directory with the project's
 * node_modules, and compiles the module on load as the language host compiles the program.
 */
// Written short: the state keeps this text twice per host. ts-node finds the project's tsconfig.json
// from the working directory, as it does for the program.
function driftCheck(): Required<pulumi.dynamic.ResourceProvider> {
    const g = globalThis as { nodefleetDrift?: Required<pulumi.dynamic.ResourceProvider> };
    return (g.nodefleetDrift ??=
        (require("ts-node").register({ transpileOnly: true }), require(`${process.cwd()}/components/hosts/drift-check`).driftProvider));
}

export const driftCheckLoader: pulumi.dynamic.ResourceProvider = {
    create: (i: DriftProps) => driftCheck().create(i),
    read: (d: string, p: DriftProps) => driftCheck().read(d, p),
    diff: (d: string, o: DriftProps, n: DriftProps) => driftCheck().diff(d, o, n),
    update: (d: string, o: DriftProps, n: DriftProps) => driftCheck().update(d, o, n),
};

/**
 * The provider of the stack's HostDrift resources, made explicitly: Pulumi configures the default
 * dynamic provider with the whole stack config, secret keys included, which the drift check has no
 * use for (and the policy pack rightly flags). This one is configured with nothing.
 */
export class DriftCheckProvider extends pulumi.ProviderResource {
    constructor(name: string, opts?: pulumi.ResourceOptions) {
        super("pulumi-nodejs", name, {}, opts);
    }
}

export interface HostDriftArgs {
    readonly host: string;
    readonly connection: pulumi.Input<Connection>;
}

/** A host's drift as `pulumi refresh` last read it, and the repair count of each group. */
export class HostDrift extends pulumi.dynamic.Resource {
    declare readonly drift: pulumi.Output<string[]>;
    declare readonly repairs: pulumi.Output<Record<string, number>>;

    constructor(name: string, args: HostDriftArgs, opts?: pulumi.CustomResourceOptions) {
        super(
            driftCheckLoader,
            name,
            { host: args.host, connection: pulumi.secret(args.connection), toolHash: TOOL_HASH, drift: undefined, repairs: undefined },
            opts,
        );
    }

    /** The repair count of a group, for its steps' triggers. */
    repairCount(group: string): pulumi.Output<number> {
        return this.repairs.apply((r) => r?.[group] ?? 0);
    }
}

/** A step's place in a host's drift check: its record directory and the repairs it answers to. */
export interface DriftBinding {
    readonly drift: HostDrift;
    readonly group: string;
}

/** A node's drift group for one of its steps: "storage-1.configure", "storage-1.key". */
export function nodeDriftGroup(node: string, step: "configure" | "key" | "gate"): string {
    return `${node}.${step}`;
}

/** The shell glob of every record directory of a node (its remove script drops them). */
export function nodeDriftGlob(node: string): { readonly dir: string; readonly prefix: string } {
    driftRecord(node);
    return { dir: DRIFT_DIR, prefix: `${node}.` };
}
