// Hardware targets of hosts (the sum of their nodes' roles', docs/spec.md §8) and the catalogs of cloud machine types the
// check uses. Pure: no Pulumi resources.
import type { HostSpec, NodeSpec } from "./schema";
import type { Target } from "../roles/contract";
import { contractOf } from "../roles/registry";
import { assertNever } from "../base/never";

export function nodeTarget(node: NodeSpec): Target {
    return contractOf(node).target(node);
}

/** Nodes sharing a host share its cores, memory and disk: their targets add up. */
export function hostTarget(nodes: readonly NodeSpec[]): Target {
    const targets = nodes.map(nodeTarget);
    const sum = (f: (t: Target) => number) => targets.reduce((acc, t) => acc + f(t), 0);
    return {
        cores: sum((t) => t.cores),
        memoryGb: sum((t) => t.memoryGb),
        diskGb: sum((t) => t.diskGb),
        ssd: targets.some((t) => t.ssd),
        defaultDiskGb: sum((t) => t.defaultDiskGb),
    };
}

export interface MachineType {
    readonly vcpus: number;
    readonly memoryGb: number;
    readonly arch: "x86_64" | "arm64";
}

// vCPUs and memory (GiB) as the providers list them. Node releases are x86_64 only.
const aws = (vcpus: number, memoryGb: number, arch: MachineType["arch"] = "x86_64"): MachineType => ({ vcpus, memoryGb, arch });
function awsFamily(families: string[], arch: MachineType["arch"], sizes: Record<string, [number, number]>): Record<string, MachineType> {
    const out: Record<string, MachineType> = {};
    for (const f of families) for (const [size, [c, m]] of Object.entries(sizes)) out[`${f}.${size}`] = aws(c, m, arch);
    return out;
}
const GENERAL = {
    large: [2, 8],
    xlarge: [4, 16],
    "2xlarge": [8, 32],
    "4xlarge": [16, 64],
    "8xlarge": [32, 128],
    "12xlarge": [48, 192],
    "16xlarge": [64, 256],
} as Record<string, [number, number]>;
const COMPUTE = {
    large: [2, 4],
    xlarge: [4, 8],
    "2xlarge": [8, 16],
    "4xlarge": [16, 32],
    "8xlarge": [32, 64],
    "12xlarge": [48, 96],
    "16xlarge": [64, 128],
} as Record<string, [number, number]>;
const MEMORY = { large: [2, 16], xlarge: [4, 32], "2xlarge": [8, 64], "4xlarge": [16, 128], "8xlarge": [32, 256] } as Record<
    string,
    [number, number]
>;

export const AWS_INSTANCE_TYPES: Readonly<Record<string, MachineType>> = {
    "t3.medium": aws(2, 4),
    "t3.large": aws(2, 8),
    "t3.xlarge": aws(4, 16),
    "t3.2xlarge": aws(8, 32),
    ...awsFamily(["m5", "m6i", "m6a", "m7i", "m7a", "m6id", "m7i-flex"], "x86_64", GENERAL),
    ...awsFamily(["c5", "c6i", "c6a", "c7i", "c7a"], "x86_64", COMPUTE),
    ...awsFamily(["r5", "r6i", "r6a", "r7i", "r7a", "i4i"], "x86_64", MEMORY),
    ...awsFamily(["m6g", "m7g", "m8g"], "arm64", GENERAL),
    ...awsFamily(["c6g", "c7g"], "arm64", COMPUTE),
};

// Hetzner Cloud server types: vCPUs, memory GB, architecture (cax = Ampere arm64).
const hz = (vcpus: number, memoryGb: number, arch: MachineType["arch"] = "x86_64"): MachineType => ({ vcpus, memoryGb, arch });
export const HETZNER_SERVER_TYPES: Readonly<Record<string, MachineType>> = {
    cx22: hz(2, 4),
    cx32: hz(4, 8),
    cx42: hz(8, 16),
    cx52: hz(16, 32),
    cx23: hz(2, 4),
    cx33: hz(4, 8),
    cx43: hz(8, 16),
    cx53: hz(16, 32),
    cpx11: hz(2, 2),
    cpx21: hz(3, 4),
    cpx31: hz(4, 8),
    cpx41: hz(8, 16),
    cpx51: hz(16, 32),
    cpx22: hz(2, 4),
    cpx32: hz(4, 8),
    cpx42: hz(8, 16),
    cpx52: hz(12, 24),
    cpx62: hz(16, 32),
    ccx13: hz(2, 8),
    ccx23: hz(4, 16),
    ccx33: hz(8, 32),
    ccx43: hz(16, 64),
    ccx53: hz(32, 128),
    ccx63: hz(48, 192),
    cax11: hz(2, 4, "arm64"),
    cax21: hz(4, 8, "arm64"),
    cax31: hz(8, 16, "arm64"),
    cax41: hz(16, 32, "arm64"),
};

