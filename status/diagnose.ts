// The diagnosis table of `nodefleet status`: what a node's health answer (the facts its host tool
// reads on the host: zgs-health.py, aztec-health.py, zg-validator.py status) means, as one row of
// the live table with the seed's error table applied (seed 7: condition -> remedy). Pure: the
// answers come in as recorded JSON, so each row of the table is unit-tested from one.

export type Role = "storage" | "sequencer" | "validator";

export interface Diagnosis {
    /** A stable name for monitoring rules (`rpc-endpoint-down`, `forkchoice-38002`, …). */
    readonly fault: string;
    /** error: the node is not doing its job (the command exits non-zero); warning: worth a look. */
    readonly severity: "error" | "warning";
    readonly detail: string;
    readonly remedy: string;
}

/** A running export or import of the switch, as the host tool's Meter last measured it. */
export interface JobProgress {
    readonly job: string;
    readonly done: number | null;
    readonly total: number | null;
    readonly percent: number | null;
    readonly rate: number | null;
    readonly etaSeconds: number | null;
    /** When the job's unit started and when these figures were measured (UTC); null when unknown. */
    readonly started: string | null;
    readonly at: string | null;
}

export interface SwitchProgress {
    readonly mode: string;
    readonly stepsDone: number;
    readonly steps: number;
    readonly lastStep: string | null;
    readonly complete: boolean;
    readonly running: JobProgress[];
}

export interface NodeRow {
    readonly node: string;
    readonly role: Role;
    readonly host: string;
    /** The node's service state: active, inactive, failed, … or unreachable / unknown. */
    readonly service: string;
    /** storage: log sync height; sequencer: proven L2 block; validator: execution client height. */
    readonly height: number | null;
    /** Blocks behind the network head: storage against its chain endpoint, validator against referenceRpcUrl. */
    readonly lag: number | null;
    readonly peers: number | null;
    readonly storage?: { readonly synced: boolean; readonly endpoint: string | null };
    /** latestBlock: the newest L2 block the node has (2.0.x latest, 4.1.2 proposed), null when its answer has none. */
    readonly sequencer?: {
        readonly provenBlock: number | null;
        readonly latestBlock: number | null;
        readonly siblingPath: boolean | null;
        readonly peerId: string | null;
        /** What L1 says of the validator: NONE, VALIDATING, …, `QUEUED #n`; unknown when L1 did not answer; null before any registration step. */
        readonly registration: string | null;
    };
    readonly validator?: {
        readonly client: string | null;
        readonly consensusHeight: number | null;
        readonly catchingUp: boolean | null;
        readonly switch: SwitchProgress | null;
    };
    readonly diagnoses: Diagnosis[];
    readonly healthy: boolean;
}

/** Storage: synced means fewer than this many blocks behind the chain head (seed 8). */
export const SYNCED_WITHIN = 5;
/** Storage: a height that did not grow over at least this long is "not increasing". */
export const INCREASING_OVER_SECONDS = 10;
/** Validator: the execution client this far behind the reference endpoint gets a warning. */
export const VALIDATOR_LAG_WARNING = 5;

// The seed's error table (seed 7) and the faults nodefleet adds, each with its remedy. Details
// are filled in from the answer; remedies are the seed's, made concrete for the node.
const REMEDY = {
    hostUnreachable: "check that the host is up and SSH reaches it (address, port, adminCidrs, key); nothing on it was checked",
    toolFailed: "run `pulumi up` (it installs the host tools this nodefleet expects), then look at the message",
    serviceDown: (unit: string) => `systemctl start ${unit}; journalctl -u ${unit} says why it stopped`,
    endpointDown: "check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart (the failover timer moves to the next endpoint of rpcEndpoints that answers, every minute; add one if none does)",
    notIncreasing: "the RPC endpoint is probably down: check it with eth_blockNumber, switch blockchain_rpc_endpoint, restart",
    storagePeers: "set network_boot_nodes (with networkEnrAddress) and restart; often ignorable",
    forkchoice: "stop 0gchaind, wait for the execution client to reach the chain head, run the height rollback script, start 0gchaind (`pulumi up` runs this remedy)",
    jwt: "use the same JWT file for both (`pulumi up` renders both units with one), then restart both",
    stateFile: "create data/priv_validator_state.json in the consensus home with the content {} (`pulumi up` does, before it starts 0gchaind)",
    rethPeers: (p2p: string) => `expected at first (reth cannot peer with geth nodes): wait; make sure ${p2p} is open on TCP and UDP`,
} as const;

