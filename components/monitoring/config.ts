// The monitoring host's configuration files, from the fleet: prometheus.yml (one scrape job per
// exporter kind, a target per host labelled with its name, the rule files, Alertmanager) and
// alertmanager.yml (routes by severity, the receivers with their secrets). Pure: addresses and
// secret values come in resolved; the caller keeps alertmanager.yml a secret.
import { Scalar, stringify } from "yaml";
import type { MonitoringSpec, ReceiverSpec } from "../config/monitoring";
import type { NodeSpec } from "../config/schema";
import { contractOf } from "../roles/registry";

/**
 * nodefleet's own directory for the monitoring host's files: the packages' conffiles under
 * /etc/prometheus are left alone (an upgrade would ask about them); nodefleet's drop-ins point the
 * services here.
 */
export const CONFIG_DIR = "/etc/prometheus/nodefleet";
export const PROMETHEUS_FILE = "prometheus.yml";
export const ALERTMANAGER_FILE = "alertmanager.yml";
export const RULES_FILE = "nodefleet.rules.yml";
/** Prometheus's file-based discovery: the hosts to scrape, written by their own step (no reload). */
export const TARGETS_DIR = "targets";
export const NODE_TARGETS_FILE = "node.json";
/** The validators' own endpoints: CometBFT's metrics, and the execution client's (geth's path; reth serves every path). */
export const COMETBFT_TARGETS_FILE = "cometbft.json";
export const EXECUTION_TARGETS_FILE = "execution.json";

export interface ScrapeHost {
    readonly host: string;
    /** The address the monitoring host scrapes it at. */
    readonly address: string;
    /** The validators on it, with their metrics ports (their role's chainMetrics). */
    readonly validators: readonly {
        readonly node: string;
        readonly role: string;
        readonly consensusPort: number;
        readonly executionPort: number;
    }[];
}

/** The monitoring host's prometheus.yml: its rule file and the targets' files beside it (a job per exporter kind). */
export function renderPrometheusConfig(m: MonitoringSpec, stack: string): string {
    const config = {
        global: {
            scrape_interval: `${m.scrapeIntervalSeconds}s`,
            scrape_timeout: "10s",
            evaluation_interval: `${m.scrapeIntervalSeconds}s`,
            external_labels: { fleet: stack },
        },
        rule_files: [RULES_FILE],
        alerting: { alertmanagers: [{ static_configs: [{ targets: [`${m.listenAddress}:${m.alertmanagerPort}`] }] }] },
        scrape_configs: [
            { job_name: "node", file_sd_configs: [{ files: [`${TARGETS_DIR}/${NODE_TARGETS_FILE}`] }] },
            { job_name: "cometbft", file_sd_configs: [{ files: [`${TARGETS_DIR}/${COMETBFT_TARGETS_FILE}`] }] },
            {
                job_name: "execution",
                metrics_path: "/debug/metrics/prometheus",
                file_sd_configs: [{ files: [`${TARGETS_DIR}/${EXECUTION_TARGETS_FILE}`] }],
            },
            { job_name: "prometheus", static_configs: [{ targets: [`${m.listenAddress}:${m.prometheusPort}`], labels: { host: m.host } }] },
        ],
    };
    return `# Written by nodefleet from the fleet's monitoring section: do not edit (the next pulumi up puts it back).\n${stringify(config, { lineWidth: 0 })}`;
}

/** The node job's targets (Prometheus file_sd JSON): node_exporter on every host, labelled with its name, in name order. */
export function renderNodeTargets(m: MonitoringSpec, hosts: readonly ScrapeHost[]): string {
    const groups = [...hosts]
        .sort((a, b) => a.host.localeCompare(b.host))
        .map((h) => ({ targets: [`${h.address}:${m.nodeExporterPort}`], labels: { host: h.host } }));
    return `${JSON.stringify(groups, null, 2)}\n`;
}

/** A host's validators as its scrape targets name them. */
export function scrapedValidators(nodes: readonly NodeSpec[]): ScrapeHost["validators"] {
    return nodes.flatMap((n) => {
        const p = contractOf(n).chainMetrics?.(n);
        return p === undefined ? [] : [{ node: n.name, role: n.role, consensusPort: p.consensus, executionPort: p.execution }];
    });
}

