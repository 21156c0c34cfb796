// The safety rules of the nodefleet policy pack, as pure functions over the planned resources
// (policy/index.ts adapts @pulumi/policy's resources to `Planned`). They check what the engine is
// about to create, independently of the config checks in components/config: a second line of
// defence that also covers resources a program adds by hand.
import { coversWorld } from "../components/base/cidr";
import { WORLD_CIDRS } from "../components/config/ports";
import { VALIDATOR_SUFFIXES } from "../components/roles/validator/contract";
import { AZTEC_PORTS, STORAGE_PORTS } from "../components/values/port-defaults";
import { switchStep } from "../components/roles/validator/switch-steps";
import { MONITORING_PORTS } from "../components/config/monitoring";

/** One planned resource. Values the engine does not know yet (preview) read as `undefined`. */
export interface Planned {
    readonly urn: string;
    readonly type: string;
    readonly name: string;
    readonly props: Record<string, unknown>;
    readonly parent?: string;
    readonly dependencies: readonly string[];
}

export interface Violation {
    readonly urn: string;
    readonly message: string;
}

export interface RuleConfig {
    /** Every SSH connection must pin the host's key (prod). */
    readonly requirePinnedHostKeys?: boolean;
    /** Existing hosts' preflight must stop a short host (hardwareCheck: enforce), not warn. */
    readonly requireEnforcedHardwareCheck?: boolean;
}

export const COMMAND = "command:remote:Command";

/** A connection's host key that is set but not known yet during preview (policy/index.ts). */
export const UNKNOWN_PIN = "(a host key pinned during the run)";

/** Ports that serve RPC, the engine API, consensus RPC or an admin API: never open to the world. */
export function isRpcPort(port: number): boolean {
    // Storage RPC / admin RPC / gRPC defaults, sequencer RPC and admin; the validator's local
    // suffixes (EL HTTP, WS, engine, CometBFT RPC, proxy_app, the metrics ports).
    const fixed: readonly number[] = [STORAGE_PORTS.rpc, STORAGE_PORTS.adminRpc, STORAGE_PORTS.grpc, AZTEC_PORTS.rpc, AZTEC_PORTS.admin];
    if (fixed.includes(port)) return true;
    const x = VALIDATOR_SUFFIXES;
    const local: readonly number[] = [x.elHttp, x.elWs, x.engine, x.cometRpc, x.proxyApp, x.prometheus, x.elMetrics];
    return port >= 1000 && local.includes(port % 1000);
}

export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
const commands = (rs: readonly Planned[]) => rs.filter((r) => r.type === COMMAND);

/** What one ingress rule of a resource opens: a port range, a protocol, from which sources. */
interface Opening {
    readonly from: number;
    readonly to: number;
    readonly protocol: string;
    readonly sources: readonly string[];
    /** Whether these sources alone cover a whole address family (address math, components/base/cidr). */
    readonly world: boolean;
    readonly what: string;
}

function opening(from: number, to: number, protocol: string, sources: readonly string[], what: string): Opening {
    return { from, to, protocol, sources, world: coversWorld(sources), what };
}

/** nftables accept rules in a firewall script: no saddr means every source. */
export function nftOpenings(script: string): Opening[] {
    const out: Opening[] = [];
    for (const line of script.split("\n")) {
        const m = /^\s*(?:(ip6?) saddr \{([^}]*)\} )?(tcp|udp) dport (\d+)(?:-(\d+))? accept/.exec(line);
        if (!m) continue;
        const sources = m[2] ? m[2].split(",").map((s) => s.trim()) : [...WORLD_CIDRS];
        out.push(opening(Number(m[4]), Number(m[5] ?? m[4]), m[3]!, sources, line.trim()));
    }
    return out;
}

function openings(r: Planned): Opening[] {
    const p = r.props;
    if (r.type === COMMAND && /-firewall-apply$/.test(r.name)) return nftOpenings(str(p.stdin) ?? "");
    if (r.type === "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule") {
        const sources = [str(p.cidrIpv4), str(p.cidrIpv6)].filter((x): x is string => x !== undefined);
        const from = Number(p.fromPort ?? 0),
            to = Number(p.toPort ?? 65535);
        return [opening(from, to, String(p.ipProtocol), sources, `${p.ipProtocol} ${from}-${to} from ${sources.join(",")}`)];
    }
    if (r.type === "aws:ec2/securityGroup:SecurityGroup") {
        return ((p.ingress as Record<string, unknown>[] | undefined) ?? []).map((i) => {
            const cidrs = [...strs(i.cidrBlocks), ...strs(i.ipv6CidrBlocks)];
            return opening(
                Number(i.fromPort),
                Number(i.toPort),
                String(i.protocol),
                cidrs,
                `${i.protocol} ${i.fromPort}-${i.toPort} from ${cidrs.join(",")}`,
            );
        });
    }
    if (r.type === "hcloud:index/firewall:Firewall") {
        return ((p.rules as Record<string, unknown>[] | undefined) ?? [])
            .filter((x) => x.direction === "in" && (x.protocol === "tcp" || x.protocol === "udp") && x.port !== undefined)
            .map((x) => {
                const [from, to] = String(x.port).split("-").map(Number);
                return opening(
                    from!,
                    to ?? from!,
                    String(x.protocol),
                    strs(x.sourceIps),
                    `${x.protocol} ${x.port} from ${strs(x.sourceIps).join(",")}`,
                );
            });
    }
    return [];
}

