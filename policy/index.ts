// nodefleet's policy pack: the safety rules of policy/rules.ts as stack policies, run by
// `pulumi preview --policy-pack policy` (and `up`). Each stack's enforcement comes from its
// policy config file (policy/config/<stack>.json): advisory in dev, mandatory in staging and prod.
import { PolicyPack, type PolicyResource, type ResourceValidationPolicy, type StackValidationPolicy } from "@pulumi/policy";
import * as path from "node:path";
import { bundledScriptReader, runnerDigest } from "../components/hosts/tools";
import * as rules from "./rules";
import { hardwareBelowTarget } from "./hardware";

/** Props, where a value the engine does not know yet reads as undefined. */
function known(props: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(props)) {
        try {
            out[key] = JSON.parse(JSON.stringify(props[key]));
        } catch {
            // unknown during preview; a connection is read field by field (a new host's address and pin)
            out[key] = key === "connection" ? knownConnection(props, key) : undefined;
        }
    }
    return out;
}

/**
 * A connection some of whose fields are unknown during preview (a new cloud host's address, and the
 * host key nodefleet makes for it): the known fields, and a host key that is set but not known yet
 * as rules.UNKNOWN_PIN, so that `unpinned-host-key` tells a pin made during the run from none.
 */
function knownConnection(props: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
    let conn: unknown;
    try {
        conn = props[key];
    } catch {
        return undefined; // the whole connection unknown (a new cloud host's): judged when the run knows it
    }
    if (conn === null || typeof conn !== "object") return undefined;
    const out: Record<string, unknown> = {};
    for (const field of ["host", "port", "user", "hostKey"]) {
        try {
            const v = (conn as Record<string, unknown>)[field];
            if (v !== undefined) out[field] = JSON.parse(JSON.stringify(v));
        } catch {
            if (field === "hostKey") out[field] = rules.UNKNOWN_PIN;
        }
    }
    return out;
}

/**
 * The inputs of each command step, by URN, as the engine showed them to `stepInputs` this run. A
 * stack policy sees each resource's outputs, and nodefleet's command provider keeps a step's stdin
 * and connection among its outputs only when the step has a delete command (the rest of its state is
 * the engine's own copy of the inputs): the rules read the inputs. The engine shows every resource
 * the program registers to the resource policies before it runs the stack policies, in the same
 * process of the pack (one per preview or update).
 */
const commandInputs = new Map<string, Record<string, unknown>>();

/** The stack as the rules see it (`planned`), made for the first stack rule and kept for the others. */
let lastPlanned: { key: string; planned: rules.Planned[] } | undefined;

const stepInputs: ResourceValidationPolicy = {
    name: "step-inputs",
    description: "Reads each command step's inputs (its script and connection) for the stack rules; reports nothing itself.",
    enforcementLevel: "advisory",
    validateResource: (args) => {
        lastPlanned = undefined; // a run's resources are shown before its stack: what was planned before is stale
        if (args.type === "command:remote:Command") commandInputs.set(args.urn, known(args.props));
    },
};

/**
 * A step that runs a script of its host's bundle sends a runner naming the script's sha256
 * (components/hosts/tools.ts); the program wrote the bundle into the project before the engine asks
 * the pack, so the rules read the script from there, after the runner (a key step's runner sets the
 * step's secrets: its keys). One the bundles do not hold is left out (and `scripts-unread` refuses
 * it where a rule needs it), never read as the runner alone.
 */
const PROJECT = path.resolve(__dirname, "..");

/**
 * The bundled scripts read so far, by digest: each stack rule asks for the stack again, and a file
 * named by its content's digest reads the same every time (the program wrote the bundles before the
 * engine ran the stack policies).
 */
const bundledScripts = new Map<string, string | undefined>();
const readBundled = bundledScriptReader(PROJECT);

function withBundledScript(props: Record<string, unknown>): Record<string, unknown> {
    const digest = typeof props.stdin === "string" ? runnerDigest(props.stdin) : undefined;
    if (digest === undefined) return props;
    const { stdin: runner, ...rest } = props;
    if (!bundledScripts.has(digest)) bundledScripts.set(digest, readBundled(digest));
    const script = bundledScripts.get(digest);
    return script === undefined ? rest : { ...rest, stdin: `${runner as string}${script}` };
}

/**
 * The stack as the rules see it. A command step the program did not register this run is left out
 * when its script is not among its outputs: the engine shows the stack policies the resources an
 * update deletes too (after `up --refresh`), and one left in the stack untouched by `--target` or
 * `--exclude` cannot have its script read (docs/gitops.md). If the engine showed the resource
 * policies no step at all, every step is kept, unread, and `scripts-unread` refuses the run.
 */
function planned(resources: PolicyResource[]): rules.Planned[] {
    // The engine asks each stack rule in turn about the same stack: the view is made once (a run's
    // resource policies, which come first, drop it).
    const key = resources.map((r) => r.urn).join("\n");
    if (lastPlanned?.key !== key) lastPlanned = { key, planned: plan(resources) };
    return lastPlanned.planned;
}
function plan(resources: PolicyResource[]): rules.Planned[] {
    const showedInputs = commandInputs.size > 0;
    return resources
        .filter((r) => !showedInputs || r.type !== "command:remote:Command" || commandInputs.has(r.urn) || "stdin" in r.props)
        .map((r) => ({
            urn: r.urn,
            type: r.type,
            name: r.name,
            props: withBundledScript({ ...known(r.props), ...commandInputs.get(r.urn) }),
            parent: r.parent?.urn,
            dependencies: r.dependencies.map((d) => d.urn),
        }));
}

function stackRule(
    name: string,
    description: string,
    check: (rs: rules.Planned[], cfg: rules.RuleConfig) => rules.Violation[],
): StackValidationPolicy {
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
        stackRule("hardware-below-target", "Hosts meet the summed hardware targets of their nodes.", hardwareBelowTarget),
        stackRule("rpc-open-to-world", "No RPC, engine, consensus-RPC or admin port is open to 0.0.0.0/0 or ::/0.", (rs) =>
            rules.rpcOpenToWorld(rs),
        ),
        stackRule("ssh-open-to-world", "SSH is reachable from admin CIDRs only.", (rs) => rules.sshOpenToWorld(rs)),
        stackRule(
            "metrics-open-to-world",
            "No metrics or monitoring port (node_exporter, Prometheus, Alertmanager, CometBFT's) is open to 0.0.0.0/0 or ::/0.",
            (rs) => rules.metricsOpenToWorld(rs),
        ),
        stackRule("same-validator-key", "One validator key signs on one node only.", (rs) => rules.sameValidatorKey(rs)),
        stackRule("unpinned-host-key", "Every SSH connection pins the host key (when required: prod).", rules.unpinnedHostKey),
        stackRule("key-in-plain-text", "Key material reaches no resource input except the key steps' secret stdin.", (rs) =>
            rules.keyOutsideKeySteps(rs),
        ),
        stackRule("scripts-unread", "Every script the firewall, hardware and key rules read is there to read.", (rs) =>
            rules.scriptsUnread(rs),
        ),
        stepInputs,
        stackRule("migration-guard-order", "The switch deletes the geth datadir only after the backup and the export.", (rs) =>
            rules.migrationGuards(rs),
        ),
    ],
});
