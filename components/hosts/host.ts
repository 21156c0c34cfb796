// What every host kind gives the roles: one typed SSH connection, its addresses, the
// data mount point, and the resource that marks the host ready for node software.
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { contentHash, shellWord } from "../base/render";
import type { DriftBinding, HostDrift } from "./drift";
import type { HostBundle } from "./tools";
import { wholeScript, type SecretScript } from "./scripts";
import { compactSshKey } from "./ssh-key";

import type { Connection } from "./connection";

/** Where cloud hosts mount their data volume (existing hosts configure theirs). */
export const CLOUD_DATA_MOUNT = "/data";

export interface Host {
    readonly hostName: string;
    /** The SSH connection every remote step on this host uses (private key is a secret). */
    readonly connection: pulumi.Output<Connection>;
    readonly publicAddress: pulumi.Output<string>;
    readonly dataMountPoint: string;
    /** Role steps depend on this: the host is bootstrapped and firewalled. */
    readonly ready: pulumi.Resource;
    /** The install step of each release this host's nodes use, by release name. */
    readonly releases: ReadonlyMap<string, pulumi.Resource>;
    /** The host's drift as `pulumi refresh` reads it; steps answer to its repair counts. */
    readonly drift: HostDrift;
    /**
     * The host's bundle (tools.ts): the tools its nodes' steps install and the large scripts they
     * run; its copy step (`tools.step`) is made when the fleet seals it, after the host's nodes.
     */
    readonly tools: HostBundle;
    /**
     * The host key nodefleet learned for it (a cloud host's, or a server booted with its user-data:
     * first-boot.ts), which the `hosts` stack output gives `nodefleet status` to pin; none where
     * the config pins the key itself.
     */
    readonly learnedHostKey?: pulumi.Output<string>;
}

export interface ConnectionParts {
    readonly host: pulumi.Input<string>;
    readonly port: number;
    readonly user: string;
    readonly privateKey: pulumi.Output<string>;
    readonly hostKey?: pulumi.Input<string>;
}

/**
 * The connection of a host's steps: its key in the shortest form the command provider reads
 * (ssh-key.ts), unless `key` is "as given" (for what runs OpenSSH's client: the drift check).
 */
export function sshConnection(parts: ConnectionParts, key: "compact" | "as given" = "compact"): pulumi.Output<Connection> {
    return pulumi.output({
        host: parts.host,
        port: parts.port,
        user: parts.user,
        privateKey: key === "compact" ? parts.privateKey.apply(compactSshKey) : parts.privateKey,
        // Pinned where known; without it the provider accepts any host key.
        ...(parts.hostKey ? { hostKey: parts.hostKey } : {}),
        // New cloud hosts take a while to answer SSH.
        dialErrorLimit: 30,
        perDialTimeout: 15,
    });
}

export interface StepArgs {
    readonly connection: pulumi.Input<Connection>;
    readonly user: string;
    /** The shell script, sent on stdin: never on a command line. */
    readonly script: pulumi.Input<string>;
    /**
     * The script's secrets (scripts.ts SecretScript): `script` is then the body, without them, and
     * runs from the host's bundle (`bundle` is required); the stdin sets them, a secret.
     */
    readonly secrets?: pulumi.Output<SecretScript["secrets"]>;
    /** Hashes of what this step depends on besides its own script. */
    readonly inputsHash?: pulumi.Input<string>[];
    /** Runs on destroy. Only for steps whose create never changes (replacement would run it). */
    readonly onDelete?: string;
    /**
     * Runs `onDelete` from the host's bundle: the state keeps a runner in its place (a step's delete
     * is kept twice, and a removal script is most of a teardown step's state). The step must run
     * after the bundle's copy (a teardown follows its host's tools step); its create stays inline.
     */
    readonly deleteBundle?: HostBundle;
    /**
     * The script carries a secret: its output is not logged while it runs and is stored only as a
     * secret. The command provider still puts a failed command's whole output into its error
     * message, so such scripts print nothing secret, ever.
     */
    readonly sensitive?: boolean;
    /** The drift group this step records (and runs again to repair). */
    readonly drift?: DriftBinding;
    /**
     * Run the script from the host's bundle: the state keeps a short runner instead of it. For large
     * scripts without secrets whose inputs are this host's own (HostBundle.run); the step then runs
     * after the bundle's copy.
     */
    readonly bundle?: HostBundle;
}

