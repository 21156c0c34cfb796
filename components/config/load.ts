// Reads the stack config once, validates it, and hands the components plain values.
// The only module that talks to Pulumi's config store.
import * as pulumi from "@pulumi/pulumi";
import { parseFleet, FleetPlan, FleetConfigError, SecretSource } from "./fleet";

export const NAMESPACE = "nodefleet";

// Not in the SDK's typings: the engine passes the config and the list of encrypted keys to the
// program, and the SDK keeps them as JSON text in its store (sdk/nodejs/runtime/config.ts, state.ts).
const runtimeConfig = require("@pulumi/pulumi/runtime/config") as { allConfig(): Record<string, string>; configSecretKeysEnvKey: string };
const runtimeState = require("@pulumi/pulumi/runtime/state") as { getStore(): { config: Record<string, string | undefined> } };

/** The stack's config, read once, with its secrets as secret Outputs. */
export interface StackConfig extends SecretSource {
    /** A secret config value as a secret Output: it stays encrypted in state. */
    secret(key: string): pulumi.Output<string>;
}

/**
 * Linux caps one environment string at 128 KiB (MAX_ARG_STRLEN), and Pulumi's Node.js language host
 * hands the program the whole stack config, secrets decrypted, in one: PULUMI_CONFIG. A config past
 * the cap fails every `pulumi` run before nodefleet starts ("fork/exec …/node: argument list too
 * long"): about 170 nodes of the engine benchmark's shape, fewer with longer node entries.
 */
export const CONFIG_ENV_LIMIT = 128 * 1024;

/** The warning for a stack config of `bytes` (as the language host passes it), once it is three quarters of the cap. */
export function configSizeWarning(bytes: number): string | undefined {
    if (bytes < 0.75 * CONFIG_ENV_LIMIT) return undefined;
    const kb = (n: number) => `${Math.round(n / 1024)} KB`;
    return `the stack's config is ${kb(bytes)}: Pulumi hands it to the program in one environment variable, which Linux caps at ${kb(CONFIG_ENV_LIMIT)}; past it every pulumi run fails with "argument list too long" before nodefleet starts. Split the fleet into shards (docs/gitops.md, Shards) before it grows further`;
}

/**
 * One read of the whole config. The SDK's own lookups (`getConfig`, `Config.requireSecret`,
 * `isConfigSecret`) parse the whole config text again on every call, and the config holds the
 * whole fleet: a key per node made evaluation quadratic in the number of nodes. Read per program
 * run, never cached across runs (the Automation API runs programs in one process).
 */
export function readStackConfig(): StackConfig {
    const all = runtimeConfig.allConfig();
    const warning = configSizeWarning(Buffer.byteLength(process.env.PULUMI_CONFIG ?? JSON.stringify(all)));
    if (warning !== undefined) pulumi.log.warn(warning);
    let secretKeys: unknown = [];
    try {
        secretKeys = JSON.parse(runtimeState.getStore().config[runtimeConfig.configSecretKeysEnvKey] ?? "[]");
    } catch {
        secretKeys = [];
    }
    const encrypted = new Set(Array.isArray(secretKeys) ? secretKeys.map(String) : []);
    const full = (key: string) => `${NAMESPACE}:${key}`;
    return {
        get: (key) => (Object.hasOwn(all, full(key)) ? all[full(key)] : undefined),
        isSecret: (key) => encrypted.has(full(key)),
        secretNames: () => [...encrypted].filter((k) => k.startsWith(`${NAMESPACE}:`)).map((k) => k.slice(NAMESPACE.length + 1)),
        secret(key) {
            if (!Object.hasOwn(all, full(key))) throw new pulumi.RunError(`${full(key)}: missing`);
            return pulumi.secret(all[full(key)]!);
        },
    };
}

/**
 * Parse `nodefleet:fleet`. On bad input this throws a RunError naming each config path
 * and reason, before any resource is registered.
 */
export function loadFleet(config: SecretSource = readStackConfig()): FleetPlan {
    const key = `${NAMESPACE}:fleet`;
    if (config.isSecret("fleet")) {
        throw new pulumi.RunError(`${key}: the fleet config holds an encrypted value; keep secrets in their own keys and reference them by name (…Secret fields)`);
    }
    const raw = config.get("fleet");
    if (raw === undefined) throw new pulumi.RunError(`${key}: missing; see README "Configure a stack"`);
    let parsed: unknown;
    try {
        parsed = JSON.parse(raw);
    } catch {
        throw new pulumi.RunError(`${key}: not a structured value (set it as a YAML object under config: in Pulumi.<stack>.yaml)`);
    }
    try {
        const fleet = parseFleet(parsed, config);
        for (const w of fleet.warnings) pulumi.log.warn(w);
        return fleet;
    } catch (e) {
        if (e instanceof FleetConfigError) throw new pulumi.RunError(e.message);
        throw e;
    }
}