import { LOW_DOWNTIME_STEPS, SWITCH_STEPS } from "../components/roles/switch-steps";

type Answer = Record<string, unknown>;

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const obj = (v: unknown): Answer | null => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Answer) : null);

function row(base: Omit<NodeRow, "healthy">): NodeRow {
    return { ...base, healthy: !base.diagnoses.some((d) => d.severity === "error") };
}

/** The row of a node whose host did not answer (SSH failed or timed out). */
export function unreachableRow(node: string, role: Role, host: string, why: string): NodeRow {
    return row({
        node, role, host, service: "unreachable", height: null, lag: null, peers: null,
        diagnoses: [{ fault: "host-unreachable", severity: "error", detail: `host ${host}: ${why}`, remedy: REMEDY.hostUnreachable }],
    });
}

/** The row of a node whose health tool did not give an answer (missing, failed, not JSON). */
export function checkFailedRow(node: string, role: Role, host: string, why: string): NodeRow {
    return row({
        node, role, host, service: "unknown", height: null, lag: null, peers: null,
        diagnoses: [{ fault: "check-failed", severity: "error", detail: why, remedy: REMEDY.toolFailed }],
    });
}

/** A node's row from its host tool's answer. */
export function diagnose(node: string, role: Role, host: string, answer: Answer): NodeRow {
    switch (role) {
        case "storage":
            return storageRow(node, host, answer);
        case "sequencer":
            return sequencerRow(node, host, answer);
        case "validator":
            return validatorRow(node, host, answer);
    }
}

function storageRow(node: string, host: string, a: Answer): NodeRow {
    const d: Diagnosis[] = [];
    const unit = str(a.service) ?? `zgs-${node}.service`;
    const endpoint = str(a.endpoint);
    const active = a.active === true;
    // zgs_node v1.1.0 exits at start on what it cannot do (systemd restarts it every 5 s): the
    // reason, from its log, is the fault; the unit's state and the silent RPC follow from it.
    const endpointDown = a.endpointError !== undefined;
    const startError = str(a.startError);
    const start = startError === null ? null : startFault(startError, unit, endpointDown);
    if (a.active === false && start === null) d.push({ fault: "service-down", severity: "error", detail: `${unit} is not active`, remedy: REMEDY.serviceDown(unit) });
    if (endpointDown) {
        // Seen here: systemd has just restarted the node, which has not yet logged its failure;
        // its RPC is silent for the same reason. Either way the endpoint is the one fault.
        const exits = startError !== null && /Unable to get chain id/.test(startError) ? ` (the node exits at start while it does not: ${unit} is ${str(a.state) ?? "restarting"})`
            : a.statusError !== undefined && active ? ` (zgs_getStatus is silent too: the node cannot start without it, and systemd restarts it every 5 s)` : "";
        d.push({ fault: "rpc-endpoint-down", severity: "error", detail: `blockchain_rpc_endpoint ${endpoint ?? "?"} does not answer eth_blockNumber: ${String(a.endpointError)}${exits}`, remedy: REMEDY.endpointDown });
    }
    if (start !== null && start.fault !== "rpc-endpoint-down") d.push(start);
    if (a.statusError !== undefined && active && start === null && !endpointDown) {
        d.push({ fault: "storage-rpc-down", severity: "error", detail: `${unit} is active but zgs_getStatus does not answer: ${String(a.statusError)}`, remedy: `journalctl -u ${unit}; restart it` });
    }
    const head = num(a.chainHead);
    const height = num(a.logSyncHeight);
    // zgs_node syncs the log only up to head - confirmation_block_count: that is its head.
    const confirmations = num(a.confirmations) ?? 0;
    const lag = head !== null && height !== null ? Math.max(0, head - confirmations - height) : null;
    const synced = lag !== null && lag < SYNCED_WITHIN;
    if (lag !== null && !synced) {
        d.push({ fault: "not-synced", severity: "error", detail: `${lag} blocks behind the chain head ${head} less its ${confirmations} confirmations (synced means fewer than ${SYNCED_WITHIN})`, remedy: "wait while it catches up; if the height does not grow, see rpc-endpoint-down" });
    }
    const sample = num(a.sampleSeconds);
    if (a.increasing === false && !synced && !endpointDown && sample !== null && sample >= INCREASING_OVER_SECONDS) {
        d.push({ fault: "height-not-increasing", severity: "error", detail: `logSyncHeight ${height} did not grow in ${sample} s`, remedy: REMEDY.notIncreasing });
    }
    const peers = num(a.connectedPeers);
    if (peers === 0) d.push({ fault: "storage-peers-0", severity: "warning", detail: "connectedPeers is 0", remedy: REMEDY.storagePeers });
    return row({
        node, role: "storage", host, service: a.active === true ? "active" : a.active === false ? "inactive" : "unknown",
        height, lag, peers, storage: { synced, endpoint }, diagnoses: d,
    });
}

