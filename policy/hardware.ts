// The policy pack's hardware rule: each host against the summed targets of the roles it runs (their
// contracts, components/roles/<role>/contract.ts), from its machine type and volumes in the plan, or
// from the preflight script an existing host runs.
import { ROLES } from "../components/roles/registry";
import type { Target } from "../components/roles/contract";
import { AWS_INSTANCE_TYPES, compareToTarget, HETZNER_SERVER_TYPES } from "../components/config/hardware";
import { COMMAND, str, type Planned, type RuleConfig, type Violation } from "./rules";

/** Each role's contract (its name and hardware target), by the Pulumi type of its component. */
const ROLE_TYPES: ReadonlyMap<string, RoleTarget> = new Map(ROLES.map((r) => [r.componentType, r]));

interface RoleTarget {
    readonly role: string;
    readonly baseTarget: Target;
}

/** The host component each role component runs on: its steps depend on the host's steps. */
function nodesByHost(rs: readonly Planned[], children: ReadonlyMap<string, readonly Planned[]>): Map<string, RoleTarget[]> {
    const byUrn = new Map(rs.map((r) => [r.urn, r]));
    const out = new Map<string, RoleTarget[]>();
    for (const role of rs.filter((r) => ROLE_TYPES.has(r.type))) {
        const hosts = new Set<string>();
        for (const child of children.get(role.urn) ?? []) {
            for (const d of child.dependencies) {
                const parent = byUrn.get(d)?.parent;
                if (parent && byUrn.get(parent)?.type.startsWith("nodefleet:host:")) hosts.add(parent);
            }
        }
        for (const h of hosts) out.set(h, [...(out.get(h) ?? []), ROLE_TYPES.get(role.type)!]);
    }
    return out;
}

function sumTargets(roles: readonly RoleTarget[]): Target {
    const ts = roles.map((r) => r.baseTarget);
    const sum = (f: (t: Target) => number) => ts.reduce((a, t) => a + f(t), 0);
    return {
        cores: sum((t) => t.cores),
        memoryGb: sum((t) => t.memoryGb),
        diskGb: sum((t) => t.diskGb),
        ssd: ts.some((t) => t.ssd),
        defaultDiskGb: sum((t) => t.defaultDiskGb),
    };
}

/** Rule: every host meets the summed docs/spec.md §8 targets of the nodes on it. */
export function hardwareBelowTarget(rs: readonly Planned[], cfg: RuleConfig): Violation[] {
    const out: Violation[] = [];
    // Indexed once: a fleet of a thousand hosts would otherwise scan the stack per host.
    const childrenOf = new Map<string, Planned[]>();
    for (const r of rs) {
        if (r.parent === undefined) continue;
        const list = childrenOf.get(r.parent);
        if (list) list.push(r);
        else childrenOf.set(r.parent, [r]);
    }
    const names = new Map(rs.map((r) => [r.urn, r.name]));
    for (const [hostUrn, roles] of nodesByHost(rs, childrenOf)) {
        const target = sumTargets(roles);
        const children = childrenOf.get(hostUrn) ?? [];
        const hostName = names.get(hostUrn) ?? hostUrn;
        const report = (r: Planned, problems: string[]) =>
            problems.forEach((m) => out.push({ urn: r.urn, message: `${hostName} (${roles.map((role) => role.role).join(" + ")}): ${m}` }));
        const volumeGb = (type: string) => children.filter((c) => c.type === type).reduce((a, c) => a + Number(c.props.size ?? 0), 0);
        for (const c of children) {
            if (c.type === "aws:ec2/instance:Instance" || c.type === "hcloud:index/server:Server") {
                const aws = c.type === "aws:ec2/instance:Instance";
                const kind = str(aws ? c.props.instanceType : c.props.serverType) ?? "";
                const machine = (aws ? AWS_INSTANCE_TYPES : HETZNER_SERVER_TYPES)[kind];
                if (!machine) {
                    report(c, [
                        `${aws ? "instance" : "server"} type ${kind || "(unknown)"} is not in nodefleet's catalog: its size cannot be checked`,
                    ]);
                    continue;
                }
                const diskGb = volumeGb(aws ? "aws:ebs/volume:Volume" : "hcloud:index/volume:Volume");
                report(
                    c,
                    compareToTarget(
                        { cores: machine.vcpus, memoryGb: machine.memoryGb, diskGb, ssd: true, arch: machine.arch },
                        target,
                    ).map((f) => f.message),
                );
            }
            if (c.type === COMMAND && /-preflight$/.test(c.name)) {
                const script = str(c.props.stdin) ?? "";
                const want = (k: string) => Number(new RegExp(`^want_${k}=(\\d+)$`, "m").exec(script)?.[1] ?? NaN);
                const problems: string[] = [];
                const have = { cores: want("cores"), memoryGb: want("mem_gb"), diskGb: want("disk_gb") };
                if (Object.values(have).some(Number.isNaN)) problems.push("the preflight script names no hardware target");
                if (have.cores < target.cores)
                    problems.push(`the preflight checks for ${have.cores} cores, the nodes need ${target.cores}`);
                if (have.memoryGb < target.memoryGb)
                    problems.push(`the preflight checks for ${have.memoryGb} GB memory, the nodes need ${target.memoryGb}`);
                if (have.diskGb < target.diskGb)
                    problems.push(`the preflight checks for ${have.diskGb} GB disk, the nodes need ${target.diskGb}`);
                if (cfg.requireEnforcedHardwareCheck && /^mode='?warn'?$/m.test(script))
                    problems.push("hardwareCheck is warn: a host below target would be used (set hardwareCheck: enforce)");
                report(c, problems);
            }
        }
    }
    return out;
}