function sshPorts(rs: readonly Planned[]): Set<number> {
    const ports = new Set([22]);
    for (const c of commands(rs)) {
        const port = Number((c.props.connection as Record<string, unknown> | undefined)?.port);
        if (Number.isInteger(port)) ports.add(port);
    }
    return ports;
}

/**
 * Every port that `watched` picks, opened to the world: by one rule alone, or by the union of the
 * rules of one host (resources with the same parent), however the ranges are spelled or split.
 * One violation per rule, at the first such port of its range.
 */
function openToWorld(
    rs: readonly Planned[],
    watched: (port: number, protocol: string) => boolean,
    say: (port: string, how: string) => string,
): Violation[] {
    const byPort = new Map<string, { r: Planned; o: Opening }[]>();
    for (const r of rs) {
        for (const o of openings(r)) {
            const protocols = ["-1", "all"].includes(o.protocol) ? ["tcp", "udp"] : [o.protocol];
            for (let port = o.from; port <= o.to && port - o.from < 65536; port++) {
                for (const protocol of protocols) {
                    if (!watched(port, protocol)) continue;
                    const key = `${r.parent ?? ""}|${port}/${protocol}`;
                    byPort.set(key, [...(byPort.get(key) ?? []), { r, o }]);
                }
            }
        }
    }
    const out: Violation[] = [];
    const reported = new Set<string>();
    const report = (r: Planned, o: Opening, message: string) => {
        if (reported.has(`${r.urn}|${o.what}`)) return;
        reported.add(`${r.urn}|${o.what}`);
        out.push({ urn: r.urn, message });
    };
    for (const [key, entries] of byPort) {
        const port = key.slice(key.lastIndexOf("|") + 1);
        const alone = entries.filter((e) => e.o.world);
        for (const { r, o } of alone) report(r, o, `${r.name}: ${say(port, `(${o.what})`)}`);
        if (alone.length === 0 && coversWorld(entries.flatMap((e) => e.o.sources))) {
            const together = `by these rules together (${entries.map((e) => e.o.what).join("; ")})`;
            for (const { r, o } of entries) report(r, o, `${r.name}: ${say(port, together)}`);
        }
    }
    return out;
}

/** Rule: no RPC, engine, consensus-RPC or admin port open to the world. */
export function rpcOpenToWorld(rs: readonly Planned[]): Violation[] {
    return openToWorld(
        rs,
        (port) => isRpcPort(port),
        (port, how) => `port ${port} is an RPC/engine/admin port and is open to the world ${how}`,
    );
}

/**
 * Ports that serve metrics or the monitoring stack: node_exporter, Prometheus, Alertmanager and its
 * cluster port (the Debian packages' defaults), and the validators' `<prefix>660` (CometBFT's) and
 * `<prefix>661` (the execution client's).
 */
export function isMetricsPort(port: number): boolean {
    const fixed: readonly number[] = [
        MONITORING_PORTS.nodeExporter,
        MONITORING_PORTS.prometheus,
        MONITORING_PORTS.alertmanager,
        ALERTMANAGER_CLUSTER_PORT,
    ];
    const suffixes: readonly number[] = [VALIDATOR_SUFFIXES.prometheus, VALIDATOR_SUFFIXES.elMetrics];
    return fixed.includes(port) || (port >= 1000 && suffixes.includes(port % 1000));
}

/** Alertmanager's gossip port (nodefleet runs it without: `--cluster.listen-address=`). */
const ALERTMANAGER_CLUSTER_PORT = 9094;

/** Rule: no metrics or monitoring port open to the world (they tell an attacker the fleet's layout and its state). */
export function metricsOpenToWorld(rs: readonly Planned[]): Violation[] {
    return openToWorld(
        rs,
        (port, protocol) => protocol === "tcp" && isMetricsPort(port),
        (port, how) =>
            `port ${port} serves metrics or the monitoring stack and is open to the world ${how}; open it to the monitoring host only`,
    );
}

