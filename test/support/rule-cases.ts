// The promtool unit tests of nodefleet's alert rules (components/monitoring/rules.ts): for each
// alert, series that fire it and series that keep it quiet, and the test file promtool runs
// (`promtool test rules`, in the cli tier; its golden copy in the unit tier).
import { stringify } from "yaml";
import { alertRules, annotations, type AlertRule, type RuleContext } from "../../components/monitoring/rules";

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

/** The scrape interval every case's series are given at. */
export const TEST_INTERVAL = "30s";

const NODE = { host: "host-a", instance: "10.0.0.1:9100", job: "node", node: "node-a" };
const sel = (metric: string, labels: Record<string, string>) => `${metric}{${Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}}`;

function minutes(duration: string): number {
    const m = /^(\d+)([smh])$/.exec(duration);
    if (!m) throw new Error(`a duration of minutes, seconds or hours: ${duration}`);
    return Number(m[1]) * { s: 1 / 60, m: 1, h: 60 }[m[2] as "s" | "m" | "h"];
}

/** An alert on a diagnosis code: written for its `for` fires, another code or a shorter time does not. */
function faultCases(r: AlertRule & { readonly code: string }): AlertCase[] {
    const labels = { ...NODE, role: "validator", code: r.code, severity: r.severity };
    const wait = minutes(r.for);
    const samples = Math.round(wait * 2) + 4;
    const cases: AlertCase[] = [
        { name: `${r.code} written for ${r.for} fires`, series: [{ series: sel("nodefleet_diagnosis", labels), values: `1x${samples}` }], at: `${samples / 2}m`, firing: [labels] },
        { name: "another code leaves it quiet", series: [{ series: sel("nodefleet_diagnosis", { ...labels, code: "some-other-code" }), values: `1x${samples}` }], at: `${samples / 2}m`, firing: [] },
        { name: "gone after the repair: resolved", series: [{ series: sel("nodefleet_diagnosis", labels), values: `1x${samples} stale` }], at: `${samples / 2 + 1}m`, firing: [] },
    ];
    if (wait >= 1) cases.push({ name: `for less than ${r.for}: quiet`, series: [{ series: sel("nodefleet_diagnosis", labels), values: `_x4 1x${Math.round(wait * 2) - 2}` }], at: `${2 + wait - 1}m`, firing: [] });
    return cases;
}

