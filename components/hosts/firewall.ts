// Host firewall for existing servers: an nftables table rendered from the port table,
// checked with `nft -c` and applied atomically, with a timed revert so a bad ruleset
// cannot lock the operator out (commit-confirm, like network gear).
import * as net from "node:net";
import { IngressRule, sourceCidrs } from "../config/ports";
import { nftString, render } from "../base/render";

export const FIREWALL_DIR = "/etc/nodefleet/firewall";
export const RULESET_PATH = `${FIREWALL_DIR}/nodefleet.nft`;
export const PENDING_PATH = `${FIREWALL_DIR}/nodefleet.nft.pending`;
export const REVERT_UNIT = "nodefleet-firewall-revert";
/** Seconds a new ruleset stays on probation before it reverts by itself. */
export const REVERT_AFTER_SECONDS = 120;

/** nft rule lines for one ingress rule: one per address family it names. */
export function nftRuleLines(rule: IngressRule): string[] {
    const match = `${rule.protocol} dport ${rule.port}`;
    const comment = `comment ${nftString(rule.description)}`;
    if (rule.sources === "world") return [`${match} accept ${comment}`];
    const cidrs = sourceCidrs(rule);
    const v4 = cidrs.filter((c) => net.isIPv4(c.split("/")[0]));
    const v6 = cidrs.filter((c) => net.isIPv6(c.split("/")[0]));
    const lines: string[] = [];
    if (v4.length) lines.push(`ip saddr { ${v4.join(", ")} } ${match} accept ${comment}`);
    if (v6.length) lines.push(`ip6 saddr { ${v6.join(", ")} } ${match} accept ${comment}`);
    return lines;
}

export function renderNftRuleset(hostName: string, rules: readonly IngressRule[]): string {
    return render("nftables.nft", { host: hostName, rules: rules.flatMap(nftRuleLines) });
}

export function renderFirewallUnit(): string {
    return render("nodefleet-firewall.service", { rulesetPath: RULESET_PATH });
}