/** Rule: SSH is reachable from admin CIDRs only. */
export function sshOpenToWorld(rs: readonly Planned[]): Violation[] {
    const ssh = sshPorts(rs);
    return openToWorld(
        rs,
        (port, protocol) => protocol === "tcp" && ssh.has(port),
        (_port, how) => `SSH is open to the world ${how}; allow the admin CIDRs only`,
    );
}

/** Key material in a text: hex private keys and the base64 private key of priv_validator_key.json. */
export function keyMaterial(text: string): string[] {
    // A bundled step's runner names its script by its sha256: 64 hex digits that are no key.
    text = text.replace(/^nodefleet_run=[0-9a-f]{64}$/gm, "");
    const keys = new Set<string>();
    for (const m of text.matchAll(/(?<![0-9a-fA-Fx])(?:0x)?([0-9a-fA-F]{64})(?![0-9a-fA-F])/g)) keys.add(m[1].toLowerCase());
    for (const m of text.matchAll(/"priv_key"\s*:\s*\{[^}]*"value"\s*:\s*"([A-Za-z0-9+/=]{40,})"/g)) keys.add(m[1]);
    for (const m of text.matchAll(/-----BEGIN [A-Z ]*PRIVATE KEY-----/g)) keys.add(m[0]);
    return [...keys];
}

const KEY_STEPS = /-(miner-key|validator-key)$/;

/**
 * Whether a text holds one of `known` (hex keys lowercased, base64 keys as they are), anywhere, in
 * either case: what `text.includes(k) || text.toLowerCase().includes(k)` over every key answers, in
 * time that does not grow with the number of keys (a fleet of a thousand nodes holds a thousand).
 * A key's characters are all base64's, so each occurrence lies in a run of them: each run at least
 * as long as a key is looked up window by window, one window length per key length.
 */
export function knownKeyFinder(known: ReadonlySet<string>): (text: string) => boolean {
    const lengths = [...new Set([...known].map((k) => k.length))];
    if (lengths.length === 0) return () => false;
    const shortest = Math.min(...lengths);
    return (text) => {
        const lower = text.toLowerCase();
        for (const run of text.matchAll(new RegExp(`[A-Za-z0-9+/=]{${shortest},}`, "g"))) {
            const start = run.index!;
            const end = start + run[0].length;
            for (const n of lengths) {
                for (let i = start; i + n <= end; i++) {
                    if (known.has(text.slice(i, i + n)) || known.has(lower.slice(i, i + n))) return true;
                }
            }
        }
        return false;
    };
}

/** Rule: one validator key, one node (0G consensus keys and Aztec sequencer keys alike). */
export function sameValidatorKey(rs: readonly Planned[]): Violation[] {
    const seen = new Map<string, Planned>();
    const out: Violation[] = [];
    const keySteps = commands(rs)
        .filter((r) => /-validator-key$/.test(r.name))
        .sort((a, b) => a.name.localeCompare(b.name));
    for (const c of keySteps) {
        for (const key of keyMaterial(str(c.props.stdin) ?? "")) {
            const first = seen.get(key);
            if (first && first.parent !== c.parent)
                out.push({
                    urn: c.urn,
                    message: `${c.name}: the same validator key as ${first.name}: one key must never sign on two nodes`,
                });
            else seen.set(key, c);
        }
    }
    return out;
}

/** Rule (prod): every SSH connection pins the host key. */
export function unpinnedHostKey(rs: readonly Planned[], cfg: RuleConfig): Violation[] {
    if (!cfg.requirePinnedHostKeys) return [];
    const hosts = new Map<string, Planned>();
    for (const c of commands(rs)) {
        const conn = c.props.connection as Record<string, unknown> | undefined;
        // A key the engine learns during the run (a cloud host's first-boot key, then the key it makes)
        // is a pin: policy/index.ts reads it as UNKNOWN_PIN.
        if (conn && !str(conn.hostKey)) hosts.set(`${conn.host ?? "(a new host)"}:${conn.port ?? 22}`, c);
    }
    return [...hosts.entries()].map(([host, c]) => ({
        urn: c.urn,
        message: `${c.name}: SSH to ${host} does not pin the host key (set hosts.<name>.hostKey)`,
    }));
}

/**
 * Rule: the keys the stack holds (read from the key steps' stdin, which the program marks secret)
 * reach no other resource input: not a command line, environment, trigger, tag or user data,
 * where they would be stored and shown in plain text. A PEM private key outside the SSH
 * connection's privateKey is flagged too.
 */
