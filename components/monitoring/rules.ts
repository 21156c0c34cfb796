// nodefleet's alert rules, as Prometheus rule files: one alert per diagnosis code (faults.ts: the
// health tools decide, the rule only waits its `for`), the alerts that need a history (a height that
// stopped, an import that stalled, a disk that will fill), and the host's. Each alert carries its
// severity, a summary naming node and host, the remedy and the `nodefleet status` command to run.
// Their promtool cases, one that fires each and ones that keep it quiet, are test code
// (test/support/rule-cases.ts).
import { stringify } from "yaml";
import { alertName } from "../config/monitoring";
import { FAULT_TABLE, FAULTS } from "../config/faults";

export interface RuleContext {
    /** The stack, for the status command in each alert. */
    readonly stack: string;
    /** Seconds between the health timer's runs (a health metric older than 3 runs is stale). */
    readonly healthIntervalSeconds: number;
    /** The monitoring host's data mount, besides `/` (disk alerts watch these). */
    readonly mounts: readonly string[];
    /** The config's `monitoring.alertFor`: per alert, a `for` in place of nodefleet's own. */
    readonly alertFor?: Readonly<Record<string, string>>;
}

export interface AlertRule {
    readonly alert: string;
    readonly group: "nodefleet-nodes" | "nodefleet-switch" | "nodefleet-hosts";
    readonly expr: string;
    readonly for: string;
    readonly severity: "error" | "warning";
    /** After "<node> on <host>: " (or "<host>: " for host alerts). */
    readonly summary: string;
    readonly remedy: string;
    /** The diagnosis code it carries (the same as `nodefleet status` prints), when it is one. */
    readonly code?: string;
}

/** An alert on one diagnosis code: it fires once the code has been written for `for`. */
function faultRule(f: (typeof FAULTS)[number]): AlertRule {
    return {
        alert: alertName(f.code),
        group: f.code.startsWith("switch") ? "nodefleet-switch" : "nodefleet-nodes",
        expr: `nodefleet_diagnosis{code=${JSON.stringify(f.code)}} == 1`,
        for: f.for,
        severity: f.severity,
        summary: f.summary,
        remedy: f.remedy,
        code: f.code,
    };
}

/** The alerts that need a history: a node's height, a switch's progress; then the hosts'. */
function historyRules(ctx: RuleContext): AlertRule[] {
    return [...progressRules(), ...hostRules(ctx), ...resourceRules(ctx)];
}

/** A node's height and a switch's job: what grows while they work. */
function progressRules(): AlertRule[] {
    return [
        {
            alert: "NodefleetHeightStalled",
            group: "nodefleet-nodes",
            for: "5m",
            severity: "error",
            expr: `nodefleet_node_service_up{role=~"storage|validator"} == 1 and on (instance, node) (nodefleet_node_height - nodefleet_node_height offset 10m) <= 0`,
            summary: "its height has not grown in 10 minutes",
            remedy: `storage: ${FAULT_TABLE["height-not-increasing"].remedy}; validator: the chain or the node stopped: its consensus daemon's journal and peers`,
        },
        {
            alert: "NodefleetSwitchImportStalled",
            group: "nodefleet-switch",
            for: "5m",
            severity: "error",
            expr: `(nodefleet_switch_job_done_blocks - nodefleet_switch_job_done_blocks offset 15m) <= 0`,
            summary: "the switch's running export or import has made no progress in 15 minutes",
            remedy: "its journal (journalctl -u <job unit>); a killed or broken import is resumed by the next `pulumi up` from the last block every stage of reth finished (block number X does not match parent block number Y: re-trim from Y+1, re-import)",
        },
    ];
}

/** The host and its exporters answer, and its health timer runs. */
function hostRules(ctx: RuleContext): AlertRule[] {
    // Three runs missed, plus what a healthy host's newest sample may lag by: a scrape (30 s) and an
    // evaluation (30 s). Without that margin a host whose runs take half the interval looked stale.
    const stale = 3 * ctx.healthIntervalSeconds + 60;
    return [
        {
            alert: "NodefleetHealthStale",
            group: "nodefleet-hosts",
            for: "1m",
            severity: "error",
            expr: `time() - nodefleet_health_last_run_timestamp_seconds > ${stale}`,
            summary: `its health timer has written no metrics for more than ${stale} s: every nodefleet_* value of the host is old`,
            remedy: "systemctl status nodefleet-health.timer nodefleet-health.service; `pulumi up` installs them again",
        },
        {
            alert: "NodefleetHostDown",
            group: "nodefleet-hosts",
            for: "2m",
            severity: "error",
            expr: `up{job="node"} == 0`,
            summary:
                "node_exporter does not answer: the host is down, unreachable, or its exporter stopped (what nodefleet status calls host-unreachable)",
            remedy: "check that the host is up and reachable from the monitoring host; systemctl status prometheus-node-exporter",
        },
        {
            alert: "NodefleetMetricsDown",
            group: "nodefleet-hosts",
            for: "5m",
            severity: "warning",
            expr: `up{job!="node"} == 0`,
            summary: "a node's own metrics endpoint ({{ $labels.job }}) does not answer",
            remedy: "is the node's service running (nodefleet status)? Its metrics port is open to the monitoring host only",
        },
    ];
}

