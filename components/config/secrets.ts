// The secrets a fleet config names: each read through a SecretSource (never from plain config), its
// format checked, and no key used by two nodes; no message carries a secret's value.
import * as crypto from "node:crypto";
import type { FleetSpec } from "./schema";
import type { RpcUrl } from "./primitives";
import * as v from "./validators";
import { receiverSecrets } from "./monitoring";

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

type SecretKind = "sshPrivateKey" | "privateKey" | "minerKey" | "validatorKey" | "blsSecretKey" | "url";
const SECRET_FORMAT: Record<SecretKind, (s: string) => v.Reason> = {
    sshPrivateKey: v.sshPrivateKeyReason,
    privateKey: v.privateKeyReason,
    minerKey: v.minerKeyScalarReason,
    validatorKey: v.validatorKeyFileReason,
    blsSecretKey: v.blsSecretKeyReason,
    url: v.secretUrlReason,
};

interface SecretUse {
    readonly path: string;
    readonly key: string;
    readonly kind: SecretKind;
    /** The value's format, where the kind's is not it (the monitoring receivers'). */
    readonly format?: (value: string) => v.Reason;
}

/** The URL fields given as {secret: <name>} (RPC URLs, releases' URLs), each with its config path. */
function urlSecretUses(spec: FleetSpec): SecretUse[] {
    const uses: SecretUse[] = [];
    const add = (path: string, list: readonly RpcUrl[]) =>
        list.forEach((u, j) => typeof u !== "string" && uses.push({ path: `${path}[${j}].secret`, key: u.secret, kind: "url" }));
    spec.nodes.forEach((node, i) => {
        if (node.role === "storage") add(`nodes[${i}].storage.rpcEndpoints`, node.storage.rpcEndpoints);
        if (node.role === "sequencer") {
            add(`nodes[${i}].sequencer.l1RpcUrls`, node.sequencer.l1RpcUrls);
            add(`nodes[${i}].sequencer.l1ConsensusHostUrls`, node.sequencer.l1ConsensusHostUrls);
        }
        if (node.role === "validator") {
            for (const field of ["referenceRpcUrl", "consensusRpcUrl"] as const) {
                const ref = node.validator[field];
                if (ref !== undefined && typeof ref !== "string") uses.push({ path: `nodes[${i}].validator.${field}.secret`, key: ref.secret, kind: "url" });
            }
        }
    });
    for (const [name, r] of Object.entries(spec.releases)) if (r.url !== undefined && typeof r.url !== "string") uses.push({ path: `releases.${name}.url.secret`, key: r.url.secret, kind: "url" });
    return uses;
}

function secretUses(spec: FleetSpec): SecretUse[] {
    const uses: SecretUse[] = [...urlSecretUses(spec), ...receiverSecrets(spec.monitoring).map((r) => ({ ...r, kind: "url" as const }))];
    for (const [name, host] of Object.entries(spec.hosts)) {
        if (host.sshPrivateKeySecret !== undefined) uses.push({ path: `hosts.${name}.sshPrivateKeySecret`, key: host.sshPrivateKeySecret, kind: "sshPrivateKey" });
    }
    spec.nodes.forEach((node, i) => {
        switch (node.role) {
            case "storage":
                uses.push({ path: `nodes[${i}].storage.minerKeySecret`, key: node.storage.minerKeySecret, kind: "minerKey" });
                break;
            case "sequencer":
                uses.push({ path: `nodes[${i}].sequencer.validatorPrivateKeySecret`, key: node.sequencer.validatorPrivateKeySecret, kind: "privateKey" });
                if (node.sequencer.version === "4.1.2")
                    uses.push({ path: `nodes[${i}].sequencer.blsSecretKeySecret`, key: node.sequencer.blsSecretKeySecret, kind: "blsSecretKey" });
                break;
            case "validator":
                uses.push({ path: `nodes[${i}].validator.validatorKeySecret`, key: node.validator.validatorKeySecret, kind: "validatorKey" });
                break;
        }
    });
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
            issues.push(`${use.path}: the config key it names is ${secrets.missingHint ? `set nowhere: ${secrets.missingHint}` : "not set (pulumi config set --secret <that name> …)"}; the stack's secret keys: ${listed}`);
            continue;
        }
        if (!secrets.isSecret(use.key)) {
            issues.push(`${use.path}: the config key it names is stored in plain text; set it again with pulumi config set --secret <that name>`);
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
        else if (use.kind === "validatorKey") issues.push(`${use.path}: the same validator key as ${first}; a validator key must never be active on two machines (double-sign slashing)`);
        else issues.push(`${use.path}: the same key as ${first}; each node needs its own key`);
    }
}

/**
 * A key must be the key of the address that names it: the sequencer's validatorAddress is the
 * attester (and in 2.0.x the proposer) whose key signs as the validator and sends the
 * registration; a mismatch registers one address and signs with another. The error gives the
 * key's address (public) and neither key.
 */
export function checkKeyAddresses(spec: FleetSpec, secrets: SecretSource, issues: string[]): void {
    spec.nodes.forEach((node, i) => {
        if (node.role !== "sequencer") return;
        const s = node.sequencer;
        const key = secrets.get(s.validatorPrivateKeySecret);
        if (key === undefined || !secrets.isSecret(s.validatorPrivateKeySecret) || v.privateKeyReason(key) !== undefined) return; // said by checkSecrets
        const own = v.addressOfPrivateKey(key);
        if (own.toLowerCase() !== s.validatorAddress.toLowerCase()) {
            issues.push(`nodes[${i}].sequencer.validatorAddress: ${s.validatorAddress} is not the address of the key nodes[${i}].sequencer.validatorPrivateKeySecret names; that key's address is ${own} (what \`cast wallet address --private-key\` prints for it). Put that address here, or name the key of ${s.validatorAddress}`);
        }
    });
}
