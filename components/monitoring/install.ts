// The monitoring stack on the hosts, as remote steps: on every host of a monitored fleet the agent
// (Debian's prometheus-node-exporter and nodefleet's health timer); on the monitoring host Debian's
// prometheus and prometheus-alertmanager with nodefleet's config, and the targets they scrape. Each
// step records its files and units for the drift check, and a teardown step removes what it put on
// `pulumi destroy`, or when the fleet's monitoring section goes.
import * as pulumi from "@pulumi/pulumi";
import type { HostPlan } from "../config/plan";
import type { MonitoringSpec } from "../config/monitoring";
import { driftRecord } from "../hosts/drift";
import { movedUnder, remoteStep, type Host } from "../hosts/host";
import { heredocSafe, type SecretScript } from "../hosts/scripts";
import { HOST_LIB } from "../base/layout";
import { monitoringTools } from "../hosts/tools";

import { render } from "../base/render";
import { HEALTH_CHECKS_FILE, HEALTH_SERVICE, HEALTH_TIMER, NODE_EXPORTER_DROPIN, renderAgentFiles, TEXTFILE_DIR } from "./agent";
import {
    ALERTMANAGER_FILE,
    COMETBFT_TARGETS_FILE,
    CONFIG_DIR,
    EXECUTION_TARGETS_FILE,
    NODE_TARGETS_FILE,
    PROMETHEUS_FILE,
    renderAlertmanagerConfig,
    renderNodeTargets,
    renderPrometheusConfig,
    renderValidatorTargets,
    RULES_FILE,
    TARGETS_DIR,
    type ScrapeHost,
    type SecretValues,
} from "./config";
import { renderRules, type RuleContext } from "./rules";

export const AGENT_PACKAGE = "prometheus-node-exporter";
export const EXPORTER_SERVICE = "prometheus-node-exporter.service";
export const SERVER_PACKAGES = ["prometheus", "prometheus-alertmanager"] as const;
export const PROMETHEUS_SERVICE = "prometheus.service";
export const ALERTMANAGER_SERVICE = "prometheus-alertmanager.service";
export const PROMETHEUS_DROPIN = "/etc/systemd/system/prometheus.service.d/nodefleet.conf";
export const ALERTMANAGER_DROPIN = "/etc/systemd/system/prometheus-alertmanager.service.d/nodefleet.conf";
export const AGENT_DRIFT_GROUP = "monitoring.agent";
export const SERVER_DRIFT_GROUP = "monitoring.server";
export const TARGETS_DRIFT_GROUP = "monitoring.targets";
/** The health timer's textfile (agent.ts writes it there). */
const HEALTH_TEXTFILE = "nodefleet.prom";

export interface AgentScripts {
    readonly install: string;
    readonly remove: string;
}

/** The agent's install and removal scripts for one host. */
export function renderAgentScripts(plan: HostPlan, m: MonitoringSpec): AgentScripts {
    const files = renderAgentFiles(plan, m);
    const common = {
        host: plan.name,
        package: AGENT_PACKAGE,
        exporterService: EXPORTER_SERVICE,
        dropInPath: NODE_EXPORTER_DROPIN,
        healthService: HEALTH_SERVICE,
        healthTimer: HEALTH_TIMER,
        checksFile: HEALTH_CHECKS_FILE,
        textfileDir: TEXTFILE_DIR,
        driftRecord: driftRecord(AGENT_DRIFT_GROUP),
    };
    return {
        install: render("monitoring-agent.sh", {
            ...common,
            lib: HOST_LIB,
            tools: monitoringTools(),
            port: m.nodeExporterPort,
            interval: m.healthIntervalSeconds,
            dropIn: heredocSafe(files.dropIn, "NODEFLEET_EOF"),
            service: heredocSafe(files.service, "NODEFLEET_EOF"),
            timer: heredocSafe(files.timer, "NODEFLEET_EOF"),
            checks: heredocSafe(files.checks, "NODEFLEET_EOF"),
        }),
        remove: render("monitoring-agent-remove.sh", { ...common, textfile: HEALTH_TEXTFILE }),
    };
}