/** The host's disks, memory, units and clock. */
function resourceRules(ctx: RuleContext): AlertRule[] {
    const mounts = ["/", ...ctx.mounts.filter((m) => m !== "/")];
    const mountRe = mounts.map((m) => m.replace(/[.*+?^${}()|[\]\\]/g, "\\\\$&")).join("|");
    return [
        {
            alert: "NodefleetDiskAlmostFull",
            group: "nodefleet-hosts",
            for: "5m",
            severity: "error",
            expr: `node_filesystem_avail_bytes{mountpoint=~"${mountRe}",fstype!~"tmpfs|ramfs|squashfs|overlay"} / node_filesystem_size_bytes < 0.10`,
            summary: "{{ $labels.mountpoint }} has less than 10% free",
            remedy: "free space or grow the volume; a geth -> reth switch needs about twice the geth datadir free (docs/spec.md §8)",
        },
        {
            alert: "NodefleetDiskFillsIn24h",
            group: "nodefleet-hosts",
            for: "30m",
            severity: "warning",
            expr: `predict_linear(node_filesystem_avail_bytes{mountpoint=~"${mountRe}",fstype!~"tmpfs|ramfs|squashfs|overlay"}[6h], 86400) < 0`,
            summary: "{{ $labels.mountpoint }} fills within 24 h at its rate of the last 6 h",
            remedy: "find what grows (a switch's export and import take about twice the geth datadir, docs/spec.md §8); free space or grow the volume before it is full",
        },
        {
            alert: "NodefleetMemoryLow",
            group: "nodefleet-hosts",
            for: "10m",
            severity: "error",
            expr: `node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < 0.05`,
            summary: "less than 5% of its memory is available",
            remedy: "see what uses it (the node services' MemoryCurrent); the roles' memory targets are in docs/roles.md",
        },
        {
            alert: "NodefleetUnitFailed",
            group: "nodefleet-hosts",
            for: "1m",
            severity: "error",
            expr: `node_systemd_unit_state{state="failed"} == 1`,
            summary: "the unit {{ $labels.name }} has failed",
            remedy: "journalctl -u {{ $labels.name }} says why; a node service that failed is restarted by `systemctl restart`, a nodefleet step's unit by the next `pulumi up`",
        },
        {
            alert: "NodefleetClockNotSynchronised",
            group: "nodefleet-hosts",
            for: "10m",
            severity: "warning",
            expr: `max_over_time(node_timex_sync_status[5m]) == 0`,
            summary: "its clock is not synchronised (chrony)",
            remedy: "chronyc tracking; chronyc sources (the hosts run chrony, installed by nodefleet's bootstrap); a validator with a wrong clock misses its rounds",
        },
    ];
}

/**
 * Every alert: one per diagnosis code, then the history and host alerts, each with the config's
 * `alertFor` (checked against ALERT_NAMES) in place of its own `for`.
 */
export function alertRules(ctx: RuleContext): AlertRule[] {
    const overrides = ctx.alertFor ?? {};
    return [...FAULTS.map(faultRule), ...historyRules(ctx)].map((r) =>
        overrides[r.alert] === undefined ? r : { ...r, for: overrides[r.alert]! },
    );
}

/** "<node> on <host>: …" for node alerts, "<host>: …" for host alerts. */
function summaryTemplate(r: AlertRule): string {
    const who =
        r.group === "nodefleet-hosts" && r.alert !== "NodefleetMetricsDown"
            ? "{{ $labels.host }}"
            : "{{ $labels.node }} on {{ $labels.host }}";
    return `${who}: ${r.summary}`;
}

/** An alert's annotations, as the rule file gives them (`{{ $labels.x }}` left for Prometheus). */
export function annotations(r: AlertRule, ctx: RuleContext): Record<string, string> {
    return {
        summary: summaryTemplate(r),
        remedy: r.remedy,
        status: `nodefleet status --stack ${ctx.stack}`,
        ...(r.code ? { code: r.code } : {}),
    };
}

/** The rule file (Prometheus 2.x YAML). */
export function renderRules(ctx: RuleContext): string {
    const rules = alertRules(ctx);
    const groups = ["nodefleet-nodes", "nodefleet-switch", "nodefleet-hosts"].map((name) => ({
        name,
        rules: rules
            .filter((r) => r.group === name)
            .map((r) => ({ alert: r.alert, expr: r.expr, for: r.for, labels: { severity: r.severity }, annotations: annotations(r, ctx) })),
    }));
    return `# nodefleet's alert rules, generated by nodefleet (components/monitoring/rules.ts): do not edit.\n${stringify({ groups }, { lineWidth: 0 })}`;
}