/** The fault behind a failed start of zgs_node, from the reason it logged. */
function startFault(reason: string, unit: string, endpointDown: boolean): Diagnosis {
    if (/Unable to get chain id/.test(reason)) {
        return endpointDown
            ? { fault: "rpc-endpoint-down", severity: "error", detail: reason, remedy: REMEDY.endpointDown }
            : { fault: "storage-start-failed", severity: "error", detail: `its last start could not reach blockchain_rpc_endpoint (it answers now): ${reason}`, remedy: `systemd starts it again within 5 s; if it stays down: journalctl -u ${unit}` };
    }
    if (/insufficient funds/.test(reason)) {
        return { fault: "miner-unfunded", severity: "error", detail: `the miner key's account cannot pay for the node's miner id registration: ${reason}`, remedy: "fund the miner key's account on the 0G chain (the node registers its miner id with a transaction at start, and exits until it can)" };
    }
    if (/minerId/.test(reason)) {
        return { fault: "miner-registration-failed", severity: "error", detail: reason, remedy: "mine_contract_address must be the chain's PoRA mine contract (the node reads its miner id from that contract's event)" };
    }
    return { fault: "storage-start-failed", severity: "error", detail: reason, remedy: `fix what it names in config.toml (mineContractAddress, …) and pulumi up; journalctl -u ${unit}` };
}

