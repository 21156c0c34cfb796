// What `nodefleet status` checks: per host, how to reach it (from the stack's config and, for cloud
// hosts, its `hosts` output) and the health command of each node on it. Pure: the config and the
// outputs come in as the Automation API reads them.
import { parseFleet, type FleetPlan } from "../components/config/fleet";
import { FleetConfigError } from "../components/config/errors";
import { FleetDefinitionError, readFleetDefinition } from "../components/config/definition";
import type { HostSpec } from "../components/config/schema";
import { hostKeyReason } from "../components/values/validators";
import { checkArgv } from "../components/health/checks";
import type { Role } from "../components/roles/registry";

/** A config value as `pulumi config --json` gives it (a secret's value only with --show-secrets). */
export interface ConfigValue {
    readonly value?: string;
    readonly secret?: boolean;
}

export interface NodeCheck {
    readonly node: string;
    readonly role: Role;
    /** The host tool's read-only health command, as an argv (no shell on the host). */
    readonly argv: readonly string[];
}

export interface HostTarget {
    readonly host: string;
    /** null when the stack has no address for it yet (a cloud host never deployed). */
    readonly address: string | null;
    readonly port: number;
    readonly user: string;
    /** The pinned host key (`ssh-ed25519 AAAA…`): the config's, or the one nodefleet learned at the host's first boot. */
    readonly hostKey: string | null;
    /** The SSH private key: a file on this machine, or the config key holding it. */
    readonly key: { readonly file: string } | { readonly secret: string };
    readonly checks: readonly NodeCheck[];
}

const NAMESPACE = "nodefleet";

/** The fleet plan from the stack's config, checked exactly as `pulumi up` checks it. */
export function planFromConfig(config: Record<string, ConfigValue>, projectDir: string = process.cwd()): FleetPlan {
    const get = (key: string) => config[`${NAMESPACE}:${key}`];
    try {
        const definition = readFleetDefinition((key) => {
            const v = get(key);
            return v === undefined ? undefined : { value: v.value ?? "", secret: v.secret === true };
        }, projectDir);
        const raw = definition.raw;
        // What a monitoring box can check: the secrets' presence, not their values (never
        // decrypted here), and a release checksum file that only `up` reads is a warning.
        return parseFleet(
            raw,
            {
                get: (k) => (get(k) === undefined ? undefined : (get(k)?.value ?? "")),
                isSecret: (k) => get(k)?.secret === true,
                secretNames: () =>
                    Object.entries(config).flatMap(([k, v]) =>
                        v.secret && k.startsWith(`${NAMESPACE}:`) ? [k.slice(NAMESPACE.length + 1)] : [],
                    ),
            },
            { secretValues: false, releaseFilesRequired: false, source: definition.source, projectDir },
        );
    } catch (e) {
        if (e instanceof FleetConfigError || e instanceof FleetDefinitionError) throw new StatusInputError(e.message);
        throw e;
    }
}

/** Bad input to the status command (config, outputs): the message names the key and the reason. */
export class StatusInputError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "StatusInputError";
    }
}

/**
 * Per host, where to reach it and what to run there. `hostsOutput` is the stack output `hosts`
 * (per host: kind, publicAddress, nodes); cloud hosts take their address from it, existing hosts
 * from the config.
 */
export function targets(plan: FleetPlan, hostsOutput: unknown): HostTarget[] {
    const outputs =
        hostsOutput !== null && typeof hostsOutput === "object" && !Array.isArray(hostsOutput)
            ? (hostsOutput as Record<string, unknown>)
            : {};
    return plan.hosts.map((h) => {
        const spec: HostSpec = h.spec;
        const out = outputs[h.name];
        const published = out !== null && typeof out === "object" ? (out as Record<string, unknown>).publicAddress : undefined;
        // A key nodefleet learned at the host's first boot (the hosts output) is pinned as the config's
        // is; such a host without one (never deployed, its key step not run) is not dialled at all.
        const learned = out !== null && typeof out === "object" ? (out as Record<string, unknown>).hostKey : undefined;
        const learnedKey = typeof learned === "string" && hostKeyReason(learned) === undefined ? learned : null;
        const firstBoot = spec.kind === "existing" ? spec.firstBoot !== undefined : spec.hostKey === undefined;
        const hostKey = spec.hostKey ?? (firstBoot ? learnedKey : null);
        const reachable = !firstBoot || hostKey !== null;
        const address = !reachable
            ? null
            : spec.kind === "existing"
              ? spec.address
              : typeof published === "string" && published !== ""
                ? published
                : null;
        const key =
            spec.sshPrivateKeySecret !== undefined
                ? { secret: spec.sshPrivateKeySecret }
                : { file: spec.kind === "existing" ? (spec.sshPrivateKeyFile ?? "") : "" };
        return {
            host: h.name,
            address,
            port: spec.kind === "existing" ? spec.port : 22,
            user: spec.kind === "existing" ? spec.user : spec.sshUser,
            hostKey,
            key,
            checks: h.nodes.map((n) => ({ node: n.name, role: n.role, argv: checkArgv(n) })),
        };
    });
}
