// The fleet: one host component per configured host, built from validated config.
import * as pulumi from "@pulumi/pulumi";
import { readKeyFile, type FleetPlan, type HostPlan } from "./config/fleet";
import type { HostSpec } from "./config/schema";
import { assertNever } from "./ports";
import { Host } from "./hosts/host";
import { AwsHost } from "./hosts/aws";
import { HetznerHost } from "./hosts/hetzner";
import { ExistingHost } from "./hosts/existing";
import { StorageNode } from "./roles/storage";
import { SequencerNode } from "./roles/sequencer";
import { ValidatorNode } from "./roles/validator";
import { withoutPromiseTraces } from "./sdk";

export interface FleetArgs {
    /** The parsed, validated fleet (see loadFleet). */
    readonly plan: FleetPlan;
    /** Looks up a secret config key as a secret Output. */
    readonly secret: (key: string) => pulumi.Output<string>;
}

export interface HostSummary {
    readonly kind: string;
    readonly publicAddress: pulumi.Output<string>;
    readonly nodes: string[];
}

/**
 * The fleet component. Built with `Fleet.build`, host by host: the SDK keeps a few hundred
 * promises and closures per resource until the event loop runs, so a fleet built in one
 * synchronous pass holds every host's at once (2.2 GB at 1000 nodes, measured by
 * `scripts/bench.sh scale`); yielding after each host lets that host's registrations settle first.
 * Each host is built without the SDK's per-promise stack traces (see sdk.ts).
 */
export class Fleet extends pulumi.ComponentResource {
    readonly hosts: Record<string, Host> = {};
    readonly summary: Record<string, HostSummary> = {};
    /** Per node: its health report from the last deploy (roles that have one). */
    readonly health: Record<string, pulumi.Output<Record<string, unknown>>> = {};
    /** Per sequencer: what its validator registration step found and did. */
    readonly registration: Record<string, pulumi.Output<Record<string, unknown>>> = {};
    /** Per validator with a switch configured: the switch's report (migrate, rollback or cleanup). */
    readonly validatorSwitch: Record<string, pulumi.Output<Record<string, unknown>>> = {};

    static async build(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions): Promise<Fleet> {
        const fleet = new Fleet(name, opts);
        for (const plan of args.plan.hosts) {
            withoutPromiseTraces(() => fleet.addHost(name, plan, args));
            await new Promise((resolve) => setImmediate(resolve));
        }
        fleet.registerOutputs({ summary: fleet.summary, health: fleet.health, registration: fleet.registration, validatorSwitch: fleet.validatorSwitch });
        return fleet;
    }

    private constructor(name: string, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:fleet:Fleet", name, {}, opts);
    }

    /** One host and the nodes on it. */
    private addHost(name: string, plan: HostPlan, args: FleetArgs): void {
        const host = this.buildHost(`${name}-${plan.name}`, plan, args);
        this.hosts[plan.name] = host;
        this.summary[plan.name] = { kind: plan.spec.kind, publicAddress: host.publicAddress, nodes: plan.nodes.map((n) => n.name) };
        const user = sshUser(plan.spec);
        for (const node of plan.nodes) {
            const roleName = `${name}-${node.name}`;
            switch (node.role) {
                case "storage": {
                    const role = new StorageNode(roleName, { node, host, user, minerKey: args.secret(node.storage.minerKeySecret) }, { parent: this });
                    this.health[node.name] = role.health;
                    break;
                }
                case "sequencer": {
                    const role = new SequencerNode(roleName, { node, host, user, validatorKey: args.secret(node.sequencer.validatorPrivateKeySecret) }, { parent: this });
                    this.health[node.name] = role.health;
                    this.registration[node.name] = role.registration;
                    break;
                }
                case "validator": {
                    const role = new ValidatorNode(roleName, { node, host, user, validatorKey: args.secret(node.validator.validatorKeySecret) }, { parent: this });
                    this.health[node.name] = role.health;
                    if (role.switchReport !== undefined) this.validatorSwitch[node.name] = role.switchReport;
                    break;
                }
                default:
                    assertNever(node);
            }
        }
    }

    private buildHost(name: string, plan: HostPlan, args: FleetArgs): Host {
        const opts = { parent: this };
        const spec = plan.spec;
        const privateKey = sshPrivateKey(spec, args.secret);
        switch (spec.kind) {
            case "aws":
                return new AwsHost(name, { plan: { ...plan, spec }, privateKey }, opts);
            case "hetzner":
                return new HetznerHost(name, { plan: { ...plan, spec }, privateKey }, opts);
            case "existing":
                return new ExistingHost(name, { plan: { ...plan, spec }, privateKey, hardwareCheck: args.plan.spec.hardwareCheck }, opts);
            default:
                return assertNever(spec);
        }
    }
}

/** The host's SSH key as a secret Output, from its config key or (existing hosts) its key file. */
function sshPrivateKey(spec: HostSpec, secret: FleetArgs["secret"]): pulumi.Output<string> {
    if (spec.sshPrivateKeySecret !== undefined) return secret(spec.sshPrivateKeySecret);
    const file = spec.kind === "existing" ? spec.sshPrivateKeyFile : undefined;
    if (file === undefined) throw new Error("unreachable: parseFleet requires an SSH key for every host");
    const read = readKeyFile(file);
    if ("reason" in read) throw new pulumi.RunError(`sshPrivateKeyFile: ${read.reason}`);
    return pulumi.secret(read.key);
}

/** The user nodefleet logs in as on a host. */
function sshUser(spec: HostSpec): string {
    return spec.kind === "existing" ? spec.user : spec.sshUser;
}