/** The command that runs a script with root rights: from stdin, or (for delete) as an argument. */
export function rootShell(user: string, script?: string): string {
    const sh = user === "root" ? "/bin/sh" : "sudo -n /bin/sh";
    return script === undefined ? `${sh} -s` : `${sh} -c ${shellWord(script)}`;
}

/**
 * The options of a step made as a child of `component` that its parent `previousParent` made before:
 * it keeps its address in the state (its URN holds its parents' types) by an alias to that parent,
 * so an existing stack neither replaces nor runs it again (docs/development.md, Layers).
 */
export function movedUnder(component: pulumi.Resource, previousParent: pulumi.Resource): pulumi.CustomResourceOptions {
    return { parent: component, aliases: [{ parent: previousParent }] };
}

/**
 * One remote step: a script run over SSH. It re-runs exactly when its script or the
 * hashes it depends on change (`triggers`), and never otherwise.
 */
export function remoteStep(name: string, args: StepArgs, opts: pulumi.CustomResourceOptions): command.remote.Command {
    if (args.secrets && !args.bundle) throw new Error(`unreachable: ${name}: a script with secrets runs from the host's bundle`);
    // What decides a re-run: the script as the host runs it, secrets included (a digest of them).
    const whole = args.secrets
        ? pulumi.all([args.script, args.secrets]).apply(([body, secrets]) => wholeScript({ body, secrets }))
        : pulumi.output(args.script);
    const scriptHash = whole.apply((s) => contentHash(s));
    // A step that runs a script of the bundle runs after its copy: through a step it depends on
    // that follows the copy, or else directly (each dependency is kept in the state, twice per step).
    const bundle = args.bundle ?? args.deleteBundle;
    const deps = dependsOnList(opts.dependsOn);
    const direct = bundle !== undefined && !deps.some((d) => bundle.follows(d));
    const step = new command.remote.Command(
        name,
        {
            connection: args.connection,
            create: rootShell(args.user),
            stdin: args.bundle ? args.bundle.run(name, args.script, args.secrets) : args.script,
            triggers: [scriptHash, ...(args.inputsHash ?? []), ...(args.drift ? [args.drift.drift.repairCount(args.drift.group)] : [])],
            // The provider would otherwise send the last stdout/stderr as SSH env requests, which
            // sshd refuses unless it AcceptEnvs them (a warning per update), and no script reads them.
            addPreviousOutputInEnv: false,
            ...(args.onDelete === undefined
                ? {}
                : {
                      delete: args.deleteBundle
                          ? args.deleteBundle.run(`${name}: destroy`, args.onDelete).apply((r) => rootShell(args.user, r))
                          : rootShell(args.user, args.onDelete),
                  }),
            ...(args.sensitive ? { logging: "none" as const } : {}),
        },
        {
            ...opts,
            ...(direct ? { dependsOn: [...deps, bundle.step] } : {}),
            ...(args.sensitive ? { additionalSecretOutputs: ["stdout", "stderr"] } : {}),
        },
    );
    bundle?.follow(step);
    return step;
}

function dependsOnList(d: pulumi.CustomResourceOptions["dependsOn"]): pulumi.Input<pulumi.Resource>[] {
    if (d === undefined) return [];
    return Array.isArray(d) ? d : [d as pulumi.Input<pulumi.Resource>];
}

/**
 * A step's report: the JSON object on the last line of its stdout (the host scripts print one),
 * or `{ error }` naming what it was when it is not JSON.
 */
export function stepReport(step: command.remote.Command, what: string): pulumi.Output<Record<string, unknown>> {
    return step.stdout.apply((out) => {
        // A step this run left out (`pulumi up --target` of other resources) has not reported yet.
        if (out === undefined || out === "") return { error: `no ${what} yet: its step has not run` };
        try {
            return JSON.parse(out.trim().split("\n").pop() ?? "{}") as Record<string, unknown>;
        } catch {
            return { error: `unreadable ${what}: ${out.slice(0, 200)}` };
        }
    });
}
