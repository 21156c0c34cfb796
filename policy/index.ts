// nodefleet's policy pack: the safety rules of policy/rules.ts as stack policies, run by
// `pulumi preview --policy-pack policy` (and `up`). Each stack's enforcement comes from its
// policy config file (policy/config/<stack>.json): advisory in dev, mandatory in staging and prod.
import { PolicyPack, type PolicyResource, type StackValidationPolicy } from "@pulumi/policy";
import * as rules from "./rules";

/** A resource's props, where a value the engine does not know yet reads as undefined. */
function known(r: PolicyResource): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(r.props)) {
        try {
            out[key] = JSON.parse(JSON.stringify(r.props[key]));
        } catch {
            out[key] = undefined; // unknown during preview
        }
    }
    return out;
}

function planned(resources: PolicyResource[]): rules.Planned[] {
    return resources.map((r) => ({
        urn: r.urn,
        type: r.type,
        name: r.name,
        props: known(r),
        parent: r.parent?.urn,
        dependencies: r.dependencies.map((d) => d.urn),
    }));
}

function stackRule(name: string, description: string, check: (rs: rules.Planned[], cfg: rules.RuleConfig) => rules.Violation[]): StackValidationPolicy {
    return {
        name,
        description,
        enforcementLevel: "mandatory",
        configSchema: { properties: { requirePinnedHostKeys: { type: "boolean" }, requireEnforcedHardwareCheck: { type: "boolean" } } },
        validateStack: (args, reportViolation) => {
            for (const v of check(planned(args.resources), args.getConfig<rules.RuleConfig>())) reportViolation(v.message, v.urn);
        },
    };
}

new PolicyPack("nodefleet", {
    policies: [
        stackRule("hardware-below-target", "Hosts meet the summed hardware targets of their nodes.", rules.hardwareBelowTarget),
        stackRule("rpc-open-to-world", "No RPC, engine, consensus-RPC or admin port is open to 0.0.0.0/0 or ::/0.", (rs) => rules.rpcOpenToWorld(rs)),
        stackRule("ssh-open-to-world", "SSH is reachable from admin CIDRs only.", (rs) => rules.sshOpenToWorld(rs)),
        stackRule("same-validator-key", "One validator key signs on one node only.", (rs) => rules.sameValidatorKey(rs)),
        stackRule("unpinned-host-key", "Every SSH connection pins the host key (when required: prod).", rules.unpinnedHostKey),
        stackRule("key-in-plain-text", "Key material reaches no resource input except the key steps' secret stdin.", (rs) => rules.keyOutsideKeySteps(rs)),
        stackRule("migration-guard-order", "The switch deletes the geth datadir only after the backup and the export.", (rs) => rules.migrationGuards(rs)),
    ],
});