/** The drop-ins that run Debian's Prometheus and Alertmanager on nodefleet's config. */
export function renderServerDropIns(host: string, m: MonitoringSpec): { readonly prometheus: string; readonly alertmanager: string } {
    return {
        prometheus: render("prometheus.conf", {
            host,
            args: [
                `--config.file=${CONFIG_DIR}/${PROMETHEUS_FILE}`,
                `--web.listen-address=${m.listenAddress}:${m.prometheusPort}`,
                "--storage.tsdb.path=/var/lib/prometheus/metrics2/",
                `--storage.tsdb.retention.time=${m.retention}`,
            ],
        }),
        alertmanager: render("alertmanager.conf", {
            host,
            args: [
                `--config.file=${CONFIG_DIR}/${ALERTMANAGER_FILE}`,
                `--web.listen-address=${m.listenAddress}:${m.alertmanagerPort}`,
                "--storage.path=/var/lib/prometheus/alertmanager/",
                // Alertmanager gossips with its peers on 0.0.0.0:9094 unless told not to: one instance, no cluster.
                "--cluster.listen-address=",
            ],
        }),
    };
}

const serverCommon = (host: string) => ({
    host,
    packages: SERVER_PACKAGES,
    configDir: CONFIG_DIR,
    prometheusService: PROMETHEUS_SERVICE,
    alertmanagerService: ALERTMANAGER_SERVICE,
    prometheusDropInPath: PROMETHEUS_DROPIN,
    alertmanagerDropInPath: ALERTMANAGER_DROPIN,
    driftRecord: driftRecord(SERVER_DRIFT_GROUP),
});

/**
 * The monitoring host's install: its body runs from the host's bundle; alertmanager.yml, which holds
 * the receivers' secrets, comes on stdin. `secrets`: the receivers' secret values by config key.
 */
export function renderServerInstall(host: string, m: MonitoringSpec, ctx: RuleContext, secrets: SecretValues): SecretScript {
    const dropIns = renderServerDropIns(host, m);
    const body = render("monitoring-server.sh", {
        ...serverCommon(host),
        listen: m.listenAddress,
        prometheusPort: m.prometheusPort,
        alertmanagerPort: m.alertmanagerPort,
        prometheusFile: PROMETHEUS_FILE,
        rulesFile: RULES_FILE,
        alertmanagerFile: ALERTMANAGER_FILE,
        targetsDir: TARGETS_DIR,
        prometheusDropIn: heredocSafe(dropIns.prometheus, "NODEFLEET_EOF"),
        alertmanagerDropIn: heredocSafe(dropIns.alertmanager, "NODEFLEET_EOF"),
        prometheusConfig: heredocSafe(renderPrometheusConfig(m, ctx.stack), "NODEFLEET_EOF"),
        rules: heredocSafe(renderRules(ctx), "NODEFLEET_EOF"),
    });
    return { body, secrets: { alertmanager: heredocSafe(renderAlertmanagerConfig(m, secrets), "NODEFLEET_EOF") } };
}

/** The monitoring host's removal (its TSDB and Alertmanager's data are kept). */
export function renderServerRemove(host: string): string {
    return render("monitoring-server-remove.sh", { ...serverCommon(host), targetsDriftRecord: driftRecord(TARGETS_DRIFT_GROUP) });
}

/** The targets step's script: node_exporter on every host and the validators' endpoints, for Prometheus's file-based discovery. */
export function renderTargetsScript(host: string, m: MonitoringSpec, hosts: readonly ScrapeHost[]): string {
    const dir = `${CONFIG_DIR}/${TARGETS_DIR}`;
    const files = [
        { path: `${dir}/${NODE_TARGETS_FILE}`, text: renderNodeTargets(m, hosts) },
        { path: `${dir}/${COMETBFT_TARGETS_FILE}`, text: renderValidatorTargets("cometbft", hosts) },
        { path: `${dir}/${EXECUTION_TARGETS_FILE}`, text: renderValidatorTargets("execution", hosts) },
    ].map((f) => ({ path: f.path, text: heredocSafe(f.text, "NODEFLEET_EOF") }));
    const validators = hosts.reduce((n, h) => n + h.validators.length, 0);
    return render("monitoring-targets.sh", {
        host,
        targetsDir: dir,
        files,
        count: hosts.length,
        validators,
        driftRecord: driftRecord(TARGETS_DRIFT_GROUP),
    });
}