export function keyOutsideKeySteps(rs: readonly Planned[]): Violation[] {
    const known = new Set<string>();
    for (const c of commands(rs).filter((r) => KEY_STEPS.test(r.name))) for (const k of keyMaterial(str(c.props.stdin) ?? "")) known.add(k);
    const includesKey = knownKeyFinder(known);
    const leaks = (text: string) => includesKey(text) || /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text);
    const firstBootKeys = new Set(
        rs
            .filter(isFirstBootKey)
            .map((r) => str(r.props.privateKey))
            .filter((k): k is string => k !== undefined),
    );
    const out: Violation[] = [];
    for (const r of rs) {
        for (const [field, value] of Object.entries(r.props)) {
            if (r.type === COMMAND && field === "stdin" && KEY_STEPS.test(r.name)) continue;
            // A cloud server's first-boot host key: made for its user-data (components/hosts/first-boot.ts).
            if (field === "privateKey" && isFirstBootKey(r)) continue;
            let text = JSON.stringify(value ?? "");
            if (field === "connection") {
                const { privateKey: _key, ...rest } = (value ?? {}) as Record<string, unknown>;
                text = JSON.stringify(rest);
            }
            if (field === "userData" && CLOUD_SERVERS.has(r.type))
                text = JSON.stringify(withoutFirstBootKey(str(value) ?? "", firstBootKeys));
            if (leaks(text))
                out.push({
                    urn: r.urn,
                    message: `${r.name}: a key reaches the input '${field}' in plain text; keys go to the key steps only, as secrets`,
                });
        }
    }
    return out;
}

const CLOUD_SERVERS = new Set(["hcloud:index/server:Server", "aws:ec2/instance:Instance"]);

/** A server's first-boot host key (components/hosts/first-boot.ts FirstBootKey: a dynamic resource). */
function isFirstBootKey(r: Planned): boolean {
    return r.type === "pulumi-nodejs:dynamic:Resource" && r.name.endsWith("-first-boot-key");
}

/**
 * A server's user-data without the host key that one of the stack's first-boot keys handed it (its
 * `ssh_keys.ed25519_private`); any other key in it is still found. User-data that is not nodefleet's
 * JSON cloud-config is read as it is.
 */
function withoutFirstBootKey(userData: string, firstBootKeys: ReadonlySet<string>): string {
    const header = "#cloud-config\n";
    if (!userData.startsWith(header)) return userData;
    try {
        const doc = JSON.parse(userData.slice(header.length)) as { ssh_keys?: Record<string, unknown> };
        const key = doc.ssh_keys?.ed25519_private;
        if (typeof key === "string" && firstBootKeys.has(key)) delete doc.ssh_keys!.ed25519_private;
        return JSON.stringify(doc);
    } catch {
        return userData;
    }
}

/** The steps whose scripts (stdin) the rules above read: their firewall, hardware target and keys. */
const READ_SCRIPTS = /-(firewall-apply|preflight|miner-key|validator-key)$/;

/**
 * Rule: every script the rules read is there to read. nodefleet's command provider keeps a step's
 * stdin in its state only when the step has a delete command (lab/toolchain/patches); the pack takes
 * the scripts from the inputs the engine shows it, and a bundled step's from the project's bundles
 * (policy/index.ts), so a script absent from all of them (a resource the engine did not show this
 * run, as under `--target`; a bundle removed) cannot be checked: refused, never passed unread. A
 * script not known yet (preview) is not absent.
 */
export function scriptsUnread(rs: readonly Planned[]): Violation[] {
    return commands(rs)
        .filter((r) => READ_SCRIPTS.test(r.name) && !("stdin" in r.props))
        .map((r) => ({
            urn: r.urn,
            message: `${r.name}: its script is not in what the engine showed the policy pack, so the firewall, hardware and key rules cannot check it (run without --target, from the project the program ran in)`,
        }));
}

/** Rule: the destructive switch step depends on the backup and the export (transitively). */
export function migrationGuards(rs: readonly Planned[]): Violation[] {
    const byUrn = new Map(rs.map((r) => [r.urn, r]));
    const ancestors = (start: Planned): Set<string> => {
        const seen = new Set<string>();
        const todo = [...start.dependencies];
        while (todo.length) {
            const u = todo.pop()!;
            if (seen.has(u)) continue;
            seen.add(u);
            todo.push(...(byUrn.get(u)?.dependencies ?? []));
        }
        return seen;
    };
    const out: Violation[] = [];
    const deleteGeth = switchStep("delete-geth");
    for (const del of commands(rs).filter((r) => r.name.endsWith(`-switch-${deleteGeth}`))) {
        const before = [...ancestors(del)].map((u) => byUrn.get(u)).filter((r): r is Planned => !!r);
        for (const guard of [switchStep("backup"), switchStep("export")]) {
            if (!before.some((r) => r.name.endsWith(`-switch-${guard}`) && r.parent === del.parent)) {
                out.push({
                    urn: del.urn,
                    message: `${del.name} deletes the geth datadir but does not depend on ${del.name.slice(0, -deleteGeth.length)}${guard}`,
                });
            }
        }
    }
    return out;
}
