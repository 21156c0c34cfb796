// Parse and cross-check a fleet config. Pure: it reads secrets only through the
// SecretSource it is given, and no error message ever carries a secret's value.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { z } from "zod";
import { fleetSpec, FleetSpec, HostSpec, NodeSpec, type RpcUrl } from "./schema";
import { formatPath, isSecretField, samePath } from "./paths";
import { stringIssues } from "./strings";
import { addressKey } from "../cidr";
import * as v from "./validators";
import { rolePorts, sshdPort } from "../ports";
import { checkCloudHost } from "../hardware";
import { checkMonitoring, hostMonitoring, receiverSecrets, type HostMonitoring } from "./monitoring";

export interface SecretSource {
    /** The value of config key `nodefleet:<key>`, or undefined when unset. */
    get(key: string): string | undefined;
    /** Whether that key is stored encrypted. */
    isSecret(key: string): boolean;
    /** The names of the encrypted keys of the namespace, for "known: …" in errors (names only). */
    secretNames?(): readonly string[];
}

/** What the config is read for: `up` (everything checked) or `status` (what a monitoring box can check). */
export interface ParseOptions {
    /**
     * Secret values are not decrypted (get() answers for presence only): their format, their
     * identity across nodes and their agreement with addresses are `up`'s to check.
     */
    readonly secretValues?: boolean;
    /** A sha256File that cannot be read here is a warning, not an error (the release is then left out). */
    readonly releaseFilesRequired?: boolean;
}

export class FleetConfigError extends Error {
    constructor(readonly issues: readonly string[]) {
        super(`invalid nodefleet:fleet config:\n${issues.map((i) => `  - ${i}`).join("\n")}`);
        this.name = "FleetConfigError";
    }
}

/** A release with its checksum resolved: what a host installs. */
export interface ResolvedRelease {
    readonly name: string;
    readonly url: string;
    readonly sha256: string;
}

export interface HostPlan {
    readonly name: string;
    readonly spec: HostSpec;
    readonly nodes: readonly NodeSpec[];
    /** The releases its nodes name, each once, in name order. */
    readonly releases: readonly ResolvedRelease[];
    /** What it is to the monitoring stack, when the fleet has one. */
    readonly monitoring?: HostMonitoring;
}

export interface FleetPlan {
    readonly spec: FleetSpec;
    readonly hosts: readonly HostPlan[];
    /** Problems reported but not fatal (hardware in warn mode, unpinned host keys). */
    readonly warnings: readonly string[];
}

export { formatPath };

const EXPECTED: Record<string, string> = {
    number: "a number",
    int: "a whole number",
    string: "a string",
    boolean: "true or false",
    array: "a list",
    object: "a map of keys",
    record: "a map of names to values",
};

/** What a config value is, for "expected X, got Y"; a secret field's value is never shown. */
function describeInput(input: unknown, secret: boolean): string {
    if (input === null) return "null";
    if (Array.isArray(input)) return "a list";
    switch (typeof input) {
        case "string":
            if (secret) return "a string";
            return `the string ${JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input)}`;
        case "number":
            return secret ? "a number" : `the number ${input}`;
        case "boolean":
            return secret ? "a boolean" : String(input);
        case "object":
            return "a map of keys";
        default:
            return typeof input;
    }
}

/**
 * A failed union of versioned variants (the sequencer's): the issues of the one branch whose
 * `version` matched, else the union's own message at `.version`. Other unions pass through.
 */
function unionBranch(i: z.core.$ZodIssue): z.core.$ZodIssue[] {
    if (i.code !== "invalid_union" || i.errors.length === 0) return [i];
    if (i.input === undefined) return [{ code: "invalid_type", expected: "object", input: undefined, path: i.path, message: "required" } as z.core.$ZodIssue];
    const matched = i.errors.filter((branch) => !branch.some((e) => e.path.length === 1 && e.path[0] === "version"));
    if (matched.length === 1) return matched[0]!.map((e) => ({ ...e, path: [...i.path, ...e.path] }) as z.core.$ZodIssue).flatMap(unionBranch);
    if (matched.length === 0 && i.errors.every((b) => b.some((e) => e.path[0] === "version"))) return [{ ...i, path: [...i.path, "version"], errors: [] } as z.core.$ZodIssue];
    return [i];
}

