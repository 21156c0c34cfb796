import type { IngressRule } from "../config/ports";

/** Stable, unique resource name for one (rule, source CIDR) pair. */
export function ruleResourceName(hostResource: string, rule: IngressRule, cidr: string): string {
    return `${hostResource}-in-${rule.protocol}-${rule.port}-${cidr.replace(/[^0-9a-fA-F]+/g, "-").replace(/-+$/, "")}`;
}