function sequencerRow(node: string, host: string, a: Answer): NodeRow {
    const d: Diagnosis[] = [];
    const unit = str(a.service) ?? `aztec-${node}.service`;
    const state = a.active === true ? "active" : str(a.state) ?? (a.active === false ? "inactive" : "unknown");
    const l1 = str(a.l1Unreachable);
    const proven = num(a.provenBlock);
    const sibling = obj(a.siblingPath);
    const siblingOk = sibling === null ? null : sibling.ok === true;
    const peerId = str(a.peerId);
    const latest = num(a.latestBlock);
    const reg = obj(a.registration);
    // What L1 says of the validator (shown, not judged: a queued or pending registration is normal).
    const registration = reg === null ? null : str(reg.status) !== null ? `${reg.status}${num(reg.queuePosition) !== null ? ` #${reg.queuePosition}` : ""}` : "unknown";
    const sequencer = { provenBlock: proven, latestBlock: latest, siblingPath: siblingOk, peerId, registration };
    if (l1 !== null) {
        // The real 4.1.2 node runs on with its L1 gone (its archiver and sequencer retry, logging each
        // failure) and exits at start without it, which systemd restarts: one fault, whatever else the
        // answer shows follows from it.
        const exits = a.active !== true || a.tipsError !== undefined;
        d.push({
            fault: "l1-endpoint-down", severity: "error",
            detail: `the node cannot reach its L1 RPC ${l1} ("HTTP request failed" in its log)${exits ? `; it exits at start without it (${unit} is ${state}, its RPC does not answer)` : "; it runs on, neither syncing L1 nor proposing"}`,
            remedy: "check it with eth_blockNumber; fix or replace it in l1RpcUrls (ETHEREUM_HOSTS in the node's env file) and run `pulumi up`",
        });
        return row({ node, role: "sequencer", host, service: state, height: proven, lag: null, peers: null, sequencer, diagnoses: d });
    }
    if (a.active === false) d.push({ fault: "service-down", severity: "error", detail: `${unit} is ${state}`, remedy: REMEDY.serviceDown(unit) });
    if (a.tipsError !== undefined) {
        d.push({ fault: "sequencer-rpc-down", severity: "error", detail: `node_getL2Tips: ${String(a.tipsError)}`, remedy: a.active === false ? REMEDY.serviceDown(unit) : `journalctl -u ${unit}; the RPC listens on port 8080` });
    }
    if (proven !== null && siblingOk === false) {
        d.push({ fault: "sibling-path-missing", severity: "error", detail: `node_getArchiveSiblingPath(${proven}, ${proven}) gave no path${a.siblingPathError !== undefined ? `: ${String(a.siblingPathError)}` : ""}`, remedy: "the archiver has not synced that block: wait, and check the L1 endpoints if it stays" });
    }
    if (peerId === null && a.active === true) {
        d.push({ fault: "no-peer-id", severity: "error", detail: "no 'Started P2P service' line with a peerId in this boot's journal", remedy: `the P2P service has not started: journalctl -u ${unit}; port 40400 TCP and UDP must be open` });
    }
    return row({
        node, role: "sequencer", host, service: state, height: proven, lag: null, peers: null, sequencer, diagnoses: d,
    });
}