export interface HardwareFinding {
    readonly severity: "shortfall" | "unknown";
    readonly message: string;
}

/** Measured or catalogued facts about one host. */
export interface HostFacts {
    readonly cores: number;
    readonly memoryGb: number;
    readonly diskGb: number;
    readonly ssd: boolean;
    readonly arch: MachineType["arch"];
}

export function compareToTarget(facts: HostFacts, target: Target): HardwareFinding[] {
    const out: HardwareFinding[] = [];
    const short = (what: string, have: number, want: number, unit: string) =>
        out.push({ severity: "shortfall", message: `${what}: has ${have}${unit}, needs ${want}${unit} (short by ${want - have}${unit})` });
    if (facts.arch !== "x86_64") out.push({ severity: "shortfall", message: `architecture ${facts.arch}: node releases are x86_64 only` });
    if (facts.cores < target.cores) short("cores", facts.cores, target.cores, "");
    if (facts.memoryGb < target.memoryGb) short("memory", facts.memoryGb, target.memoryGb, " GB");
    if (facts.diskGb < target.diskGb) short("data disk", facts.diskGb, target.diskGb, " GB");
    if (target.ssd && !facts.ssd) out.push({ severity: "shortfall", message: "data disk: is not solid state, needs an SSD" });
    return out;
}

/**
 * Check a cloud host against the summed targets of its nodes, from the catalog.
 * Existing hosts are checked on the host itself (see preflight script).
 */
export function checkCloudHost(host: HostSpec, nodes: readonly NodeSpec[]): HardwareFinding[] {
    const target = hostTarget(nodes);
    switch (host.kind) {
        case "aws": {
            const type = AWS_INSTANCE_TYPES[host.instanceType];
            if (!type)
                return [
                    {
                        severity: "unknown",
                        message: `instance type ${host.instanceType} is not in the catalog (components/config/hardware.ts); add it with its vCPUs and memory`,
                    },
                ];
            const vol = host.dataVolume ?? { sizeGb: target.defaultDiskGb, type: "gp3" as const };
            return compareToTarget(
                {
                    cores: type.vcpus,
                    memoryGb: type.memoryGb,
                    arch: type.arch,
                    diskGb: vol.sizeGb,
                    ssd: vol.type === "gp3" || vol.type === "io2",
                },
                target,
            );
        }
        case "hetzner": {
            const type = HETZNER_SERVER_TYPES[host.serverType];
            if (!type)
                return [
                    {
                        severity: "unknown",
                        message: `server type ${host.serverType} is not in the catalog (components/config/hardware.ts); add it with its vCPUs and memory`,
                    },
                ];
            // Hetzner Cloud volumes are SSD-backed block storage.
            return compareToTarget(
                {
                    cores: type.vcpus,
                    memoryGb: type.memoryGb,
                    arch: type.arch,
                    diskGb: host.dataVolumeGb ?? target.defaultDiskGb,
                    ssd: true,
                },
                target,
            );
        }
        case "existing":
            return [];
        default:
            return assertNever(host);
    }
}

/** Size of the data volume a cloud host gets when its config names none. */
export function dataDiskGb(host: HostSpec, nodes: readonly NodeSpec[]): number {
    switch (host.kind) {
        case "aws":
            return host.dataVolume?.sizeGb ?? hostTarget(nodes).defaultDiskGb;
        case "hetzner":
            return host.dataVolumeGb ?? hostTarget(nodes).defaultDiskGb;
        case "existing":
            return hostTarget(nodes).diskGb;
        default:
            return assertNever(host);
    }
}
