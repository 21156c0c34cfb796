// Reads the stack config once, validates it, and hands the components plain values.
// The only module that talks to Pulumi's config store.
import * as pulumi from "@pulumi/pulumi";
import { parseFleet, FleetPlan } from "./fleet";
import { FleetConfigError } from "./errors";
import { SecretSource } from "./secrets";
import { configEnvBytes, configSizeProblem, FleetDefinitionError, readFleetDefinition } from "./definition";

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
 * One read of the whole config. The SDK's own lookups (`getConfig`, `Config.requireSecret`,
 * `isConfigSecret`) parse the whole config text again on every call, and the config holds the
 * whole fleet: a key per node made evaluation quadratic in the number of nodes. Read per program
 * run, never cached across runs (the Automation API runs programs in one process).
 */
export function readStackConfig(): StackConfig {
    const all = runtimeConfig.allConfig();
    // Past the cap the program never starts; near it, the operator hears before the next node.
    const size = configSizeProblem(
        process.env.PULUMI_CONFIG !== undefined ? Buffer.byteLength(`PULUMI_CONFIG=${process.env.PULUMI_CONFIG}`) + 1 : configEnvBytes(all),
    );
    if (size !== undefined) pulumi.log.warn(size.message);
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

/** The stack's fleet and its secrets: where `loadFleet` found them, as the program uses them. */
export interface LoadedStack {
    readonly plan: FleetPlan;
    /** A secret the fleet names as a secret Output, from the stack config or the fleet's secretsDir. */
    secret(key: string): pulumi.Output<string>;
}

/**
 * The fleet (`nodefleet:fleet`, or the file `nodefleet:fleetFile` names) parsed and checked, with
 * its secrets. On bad input this throws a RunError naming each path and reason, before any resource
 * is registered. `projectDir`: where Pulumi.yaml is (the program runs there).
 */
export function loadStack(config: StackConfig = readStackConfig(), projectDir: string = process.cwd()): LoadedStack {
    const plan = loadFleet(config, projectDir);
    return {
        plan,
        secret(key) {
            if (config.get(key) !== undefined) return config.secret(key);
            const value = plan.secrets.get(key);
            if (value === undefined) throw new pulumi.RunError(`${NAMESPACE}:${key}: missing`);
            return pulumi.secret(value);
        },
    };
}

/** The fleet alone (see loadStack). */
export function loadFleet(config: SecretSource = readStackConfig(), projectDir: string = process.cwd()): FleetPlan {
    try {
        const lookup = (key: "fleet" | "fleetFile") => {
            const value = config.get(key);
            return value === undefined ? undefined : { value, secret: config.isSecret(key) };
        };
        const definition = readFleetDefinition(lookup, projectDir);
        const fleet = parseFleet(definition.raw, config, { source: definition.source, projectDir });
        for (const w of fleet.warnings) pulumi.log.warn(w);
        return fleet;
    } catch (e) {
        if (e instanceof FleetConfigError || e instanceof FleetDefinitionError) throw new pulumi.RunError(e.message);
        throw e;
    }
}