function zodIssue(i: z.core.$ZodIssue): string {
    const at = formatPath(i.path);
    switch (i.code) {
        case "unrecognized_keys":
            return `${at}: unknown key${i.keys.length > 1 ? "s" : ""} ${i.keys.join(", ")}`;
        case "invalid_type":
            if (i.input === undefined) return `${at}: required`;
            return `${at}: expected ${EXPECTED[i.expected] ?? i.expected}, got ${describeInput(i.input, isSecretField(i.path))}`;
        case "invalid_key":
            // A map key (host or release name) that breaks the key schema: its own message.
            return `${at}: ${i.issues.map((k) => k.message).join("; ")}`;
        default:
            return `${at}: ${i.message}`;
    }
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

/** The URL fields given as {secret: <name>}, each with its config path. */
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
        const ref = node.role === "validator" ? node.validator.referenceRpcUrl : undefined;
        if (ref !== undefined && typeof ref !== "string") uses.push({ path: `nodes[${i}].validator.referenceRpcUrl.secret`, key: ref.secret, kind: "url" });
    });
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

function checkSecrets(spec: FleetSpec, secrets: SecretSource, issues: string[], values = true): void {
    const seen = new Map<string, string>(); // kind+identity -> first path
    for (const use of secretUses(spec)) {
        const value = secrets.get(use.key);
        if (value === undefined) {
            const known = secrets.secretNames?.() ?? [];
            // The name itself is not repeated: a value pasted here by mistake may be a key.
            issues.push(`${use.path}: the config key it names is not set (pulumi config set --secret <that name> …); the stack's secret keys: ${known.length ? [...known].sort().join(", ") : "none"}`);
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
function checkKeyAddresses(spec: FleetSpec, secrets: SecretSource, issues: string[]): void {
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

/** A local file named in config (key file, SHA256SUMS): `~/` is $HOME, a relative path is relative to `base`. */
export function localPath(file: string, base: string = process.cwd()): string {
    if (file === "~" || file.startsWith("~/")) return path.join(os.homedir(), file.slice(1));
    return path.resolve(base, file);
}

/** Reads an SSH key file, or says why it cannot be used (never quoting its content). */
export function readKeyFile(file: string): { key: string } | { reason: string } {
    const p = localPath(file);
    let st: fs.Stats;
    try {
        st = fs.statSync(p);
    } catch {
        return { reason: `${p}: no such file` };
    }
    if (!st.isFile()) return { reason: `${p}: not a regular file` };
    // ssh itself refuses a key others can read; so do we.
    if ((st.mode & 0o077) !== 0) return { reason: `${p}: readable by group or others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it` };
    let key: string;
    try {
        key = fs.readFileSync(p, "utf8");
    } catch (e) {
        return { reason: `${p}: cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})` };
    }
    const reason = v.sshPrivateKeyReason(key);
    return reason ? { reason: `${p}: ${reason}` } : { key };
}

function checkSshKeys(spec: FleetSpec, issues: string[]): void {
    for (const [name, host] of Object.entries(spec.hosts)) {
        const file = host.kind === "existing" ? host.sshPrivateKeyFile : undefined;
        if (host.sshPrivateKeySecret === undefined && file === undefined) {
            issues.push(`hosts.${name}: needs sshPrivateKeySecret${host.kind === "existing" ? " or sshPrivateKeyFile" : ""}`);
        } else if (host.sshPrivateKeySecret !== undefined && file !== undefined) {
            issues.push(`hosts.${name}: give sshPrivateKeySecret or sshPrivateKeyFile, not both`);
        } else if (file !== undefined) {
            const read = readKeyFile(file);
            if ("reason" in read) issues.push(`hosts.${name}.sshPrivateKeyFile: ${read.reason}`);
        }
    }
}

function checkNames(spec: FleetSpec, issues: string[]): void {
    const first = new Map<string, number>();
    spec.nodes.forEach((node, i) => {
        const j = first.get(node.name);
        if (j === undefined) first.set(node.name, i);
        else issues.push(`nodes[${i}].name: duplicate node name "${node.name}" (also nodes[${j}])`);
    });
}

function checkHostRefs(spec: FleetSpec, issues: string[], warnings: string[]): void {
    const known = Object.keys(spec.hosts);
    const used = new Set<string>();
    spec.nodes.forEach((node, i) => {
        if (!Object.hasOwn(spec.hosts, node.host)) issues.push(`nodes[${i}].host: no host named "${node.host}" under hosts (known: ${known.join(", ") || "none"})`);
        used.add(node.host);
        // abandonHost names the host a validator leaves (checked against the last up's
        // validatorHosts in components/fleet.ts); never the one it runs on.
        if (node.role === "validator" && node.validator.abandonHost === node.host)
            issues.push(`nodes[${i}].validator.abandonHost: "${node.host}" is the host this validator runs on (nodes[${i}].host); abandonHost names the host it leaves`);
    });
    // A host with no node is kept (bootstrap and firewall only) with a warning: a validator that
    // just moved off it needs it configured for one more `up`, so its handover can run there.
    for (const name of known) if (!used.has(name)) warnings.push(`hosts.${name}: no node runs on this host; remove it once nothing is handed over from it (a validator that moved off it), or add a node`);
}

/**
 * Which machine a host is. An existing host is the machine that answers SSH at its address and
 * port, the address compared parsed (`::ffff:10.0.0.1` is `10.0.0.1`, `0:0::1` is `::1`, names
 * case-insensitively); the port counts too because port-forwarded VMs share one address (the dev
 * stack). A cloud host is a machine of its own.
 */
function machineOf(name: string, host: HostSpec): string {
    return host.kind === "existing" ? `${addressKey(host.address)} port ${host.port}` : `new ${host.kind} host ${name}`;
}

function checkMachines(spec: FleetSpec, issues: string[]): void {
    const first = new Map<string, string>();
    for (const [name, host] of Object.entries(spec.hosts)) {
        const machine = machineOf(name, host);
        const other = first.get(machine);
        if (other === undefined) first.set(machine, name);
        else issues.push(`hosts.${name}.address: the same machine as hosts.${other} (same address and SSH port); one machine is one host, or their firewalls overwrite each other`);
    }
}

function checkPorts(spec: FleetSpec, issues: string[]): void {
    const byMachine = new Map<string, Map<string, string>>();
    spec.nodes.forEach((node, i) => {
        if (!Object.hasOwn(spec.hosts, node.host)) return;
        const host = spec.hosts[node.host]!;
        const machine = machineOf(node.host, host);
        let taken = byMachine.get(machine);
        if (!taken) {
            taken = new Map([[`${sshdPort(host)}/tcp`, `sshd`], ...monitoringPorts(spec, node.host).map((p) => [`${p.port}/tcp`, p.owner] as [string, string])]);
            byMachine.set(machine, taken);
        }
        for (const p of rolePorts(node)) {
            const key = `${p.port}/${p.protocol}`;
            const owner = taken.get(key);
            if (owner !== undefined) issues.push(`nodes[${i}]: port ${key} (${p.purpose}) is already used by ${owner} on host ${node.host}`);
            else taken.set(key, `nodes[${i}] (${p.purpose})`);
        }
    });
}

/** The monitoring ports a host binds: node_exporter's on every host, Prometheus's and Alertmanager's on the monitoring host. */
function monitoringPorts(spec: FleetSpec, host: string): { port: number; owner: string }[] {
    const m = spec.monitoring;
    if (m === undefined) return [];
    const ports = [{ port: m.nodeExporterPort, owner: "monitoring.nodeExporterPort" }];
    if (m.host === host) ports.push({ port: m.prometheusPort, owner: "monitoring.prometheusPort" }, { port: m.alertmanagerPort, owner: "monitoring.alertmanagerPort" });
    return ports;
}

function checkRoleRules(spec: FleetSpec, issues: string[]): void {
    spec.nodes.forEach((node, i) => {
        if (node.role === "storage" && node.release === undefined) {
            issues.push(`nodes[${i}].release: required: the host installs the storage node's software (zgs_node) from a release (see releases)`);
        }
        if (node.role === "validator" && node.release === undefined) {
            issues.push(`nodes[${i}].release: required: the host installs 0gchaind, geth and reth from the 0G release package (1.0.6 or later, see releases)`);
        }
        if (node.role !== "validator" && node.release !== undefined && spec.releases[node.release]?.consensus !== undefined) {
            issues.push(`releases.${node.release}.consensus: only a validator's release carries a consensus daemon, and ${node.role} nodes[${i}] installs this one`);
        }
        if (node.role === "sequencer" && node.release === undefined) {
            issues.push(`nodes[${i}].release: required: the host installs the aztec CLI and its version manager (aztec-up) from a release (see releases)`);
        }
        if (node.role === "storage" && node.storage.networkBootNodes.length > 0 && !node.storage.networkEnrAddress) {
            issues.push(`nodes[${i}].storage.networkEnrAddress: required when networkBootNodes is set (UDP discovery needs both)`);
        }
    });
}

/** The checksum of the file `fileName` in a SHA256SUMS-format text ("<hex>  <name>" lines). */
export function sha256FromSums(sums: string, fileName: string): string | undefined {
    for (const line of sums.split("\n")) {
        const m = /^([0-9a-fA-F]{64}) [ *]?(.+)$/.exec(line.trim());
        if (m && path.basename(m[2]!) === fileName) return m[1]!.toLowerCase();
    }
    return undefined;
}

function resolveReleases(spec: FleetSpec, issues: string[], warnings: string[], filesRequired = true): Map<string, ResolvedRelease> {
    const out = new Map<string, ResolvedRelease>();
    for (const [name, r] of Object.entries(spec.releases)) {
        const at = `releases.${name}`;
        if ((r.sha256 === undefined) === (r.sha256File === undefined)) {
            issues.push(`${at}: give exactly one of sha256 or sha256File; a release is never installed unchecked`);
            continue;
        }
        let sha = r.sha256;
        if (r.sha256File !== undefined) {
            const file = localPath(r.sha256File);
            const fileName = path.basename(new URL(r.url).pathname);
            let sums: string;
            try {
                sums = fs.readFileSync(file, "utf8");
            } catch {
                if (filesRequired) issues.push(`${at}.sha256File: ${file}: cannot be read`);
                else warnings.push(`${at}.sha256File: ${file}: cannot be read on this machine (only pulumi up needs it)`);
                continue;
            }
            sha = sha256FromSums(sums, fileName);
            if (sha === undefined) {
                issues.push(`${at}.sha256File: ${file} has no entry for ${fileName}`);
                continue;
            }
        }
        out.set(name, { name, url: r.url, sha256: sha! });
    }
    const used = new Set<string>();
    spec.nodes.forEach((node, i) => {
        if (node.release === undefined) return;
        used.add(node.release);
        if (!Object.hasOwn(spec.releases, node.release)) issues.push(`nodes[${i}].release: no release named "${node.release}" under releases (known: ${Object.keys(spec.releases).join(", ") || "none"})`);
    });
    for (const name of Object.keys(spec.releases)) if (!used.has(name)) warnings.push(`releases.${name}: no node uses this release`);
    return out;
}

function planHosts(spec: FleetSpec, releases: Map<string, ResolvedRelease>): HostPlan[] {
    return Object.entries(spec.hosts).map(([name, hostSpec]) => {
        const nodes = spec.nodes.filter((n) => n.host === name);
        const names = [...new Set(nodes.flatMap((n) => (n.release === undefined ? [] : [n.release])))].sort();
        const monitoring = hostMonitoring(spec.monitoring, spec.hosts, name);
        return { name, spec: hostSpec, nodes, releases: names.flatMap((r) => (releases.has(r) ? [releases.get(r)!] : [])), ...(monitoring ? { monitoring } : {}) };
    });
}

function checkHardware(spec: FleetSpec, hosts: readonly HostPlan[], issues: string[], warnings: string[]): void {
    for (const host of hosts) {
        const field = host.spec.kind === "aws" ? "instanceType" : "serverType";
        for (const f of checkCloudHost(host.spec, host.nodes)) {
            const line = `hosts.${host.name}.${field}: ${f.message}`;
            if (spec.hardwareCheck === "enforce") issues.push(line);
            else warnings.push(`${line} (hardwareCheck: warn)`);
        }
        if (host.spec.kind === "existing" && !host.spec.hostKey) {
            warnings.push(`hosts.${host.name}.hostKey: not pinned; the first key the host presents is accepted`);
        }
    }
}

/** Validate everything that can be validated before a resource exists. Throws FleetConfigError. */
export function parseFleet(raw: unknown, secrets: SecretSource, options: ParseOptions = {}): FleetPlan {
    const values = options.secretValues ?? true;
    const parsed = fleetSpec.safeParse(raw, { reportInput: true });
    const schemaIssues = parsed.success ? [] : parsed.error.issues;
    // The string rule first, and what it refuses is not reported again by the schema; but a
    // field naming a secret that holds key material (a pasted PEM has newlines) is told that.
    const stringProblems = stringIssues(raw).filter((s) => !(isSecretField(s.path) && schemaIssues.some((z) => samePath(z.path, s.path))));
    if (stringProblems.length > 0 || !parsed.success) {
        const covered = (p: readonly PropertyKey[]) => stringProblems.some((s) => samePath(s.path, p.slice(0, s.path.length)));
        throw new FleetConfigError([
            ...stringProblems.map((s) => `${formatPath(s.path)}: ${s.reason}`),
            ...schemaIssues.flatMap(unionBranch).filter((z) => !covered(z.path)).map(zodIssue),
        ]);
    }
    const spec = parsed.data;
    const issues: string[] = [];
    const warnings: string[] = [];
    checkNames(spec, issues);
    checkHostRefs(spec, issues, warnings);
    checkMachines(spec, issues);
    checkPorts(spec, issues);
    checkRoleRules(spec, issues);
    checkSecrets(spec, secrets, issues, values);
    if (values) checkKeyAddresses(spec, secrets, issues);
    checkSshKeys(spec, issues);
    checkMonitoring(spec.monitoring, spec.hosts, issues);
    const releases = resolveReleases(spec, issues, warnings, options.releaseFilesRequired ?? true);
    const hosts = planHosts(spec, releases);
    checkHardware(spec, hosts, issues, warnings);
    if (issues.length > 0) throw new FleetConfigError(issues);
    return { spec, hosts, warnings };
}
