// The one port table every firewall is built from (AWS security groups, Hetzner
// firewalls, nftables). Pure: (role, role settings, port prefix) -> ports.
import type { HostMonitoring } from "./monitoring";
import type { HostSpec, NodeSpec } from "./schema";
import { AZTEC_PORTS } from "./port-defaults";
import { assertNever } from "../base/never";

export type Protocol = "tcp" | "udp";

/**
 * public: open to the internet (peer-to-peer only).
 * restricted: open to listed CIDRs only.
 * local: bound on the host, never opened in any firewall (RPC, engine, admin).
 */
export type Exposure = { kind: "public" } | { kind: "restricted"; cidrs: readonly string[] } | { kind: "local" };

export interface PortSpec {
    readonly port: number;
    readonly protocol: Protocol;
    readonly exposure: Exposure;
    readonly purpose: string;
}

const PUBLIC: Exposure = { kind: "public" };
const LOCAL: Exposure = { kind: "local" };

function both(port: number, exposure: Exposure, purpose: string): PortSpec[] {
    return [
        { port, protocol: "tcp", exposure, purpose },
        { port, protocol: "udp", exposure, purpose },
    ];
}

/** docs/spec.md §8 port suffixes, joined to the operator's prefix as text: prefix 56 + 545 = 56545. */
export const VALIDATOR_SUFFIXES = {
    elHttp: 545,
    elWs: 546,
    engine: 551,
    elP2p: 303,
    cometP2p: 656,
    cometRpc: 657,
    proxyApp: 658,
    prometheus: 660,
    /** nodefleet's own choice (the community scheme has no suffix for it): the execution client's metrics. */
    elMetrics: 661,
} as const;

export function prefixed(prefix: number, suffix: number): number {
    return Number(`${prefix}${suffix}`);
}

/** Every port a node binds, with how far it may be reached. */
export function rolePorts(node: NodeSpec): PortSpec[] {
    switch (node.role) {
        case "storage": {
            const s = node.storage;
            return [
                // libp2p TCP and discovery UDP share one port (zgs_node's network settings).
                ...both(s.p2pPort, PUBLIC, "storage p2p"),
                { port: s.rpcPort, protocol: "tcp", exposure: LOCAL, purpose: "storage RPC" },
                { port: s.adminRpcPort, protocol: "tcp", exposure: LOCAL, purpose: "storage admin RPC" },
                { port: s.grpcPort, protocol: "tcp", exposure: LOCAL, purpose: "storage gRPC" },
            ];
        }
        case "sequencer": {
            const s = node.sequencer;
            const rpc: Exposure = s.rpcAllowedCidrs.length > 0 ? { kind: "restricted", cidrs: s.rpcAllowedCidrs } : LOCAL;
            return [
                ...both(AZTEC_PORTS.p2p, PUBLIC, "sequencer p2p"),
                { port: AZTEC_PORTS.rpc, protocol: "tcp", exposure: rpc, purpose: "sequencer JSON-RPC" },
                { port: AZTEC_PORTS.admin, protocol: "tcp", exposure: LOCAL, purpose: "sequencer admin" },
            ];
        }
        case "validator": {
            const p = node.validator.portPrefix;
            const at = (suffix: number) => prefixed(p, suffix);
            const x = VALIDATOR_SUFFIXES;
            const metrics = validatorMetricsPorts(p);
            return [
                ...both(at(x.elP2p), PUBLIC, "execution p2p"),
                { port: at(x.cometP2p), protocol: "tcp", exposure: PUBLIC, purpose: "CometBFT p2p" },
                { port: at(x.elHttp), protocol: "tcp", exposure: LOCAL, purpose: "execution HTTP RPC" },
                { port: at(x.elWs), protocol: "tcp", exposure: LOCAL, purpose: "execution WebSocket RPC" },
                { port: at(x.engine), protocol: "tcp", exposure: LOCAL, purpose: "engine API (authrpc)" },
                { port: at(x.cometRpc), protocol: "tcp", exposure: LOCAL, purpose: "CometBFT RPC" },
                { port: at(x.proxyApp), protocol: "tcp", exposure: LOCAL, purpose: "CometBFT proxy_app" },
                // Bound only when the fleet is monitored; then opened to the monitoring host alone (monitoringRules).
                { port: metrics.consensus, protocol: "tcp", exposure: LOCAL, purpose: "CometBFT prometheus metrics" },
                { port: metrics.execution, protocol: "tcp", exposure: LOCAL, purpose: "execution client metrics" },
            ];
        }
        default:
            return assertNever(node);
    }
}

