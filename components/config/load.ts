// Reads the stack config once, validates it, and hands the components plain values.
// The only module that talks to Pulumi's config store.
import * as pulumi from "@pulumi/pulumi";
import { parseFleet, Fleet, FleetConfigError, SecretSource } from "./fleet";

export const NAMESPACE = "nodefleet";

// Not in the SDK's typings, but the engine passes the list of encrypted keys and the
// SDK exposes this lookup at runtime (sdk/nodejs/runtime/config.ts).
const runtimeConfig = require("@pulumi/pulumi/runtime/config") as { isConfigSecret(k: string): boolean; getConfig(k: string): string | undefined };

export const stackSecrets: SecretSource = {
    get: (key) => runtimeConfig.getConfig(`${NAMESPACE}:${key}`),
    isSecret: (key) => runtimeConfig.isConfigSecret(`${NAMESPACE}:${key}`),
};

/**
 * Parse `nodefleet:fleet`. On bad input this throws a RunError naming each config path
 * and reason, before any resource is registered.
 */
export function loadFleet(secrets: SecretSource = stackSecrets): Fleet {
    const key = `${NAMESPACE}:fleet`;
    if (runtimeConfig.isConfigSecret(key)) {
        throw new pulumi.RunError(`${key}: the fleet config holds an encrypted value; keep secrets in their own keys and reference them by name (…Secret fields)`);
    }
    const raw = runtimeConfig.getConfig(key);
    if (raw === undefined) throw new pulumi.RunError(`${key}: missing; see README "Configure a stack"`);
    let parsed: unknown;
    try {
        parsed = JSON.parse(raw);
    } catch {
        throw new pulumi.RunError(`${key}: not a structured value (set it as a YAML object under config: in Pulumi.<stack>.yaml)`);
    }
    try {
        const fleet = parseFleet(parsed, secrets);
        for (const w of fleet.warnings) pulumi.log.warn(w);
        return fleet;
    } catch (e) {
        if (e instanceof FleetConfigError) throw new pulumi.RunError(e.message);
        throw e;
    }
}

/** A secret config value as a secret Output: it stays encrypted in state. */
export function secretValue(key: string): pulumi.Output<string> {
    return new pulumi.Config(NAMESPACE).requireSecret(key);
}
