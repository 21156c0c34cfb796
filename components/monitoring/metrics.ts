// The metrics nodefleet's health timer writes on every host (node_exporter's textfile collector),
// one catalogue for the writer's contract test, the alert rules and the dashboard. Each node's
// series carry `node` and `role`; Prometheus adds the scrape target's `host`.

export interface MetricSpec {
    readonly name: string;
    readonly help: string;
    /** Labels besides node and role (and host, from the target). */
    readonly labels: readonly string[];
    /** The roles whose nodes have it; empty: per host, not per node. */
    readonly roles: readonly ("storage" | "sequencer" | "validator")[];
}

const ALL = ["storage", "sequencer", "validator"] as const;

export const HEALTH_METRICS: readonly MetricSpec[] = [
    { name: "nodefleet_health_last_run_timestamp_seconds", help: "When the host's health timer last wrote these metrics (Unix time).", labels: [], roles: [] },
    { name: "nodefleet_node_check_ok", help: "1 when the node's health tool answered, 0 when it failed (then the diagnosis check-failed).", labels: [], roles: ALL },
    { name: "nodefleet_node_service_up", help: "1 when the node's service (a validator: its consensus daemon and execution client) is active.", labels: [], roles: ALL },
    { name: "nodefleet_node_healthy", help: "1 when the node has no diagnosis of severity error (what nodefleet status calls healthy).", labels: [], roles: ALL },
    { name: "nodefleet_node_height", help: "Storage: log sync height; sequencer: proven L2 block; validator: execution client height.", labels: [], roles: ALL },
    { name: "nodefleet_node_head", help: "The network head the lag is measured against: storage, its chain endpoint's head less confirmations; validator, referenceRpcUrl's.", labels: [], roles: ["storage", "validator"] },
    { name: "nodefleet_node_lag_blocks", help: "Blocks behind the network head.", labels: [], roles: ["storage", "validator"] },
    { name: "nodefleet_node_peers", help: "Connected peers (storage: connectedPeers; validator: the execution client's).", labels: [], roles: ["storage", "validator"] },
    { name: "nodefleet_storage_synced", help: "1 when the storage node is fewer than 5 blocks behind (seed 8).", labels: [], roles: ["storage"] },
    { name: "nodefleet_sequencer_latest_block", help: "The newest L2 block the sequencer has.", labels: [], roles: ["sequencer"] },
    { name: "nodefleet_sequencer_sibling_path_ok", help: "1 when the archive gives a sibling path for the proven block.", labels: [], roles: ["sequencer"] },
    { name: "nodefleet_sequencer_peer_id_known", help: "1 when this boot's journal names the node's P2P peerId.", labels: [], roles: ["sequencer"] },
    { name: "nodefleet_validator_consensus_height", help: "The consensus daemon's latest block height (/status).", labels: [], roles: ["validator"] },
    { name: "nodefleet_validator_catching_up", help: "1 while the consensus daemon reports catching_up true.", labels: [], roles: ["validator"] },
    { name: "nodefleet_validator_execution_client", help: "1 for the execution client the validator runs (label client: geth or reth).", labels: ["client"], roles: ["validator"] },
    { name: "nodefleet_switch_steps_done", help: "Steps of the geth -> reth switch done (label mode: ordered or lowDowntime).", labels: ["mode"], roles: ["validator"] },
    { name: "nodefleet_switch_steps_total", help: "Steps of the switch in its mode.", labels: ["mode"], roles: ["validator"] },
    { name: "nodefleet_switch_complete", help: "1 when the switch on record has run all its steps.", labels: ["mode"], roles: ["validator"] },
    { name: "nodefleet_switch_job_done_blocks", help: "Blocks a running export or import of the switch has done (label job: its unit).", labels: ["job"], roles: ["validator"] },
    { name: "nodefleet_diagnosis", help: "1 per active diagnosis, with the code and severity nodefleet status prints.", labels: ["code", "severity"], roles: ALL },
];

/** The node_exporter collector flags nodefleet turns on: its units' states, its health metrics. */
export const NODE_EXPORTER_UNITS = "(zgs|aztec|0gchaind|geth|reth|nodefleet)-.+\\.(service|timer)";
