// What a fleet config says about its machines: node and host names, which machine each host is,
// the ports each one binds, the rules of each role, and each host's plan and hardware.
import type { FleetSpec, HostSpec, NodeSpec } from "./schema";
import { contractOf, CONTRACTS } from "../roles/registry";
import type { HostPlan, ResolvedRelease } from "./plan";
import { addressKey } from "../base/cidr";
import { rolePorts, sshdPort } from "./ports";
import { checkCloudHost } from "./hardware";
import { hostMonitoring } from "./monitoring";

export function checkNames(spec: FleetSpec, issues: string[]): void {
    const first = new Map<string, number>();
    spec.nodes.forEach((node, i) => {
        const j = first.get(node.name);
        if (j === undefined) first.set(node.name, i);
        else issues.push(`nodes[${i}].name: duplicate node name "${node.name}" (also nodes[${j}])`);
    });
}

export function checkHostRefs(spec: FleetSpec, issues: string[], warnings: string[]): void {
    const known = Object.keys(spec.hosts);
    const used = new Set<string>();
    spec.nodes.forEach((node, i) => {
        if (!Object.hasOwn(spec.hosts, node.host))
            issues.push(`nodes[${i}].host: no host named "${node.host}" under hosts (known: ${known.join(", ") || "none"})`);
        used.add(node.host);
    });
    // A host with no node is kept (bootstrap and firewall only) with a warning: a validator that
    // just moved off it needs it configured for one more `up`, so its handover can run there.
    for (const name of known)
        if (!used.has(name))
            warnings.push(
                `hosts.${name}: no node runs on this host; remove it once nothing is handed over from it (a validator that moved off it), or add a node`,
            );
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

export function checkMachines(spec: FleetSpec, issues: string[]): void {
    const first = new Map<string, string>();
    for (const [name, host] of Object.entries(spec.hosts)) {
        const machine = machineOf(name, host);
        const other = first.get(machine);
        if (other === undefined) first.set(machine, name);
        else
            issues.push(
                `hosts.${name}.address: the same machine as hosts.${other} (same address and SSH port); one machine is one host, or their firewalls overwrite each other`,
            );
    }
}

export function checkPorts(spec: FleetSpec, issues: string[]): void {
    const byMachine = new Map<string, Map<string, string>>();
    spec.nodes.forEach((node, i) => {
        if (!Object.hasOwn(spec.hosts, node.host)) return;
        const host = spec.hosts[node.host]!;
        const machine = machineOf(node.host, host);
        let taken = byMachine.get(machine);
        if (!taken) {
            taken = new Map([
                [`${sshdPort(host)}/tcp`, `sshd`],
                ...monitoringPorts(spec, node.host).map((p) => [`${p.port}/tcp`, p.owner] as [string, string]),
            ]);
            byMachine.set(machine, taken);
        }
        for (const p of rolePorts(node)) {
            const key = `${p.port}/${p.protocol}`;
            const owner = taken.get(key);
            if (owner !== undefined)
                issues.push(`nodes[${i}]: port ${key} (${p.purpose}) is already used by ${owner} on host ${node.host}`);
            else taken.set(key, `nodes[${i}] (${p.purpose})`);
        }
    });
}

/** The monitoring ports a host binds: node_exporter's on every host, Prometheus's and Alertmanager's on the monitoring host. */
function monitoringPorts(spec: FleetSpec, host: string): { port: number; owner: string }[] {
    const m = spec.monitoring;
    if (m === undefined) return [];
    const ports = [{ port: m.nodeExporterPort, owner: "monitoring.nodeExporterPort" }];
    if (m.host === host)
        ports.push(
            { port: m.prometheusPort, owner: "monitoring.prometheusPort" },
            { port: m.alertmanagerPort, owner: "monitoring.alertmanagerPort" },
        );
    return ports;
}

/** Each role's rules (its contract's): the release it needs, the consensus daemon only a chain node's carries, its own. */
export function checkRoleRules(spec: FleetSpec, issues: string[], warnings: string[]): void {
    spec.nodes.forEach((node, i) => {
        const contract = contractOf(node);
        if (contract.releaseRequired !== undefined && node.release === undefined)
            issues.push(`nodes[${i}].release: required: ${contract.releaseRequired}`);
        if (!contract.consensusRelease && node.release !== undefined && spec.releases[node.release]?.consensus !== undefined) {
            issues.push(
                `releases.${node.release}.consensus: only a validator's release carries a consensus daemon, and ${node.role} nodes[${i}] installs this one`,
            );
        }
        issues.push(...contract.rules(node, `nodes[${i}]`));
    });
    for (const contract of CONTRACTS) {
        const nodes = spec.nodes.flatMap((node, i) => (node.role === contract.role ? [{ node, i }] : []));
        contract.fleetRules?.(nodes, spec.releases, issues, warnings);
    }
}

/** The releases a node's host installs: its own, and the one of an upgrade at a height, ahead. */
export function nodeReleases(node: NodeSpec): string[] {
    const upgrade = contractOf(node).upgrade?.(node);
    return [node.release, upgrade?.release].filter((r) => r !== undefined);
}

export function planHosts(spec: FleetSpec, releases: Map<string, ResolvedRelease>): HostPlan[] {
    return Object.entries(spec.hosts).map(([name, hostSpec]) => {
        const nodes = spec.nodes.filter((n) => n.host === name);
        const names = [...new Set(nodes.flatMap(nodeReleases))].sort();
        const monitoring = hostMonitoring(spec.monitoring, spec.hosts, name);
        return {
            name,
            spec: hostSpec,
            nodes,
            releases: names.flatMap((r) => (releases.has(r) ? [releases.get(r)!] : [])),
            ...(monitoring ? { monitoring } : {}),
            ...(spec.rollout !== undefined && nodes.length > 0 ? { gated: true as const } : {}),
        };
    });
}

export function checkHardware(spec: FleetSpec, hosts: readonly HostPlan[], issues: string[], warnings: string[]): void {
    for (const host of hosts) {
        const field = host.spec.kind === "aws" ? "instanceType" : "serverType";
        for (const f of checkCloudHost(host.spec, host.nodes)) {
            const line = `hosts.${host.name}.${field}: ${f.message}`;
            if (spec.hardwareCheck === "enforce") issues.push(line);
            else warnings.push(`${line} (hardwareCheck: warn)`);
        }
        if (host.spec.kind === "existing" && host.spec.hostKey !== undefined && host.spec.firstBoot !== undefined) {
            issues.push(
                `hosts.${host.name}.firstBoot: give hostKey (a server whose key you know) or firstBoot (a server booted with nodefleet's user-data), not both`,
            );
        } else if (host.spec.kind === "existing" && !host.spec.hostKey && host.spec.firstBoot === undefined) {
            warnings.push(`hosts.${host.name}.hostKey: not pinned; the first key the host presents is accepted`);
        }
    }
}