/** The mounts the disk alerts watch: `/` and every host's data mount. */
export function watchedMounts(hosts: readonly Host[]): string[] {
    return [...new Set(["/", ...hosts.map((h) => h.dataMountPoint)])];
}

export interface MonitoringAgentArgs {
    readonly plan: HostPlan;
    readonly monitoring: MonitoringSpec;
    readonly host: Host;
    readonly user: string;
}

/**
 * A host's monitoring agent: teardown (destroy only) -> the agent (`step`), after the host is
 * ready, beside its nodes' steps. Its steps are named from the component's name.
 */
export class MonitoringAgent extends pulumi.ComponentResource {
    /** The agent's install step: the monitoring host's server follows it. */
    readonly step: pulumi.Resource;

    constructor(name: string, args: MonitoringAgentArgs, opts: pulumi.ComponentResourceOptions & { readonly parent: pulumi.Resource }) {
        super("nodefleet:monitoring:Agent", name, {}, opts);
        const { host } = args;
        const scripts = renderAgentScripts(args.plan, args.monitoring);
        const base = { connection: host.connection, user: args.user };
        const child = movedUnder(this, opts.parent);
        const teardown = remoteStep(
            `${name}-teardown`,
            { ...base, script: "echo 'monitoring agent: teardown registered'\n", onDelete: scripts.remove, deleteBundle: host.tools },
            { ...child, dependsOn: [host.ready] },
        );
        this.step = remoteStep(
            name,
            { ...base, script: scripts.install, bundle: host.tools, drift: { drift: host.drift, group: AGENT_DRIFT_GROUP } },
            { ...child, dependsOn: [teardown] },
        );
        this.registerOutputs({});
    }
}

export interface MonitoringServerArgs {
    readonly host: Host;
    readonly user: string;
    readonly monitoring: MonitoringSpec;
    readonly ctx: RuleContext;
    /** The receivers' secrets by config key (a secret Output). */
    readonly secrets: pulumi.Output<SecretValues>;
    /** Every host to scrape, with the address the monitoring host reaches it at. */
    readonly targets: pulumi.Output<ScrapeHost[]>;
    /** The monitoring host's own agent: the server follows it. */
    readonly after: MonitoringAgent;
}

/**
 * Prometheus and Alertmanager on the monitoring host: teardown (destroy only) -> the server ->
 * the scrape targets. Its steps are named from the component's name.
 */
export class MonitoringServer extends pulumi.ComponentResource {
    constructor(name: string, args: MonitoringServerArgs, opts: pulumi.ComponentResourceOptions & { readonly parent: pulumi.Resource }) {
        super("nodefleet:monitoring:Server", name, {}, opts);
        const { host, monitoring: m } = args;
        const base = { connection: host.connection, user: args.user };
        const child = movedUnder(this, opts.parent);
        const install = args.secrets.apply((s) => renderServerInstall(host.hostName, m, args.ctx, s));
        const teardown = remoteStep(
            `${name}-teardown`,
            {
                ...base,
                script: "echo 'monitoring: teardown registered'\n",
                onDelete: renderServerRemove(host.hostName),
                deleteBundle: host.tools,
            },
            { ...child, dependsOn: [args.after.step] },
        );
        const server = remoteStep(
            name,
            {
                ...base,
                // The body holds no secret (the bundle checks it), nor does anything the script prints.
                script: pulumi.unsecret(install.apply((s) => s.body)),
                secrets: pulumi.secret(install.apply((s) => s.secrets)),
                bundle: host.tools,
                drift: { drift: host.drift, group: SERVER_DRIFT_GROUP },
            },
            { ...child, dependsOn: [teardown] },
        );
        // Inline, not bundled: a cloud host's address is known once it exists, and the bundle is copied first.
        remoteStep(
            `${name}-targets`,
            {
                ...base,
                script: args.targets.apply((t) => renderTargetsScript(host.hostName, m, t)),
                drift: { drift: host.drift, group: TARGETS_DRIFT_GROUP },
            },
            { ...child, dependsOn: [server] },
        );
        this.registerOutputs({});
    }
}
