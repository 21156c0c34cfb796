// The fleet's Grafana dashboard, generated from this file (dashboards/nodefleet-fleet.json, kept
// current by the docs test): each node's health, height, lag, peers and active diagnoses from the
// health timer's metrics (hostfiles/nodefleet_health.py METRICS), the validators' consensus and
// switch, and each host's CPU, memory and disks from node_exporter. Importable into Grafana
// (Dashboards > Import), which asks for the Prometheus data source. The `host` variable filters
// every panel; every panel's query is run against a real Prometheus by the cli tier.

/** Where the generated dashboard is kept, from the repository's root. */
export const DASHBOARD_FILE = "dashboards/nodefleet-fleet.json";

type Kind = "stat" | "table" | "timeseries";

interface Panel {
    readonly title: string;
    readonly kind: Kind;
    readonly description: string;
    /** PromQL; `$host` and `$__rate_interval` are Grafana's. */
    readonly expr: string;
    readonly legend?: string;
    readonly unit?: string;
    /** Width in Grafana's 24 columns. */
    readonly width: number;
}

const HOST = 'host=~"$host"';
// Disks node_exporter sees that are not memory.
const DISKS = `${HOST},fstype!~"tmpfs|ramfs|devtmpfs|overlay|squashfs"`;

const ROWS: readonly { title: string; panels: readonly Panel[] }[] = [
    {
        title: "Nodes",
        panels: [
            {
                title: "Unhealthy nodes",
                kind: "stat",
                width: 4,
                expr: `count(nodefleet_node_healthy{${HOST}} == 0) or vector(0)`,
                description: "Nodes with a diagnosis of severity error: what `nodefleet status` calls unhealthy.",
            },
            {
                title: "Active diagnoses",
                kind: "table",
                width: 20,
                expr: `nodefleet_diagnosis{${HOST}} == 1`,
                description:
                    "One row per diagnosis, with the code and severity `nodefleet status` prints; its remedy is in the alert and in `nodefleet status`.",
            },
            {
                title: "Height",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_node_height{${HOST}}`,
                legend: "{{node}}",
                unit: "none",
                description: "Storage: log sync height; sequencer: proven L2 block; validator: the execution client's height.",
            },
            {
                title: "Lag to the network head",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_node_lag_blocks{${HOST}}`,
                legend: "{{node}}",
                unit: "none",
                description: "Blocks behind the head the health tool compares with (storage: 5 or more is not synced, docs/spec.md §8).",
            },
            {
                title: "Peers",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_node_peers{${HOST}}`,
                legend: "{{node}}",
                unit: "none",
                description: "Storage: connectedPeers; validator: the execution client's peers.",
            },
            {
                title: "Service up",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_node_service_up{${HOST}}`,
                legend: "{{node}}",
                unit: "bool",
                description: "1 while the node's service runs (a validator: its consensus daemon and its execution client).",
            },
            {
                title: "Health metrics age",
                kind: "timeseries",
                width: 8,
                expr: `time() - nodefleet_health_last_run_timestamp_seconds{${HOST}}`,
                legend: "{{host}}",
                unit: "s",
                description:
                    "Seconds since the host's health timer last wrote its metrics; older than three runs raises NodefleetHealthStale.",
            },
            {
                title: "Sequencer: latest L2 block",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_sequencer_latest_block{${HOST}}`,
                legend: "{{node}}",
                unit: "none",
                description: "The newest L2 block the sequencer has (its proven block is under Height).",
            },
        ],
    },
    {
        title: "Validators",
        panels: [
            {
                title: "Consensus height",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_validator_consensus_height{${HOST}}`,
                legend: "{{node}}",
                unit: "none",
                description: "The consensus daemon's latest block height (/status).",
            },
            {
                title: "Catching up",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_validator_catching_up{${HOST}}`,
                legend: "{{node}}",
                unit: "bool",
                description: "1 while the consensus daemon reports catching_up true.",
            },
            {
                title: "Switch progress",
                kind: "timeseries",
                width: 8,
                expr: `nodefleet_switch_steps_done{${HOST}} / nodefleet_switch_steps{${HOST}}`,
                legend: "{{node}} {{mode}}",
                unit: "percentunit",
                description: "The geth to reth switch on record: its steps done, of its mode's.",
            },
        ],
    },
    {
        title: "Hosts",
        panels: [
            {
                title: "CPU busy",
                kind: "timeseries",
                width: 8,
                expr: `1 - avg by (host) (rate(node_cpu_seconds_total{${HOST},mode="idle"}[$__rate_interval]))`,
                legend: "{{host}}",
                unit: "percentunit",
                description: "Share of the host's CPU time not idle.",
            },
            {
                title: "Memory used",
                kind: "timeseries",
                width: 8,
                expr: `1 - node_memory_MemAvailable_bytes{${HOST}} / node_memory_MemTotal_bytes{${HOST}}`,
                legend: "{{host}}",
                unit: "percentunit",
                description: "Memory not available to new processes.",
            },
            {
                title: "Disk used",
                kind: "timeseries",
                width: 8,
                expr: `1 - node_filesystem_avail_bytes{${DISKS}} / node_filesystem_size_bytes{${DISKS}}`,
                legend: "{{host}} {{mountpoint}}",
                unit: "percentunit",
                description: "Per mount; a switch needs twice the geth datadir free (NodefleetDiskFillsIn24h looks 24 h ahead).",
            },
        ],
    },
];

/** Every panel's title and query, in order (what the cli tier runs against Prometheus). */
export function dashboardQueries(): { title: string; expr: string }[] {
    return ROWS.flatMap((r) => r.panels.map((p) => ({ title: p.title, expr: p.expr })));
}

const DATASOURCE = { type: "prometheus", uid: "${DS_PROMETHEUS}" };

function panel(p: Panel, id: number, x: number, y: number): Record<string, unknown> {
    const target = {
        refId: "A",
        datasource: DATASOURCE,
        expr: p.expr,
        legendFormat: p.legend ?? "",
        ...(p.kind === "timeseries" ? { range: true } : { instant: true, format: p.kind === "table" ? "table" : "time_series" }),
    };
    return {
        id,
        type: p.kind,
        title: p.title,
        description: p.description,
        datasource: DATASOURCE,
        gridPos: { h: 8, w: p.width, x, y },
        targets: [target],
        fieldConfig: { defaults: p.unit ? { unit: p.unit } : {}, overrides: [] },
        options: p.kind === "table" ? { showHeader: true } : {},
    };
}

/** The rows and their panels laid out on Grafana's 24-column grid, each row under its header. */
function layoutPanels(): Record<string, unknown>[] {
    const panels: Record<string, unknown>[] = [];
    let id = 1;
    let y = 0;
    for (const row of ROWS) {
        panels.push({ id: id++, type: "row", title: row.title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
        y += 1;
        let x = 0;
        for (const p of row.panels) {
            if (x + p.width > 24) {
                x = 0;
                y += 8;
            }
            panels.push(panel(p, id++, x, y));
            x += p.width;
        }
        y += 8;
    }
    return panels;
}

/** The dashboard, as Grafana's JSON model (schema 39, Grafana 10/11). */
export function renderDashboard(): string {
    const dashboard = {
        __inputs: [
            {
                name: "DS_PROMETHEUS",
                label: "Prometheus",
                description: "The monitoring host's Prometheus",
                type: "datasource",
                pluginId: "prometheus",
                pluginName: "Prometheus",
            },
        ],
        __requires: [{ type: "datasource", id: "prometheus", name: "Prometheus", version: "1.0.0" }],
        uid: "nodefleet-fleet",
        title: "nodefleet: fleet",
        description: "Generated by nodefleet (components/monitoring/dashboard.ts): do not edit by hand.",
        tags: ["nodefleet"],
        editable: true,
        schemaVersion: 39,
        version: 1,
        time: { from: "now-6h", to: "now" },
        refresh: "30s",
        templating: {
            list: [
                {
                    name: "host",
                    label: "Host",
                    type: "query",
                    datasource: DATASOURCE,
                    definition: 'label_values(up{job="node"}, host)',
                    query: { query: 'label_values(up{job="node"}, host)', refId: "host" },
                    refresh: 2,
                    includeAll: true,
                    multi: true,
                    allValue: ".*",
                    current: { text: "All", value: "$__all" },
                    sort: 1,
                },
            ],
        },
        annotations: { list: [] },
        panels: layoutPanels(),
    };
    return `${JSON.stringify(dashboard, null, 2)}\n`;
}
