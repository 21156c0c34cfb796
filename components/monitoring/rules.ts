// nodefleet's alert rules, as Prometheus rule files, and their promtool unit tests: one alert per
// diagnosis code (faults.ts: the health tools decide, the rule only waits its `for`), the alerts
// that need a history (a height that stopped, an import that stalled, a disk that will fill), and
// the host's. Each alert carries its severity, a summary naming node and host, the remedy and the
// `nodefleet status` command to run; each has a test that fires it and tests that keep it quiet.
import { stringify } from "yaml";
import { FAULTS } from "./faults";

export interface RuleContext {
    /** The stack, for the status command in each alert. */
    readonly stack: string;
    /** Seconds between the health timer's runs (a health metric older than 3 runs is stale). */
    readonly healthIntervalSeconds: number;
    /** The monitoring host's data mount, besides `/` (disk alerts watch these). */
    readonly mounts: readonly string[];
}

/** A series of a promtool test: the selector and its values, one per 30 s step. */
export interface Series {
    readonly series: string;
    readonly values: string;
}

export interface AlertCase {
    /** What the case shows, in the test's name. */
    readonly name: string;
    readonly series: readonly Series[];
    /** When the alert is evaluated (a Go duration). */
    readonly at: string;
    /** The labels of each alert expected firing then (besides alertname, severity); none: quiet. */
    readonly firing: readonly Record<string, string>[];
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
    readonly cases: readonly AlertCase[];
}

/** The scrape interval every case's series are given at. */
export const TEST_INTERVAL = "30s";

const NODE = { host: "host-a", instance: "10.0.0.1:9100", job: "node", node: "node-a" };
const sel = (metric: string, labels: Record<string, string>) => `${metric}{${Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}}`;

/** `NodefleetForkchoice38002` for forkchoice-38002. */
export function alertName(code: string): string {
    return `Nodefleet${code.split("-").map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("")}`;
}

function minutes(duration: string): number {
    const m = /^(\d+)([smh])$/.exec(duration);
    if (!m) throw new Error(`unreachable: duration ${duration}`);
    return Number(m[1]) * { s: 1 / 60, m: 1, h: 60 }[m[2] as "s" | "m" | "h"];
}

/** An alert on one diagnosis code: it fires once the code has been written for `for`. */
function faultRule(f: (typeof FAULTS)[number]): AlertRule {
    const role = "validator";
    const labels = { ...NODE, role, code: f.code, severity: f.severity };
    const wait = minutes(f.for);
    const samples = Math.round(wait * 2) + 4;
    const cases: AlertCase[] = [
        { name: `${f.code} written for ${f.for} fires`, series: [{ series: sel("nodefleet_diagnosis", labels), values: `1x${samples}` }], at: `${samples / 2}m`, firing: [labels] },
        { name: "another code leaves it quiet", series: [{ series: sel("nodefleet_diagnosis", { ...labels, code: "some-other-code" }), values: `1x${samples}` }], at: `${samples / 2}m`, firing: [] },
        { name: "gone after the repair: resolved", series: [{ series: sel("nodefleet_diagnosis", labels), values: `1x${samples} stale` }], at: `${samples / 2 + 1}m`, firing: [] },
    ];
    if (wait >= 1) cases.push({ name: `for less than ${f.for}: quiet`, series: [{ series: sel("nodefleet_diagnosis", labels), values: `_x4 1x${Math.round(wait * 2) - 2}` }], at: `${2 + wait - 1}m`, firing: [] });
    return { alert: alertName(f.code), group: f.code.startsWith("switch") ? "nodefleet-switch" : "nodefleet-nodes", expr: `nodefleet_diagnosis{code=${JSON.stringify(f.code)}} == 1`, for: f.for, severity: f.severity, summary: f.summary, remedy: f.remedy, code: f.code, cases };
}

