// Every diagnosis code `nodefleet status` prints and the health timer writes as
// nodefleet_diagnosis{code}, with what an alert on it says: its severity, how long it must last
// before it fires, its summary and the spec's remedy. The alert rules (rules.ts) are made from
// this table; a unit test holds it to the codes status/diagnose.ts reports and to the spec's
// error table (docs/spec.md §7).

export interface Fault {
    readonly code: string;
    readonly severity: "error" | "warning";
    /** How long it must last before the alert fires: long for what the spec calls expected or ignorable. */
    readonly for: string;
    /** What the alert says, after "<node> on <host>: ". */
    readonly summary: string;
    readonly remedy: string;
    /** The row of docs/spec.md §7's error table it is, when it is one. */
    readonly specRow?: string;
}

export const FAULTS: readonly Fault[] = [
    { code: "check-failed", severity: "error", for: "2m", summary: "its health tool does not answer", remedy: "run `pulumi up` (it installs the host tools this nodefleet expects); the health timer's journal says what failed (journalctl -u nodefleet-health.service)" },
    { code: "service-down", severity: "error", for: "2m", summary: "its service is not active", remedy: "systemctl start the unit; its journal (journalctl -u <unit>) says why it stopped" },
    { code: "rpc-endpoint-down", severity: "error", for: "2m", summary: "the storage node's blockchain_rpc_endpoint does not answer", remedy: "check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart (the failover timer moves to the next endpoint of rpcEndpoints that answers, every minute; add one if none does)", specRow: "Storage local block does not increase" },
    { code: "miner-unfunded", severity: "error", for: "2m", summary: "the storage node exits at start: its miner key's account cannot pay for its miner id registration", remedy: "fund the miner key's account on the 0G chain" },
    { code: "miner-registration-failed", severity: "error", for: "2m", summary: "the storage node's miner id registration found no miner id", remedy: "set mineContractAddress to the chain's PoRA mine contract and run `pulumi up`" },
    { code: "storage-start-failed", severity: "error", for: "5m", summary: "the storage node's last start failed", remedy: "fix what its log names (config.toml, mineContractAddress, …), `pulumi up`; journalctl -u zgs-<node>.service" },
    { code: "storage-rpc-down", severity: "error", for: "2m", summary: "the storage node runs but zgs_getStatus does not answer", remedy: "journalctl -u zgs-<node>.service; restart it" },
    { code: "not-synced", severity: "error", for: "10m", summary: "the storage node is 5 or more blocks behind the chain head (docs/spec.md §8: synced is fewer than 5)", remedy: "wait while it catches up; if its height does not grow, the RPC endpoint is probably down (see rpc-endpoint-down)" },
    { code: "height-not-increasing", severity: "error", for: "5m", summary: "the storage node is behind and its log sync height does not grow", remedy: "the RPC endpoint is probably down: check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart", specRow: "Storage local block does not increase" },
    { code: "storage-peers-0", severity: "warning", for: "1h", summary: "the storage node has no peers", remedy: "set network_boot_nodes (networkBootNodes, with networkEnrAddress) and restart; a known issue, often ignorable", specRow: "Storage node peers are 0" },
    { code: "l1-endpoint-down", severity: "error", for: "2m", summary: "the sequencer cannot reach its L1 RPC", remedy: "check it with eth_blockNumber; fix or replace it in l1RpcUrls and run `pulumi up`" },
    { code: "sequencer-rpc-down", severity: "error", for: "2m", summary: "the sequencer's RPC (node_getL2Tips on 8080) does not answer", remedy: "start the service; journalctl -u aztec-<node>.service" },
    { code: "sibling-path-missing", severity: "error", for: "10m", summary: "the sequencer's archive has no sibling path for its proven block", remedy: "the archiver has not synced that block: wait; check the L1 endpoints if it stays" },
    { code: "no-peer-id", severity: "error", for: "5m", summary: "the sequencer's P2P service has not started (no peerId in this boot's journal)", remedy: "journalctl -u aztec-<node>.service; port 40400 TCP and UDP must be open" },
    { code: "no-execution-client", severity: "error", for: "2m", summary: "the validator has no execution client set up", remedy: "run `pulumi up` (it sets the node up)" },
    { code: "execution-rpc-down", severity: "error", for: "2m", summary: "the validator's execution client runs but its HTTP RPC does not answer", remedy: "journalctl -u geth-<node>.service or reth-<node>.service" },
    { code: "consensus-rpc-down", severity: "error", for: "2m", summary: "the consensus daemon runs but its /status does not answer", remedy: "journalctl -u 0gchaind-<node>.service" },
    { code: "forkchoice-38002", severity: "error", for: "2m", summary: "the consensus daemon's head is not on the execution client (-38002 Invalid forkchoice state, or the execution client answers SYNCING)", remedy: "stop the consensus daemon, wait for the execution client to reach the chain head, run the height rollback script, start it again (`pulumi up` runs this remedy)", specRow: "-38002 Invalid forkchoice state" },
    { code: "jwt-mismatch", severity: "error", for: "2m", summary: "Engine API errors between the clients: their JWT secret files differ", remedy: "use the same JWT file for both (`pulumi up` renders both units with one), then restart both", specRow: "Engine API errors between execution and consensus" },
    { code: "engine-unreachable", severity: "error", for: "2m", summary: "the consensus daemon keeps waiting for the execution client's engine API", remedy: "is the execution client running, on <prefix>551, with the same JWT file? (jwt-mismatch tells the last apart)", specRow: "Engine API errors between execution and consensus" },
    { code: "missing-priv-validator-state", severity: "error", for: "0m", summary: "data/priv_validator_state.json is missing in the consensus home: the consensus daemon does not start without it", remedy: "create data/priv_validator_state.json in the consensus home with the content {} (`pulumi up` does, before it starts the consensus daemon)", specRow: "missing priv_validator_state.json" },
    { code: "catching-up", severity: "error", for: "10m", summary: "the consensus daemon is catching_up: it does not sign until it is caught up", remedy: "wait; if it stays, check the execution client's height and peers" },
    { code: "key-running-twice", severity: "error", for: "0m", summary: "more than one consensus daemon runs with this validator key on the host", remedy: "stop all but the service's own one now: one key must never sign twice" },
    { code: "reth-no-peers", severity: "warning", for: "2h", summary: "reth has no peers", remedy: "expected at first (reth cannot peer with geth nodes): wait; make sure <prefix>303 is open on TCP and UDP", specRow: "Rust client has no peers" },
    { code: "execution-behind", severity: "warning", for: "15m", summary: "the execution client is 5 or more blocks behind referenceRpcUrl", remedy: "wait while it syncs; check its peers" },
    { code: "reference-down", severity: "warning", for: "15m", summary: "referenceRpcUrl does not answer: the validator's lag is unknown", remedy: "check the reference endpoint" },
    { code: "switch-incomplete", severity: "warning", for: "15m", summary: "a geth -> reth switch stopped part-way and nothing of it runs", remedy: "read the switch's report (`nodefleet status`); `pulumi up` resumes it, or set switch: rollback. An import that broke (block number X does not match parent block number Y) is re-trimmed from Y+1 and re-imported by the next `up`; a mismatched block state root is reported with the block number and both roots, never skipped", specRow: "block number X does not match parent block number Y" },
];