function validatorRow(node: string, host: string, a: Answer): NodeRow {
    const d: Diagnosis[] = [];
    const client = str(a.client);
    const services = obj(a.services) ?? {};
    const units = obj(a.units) ?? {};
    const consensusUnit = str(units.consensus);
    const elUnit = client === "geth" || client === "reth" ? str(units[client]) : null;
    const watched = [elUnit, consensusUnit].filter((u): u is string => u !== null);
    if (client === null) d.push({ fault: "no-execution-client", severity: "error", detail: "the host has no geth or reth datadir and no switch state: no execution client is set up", remedy: "run `pulumi up` (it sets the node up)" });
    const down = watched.filter((u) => services[u] !== "active");
    for (const unit of down) d.push({ fault: "service-down", severity: "error", detail: `${unit} is ${String(services[unit])}`, remedy: REMEDY.serviceDown(unit) });
    if (a.executionError !== undefined && elUnit !== null && !down.includes(elUnit)) {
        d.push({ fault: "execution-rpc-down", severity: "error", detail: String(a.executionError), remedy: `journalctl -u ${elUnit}` });
    }
    const consensus = obj(a.consensus);
    if (a.consensusError !== undefined && consensusUnit !== null && !down.includes(consensusUnit)) {
        d.push({ fault: "consensus-rpc-down", severity: "error", detail: String(a.consensusError), remedy: `journalctl -u ${consensusUnit}` });
    }
    for (const found of Array.isArray(a.diagnoses) ? a.diagnoses : []) {
        const f = obj(found);
        if (f === null) continue;
        const detail = String(f.detail ?? "");
        if (f.fault === "forkchoice-38002" && f.remedied !== undefined && num(f.remedied) !== 0) continue; // remedied by `health`: gone
        if (f.fault === "forkchoice-38002") d.push({ fault: "forkchoice-38002", severity: "error", detail: `0gchaind's head is not on the execution client (-38002, or the EL answers SYNCING): ${detail}`, remedy: REMEDY.forkchoice });
        else if (f.fault === "jwt-mismatch") d.push({ fault: "jwt-mismatch", severity: "error", detail: `Engine API errors between the clients: ${detail}`, remedy: REMEDY.jwt });
        else if (f.fault === "engine-unreachable") d.push({ fault: "engine-unreachable", severity: "error", detail, remedy: String(f.advice ?? "check the execution client, its engine port and the JWT file") });
        else if (f.fault === "reth-no-peers") {
            const p2p = /make sure (\d+)\/tcp/.exec(String(f.advice ?? ""))?.[1];
            d.push({ fault: "reth-no-peers", severity: "warning", detail, remedy: REMEDY.rethPeers(p2p ?? "the p2p port (<PORT_PREFIX>303)") });
        }
    }
    const state = obj(a.privValidatorState);
    if (state !== null && state.exists === false) {
        d.push({ fault: "missing-priv-validator-state", severity: "error", detail: `${String(state.path)} is missing: 0gchaind does not start without it`, remedy: REMEDY.stateFile });
    }
    const catchingUp = consensus !== null && typeof consensus.catchingUp === "boolean" ? consensus.catchingUp : null;
    const consensusHeight = consensus !== null ? num(consensus.height) : null;
    if (catchingUp === true) {
        d.push({ fault: "catching-up", severity: "error", detail: `0gchaind is catching up (height ${consensusHeight ?? "?"}): it does not sign until it is caught up`, remedy: "wait; if it stays, check the execution client's height and peers" });
    }
    const processes = num(a.consensusProcessesWithThisKey);
    if (processes !== null && processes > 1) {
        d.push({ fault: "key-running-twice", severity: "error", detail: `${processes} 0gchaind processes run with this validator key on this host`, remedy: "stop all but the service's own one now: one key must never sign twice" });
    }
    const height = num(a.executionHeight);
    const network = num(a.networkHeight);
    const lag = height !== null && network !== null ? network - height : null;
    if (lag !== null && lag >= VALIDATOR_LAG_WARNING) {
        d.push({ fault: "execution-behind", severity: "warning", detail: `the execution client is ${lag} blocks behind the reference endpoint's ${network}`, remedy: "wait while it syncs; check its peers" });
    }
    if (a.networkError !== undefined) d.push({ fault: "reference-down", severity: "warning", detail: String(a.networkError), remedy: "check referenceRpcUrl: without it the lag is unknown" });
    const sw = switchProgress(a);
    if (sw !== null && !sw.complete && sw.running.length === 0) {
        d.push({ fault: "switch-incomplete", severity: "warning", detail: `the ${sw.mode} switch stopped after ${sw.lastStep ?? "no step"} (${sw.stepsDone} of ${sw.steps} steps) and nothing of it runs`, remedy: "run `pulumi up` to resume it, or set switch: rollback" });
    }
    const service = watched.length === 0 ? "unknown" : down.length === 0 ? "active" : `${down.map((u) => `${u.replace(/\.service$/, "")} ${String(services[u])}`).join(", ")}`;
    return row({
        node, role: "validator", host, service, height, lag, peers: num(a.peers),
        validator: { client, consensusHeight, catchingUp, switch: sw }, diagnoses: d,
    });
}

/** The switch's state from the answer's migration report and running jobs, or null when none is on record. */
function switchProgress(a: Answer): SwitchProgress | null {
    const m = obj(a.migration);
    if (m === null) return null;
    const steps = Object.keys(obj(m.steps) ?? {}).sort();
    const running = Object.values(obj(a.running) ?? {}).map((j) => {
        const job = obj(j) ?? {};
        return { job: str(job.unit) ?? str(job.job) ?? "?", done: num(job.done), total: num(job.total), percent: num(job.percent), rate: num(job.rate), etaSeconds: num(job.etaSeconds), started: str(job.started), at: str(job.at) };
    });
    const mode = str(m.mode) ?? "ordered";
    return { mode, stepsDone: steps.length, steps: (mode === "lowDowntime" ? LOW_DOWNTIME_STEPS : SWITCH_STEPS).length, lastStep: steps[steps.length - 1] ?? null, complete: m.complete === true, running };
}