/** A rule that lets traffic in. `sources` are CIDRs; "world" means 0.0.0.0/0 and ::/0. */
export interface IngressRule {
    readonly port: number;
    readonly protocol: Protocol;
    readonly sources: "world" | readonly string[];
    readonly description: string;
}

/** SSH port as seen from the firewall in front of the host (inside the host for nftables). */
export function sshdPort(host: HostSpec): number {
    return host.kind === "existing" ? host.sshdPort : 22;
}

/** A validator's metrics ports, served when the fleet is monitored: CometBFT's and the execution client's. */
export function validatorMetricsPorts(prefix: number): { consensus: number; execution: number } {
    return { consensus: prefixed(prefix, VALIDATOR_SUFFIXES.prometheus), execution: prefixed(prefix, VALIDATOR_SUFFIXES.elMetrics) };
}

/**
 * The monitoring ports a host opens: node_exporter's and its validators' metrics ports to the
 * monitoring host's address alone; on the monitoring host, Prometheus's and Alertmanager's web
 * ports to `webAllowedCidrs` when they listen on more than loopback (checkMonitoring: never the world).
 */
export function monitoringRules(m: HostMonitoring | undefined, nodes: readonly NodeSpec[] = []): IngressRule[] {
    if (m === undefined) return [];
    const source = [`${m.monitoringSource}/32`];
    const rules: IngressRule[] = [{ port: m.spec.nodeExporterPort, protocol: "tcp", sources: source, description: "node_exporter, for the monitoring host" }];
    for (const node of nodes) {
        if (node.role !== "validator") continue;
        const ports = validatorMetricsPorts(node.validator.portPrefix);
        rules.push(
            { port: ports.consensus, protocol: "tcp", sources: source, description: `${node.name} CometBFT metrics, for the monitoring host` },
            { port: ports.execution, protocol: "tcp", sources: source, description: `${node.name} execution client metrics, for the monitoring host` },
        );
    }
    if (m.isMonitoringHost && m.spec.webAllowedCidrs.length > 0) {
        rules.push(
            { port: m.spec.prometheusPort, protocol: "tcp", sources: m.spec.webAllowedCidrs, description: "Prometheus web UI and API" },
            { port: m.spec.alertmanagerPort, protocol: "tcp", sources: m.spec.webAllowedCidrs, description: "Alertmanager web UI and API" },
        );
    }
    return rules;
}

/**
 * Ingress rules for one host: SSH from the admin CIDRs, then every non-local port
 * of every node on it, then the monitoring ports. Local ports never appear, whatever the config says.
 */
export function ingressRules(host: HostSpec, nodes: readonly NodeSpec[], monitoring?: HostMonitoring): IngressRule[] {
    const rules: IngressRule[] = [{ port: sshdPort(host), protocol: "tcp", sources: host.adminCidrs, description: "SSH from admin CIDRs" }];
    for (const node of nodes) {
        for (const p of rolePorts(node)) {
            switch (p.exposure.kind) {
                case "local":
                    break;
                case "public":
                    rules.push({ port: p.port, protocol: p.protocol, sources: "world", description: `${node.name} ${p.purpose}` });
                    break;
                case "restricted":
                    rules.push({ port: p.port, protocol: p.protocol, sources: p.exposure.cidrs, description: `${node.name} ${p.purpose}` });
                    break;
                default:
                    assertNever(p.exposure);
            }
        }
    }
    return [...rules, ...monitoringRules(monitoring, nodes)];
}

export const WORLD_CIDRS = ["0.0.0.0/0", "::/0"] as const;

export function sourceCidrs(rule: IngressRule): readonly string[] {
    return rule.sources === "world" ? WORLD_CIDRS : rule.sources;
}

/**
 * Every port a host's services listen on (its nodes', and the monitoring stack's when it has one),
 * ascending, once each: the ports its bootstrap keeps out of the kernel's ephemeral range
 * (docs/hosts.md, "Listening ports and the ephemeral range").
 */
export function listeningPorts(nodes: readonly NodeSpec[], monitoring?: HostMonitoring): number[] {
    const ports = new Set(nodes.flatMap((node) => rolePorts(node).map((p) => p.port)));
    for (const rule of monitoringRules(monitoring, nodes)) ports.add(rule.port);
    if (monitoring?.isMonitoringHost) for (const p of [monitoring.spec.prometheusPort, monitoring.spec.alertmanagerPort]) ports.add(p);
    return [...ports].sort((a, b) => a - b);
}
