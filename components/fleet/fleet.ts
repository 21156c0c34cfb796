// The fleet: one host component per configured host, built from validated config.
import * as pulumi from "@pulumi/pulumi";
import { type FleetPlan } from "../config/fleet";
import { type HostPlan } from "../config/plan";
import { readKeyFile } from "../config/files";
import type { HostSpec } from "../config/schema";
import { assertNever } from "../base/never";
import { Host } from "../hosts/host";
import type * as awsHosts from "../hosts/aws";
import type * as hetznerHosts from "../hosts/hetzner";
import { ExistingHost } from "../hosts/existing";
import { ValidatorMoves } from "../roles/validator/moves";
import { buildNode } from "../roles/nodes";
import { contractOf } from "../roles/registry";
import { dropResourceStackTraces, trimSdkCosts, withoutPromiseTraces } from "./sdk";
import { DriftCheckProvider } from "../hosts/drift";
import { receiverSecrets } from "../config/monitoring";
import { MonitoringAgent, MonitoringServer, watchedMounts } from "../monitoring/install";
import { scrapedValidators, type ScrapeHost } from "../monitoring/config";
import { GateSchedule, plannedRollout, type PlannedRollout } from "../rollout/schedule";
import { checkUpgradeHeights } from "../rollout/upgrade-height";

export interface FleetArgs {
    /** The parsed, validated fleet (see loadFleet). */
    readonly plan: FleetPlan;
    /** Looks up a secret config key as a secret Output. */
    readonly secret: (key: string) => pulumi.Output<string>;
    /**
     * Per validator, the host it ran on after the last `up` (the stack output `validatorHosts`, see
     * `previousValidatorHosts`); none on a first `up`.
     */
    readonly previousValidatorHosts?: Readonly<Record<string, string>>;
}

export interface HostSummary {
    readonly kind: string;
    readonly publicAddress: pulumi.Output<string>;
    readonly nodes: string[];
    /** The key nodefleet learned for the host at its first boot (none where the config pins it). */
    readonly hostKey?: pulumi.Output<string>;
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
    /** Per validator: the host it runs on (a stack output; the next run reads it to see a move). */
    readonly validatorHosts: Record<string, string> = {};
    /** Per existing host with `firstBoot: cloud-init`: the user-data to boot it with (a secret). */
    readonly firstBootUserData: Record<string, pulumi.Output<string>> = {};
    /** Validators moving host this run, and their handovers once the hosts they leave are built. */
    private readonly moves: ValidatorMoves;
    /** The provider of the hosts' drift checks (configured with nothing; made with the first host). */
    private driftProvider?: pulumi.ProviderResource;
    /** The hcloud provider of the Hetzner hosts (one, made with the first). */
    private hcloud?: pulumi.ProviderResource;
    /** The monitoring host's agent (its server's steps follow the agent's step). */
    private monitoringAgent?: MonitoringAgent;
    /** Gated nodes (the config's `rollout`): what each waits for, its policy, and its own gate once made. */
    private readonly gates: GateSchedule;

    static async build(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions): Promise<Fleet> {
        dropResourceStackTraces();
        trimSdkCosts();
        const moves = new ValidatorMoves(args.plan, args.previousValidatorHosts ?? {});
        const rollout = await plannedRollout(args.plan);
        // Refused before anything is registered, so nothing of a refused plan is half made.
        const upgrades = await checkUpgradeHeights(args.plan);
        if (upgrades.refused.length > 0) throw new pulumi.RunError(upgrades.refused.join("\n"));
        const fleet = new Fleet(name, moves, rollout, opts);
        for (const line of upgrades.lines) pulumi.log.info(line, fleet);
        for (const host of args.plan.hosts)
            for (const node of host.nodes) if (contractOf(node).movable) fleet.validatorHosts[node.name] = node.host;
        for (const plan of args.plan.hosts) {
            withoutPromiseTraces(() => fleet.addHost(name, plan, args));
            await new Promise((resolve) => setImmediate(resolve));
        }
        withoutPromiseTraces(() => fleet.addMonitoringServer(name, args));
        const firstBoot = Object.keys(fleet.firstBootUserData).length > 0 ? { firstBootUserData: fleet.firstBootUserData } : {};
        fleet.registerOutputs({
            summary: fleet.summary,
            health: fleet.health,
            registration: fleet.registration,
            validatorSwitch: fleet.validatorSwitch,
            validatorHosts: fleet.validatorHosts,
            ...firstBoot,
        });
        return fleet;
    }

    private constructor(name: string, moves: ValidatorMoves, rollout: PlannedRollout | undefined, opts?: pulumi.ComponentResourceOptions) {
        super("nodefleet:fleet:Fleet", name, {}, opts);
        this.moves = moves;
        this.gates = new GateSchedule(rollout, this);
    }

