// The fleet config's `monitoring` section: which host runs Prometheus and Alertmanager, the address
// each host is scraped at, and where alerts go. Every receiver's URL, token and password comes from
// a secret config key: Alertmanager 0.25 reads webhook, Telegram and Discord credentials only from
// its config file (it has no `*_file` form for them), so that file is written as a secret, root and
// the prometheus group only, and nothing of it is in a step's plain inputs.
import { z } from "zod";
import { FAULTS } from "./faults";
import * as v from "../values/validators";
import { cidr, hostName, ipv4, notWorld, port, secretRef } from "../values/primitives";

/** The Debian packages' default ports. */
export const MONITORING_PORTS = { prometheus: 9090, alertmanager: 9093, nodeExporter: 9100 } as const;

export const SEVERITIES = ["error", "warning"] as const;
export type Severity = (typeof SEVERITIES)[number];

const receiverName = z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/, "receiver names are 2-32 lowercase letters, digits and dashes, starting with a letter");
const severities = z
    .array(z.enum(SEVERITIES))
    .min(1, "a receiver gets at least one severity")
    .refine((a) => new Set(a).size === a.length, "each severity once")
    .default(["error", "warning"])
    .describe("Which alerts it gets: `error` (the node is not doing its job), `warning` (worth a look), or both.");
const emailAddress = z.string().regex(/^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/, "not an e-mail address (name@domain)");
const smarthost = z
    .string()
    .regex(/^[A-Za-z0-9.-]{1,253}:[0-9]{1,5}$/, "not host:port")
    .describe("SMTP server, host:port.");

const common = { name: receiverName.describe("The receiver's name, unique among receivers."), severities };