/** The cases of the alerts that need a history, and the host's, by alert. */
function historyCases(ctx: RuleContext): Record<string, AlertCase[]> {
    const storage = { ...NODE, role: "storage" };
    const validator = { ...NODE, role: "validator" };
    const host = { host: NODE.host, instance: NODE.instance, job: "node" };
    const mounts = ["/", ...ctx.mounts.filter((m) => m !== "/")];
    const fs = (mountpoint: string) => ({ ...host, device: "/dev/vdb", fstype: "ext4", mountpoint });
    const data = fs(mounts[mounts.length - 1]!);
    const GB = 1e9;
    const unit = { ...host, name: "zgs-node-a.service", state: "failed", type: "simple" };
    return {
        NodefleetHeightStalled: [
            { name: "a height that stays fires", series: [{ series: sel("nodefleet_node_height", storage), values: "100x60" }, { series: sel("nodefleet_node_service_up", storage), values: "1x60" }], at: "25m", firing: [storage] },
            { name: "a height that grows stays quiet", series: [{ series: sel("nodefleet_node_height", storage), values: "100+1x60" }, { series: sel("nodefleet_node_service_up", storage), values: "1x60" }], at: "25m", firing: [] },
            { name: "a stopped service is service-down's, not this", series: [{ series: sel("nodefleet_node_height", validator), values: "100x60" }, { series: sel("nodefleet_node_service_up", validator), values: "0x60" }], at: "25m", firing: [] },
            { name: "no history yet (10 minutes): quiet", series: [{ series: sel("nodefleet_node_height", storage), values: "100x16" }, { series: sel("nodefleet_node_service_up", storage), values: "1x16" }], at: "8m", firing: [] },
        ],
        NodefleetSwitchImportStalled: [
            { name: "an import that stays at one block fires", series: [{ series: sel("nodefleet_switch_job_done_blocks", { ...validator, job: "import" }), values: "5000x60" }], at: "25m", firing: [{ ...validator, job: "import" }] },
            { name: "an import that moves stays quiet", series: [{ series: sel("nodefleet_switch_job_done_blocks", { ...validator, job: "import" }), values: "5000+100x60" }], at: "25m", firing: [] },
        ],
        NodefleetHealthStale: [
            { name: "a timestamp that stops fires", series: [{ series: sel("nodefleet_health_last_run_timestamp_seconds", host), values: "0+30x10 300x40" }], at: "20m", firing: [host] },
            { name: "a timestamp that follows the clock stays quiet", series: [{ series: sel("nodefleet_health_last_run_timestamp_seconds", host), values: "0+30x50" }], at: "20m", firing: [] },
        ],
        NodefleetHostDown: [
            { name: "a target that does not answer fires", series: [{ series: sel("up", host), values: "1x4 0x10" }], at: "6m", firing: [host] },
            { name: "a target that answers stays quiet", series: [{ series: sel("up", host), values: "1x20" }], at: "6m", firing: [] },
        ],
        NodefleetMetricsDown: [
            { name: "a node's endpoint that does not answer fires", series: [{ series: sel("up", { ...NODE, job: "execution", role: "validator" }), values: "0x20" }], at: "8m", firing: [{ ...NODE, job: "execution", role: "validator" }] },
            { name: "node_exporter's own target is NodefleetHostDown's", series: [{ series: sel("up", host), values: "0x20" }], at: "8m", firing: [] },
        ],
        NodefleetDiskAlmostFull: [
            { name: "5% free fires", series: [{ series: sel("node_filesystem_avail_bytes", data), values: `${5 * GB}x20` }, { series: sel("node_filesystem_size_bytes", data), values: `${100 * GB}x20` }], at: "8m", firing: [data] },
            { name: "50% free stays quiet", series: [{ series: sel("node_filesystem_avail_bytes", fs("/")), values: `${50 * GB}x20` }, { series: sel("node_filesystem_size_bytes", fs("/")), values: `${100 * GB}x20` }], at: "8m", firing: [] },
            { name: "another mount stays quiet", series: [{ series: sel("node_filesystem_avail_bytes", fs("/boot/efi")), values: `${1e6}x20` }, { series: sel("node_filesystem_size_bytes", fs("/boot/efi")), values: `${100 * GB}x20` }], at: "8m", firing: [] },
        ],
        NodefleetDiskFillsIn24h: [
            { name: "1 GB less every 30 s from 500 GB fires", series: [{ series: sel("node_filesystem_avail_bytes", fs("/")), values: `${500 * GB}-${GB}x200` }], at: "90m", firing: [fs("/")] },
            { name: "a steady disk stays quiet", series: [{ series: sel("node_filesystem_avail_bytes", fs("/")), values: `${500 * GB}x200` }], at: "90m", firing: [] },
        ],
        NodefleetMemoryLow: [
            { name: "2% available fires", series: [{ series: sel("node_memory_MemAvailable_bytes", host), values: `${0.02 * 32 * GB}x40` }, { series: sel("node_memory_MemTotal_bytes", host), values: `${32 * GB}x40` }], at: "15m", firing: [host] },
            { name: "40% available stays quiet", series: [{ series: sel("node_memory_MemAvailable_bytes", host), values: `${0.4 * 32 * GB}x40` }, { series: sel("node_memory_MemTotal_bytes", host), values: `${32 * GB}x40` }], at: "15m", firing: [] },
        ],
        NodefleetUnitFailed: [
            { name: "a failed unit fires", series: [{ series: sel("node_systemd_unit_state", unit), values: "1x10" }], at: "4m", firing: [unit] },
            { name: "an active unit stays quiet", series: [{ series: sel("node_systemd_unit_state", unit), values: "0x10" }], at: "4m", firing: [] },
        ],
        NodefleetClockNotSynchronised: [
            { name: "unsynchronised for 15 minutes fires", series: [{ series: sel("node_timex_sync_status", host), values: "0x40" }], at: "16m", firing: [host] },
            { name: "synchronised stays quiet", series: [{ series: sel("node_timex_sync_status", host), values: "1x40" }], at: "16m", firing: [] },
        ],
    };
}

/** Each alert's cases (none for an alert the cases above do not know: the unit tier fails on that). */
export function ruleCases(ctx: RuleContext): Map<AlertRule, AlertCase[]> {
    const history = historyCases(ctx);
    return new Map(alertRules(ctx).map((r) => [r, r.code !== undefined ? faultCases({ ...r, code: r.code }) : (history[r.alert] ?? [])]));
}

/** A template's text with the labels put in, as Prometheus expands `{{ $labels.x }}`. */
function expand(template: string, labels: Record<string, string>): string {
    return template.replace(/\{\{ \$labels\.([a-z_]+) \}\}/g, (_, k: string) => labels[k] ?? "");
}

/** The promtool unit tests of the rule file `ruleFile`: every case of every alert (or of those `only` takes). */
export function renderRuleTests(ctx: RuleContext, ruleFile: string, only: (alert: string) => boolean = () => true): string {
    const tests = [...ruleCases(ctx)].filter(([r]) => only(r.alert)).flatMap(([r, cases]) =>
        cases.map((c) => ({
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
    return `# promtool test rules: generated by nodefleet's tests (test/support/rule-cases.ts).\n${stringify({ rule_files: [ruleFile], evaluation_interval: TEST_INTERVAL, tests }, { lineWidth: 0 })}`;
}