    /** One host and the nodes on it. */
    private addHost(name: string, plan: HostPlan, args: FleetArgs): void {
        const host = this.buildHost(`${name}-${plan.name}`, plan, args);
        this.hosts[plan.name] = host;
        if (host instanceof ExistingHost && host.firstBootUserData !== undefined)
            this.firstBootUserData[plan.name] = host.firstBootUserData;
        this.moves.leaving(host, args.plan.spec.nodes, { prefix: name, user: sshUser(plan.spec), parent: this });
        this.summary[plan.name] = {
            kind: plan.spec.kind,
            publicAddress: host.publicAddress,
            nodes: plan.nodes.map((n) => n.name),
            ...(host.learnedHostKey ? { hostKey: host.learnedHostKey } : {}),
        };
        const user = sshUser(plan.spec);
        const site = { plan, host, user, secret: args.secret, releases: args.plan.spec.releases, moves: this.moves };
        for (const node of plan.nodes) {
            const gated = this.gates.node(node.name);
            const role = buildNode(`${name}-${node.name}`, node, { ...site, rollout: gated.rollout }, { parent: this });
            gated.made(role.gate?.step);
            this.health[node.name] = role.health;
            if (role.registration !== undefined) this.registration[node.name] = role.registration;
            if (role.switchReport !== undefined) this.validatorSwitch[node.name] = role.switchReport;
        }
        if (plan.monitoring !== undefined) {
            const agent = new MonitoringAgent(
                `${name}-${plan.name}-monitoring-agent`,
                { plan, monitoring: plan.monitoring.spec, host, user },
                { parent: this },
            );
            // The monitoring host's bundle stays open for the server's step, made once every host is.
            if (plan.monitoring.isMonitoringHost) {
                this.monitoringAgent = agent;
                return;
            }
        }
        // Every step of the host has put its script in the bundle: its copy step can be made.
        host.tools.seal();
    }

    /** Prometheus and Alertmanager on the monitoring host, scraping every host: after all hosts are built. */
    private addMonitoringServer(name: string, args: FleetArgs): void {
        const m = args.plan.spec.monitoring;
        if (m === undefined) return;
        const plan = args.plan.hosts.find((h) => h.name === m.host);
        const host = this.hosts[m.host];
        if (plan === undefined || host === undefined || this.monitoringAgent === undefined)
            throw new Error(`unreachable: the monitoring host ${m.host} was checked by parseFleet`);
        const targets = pulumi.all(
            args.plan.hosts.map((h) =>
                pulumi
                    .all([h.name, h.monitoring?.scrapeAddress ?? this.hosts[h.name]!.publicAddress])
                    .apply(([n, address]): ScrapeHost => ({ host: n, address, validators: scrapedValidators(h.nodes) })),
            ),
        );
        const secrets = pulumi.all(Object.fromEntries(receiverSecrets(m).map((r) => [r.key, args.secret(r.key)])));
        new MonitoringServer(
            `${name}-${m.host}-monitoring`,
            {
                host,
                user: sshUser(plan.spec),
                monitoring: m,
                secrets,
                targets,
                after: this.monitoringAgent,
                ctx: {
                    stack: pulumi.getStack(),
                    healthIntervalSeconds: m.healthIntervalSeconds,
                    mounts: watchedMounts(Object.values(this.hosts)),
                    alertFor: m.alertFor,
                },
            },
            { parent: this },
        );
        host.tools.seal();
    }

    private buildHost(name: string, plan: HostPlan, args: FleetArgs): Host {
        this.driftProvider ??= new DriftCheckProvider("drift", { parent: this });
        const opts = { parent: this, providers: [this.driftProvider] };
        const spec = plan.spec;
        const privateKey = sshPrivateKey(spec, args.secret);
        // A cloud's provider SDK is loaded by the first host of that cloud: @pulumi/aws alone costs
        // every run of a fleet without AWS hosts about 0.14 CPU-s (docs/development.md: where a run's CPU went).
        switch (spec.kind) {
            case "aws": {
                const { AwsHost } = require("../hosts/aws") as typeof awsHosts;
                return new AwsHost(name, { plan: { ...plan, spec }, privateKey, secret: args.secret }, opts);
            }
            case "hetzner": {
                const { HetznerHost, hetznerProvider } = require("../hosts/hetzner") as typeof hetznerHosts;
                this.hcloud ??= hetznerProvider(this);
                return new HetznerHost(
                    name,
                    { plan: { ...plan, spec }, privateKey, secret: args.secret },
                    { ...opts, providers: [this.driftProvider, this.hcloud] },
                );
            }
            case "existing":
                return new ExistingHost(
                    name,
                    { plan: { ...plan, spec }, privateKey, hardwareCheck: args.plan.spec.hardwareCheck, secret: args.secret },
                    opts,
                );
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

/**
 * Per validator, the host it ran on after the last `up`: this stack's own output
 * `validatorHosts`, read through a stack reference (empty on the first `up`).
 */
export async function previousValidatorHosts(): Promise<Record<string, string>> {
    const self = new pulumi.StackReference(`${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`);
    const out = await self.getOutputDetails("validatorHosts");
    const value = out.value as unknown;
    if (value === undefined || value === null) return {};
    if (typeof value !== "object" || Array.isArray(value) || Object.values(value).some((h) => typeof h !== "string")) {
        throw new pulumi.RunError(
            "the stack output validatorHosts is not a map of node to host name: nodefleet cannot tell whether a validator moved",
        );
    }
    return value as Record<string, string>;
}