export const receiver = z.discriminatedUnion(
    "kind",
    [
        z
            .strictObject({
                kind: z.literal("webhook").describe("Alertmanager's webhook: a JSON POST per notification."),
                ...common,
                urlSecret: secretRef.describe("Config key holding the webhook's http(s) URL."),
            })
            .describe("A webhook."),
        z
            .strictObject({
                kind: z.literal("slack").describe("A Slack incoming webhook."),
                ...common,
                apiUrlSecret: secretRef.describe("Config key holding the Slack webhook URL."),
                channel: z
                    .string()
                    .regex(/^[#@]?[A-Za-z0-9._-]{1,80}$/, "not a Slack channel (#name)")
                    .optional()
                    .describe("Channel, when the webhook's own is not the one."),
            })
            .describe("Slack."),
        z
            .strictObject({
                kind: z.literal("telegram").describe("A Telegram bot."),
                ...common,
                botTokenSecret: secretRef.describe("Config key holding the bot's token (`<digits>:<token>`, from BotFather)."),
                chatId: z.number().int().describe("The chat the bot posts to (a group's id is negative)."),
            })
            .describe("Telegram."),
        z
            .strictObject({
                kind: z.literal("discord").describe("A Discord webhook."),
                ...common,
                webhookUrlSecret: secretRef.describe("Config key holding the Discord webhook URL."),
            })
            .describe("Discord."),
        z
            .strictObject({
                kind: z.literal("email").describe("E-mail over SMTP."),
                ...common,
                to: emailAddress.describe("Who gets the mail."),
                from: emailAddress.describe("The sender address."),
                smarthost,
                authUsername: z
                    .string()
                    .min(1)
                    .max(256)
                    .regex(/^[^\s]+$/, "no white space")
                    .optional()
                    .describe("SMTP user, when the server wants one."),
                authPasswordSecret: secretRef.optional().describe("Config key holding the SMTP password (with authUsername)."),
            })
            .superRefine((r, ctx) => {
                if ((r.authUsername === undefined) !== (r.authPasswordSecret === undefined))
                    ctx.addIssue({
                        code: "custom",
                        path: [r.authUsername === undefined ? "authUsername" : "authPasswordSecret"],
                        message: "authUsername and authPasswordSecret go together",
                    });
            })
            .describe("E-mail."),
    ],
    { error: (issue) => (issue.code === "invalid_union" ? "kind must be one of webhook, slack, telegram, discord, email" : undefined) },
);
export type ReceiverSpec = z.infer<typeof receiver>;

const duration = (what: string) =>
    z.string().regex(/^[1-9][0-9]{0,5}(m|h|d|w)$/, `${what}: a whole number and a unit, m, h, d or w (15d, 12h)`);
const shortDuration = (what: string) =>
    z.string().regex(/^[1-9][0-9]{0,4}(s|m|h)$/, `${what}: a whole number and a unit, s, m or h (30s, 5m)`);

export const monitoringSpec = z
    .strictObject({
        host: hostName.describe("The host (a key of `hosts`) that runs Prometheus and Alertmanager; it may run no node."),
        addresses: z
            .record(hostName, ipv4)
            .default({})
            .describe(
                "Per host, the address the monitoring host reaches it at (scrapes, and the address each host's firewall opens its metrics ports to, for the monitoring host). Needed for an existing host whose `address` is a DNS name, a loopback address (a forwarded port) or not the one the hosts see each other at; a cloud host defaults to its public address.",
            ),
        retention: duration("retention").default("15d").describe("How long Prometheus keeps samples (`--storage.tsdb.retention.time`)."),
        listenAddress: ipv4
            .default("127.0.0.1")
            .describe(
                "Where Prometheus's and Alertmanager's web UIs and APIs listen on the monitoring host. Loopback: reached over an SSH tunnel (docs/monitoring.md). Another address needs `webAllowedCidrs`.",
            ),
        webAllowedCidrs: z
            .array(cidr)
            .default([])
            .superRefine(notWorld("The monitoring web UIs"))
            .describe(
                "Who may reach the web UIs when `listenAddress` is not loopback: the monitoring host's firewall opens 9090 and 9093 to these ranges only.",
            ),
        prometheusPort: port.default(MONITORING_PORTS.prometheus).describe("Prometheus's port on the monitoring host."),
        alertmanagerPort: port.default(MONITORING_PORTS.alertmanager).describe("Alertmanager's port on the monitoring host."),
        nodeExporterPort: port
            .default(MONITORING_PORTS.nodeExporter)
            .describe("node_exporter's port on every host; open to the monitoring host only."),
        scrapeIntervalSeconds: z
            .number()
            .int()
            .min(10)
            .max(300)
            .default(30)
            .describe(
                "How often Prometheus scrapes every target and evaluates the alert rules (its `scrape_interval` and `evaluation_interval`; each scrape may take 10 s). An alert fires at most this much, twice, after its condition has lasted its `for`.",
            ),
        healthIntervalSeconds: z
            .number()
            .int()
            .min(10)
            .max(600)
            .default(30)
            .describe("How often each host's health timer runs the nodes' health tools and writes their metrics."),
        healthTimeoutSeconds: z
            .number()
            .int()
            .min(5)
            .max(300)
            .default(24)
            .describe(
                "How long each node's health command may take in a timer run before the node is reported `check-failed`. The default suits real hosts (status gives each command 80% of its host's 30 s); a loaded or emulated host needs more. A run longer than `healthIntervalSeconds` delays the next.",
            ),
        groupWait: shortDuration("groupWait")
            .default("30s")
            .describe("How long Alertmanager waits to gather a new group's first alerts before it notifies."),
        groupInterval: shortDuration("groupInterval")
            .default("5m")
            .describe(
                "How long Alertmanager waits before it notifies of a change in a group it has notified of (new alerts, resolved ones).",
            ),
        repeatInterval: duration("repeatInterval")
            .default("4h")
            .describe("How often Alertmanager repeats a notification for an alert still firing."),
        alertFor: z
            .record(
                z
                    .string()
                    .regex(/^Nodefleet[A-Z][A-Za-z0-9]{1,60}$/, "an alert's name, as docs/monitoring.md lists it (NodefleetServiceDown)"),
                z.string().regex(/^(0|[1-9][0-9]{0,4})(s|m|h)$/, "a whole number and a unit, s, m or h (0s, 90s, 5m)"),
            )
            .default({})
            .describe(
                "Per alert (its name, as docs/monitoring.md lists it), how long its condition must last before it fires, in place of nodefleet's own `for` (docs/monitoring.md's table): shorter to hear sooner, longer for a fault the fleet rides out. An alert nodefleet does not have is refused by name.",
            ),
        receivers: z
            .array(receiver)
            .default([])
            .describe(
                "Where alerts are sent, each a webhook, Slack, Telegram, Discord or e-mail receiver; every URL, token and password from a secret config key. None: the alerts are only in Prometheus and Alertmanager.",
            ),
    })
    .describe("Prometheus, Alertmanager and node_exporter for the fleet (docs/monitoring.md).");
export type MonitoringSpec = z.infer<typeof monitoringSpec>;

/** `NodefleetForkchoice38002` for forkchoice-38002: the alert on a diagnosis code. */
export function alertName(code: string): string {
    return `Nodefleet${code
        .split("-")
        .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
        .join("")}`;
}

/** The alerts that are not on one diagnosis code (components/monitoring/rules.ts makes them; a unit test holds the two lists equal). */
export const HISTORY_ALERTS = [
    "NodefleetHeightStalled",
    "NodefleetSwitchImportStalled",
    "NodefleetHealthStale",
    "NodefleetHostDown",
    "NodefleetMetricsDown",
    "NodefleetDiskAlmostFull",
    "NodefleetDiskFillsIn24h",
    "NodefleetMemoryLow",
    "NodefleetUnitFailed",
    "NodefleetClockNotSynchronised",
] as const;

/** Every alert's name: one per code of the fault table that alerts, then HISTORY_ALERTS. */
export function alertNames(): string[] {
    return [...FAULTS.map((f) => alertName(f.code)), ...HISTORY_ALERTS];
}

/** A secret a receiver names, with its config path and the format its value must have. */
export interface ReceiverSecret {
    readonly path: string;
    readonly key: string;
    readonly format: (value: string) => v.Reason;
}

/** A bot token as BotFather gives it: the bot's id, a colon, 35 or so URL-safe characters. */
export function telegramTokenReason(value: string): v.Reason {
    return /^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$/.test(value.trim())
        ? undefined
        : "not a Telegram bot token (<digits>:<token>, as BotFather gives it)";
}

/** A password that fits on one line of the config file. */
function passwordReason(value: string): v.Reason {
    if (value.trim() === "") return "empty";
    return /[\r\n\0]/.test(value.replace(/\n$/, "")) ? "holds a line break or NUL" : undefined;
}

/** The secrets the receivers name. */
export function receiverSecrets(monitoring: MonitoringSpec | undefined): ReceiverSecret[] {
    if (monitoring === undefined) return [];
    return monitoring.receivers.flatMap((r, i): ReceiverSecret[] => {
        const at = `monitoring.receivers[${i}]`;
        switch (r.kind) {
            case "webhook":
                return [{ path: `${at}.urlSecret`, key: r.urlSecret, format: v.secretUrlReason }];
            case "slack":
                return [{ path: `${at}.apiUrlSecret`, key: r.apiUrlSecret, format: v.secretUrlReason }];
            case "discord":
                return [{ path: `${at}.webhookUrlSecret`, key: r.webhookUrlSecret, format: v.secretUrlReason }];
            case "telegram":
                return [{ path: `${at}.botTokenSecret`, key: r.botTokenSecret, format: telegramTokenReason }];
            case "email":
                return r.authPasswordSecret === undefined
                    ? []
                    : [{ path: `${at}.authPasswordSecret`, key: r.authPasswordSecret, format: passwordReason }];
        }
    });
}

/** Whether an address is one the other hosts cannot reach this host at (loopback, unspecified). */
function unreachableFromOthers(address: string): boolean {
    return /^127\./.test(address) || address === "0.0.0.0" || address === "::1" || address === "localhost";
}

type HostAddresses = Readonly<Record<string, { kind: string; address?: string }>>;

/** What one host of a monitored fleet is to the monitoring stack. */
export interface HostMonitoring {
    readonly spec: MonitoringSpec;
    /** Whether this host runs Prometheus and Alertmanager. */
    readonly isMonitoringHost: boolean;
    /** The address the monitoring host scrapes this host at; undefined: a cloud host's public address, known once it exists. */
    readonly scrapeAddress?: string;
    /** The monitoring host's address as the hosts see it: the one source this host's firewall opens its metrics ports to. */
    readonly monitoringSource: string;
}

/** The address the other hosts see a host at, where the config gives it: `monitoring.addresses`, else an existing host's IPv4 address. */
function staticAddress(monitoring: MonitoringSpec, hosts: HostAddresses, name: string): string | undefined {
    if (Object.hasOwn(monitoring.addresses, name)) return monitoring.addresses[name];
    const host = hosts[name];
    return host?.kind === "existing" &&
        host.address !== undefined &&
        v.ipv4Reason(host.address) === undefined &&
        !unreachableFromOthers(host.address)
        ? host.address
        : undefined;
}

/**
 * A host's part of the monitoring section. Undefined without a monitoring host address, which
 * checkMonitoring reports (parseFleet returns no plan then).
 */
export function hostMonitoring(monitoring: MonitoringSpec | undefined, hosts: HostAddresses, name: string): HostMonitoring | undefined {
    if (monitoring === undefined) return undefined;
    const source = staticAddress(monitoring, hosts, monitoring.host);
    if (source === undefined) return undefined;
    return {
        spec: monitoring,
        isMonitoringHost: name === monitoring.host,
        scrapeAddress: staticAddress(monitoring, hosts, name),
        monitoringSource: source,
    };
}

/** The cross-checks of the monitoring section against the rest of the fleet. */
export function checkMonitoring(monitoring: MonitoringSpec | undefined, hosts: HostAddresses, issues: string[]): void {
    if (monitoring === undefined) return;
    const known = Object.keys(hosts);
    if (!Object.hasOwn(hosts, monitoring.host))
        issues.push(`monitoring.host: no host named "${monitoring.host}" under hosts (known: ${known.join(", ") || "none"})`);
    for (const name of Object.keys(monitoring.addresses)) {
        if (!Object.hasOwn(hosts, name))
            issues.push(`monitoring.addresses.${name}: no host named "${name}" under hosts (known: ${known.join(", ") || "none"})`);
    }
    for (const [name, host] of Object.entries(hosts)) {
        if (host.kind !== "existing" || Object.hasOwn(monitoring.addresses, name)) continue;
        const address = host.address ?? "";
        if (v.ipv4Reason(address) !== undefined || unreachableFromOthers(address)) {
            issues.push(
                `monitoring.addresses.${name}: required: host ${name}'s address ${JSON.stringify(address)} is ${v.ipv4Reason(address) !== undefined ? "not an IPv4 address" : "one only this machine reaches it at"}; give the address the monitoring host scrapes it at (its firewall opens the metrics ports to the monitoring host's)`,
            );
        }
    }
    const monitor = hosts[monitoring.host];
    if (monitor !== undefined && monitor.kind !== "existing" && !Object.hasOwn(monitoring.addresses, monitoring.host)) {
        issues.push(
            `monitoring.addresses.${monitoring.host}: required: the monitoring host is a ${monitor.kind} host, whose public address is known only once it exists, and every host's firewall opens its metrics ports to that address alone: give it a fixed address (an Elastic IP, a Hetzner primary IP) and name it here`,
        );
    }
    const loopback = /^127\./.test(monitoring.listenAddress);
    if (!loopback && monitoring.webAllowedCidrs.length === 0)
        issues.push(
            `monitoring.webAllowedCidrs: required when listenAddress (${monitoring.listenAddress}) is not loopback: who may reach the web UIs`,
        );
    if (loopback && monitoring.webAllowedCidrs.length > 0)
        issues.push(
            `monitoring.webAllowedCidrs: means nothing while listenAddress is loopback (${monitoring.listenAddress}): remove it, or listen on another address`,
        );
    const ports = [monitoring.prometheusPort, monitoring.alertmanagerPort, monitoring.nodeExporterPort];
    if (new Set(ports).size !== ports.length)
        issues.push(`monitoring: prometheusPort, alertmanagerPort and nodeExporterPort must differ (${ports.join(", ")})`);
    const alerts = alertNames();
    for (const name of Object.keys(monitoring.alertFor)) {
        // A misspelt name would leave that alert at its own `for` while the operator believes it changed.
        if (!alerts.includes(name))
            issues.push(`monitoring.alertFor.${name}: nodefleet has no such alert (its alerts are listed in docs/monitoring.md)`);
    }
    const first = new Map<string, number>();
    monitoring.receivers.forEach((r, i) => {
        const j = first.get(r.name);
        if (j === undefined) first.set(r.name, i);
        else issues.push(`monitoring.receivers[${i}].name: duplicate receiver name "${r.name}" (also monitoring.receivers[${j}])`);
    });
}