/** The alerts that need a history, and the host's. */
function historyRules(ctx: RuleContext): AlertRule[] {
    // Three runs missed, plus what a healthy host's newest sample may lag by: a scrape (30 s) and an
    // evaluation (30 s). Without that margin a host whose runs take half the interval looked stale.
    const stale = 3 * ctx.healthIntervalSeconds + 60;
    const storage = { ...NODE, role: "storage" };
    const validator = { ...NODE, role: "validator" };
    const host = { host: NODE.host, instance: NODE.instance, job: "node" };
    const mounts = ["/", ...ctx.mounts.filter((m) => m !== "/")];
    const fs = (mountpoint: string) => ({ ...host, device: "/dev/vdb", fstype: "ext4", mountpoint });
    const mountRe = mounts.map((m) => m.replace(/[.*+?^${}()|[\]\\]/g, "\\\\$&")).join("|");
    const GB = 1e9;
    return [
        {
            alert: "NodefleetHeightStalled", group: "nodefleet-nodes", for: "5m", severity: "error",
            expr: `nodefleet_node_service_up{role=~"storage|validator"} == 1 and on (instance, node) (nodefleet_node_height - nodefleet_node_height offset 10m) <= 0`,
            summary: "its height has not grown in 10 minutes", remedy: "storage: the RPC endpoint is probably down (docs/spec.md §7): check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart; validator: the chain or the node stopped: its consensus daemon's journal and peers",
            cases: [
                { name: "a height that stays fires", series: [{ series: sel("nodefleet_node_height", storage), values: "100x60" }, { series: sel("nodefleet_node_service_up", storage), values: "1x60" }], at: "25m", firing: [storage] },
                { name: "a height that grows stays quiet", series: [{ series: sel("nodefleet_node_height", storage), values: "100+1x60" }, { series: sel("nodefleet_node_service_up", storage), values: "1x60" }], at: "25m", firing: [] },
                { name: "a stopped service is service-down's, not this", series: [{ series: sel("nodefleet_node_height", validator), values: "100x60" }, { series: sel("nodefleet_node_service_up", validator), values: "0x60" }], at: "25m", firing: [] },
                { name: "no history yet (10 minutes): quiet", series: [{ series: sel("nodefleet_node_height", storage), values: "100x16" }, { series: sel("nodefleet_node_service_up", storage), values: "1x16" }], at: "8m", firing: [] },
            ],
        },
        {
            alert: "NodefleetSwitchImportStalled", group: "nodefleet-switch", for: "5m", severity: "error",
            expr: `(nodefleet_switch_job_done_blocks - nodefleet_switch_job_done_blocks offset 15m) <= 0`,
            summary: "the switch's running export or import has made no progress in 15 minutes", remedy: "its journal (journalctl -u <job unit>); a killed or broken import is resumed by the next `pulumi up` from the last block every stage of reth finished (block number X does not match parent block number Y: re-trim from Y+1, re-import)",
            cases: [
                { name: "an import that stays at one block fires", series: [{ series: sel("nodefleet_switch_job_done_blocks", { ...validator, job: "import" }), values: "5000x60" }], at: "25m", firing: [{ ...validator, job: "import" }] },
                { name: "an import that moves stays quiet", series: [{ series: sel("nodefleet_switch_job_done_blocks", { ...validator, job: "import" }), values: "5000+100x60" }], at: "25m", firing: [] },
            ],
        },
        {
            alert: "NodefleetHealthStale", group: "nodefleet-hosts", for: "1m", severity: "error",
            expr: `time() - nodefleet_health_last_run_timestamp_seconds > ${stale}`,
            summary: `its health timer has written no metrics for more than ${stale} s: every nodefleet_* value of the host is old`, remedy: "systemctl status nodefleet-health.timer nodefleet-health.service; `pulumi up` installs them again",
            cases: [
                { name: "a timestamp that stops fires", series: [{ series: sel("nodefleet_health_last_run_timestamp_seconds", host), values: "0+30x10 300x40" }], at: "20m", firing: [host] },
                { name: "a timestamp that follows the clock stays quiet", series: [{ series: sel("nodefleet_health_last_run_timestamp_seconds", host), values: "0+30x50" }], at: "20m", firing: [] },
            ],
        },
        {
            alert: "NodefleetHostDown", group: "nodefleet-hosts", for: "2m", severity: "error",
            expr: `up{job="node"} == 0`,
            summary: "node_exporter does not answer: the host is down, unreachable, or its exporter stopped (what nodefleet status calls host-unreachable)", remedy: "check that the host is up and reachable from the monitoring host; systemctl status prometheus-node-exporter",
            cases: [
                { name: "a target that does not answer fires", series: [{ series: sel("up", host), values: "1x4 0x10" }], at: "6m", firing: [host] },
                { name: "a target that answers stays quiet", series: [{ series: sel("up", host), values: "1x20" }], at: "6m", firing: [] },
            ],
        },
        {
            alert: "NodefleetMetricsDown", group: "nodefleet-hosts", for: "5m", severity: "warning",
            expr: `up{job!="node"} == 0`,
            summary: "a node's own metrics endpoint ({{ $labels.job }}) does not answer", remedy: "is the node's service running (nodefleet status)? Its metrics port is open to the monitoring host only",
            cases: [
                { name: "a node's endpoint that does not answer fires", series: [{ series: sel("up", { ...NODE, job: "execution", role: "validator" }), values: "0x20" }], at: "8m", firing: [{ ...NODE, job: "execution", role: "validator" }] },
                { name: "node_exporter's own target is NodefleetHostDown's", series: [{ series: sel("up", host), values: "0x20" }], at: "8m", firing: [] },
            ],
        },
        {
            alert: "NodefleetDiskAlmostFull", group: "nodefleet-hosts", for: "5m", severity: "error",
            expr: `node_filesystem_avail_bytes{mountpoint=~"${mountRe}",fstype!~"tmpfs|ramfs|squashfs|overlay"} / node_filesystem_size_bytes < 0.10`,
            summary: "{{ $labels.mountpoint }} has less than 10% free", remedy: "free space or grow the volume; a geth -> reth switch needs about twice the geth datadir free (docs/spec.md §8)",
            cases: [
                { name: "5% free fires", series: [{ series: sel("node_filesystem_avail_bytes", fs(mounts[mounts.length - 1]!)), values: `${5 * GB}x20` }, { series: sel("node_filesystem_size_bytes", fs(mounts[mounts.length - 1]!)), values: `${100 * GB}x20` }], at: "8m", firing: [fs(mounts[mounts.length - 1]!)] },
                { name: "50% free stays quiet", series: [{ series: sel("node_filesystem_avail_bytes", fs("/")), values: `${50 * GB}x20` }, { series: sel("node_filesystem_size_bytes", fs("/")), values: `${100 * GB}x20` }], at: "8m", firing: [] },
                { name: "another mount stays quiet", series: [{ series: sel("node_filesystem_avail_bytes", fs("/boot/efi")), values: `${1e6}x20` }, { series: sel("node_filesystem_size_bytes", fs("/boot/efi")), values: `${100 * GB}x20` }], at: "8m", firing: [] },
            ],
        },
        {
            alert: "NodefleetDiskFillsIn24h", group: "nodefleet-hosts", for: "30m", severity: "warning",
            expr: `predict_linear(node_filesystem_avail_bytes{mountpoint=~"${mountRe}",fstype!~"tmpfs|ramfs|squashfs|overlay"}[6h], 86400) < 0`,
            summary: "{{ $labels.mountpoint }} fills within 24 h at its rate of the last 6 h", remedy: "find what grows (a switch's export and import take about twice the geth datadir, docs/spec.md §8); free space or grow the volume before it is full",
            cases: [
                { name: "1 GB less every 30 s from 500 GB fires", series: [{ series: sel("node_filesystem_avail_bytes", fs("/")), values: `${500 * GB}-${GB}x200` }], at: "90m", firing: [fs("/")] },
                { name: "a steady disk stays quiet", series: [{ series: sel("node_filesystem_avail_bytes", fs("/")), values: `${500 * GB}x200` }], at: "90m", firing: [] },
            ],
        },
        {
            alert: "NodefleetMemoryLow", group: "nodefleet-hosts", for: "10m", severity: "error",
            expr: `node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < 0.05`,
            summary: "less than 5% of its memory is available", remedy: "see what uses it (the node services' MemoryCurrent); the roles' memory targets are in docs/roles.md",
            cases: [
                { name: "2% available fires", series: [{ series: sel("node_memory_MemAvailable_bytes", host), values: `${0.02 * 32 * GB}x40` }, { series: sel("node_memory_MemTotal_bytes", host), values: `${32 * GB}x40` }], at: "15m", firing: [host] },
                { name: "40% available stays quiet", series: [{ series: sel("node_memory_MemAvailable_bytes", host), values: `${0.4 * 32 * GB}x40` }, { series: sel("node_memory_MemTotal_bytes", host), values: `${32 * GB}x40` }], at: "15m", firing: [] },
            ],
        },
        {
            alert: "NodefleetUnitFailed", group: "nodefleet-hosts", for: "1m", severity: "error",
            expr: `node_systemd_unit_state{state="failed"} == 1`,
            summary: "the unit {{ $labels.name }} has failed", remedy: "journalctl -u {{ $labels.name }} says why; a node service that failed is restarted by `systemctl restart`, a nodefleet step's unit by the next `pulumi up`",
            cases: [
                { name: "a failed unit fires", series: [{ series: sel("node_systemd_unit_state", { ...host, name: "zgs-node-a.service", state: "failed", type: "simple" }), values: "1x10" }], at: "4m", firing: [{ ...host, name: "zgs-node-a.service", state: "failed", type: "simple" }] },
                { name: "an active unit stays quiet", series: [{ series: sel("node_systemd_unit_state", { ...host, name: "zgs-node-a.service", state: "failed", type: "simple" }), values: "0x10" }], at: "4m", firing: [] },
            ],
        },
        {
            alert: "NodefleetClockNotSynchronised", group: "nodefleet-hosts", for: "10m", severity: "warning",
            expr: `max_over_time(node_timex_sync_status[5m]) == 0`,
            summary: "its clock is not synchronised (chrony)", remedy: "chronyc tracking; chronyc sources (the hosts run chrony, installed by nodefleet's bootstrap); a validator with a wrong clock misses its rounds",
            cases: [
                { name: "unsynchronised for 15 minutes fires", series: [{ series: sel("node_timex_sync_status", host), values: "0x40" }], at: "16m", firing: [host] },
                { name: "synchronised stays quiet", series: [{ series: sel("node_timex_sync_status", host), values: "1x40" }], at: "16m", firing: [] },
            ],
        },
    ];
}