/** A validator job's targets: each validator's endpoint, labelled with its host, node and role, in host and node order. */
export function renderValidatorTargets(kind: "cometbft" | "execution", hosts: readonly ScrapeHost[]): string {
    const groups = [...hosts]
        .sort((a, b) => a.host.localeCompare(b.host))
        .flatMap((h) =>
            [...h.validators]
                .sort((a, b) => a.node.localeCompare(b.node))
                .map((v) => ({
                    targets: [`${h.address}:${kind === "cometbft" ? v.consensusPort : v.executionPort}`],
                    labels: { host: h.host, node: v.node, role: v.role },
                })),
        );
    return `${JSON.stringify(groups, null, 2)}\n`;
}

/** A receiver's secret value, by the config key that holds it. */
export type SecretValues = Readonly<Record<string, string>>;

function receiverConfig(r: ReceiverSpec, secrets: SecretValues): Record<string, unknown> {
    const value = (key: string): Scalar => {
        const v = secrets[key];
        if (v === undefined) throw new Error(`unreachable: the secret of receiver ${r.name} was checked by parseFleet`);
        // Double-quoted whatever it holds: a token of digits and a colon is no number to YAML 1.1.
        const scalar = new Scalar(v.trim());
        scalar.type = Scalar.QUOTE_DOUBLE;
        return scalar;
    };
    switch (r.kind) {
        case "webhook":
            return { name: r.name, webhook_configs: [{ url: value(r.urlSecret), send_resolved: true }] };
        case "slack":
            return {
                name: r.name,
                slack_configs: [
                    {
                        api_url: value(r.apiUrlSecret),
                        send_resolved: true,
                        ...(r.channel ? { channel: r.channel } : {}),
                        title: "{{ .CommonAnnotations.summary }}",
                        text: "{{ range .Alerts }}{{ .Annotations.summary }}\nremedy: {{ .Annotations.remedy }}\n{{ .Annotations.status }}\n{{ end }}",
                    },
                ],
            };
        case "telegram":
            return {
                name: r.name,
                telegram_configs: [
                    {
                        bot_token: value(r.botTokenSecret),
                        chat_id: r.chatId,
                        send_resolved: true,
                        parse_mode: "",
                        message:
                            "{{ range .Alerts }}[{{ .Status }}] {{ .Annotations.summary }}\nremedy: {{ .Annotations.remedy }}\n{{ .Annotations.status }}\n{{ end }}",
                    },
                ],
            };
        case "discord":
            return { name: r.name, discord_configs: [{ webhook_url: value(r.webhookUrlSecret), send_resolved: true }] };
        case "email":
            return {
                name: r.name,
                email_configs: [
                    {
                        to: r.to,
                        from: r.from,
                        smarthost: r.smarthost,
                        send_resolved: true,
                        ...(r.authUsername ? { auth_username: r.authUsername, auth_password: value(r.authPasswordSecret!) } : {}),
                    },
                ],
            };
    }
}

/** The alerts that make the others of their host moot: a host that is down has nothing else to say. */
const HOST_LEVEL = ["NodefleetHostDown", "NodefleetHealthStale"];

/** The monitoring host's alertmanager.yml: it holds the receivers' secrets. */
export function renderAlertmanagerConfig(m: MonitoringSpec, secrets: SecretValues): string {
    const config = {
        route: {
            receiver: "nodefleet-none",
            group_by: ["alertname", "host", "node"],
            group_wait: m.groupWait,
            group_interval: m.groupInterval,
            repeat_interval: m.repeatInterval,
            routes: m.receivers.map((r) => ({ receiver: r.name, matchers: [`severity=~"${r.severities.join("|")}"`], continue: true })),
        },
        inhibit_rules: [
            {
                source_matchers: [`alertname=~"${HOST_LEVEL.join("|")}"`],
                target_matchers: [`alertname!~"${HOST_LEVEL.join("|")}"`],
                equal: ["host"],
            },
        ],
        receivers: [{ name: "nodefleet-none" }, ...m.receivers.map((r) => receiverConfig(r, secrets))],
    };
    return `# Written by nodefleet from the fleet's monitoring section: do not edit. It holds the receivers' secrets: root and the prometheus group only.\n${stringify(config, { lineWidth: 0 })}`;
}
