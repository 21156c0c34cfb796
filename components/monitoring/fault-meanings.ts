// What each diagnosis code means, for operators: the prose of docs/faults.md, which takes each
// code's severity, alert and remedy from hostfiles/faults.json. Kept out of that file, which every
// host installs: a change of wording here reaches no host and runs no step again.

/** Every code of hostfiles/faults.json, and no other (the docs page refuses a code without one). */
export const FAULT_MEANINGS: Readonly<Record<string, string>> = {
    "host-unreachable": "SSH to the host failed or timed out; nothing on it was checked",
    "check-failed": "a node's check did not answer: missing, failed or not JSON (host tools older than this nodefleet: `pulumi up`)",
    "service-down": "the node's unit (for a validator: 0gchaind or its execution client) is not active",
    "rpc-endpoint-down":
        'storage: `blockchain_rpc_endpoint` does not answer `eth_blockNumber` (docs/spec.md §7: the local block does not increase). zgs_node v1.1.0 does not even start then: it exits ("Unable to get chain id") and systemd restarts it every 5 s, which the detail says',
    "miner-unfunded":
        "storage: the node's last start failed because the miner key's account cannot pay for its miner id registration (zgs_node sends that transaction at start and exits, \"insufficient funds\")",
    "miner-registration-failed":
        "storage: the miner id registration found no miner id in its receipt: `mineContractAddress` is not the chain's PoRA mine contract",
    "storage-start-failed":
        "storage: the node's last start failed for another reason, named from its log (`zgs.log.<date>`, URLs cut to scheme://host[:port])",
    "storage-rpc-down": "storage: the service runs but `zgs_getStatus` does not answer (and its log names no failed start)",
    "not-synced":
        "storage: 5 or more blocks behind the chain head less the node's `confirmation_block_count` (3: it syncs the log only that far; docs/spec.md §8)",
    "height-not-increasing": "storage: behind, and `logSyncHeight` did not grow since the previous check (at least 10 s before)",
    "storage-peers-0": "storage: `connectedPeers` is 0 (docs/spec.md §7: known, often ignorable)",
    "l1-endpoint-down":
        "sequencer: its log says `HTTP request failed` for an L1 RPC within the last 90 s (4.1.2 runs on without its L1, and exits at start without it: a restart loop)",
    "sequencer-rpc-down": "sequencer: `node_getL2Tips` does not answer on 8080",
    "sibling-path-missing":
        "sequencer: the archive has no sibling path for the proven block (2.0.x `node_getArchiveSiblingPath`; 4.1.2 `node_getBlockHashMembershipWitness`)",
    "no-peer-id": "sequencer: no `Started P2P service` line with a peerId in this boot's journal",
    "no-execution-client": "validator: neither a geth nor a reth datadir on the host, and no switch state",
    "execution-rpc-down": "validator: the execution client runs but its HTTP RPC does not answer",
    "consensus-rpc-down": "validator: 0gchaind runs but `/status` gives no `sync_info`",
    "forkchoice-38002":
        "docs/spec.md §7: 0gchaind ahead of the execution client: it logs `-38002 Invalid forkchoice state`, or, for the `SYNCING` that the real reth 1.11 (and geth) answer for a head they lack, BeaconKit's `Received accepted syncing payload status` and `failed to prepare proposal … received nil payload ID` (older beacon-kit: `NotifyForkchoiceUpdate: EL syncing`)",
    "jwt-mismatch": "docs/spec.md §7: the execution client and 0gchaind read different JWT files",
    "engine-unreachable":
        "the consensus daemon has logged `Waiting for execution client to start` five times (15 s) without a commit since: BeaconKit says only this for a stopped execution client, a wrong engine port and a JWT it refuses alike",
    "missing-priv-validator-state": "docs/spec.md §7: `data/priv_validator_state.json` is missing in the consensus home",
    "catching-up": "0gchaind reports `catching_up: true`: it does not sign yet",
    "key-running-twice": "more than one 0gchaind with this validator key on the host",
    "reth-no-peers": "docs/spec.md §7: reth has no peers (expected at first: it cannot peer with geth nodes)",
    "execution-behind": "the execution client is 5 or more blocks behind `referenceRpcUrl`",
    "reference-down": "`referenceRpcUrl` does not answer: the lag is unknown",
    "switch-incomplete": "a geth → reth switch stopped part-way and nothing of it runs",
    "upgrade-pending":
        "validator: an upgrade at a height (`validator.upgrade`) is armed on the host: its release staged, its watcher running; the detail gives the blocks left",
    "upgrade-not-ready":
        "validator: an upgrade at a height is configured but the host is not ready for it (release not staged, watcher not running, or not armed)",
    "not-committing":
        "validator, at a rollout gate: it answered healthy through the soak but its consensus daemon committed no height by `healthyWithinSeconds`",
    "upgrade-overdue":
        "validator: the node's committed height is past its upgrade height and it still runs the release it was to leave (its watcher was down, or saw the node only past the height)",
};