/** Every alert: one per diagnosis code, then the history and host alerts. */
export function alertRules(ctx: RuleContext): AlertRule[] {
    return [...FAULTS.map(faultRule), ...historyRules(ctx)];
}

/** "<node> on <host>: …" for node alerts, "<host>: …" for host alerts. */
function summaryTemplate(r: AlertRule): string {
    const who = r.group === "nodefleet-hosts" && r.alert !== "NodefleetMetricsDown" ? "{{ $labels.host }}" : "{{ $labels.node }} on {{ $labels.host }}";
    return `${who}: ${r.summary}`;
}

function annotations(r: AlertRule, ctx: RuleContext): Record<string, string> {
    return { summary: summaryTemplate(r), remedy: r.remedy, status: `nodefleet status --stack ${ctx.stack}`, ...(r.code ? { code: r.code } : {}) };
}

/** The rule file (Prometheus 2.x YAML). */
export function renderRules(ctx: RuleContext): string {
    const rules = alertRules(ctx);
    const groups = ["nodefleet-nodes", "nodefleet-switch", "nodefleet-hosts"].map((name) => ({
        name,
        rules: rules.filter((r) => r.group === name).map((r) => ({ alert: r.alert, expr: r.expr, for: r.for, labels: { severity: r.severity }, annotations: annotations(r, ctx) })),
    }));
    return `# nodefleet's alert rules, generated by nodefleet (components/monitoring/rules.ts): do not edit.\n${stringify({ groups }, { lineWidth: 0 })}`;
}