/**
 * docs/spec.md §7's rows, each with the alert that shows it, or why no metric can. The state-root mismatch
 * stops the switch (switch-incomplete says so, with the spec's remedy); its numbers are in the switch's
 * report, not in a metric.
 */
export const SPEC_ERROR_ROWS: readonly { readonly row: string; readonly codes: readonly string[]; readonly note?: string }[] = [
    { row: "-38002 Invalid forkchoice state", codes: ["forkchoice-38002"] },
    { row: "Engine API errors between execution and consensus", codes: ["jwt-mismatch", "engine-unreachable"] },
    { row: "block number X does not match parent block number Y", codes: ["switch-incomplete"], note: "the import's retries re-trim from Y+1 by themselves; an import that makes no progress is NodefleetSwitchImportStalled" },
    { row: "mismatched block state root", codes: ["switch-incomplete"], note: "the switch stops on it (never skips the block): switch-incomplete fires, and the report names the block and both roots; the roots are not metrics" },
    { row: "missing priv_validator_state.json", codes: ["missing-priv-validator-state"] },
    { row: "Rust client has no peers", codes: ["reth-no-peers"], note: "a warning that waits 2 h: the spec calls it expected at first" },
    { row: "Storage node peers are 0", codes: ["storage-peers-0"], note: "a warning that waits 1 h: the spec calls it often ignorable" },
    { row: "Storage local block does not increase", codes: ["rpc-endpoint-down", "height-not-increasing"], note: "and NodefleetHeightStalled, from the height's history" },
];
