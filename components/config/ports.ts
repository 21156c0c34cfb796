// The one port table every firewall is built from (AWS security groups, Hetzner
// firewalls, nftables), from each role's ports (its contract, components/roles/<role>/contract.ts).
import type { HostMonitoring } from "./monitoring";
import type { HostSpec, NodeSpec } from "./schema";
import { assertNever } from "../base/never";
import type { PortSpec, Protocol } from "../roles/contract";
import { contractOf } from "../roles/registry";

/** Every port a node binds, with how far it may be reached: its role's port table. */
export function rolePorts(node: NodeSpec): PortSpec[] {
    return contractOf(node).ports(node);
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

/**
 * The monitoring ports a host opens: node_exporter's and its validators' metrics ports to the
 * monitoring host's address alone; on the monitoring host, Prometheus's and Alertmanager's web
 * ports to `webAllowedCidrs` when they listen on more than loopback (checkMonitoring: never the world).
 */
export function monitoringRules(m: HostMonitoring | undefined, nodes: readonly NodeSpec[] = []): IngressRule[] {
    if (m === undefined) return [];
    const source = [`${m.monitoringSource}/32`];
    const rules: IngressRule[] = [
        { port: m.spec.nodeExporterPort, protocol: "tcp", sources: source, description: "node_exporter, for the monitoring host" },
    ];
    for (const node of nodes) {
        const ports = contractOf(node).chainMetrics?.(node);
        if (ports === undefined) continue;
        rules.push(
            {
                port: ports.consensus,
                protocol: "tcp",
                sources: source,
                description: `${node.name} CometBFT metrics, for the monitoring host`,
            },
            {
                port: ports.execution,
                protocol: "tcp",
                sources: source,
                description: `${node.name} execution client metrics, for the monitoring host`,
            },
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