/** A template's text with the labels put in, as Prometheus expands `{{ $labels.x }}`. */
function expand(template: string, labels: Record<string, string>): string {
    return template.replace(/\{\{ \$labels\.([a-z_]+) \}\}/g, (_, k: string) => labels[k] ?? "");
}

/** The promtool unit tests of the rule file `ruleFile`: every case of every alert (or of those `only` takes). */
export function renderRuleTests(ctx: RuleContext, ruleFile: string, only: (alert: string) => boolean = () => true): string {
    const tests = alertRules(ctx).filter((r) => only(r.alert)).flatMap((r) =>
        r.cases.map((c) => ({
            name: `${r.alert}: ${c.name}`,
            interval: TEST_INTERVAL,
            input_series: c.series.map((s) => ({ series: s.series, values: s.values })),
            alert_rule_test: [
                {
                    eval_time: c.at,
                    alertname: r.alert,
                    exp_alerts: c.firing.map((labels) => {
                        const all = { ...labels, severity: r.severity };
                        return { exp_labels: all, exp_annotations: Object.fromEntries(Object.entries(annotations(r, ctx)).map(([k, v]) => [k, expand(v, all)])) };
                    }),
                },
            ],
        })),
    );
    return `# promtool test rules: generated by nodefleet (components/monitoring/rules.ts).\n${stringify({ rule_files: [ruleFile], evaluation_interval: TEST_INTERVAL, tests }, { lineWidth: 0 })}`;
}
