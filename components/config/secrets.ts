// The secrets a fleet config names: each read through a SecretSource (never from plain config), its
// format checked, and no key used by two nodes; no message carries a secret's value.
import * as crypto from "node:crypto";
import type { FleetSpec } from "./schema";
import * as v from "../values/validators";
import { receiverSecrets } from "./monitoring";
import type { SecretKind, SecretUse } from "../roles/contract";
import { contractOf } from "../roles/registry";

export interface SecretSource {
    /** The value of config key `nodefleet:<key>`, or undefined when unset. */
    get(key: string): string | undefined;
    /** Whether that key is stored encrypted. */
    isSecret(key: string): boolean;
    /** The names of the encrypted keys of the namespace, for "known: …" in errors (names only). */
    secretNames?(): readonly string[];
    /** Why the secret `key` cannot be used although it may be there (a file others can read, a name set twice), or undefined. */
    problem?(key: string): string | undefined;
    /** Where a missing secret was looked for, when not only in the stack config. */
    readonly missingHint?: string;
}

const SECRET_FORMAT: Record<SecretKind, (s: string) => v.Reason> = {
    sshPrivateKey: v.sshPrivateKeyReason,
    privateKey: v.privateKeyReason,
    minerKey: v.minerKeyScalarReason,
    validatorKey: v.validatorKeyFileReason,
    blsSecretKey: v.blsSecretKeyReason,
    url: v.secretUrlReason,
};

interface FleetSecretUse extends SecretUse {
    /** The value's format, where the kind's is not it (the monitoring receivers'). */
    readonly format?: (value: string) => v.Reason;
}

/** A node's secret at its path in the config (`nodes[3].storage.minerKeySecret`). */
const atNode =
    (i: number) =>
    (use: SecretUse): SecretUse => ({ ...use, path: `nodes[${i}].${use.path}` });

/**
 * Every secret the fleet names, each with its config path: the URL fields given as {secret: <name>}
 * (nodes' RPC URLs, releases' URLs, monitoring's receivers), then hosts' SSH keys, then nodes' keys.
 */
function secretUses(spec: FleetSpec): FleetSecretUse[] {
    const uses: FleetSecretUse[] = spec.nodes.flatMap((node, i) => contractOf(node).urlSecrets(node).map(atNode(i)));
    for (const [name, r] of Object.entries(spec.releases))
        if (r.url !== undefined && typeof r.url !== "string")
            uses.push({ path: `releases.${name}.url.secret`, key: r.url.secret, kind: "url" });
    uses.push(...receiverSecrets(spec.monitoring).map((r) => ({ ...r, kind: "url" as const })));
    for (const [name, host] of Object.entries(spec.hosts)) {
        if (host.sshPrivateKeySecret !== undefined)
            uses.push({ path: `hosts.${name}.sshPrivateKeySecret`, key: host.sshPrivateKeySecret, kind: "sshPrivateKey" });
    }
    spec.nodes.forEach((node, i) => uses.push(...contractOf(node).keySecrets(node).map(atNode(i))));
    return uses;
}

/** Identity of a key without keeping its value: a digest of what makes it that key. */
function keyIdentity(kind: SecretKind, value: string): string {
    let material = value.trim().toLowerCase();
    if (kind === "validatorKey") material = String((JSON.parse(value) as { priv_key: { value: string } }).priv_key.value);
    return crypto.createHash("sha256").update(material).digest("hex");
}

export function checkSecrets(spec: FleetSpec, secrets: SecretSource, issues: string[], values = true): void {
    const seen = new Map<string, string>(); // kind+identity -> first path
    for (const use of secretUses(spec)) {
        const problem = secrets.problem?.(use.key);
        if (problem !== undefined) {
            issues.push(`${use.path}: ${problem}`);
            continue;
        }
        const value = secrets.get(use.key);
        if (value === undefined) {
            const known = secrets.secretNames?.() ?? [];
            const listed = known.length > 20 ? `${known.length} of them` : known.length ? [...known].sort().join(", ") : "none";
            // The name itself is not repeated: a value pasted here by mistake may be a key.
            issues.push(
                `${use.path}: the config key it names is ${secrets.missingHint ? `set nowhere: ${secrets.missingHint}` : "not set (pulumi config set --secret <that name> …)"}; the stack's secret keys: ${listed}`,
            );
            continue;
        }
        if (!secrets.isSecret(use.key)) {
            issues.push(
                `${use.path}: the config key it names is stored in plain text; set it again with pulumi config set --secret <that name>`,
            );
            continue;
        }
        if (!values) continue;
        const reason = (use.format ?? SECRET_FORMAT[use.kind])(value);
        if (reason) {
            issues.push(`${use.path}: the secret it names: ${reason}`);
            continue;
        }
        if (use.kind === "sshPrivateKey" || use.kind === "url") continue; // one admin key may open many hosts; nodes may share an endpoint
        const id = `${use.kind}:${keyIdentity(use.kind, value)}`;
        const first = seen.get(id);
        if (first === undefined) seen.set(id, use.path);
        else if (use.kind === "validatorKey")
            issues.push(
                `${use.path}: the same validator key as ${first}; a validator key must never be active on two machines (double-sign slashing)`,
            );
        else issues.push(`${use.path}: the same key as ${first}; each node needs its own key`);
    }
}

/**
 * A key must be the key of the address the config gives for it (its role's `signing.mismatch`, a
 * sequencer's validatorAddress): a mismatch registers one address and signs with another.
 */
export function checkKeyAddresses(spec: FleetSpec, secrets: SecretSource, issues: string[]): void {
    spec.nodes.forEach((node, i) => {
        const signing = contractOf(node).signing;
        if (signing?.mismatch === undefined) return;
        const name = signing.secret(node);
        const key = secrets.get(name);
        if (key === undefined || !secrets.isSecret(name)) return; // said by checkSecrets
        const problem = signing.mismatch(node, key, `nodes[${i}]`);
        if (problem !== undefined) issues.push(problem);
    });
}
