// Voting power in a rollout: a CometBFT network stops committing once a third or more of its
// voting power is offline, so a batch of validators restarting at once must hold less than that
// (with a margin) of each network's power. Each validator's power is read, at preview and up, from
// its network's validator set (`/status` for the network's name, `/validators` page by page) at
// the validator's `consensusRpcUrl`, and matched to it by the consensus address of its key.
// The limit counts only what the batch takes offline: validators of other operators already down
// are not seen here (docs/rollouts.md, "Voting power").
import type { FleetPlan } from "../config/fleet";
import { contractOf } from "../roles/registry";
import type { RoleRollout } from "./plan";

/** A network's validator set as its RPC answers it. */
export interface ValidatorSet {
    /** CometBFT's network (the chain id), from `/status`. */
    readonly network: string;
    /** Voting power by consensus address (uppercase hex). */
    readonly power: ReadonlyMap<string, bigint>;
    readonly total: bigint;
}

/** What the rollout knows of a validator: its network and power there, the network's total. */
export interface ValidatorPower {
    readonly network: string;
    readonly power: bigint;
    readonly total: bigint;
}

/** A bad answer, told by the path of the field and the reason; never the answer itself. */
export class RpcAnswerError extends Error {}

const MAX_PAGES = 100; // 100 validators a page: 10,000, more than any CometBFT set
const WHOLE = /^(0|[1-9][0-9]{0,30})$/;

function field(value: unknown, where: string, kind: "object" | "array" | "string"): unknown {
    const ok =
        kind === "array"
            ? Array.isArray(value)
            : kind === "object"
              ? typeof value === "object" && value !== null && !Array.isArray(value)
              : typeof value === "string";
    if (!ok)
        throw new RpcAnswerError(
            `${where}: ${value === undefined ? "missing" : `not a${kind === "array" || kind === "object" ? "n" : ""} ${kind}`}`,
        );
    return value;
}

/** The `result` of a JSON-RPC answer over GET, or why not. */
function result(body: string, call: string): Record<string, unknown> {
    let json: unknown;
    try {
        json = JSON.parse(body);
    } catch {
        throw new RpcAnswerError(`${call}: the answer is not JSON`);
    }
    const top = field(json, call, "object") as Record<string, unknown>;
    if (top.error !== undefined) {
        const message = (top.error as { message?: unknown; data?: unknown }) ?? {};
        throw new RpcAnswerError(
            `${call}: error ${typeof message.message === "string" ? JSON.stringify(message.message.slice(0, 120)) : "(no message)"}`,
        );
    }
    return field(top.result, `${call}: result`, "object") as Record<string, unknown>;
}

/** The network's name from a `/status` answer. */
export function parseStatus(body: string): string {
    return statusNetwork(result(body, "/status"));
}

/** The network's name and its last committed height from a `/status` answer. */
export function parseNetworkStatus(body: string): { network: string; height: number } {
    const r = result(body, "/status");
    const network = statusNetwork(r);
    const sync = field(r.sync_info, "/status: result.sync_info", "object") as Record<string, unknown>;
    const height = field(sync.latest_block_height, "/status: result.sync_info.latest_block_height", "string") as string;
    if (!/^(0|[1-9][0-9]{0,15})$/.test(height))
        throw new RpcAnswerError("/status: result.sync_info.latest_block_height: not a whole number");
    return { network, height: Number(height) };
}

/** `result.node_info.network` of a `/status` answer's result. */
function statusNetwork(r: Record<string, unknown>): string {
    const info = field(r.node_info, "/status: result.node_info", "object") as Record<string, unknown>;
    const network = field(info.network, "/status: result.node_info.network", "string") as string;
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(network))
        throw new RpcAnswerError("/status: result.node_info.network: not a chain id (letters, digits, '.', '_', '-')");
    return network;
}

/** One `/validators` page: its validators' power by address, the set's size and height. */
export function parseValidatorsPage(body: string, page: number): { height: string; total: number; entries: [string, bigint][] } {
    const call = `/validators page ${page}`;
    const r = result(body, call);
    const height = field(r.block_height, `${call}: result.block_height`, "string") as string;
    if (!WHOLE.test(height)) throw new RpcAnswerError(`${call}: result.block_height: not a whole number`);
    const total = field(r.total, `${call}: result.total`, "string") as string;
    if (!WHOLE.test(total) || Number(total) > MAX_PAGES * 100)
        throw new RpcAnswerError(`${call}: result.total: not a whole number up to ${MAX_PAGES * 100}`);
    const list = field(r.validators, `${call}: result.validators`, "array") as unknown[];
    const entries = list.map((v, i): [string, bigint] => {
        const at = `${call}: result.validators[${i}]`;
        const entry = field(v, at, "object") as Record<string, unknown>;
        const address = field(entry.address, `${at}.address`, "string") as string;
        if (!/^[0-9A-Fa-f]{40}$/.test(address)) throw new RpcAnswerError(`${at}.address: not 20 bytes of hex`);
        const power = field(entry.voting_power, `${at}.voting_power`, "string") as string;
        if (!WHOLE.test(power)) throw new RpcAnswerError(`${at}.voting_power: not a whole number`);
        return [address.toUpperCase(), BigInt(power)];
    });
    return { height, total: Number(total), entries };
}

/** GET one RPC path, its body as text; `get` is fetch's shape. */
export type Get = (url: string) => Promise<{ ok: boolean; status: number; text(): Promise<string> }>;

/** `get` with a bound on each request, so a preview never hangs on a silent endpoint. */
export const httpGet: Get = (url) => {
    // fetch refuses a URL with `user:password@`: a private RPC's credential goes in the header.
    const u = new URL(url);
    const headers: Record<string, string> = { accept: "application/json" };
    if (u.username !== "" || u.password !== "") {
        headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString("base64")}`;
        u.username = "";
        u.password = "";
    }
    return fetch(u, { signal: AbortSignal.timeout(10_000), headers });
};

/** Why a request got no answer, in words that carry nothing of the URL (it may hold a credential). */
function noAnswer(e: unknown): string {
    if (e instanceof Error && e.name === "TimeoutError") return "no answer within 10 s";
    const code = (e as { cause?: { code?: unknown } } | undefined)?.cause?.code;
    return typeof code === "string" && /^[A-Z_]{2,40}$/.test(code) ? code : "the request failed";
}

/** GET `p` at the CometBFT RPC `base`: the answer's body, or why not (an RpcAnswerError named `call`). */
export async function rpcText(base: string, p: string, call: string, get: Get = httpGet): Promise<string> {
    const url = `${base.replace(/\/+$/, "")}${p}`;
    // Once more after a connection that failed (not a timeout): a kept-alive connection the
    // server closed meanwhile fails the next request on it.
    const r = await get(url)
        .catch((e: unknown) => (e instanceof Error && e.name === "TimeoutError" ? Promise.reject(e) : get(url)))
        .catch((e: unknown) => {
            throw new RpcAnswerError(`${call}: no answer (${noAnswer(e)})`);
        });
    if (!r.ok) throw new RpcAnswerError(`${call}: HTTP ${r.status}`);
    return r.text();
}

/**
 * The validator set at `base` (a CometBFT RPC's URL): its network from `/status`, then every page
 * of `/validators` at one height (the first page's), so the pages add up to one set.
 */
export async function readValidatorSet(base: string, get: Get = httpGet): Promise<ValidatorSet> {
    const text = (p: string, call: string) => rpcText(base, p, call, get);
    const network = parseStatus(await text("/status", "/status"));
    const power = new Map<string, bigint>();
    let height: string | undefined;
    for (let page = 1; page <= MAX_PAGES; page++) {
        const query = `/validators?per_page=100&page=${page}${height === undefined ? "" : `&height=${height}`}`;
        const p = parseValidatorsPage(await text(query, `/validators page ${page}`), page);
        height ??= p.height;
        for (const [address, value] of p.entries) {
            if (power.has(address)) throw new RpcAnswerError(`/validators page ${page}: validator ${address} listed twice`);
            power.set(address, value);
        }
        if (power.size >= p.total || p.entries.length === 0) {
            if (power.size !== p.total)
                throw new RpcAnswerError(`/validators: result.total says ${p.total} validators, the pages hold ${power.size}`);
            break;
        }
    }
    const total = [...power.values()].reduce((a, b) => a + b, 0n);
    if (total === 0n) throw new RpcAnswerError("/validators: the set holds no voting power");
    return { network, power, total };
}

/** A share of power as a percentage with one decimal, rounded up (never shown below what it is). */
export function percentOf(part: bigint, total: bigint): string {
    const tenths = (part * 1000n + total - 1n) / total;
    return `${tenths / 10n}.${tenths % 10n}%`;
}

/**
 * The batches of a rollout that would take more of a network's voting power offline at once than
 * `maxPercent` allows, each told with its figures. `power`: the nodes whose power is known (the
 * validators with a `consensusRpcUrl`; any other node counts for nothing here).
 */
export function powerViolations(plan: readonly RoleRollout[], power: ReadonlyMap<string, ValidatorPower>, maxPercent: number): string[] {
    // Only the nodes whose power is known count (validatorPowers: the roles that vote in a network).
    return plan.flatMap((role) => role.batches.flatMap((batch, i) => batchViolations(role.role, batch, i, power, maxPercent)));
}

/** One batch's networks whose power it would take offline beyond `maxPercent`, each told with its figures. */
function batchViolations(
    role: string,
    batch: readonly string[],
    i: number,
    power: ReadonlyMap<string, ValidatorPower>,
    maxPercent: number,
): string[] {
    const out: string[] = [];
    const byNetwork = new Map<string, { nodes: string[]; power: bigint; total: bigint }>();
    for (const node of batch) {
        const p = power.get(node);
        if (p === undefined) continue;
        const n = byNetwork.get(p.network) ?? { nodes: [], power: 0n, total: p.total };
        n.nodes.push(`${node} ${p.power}`);
        n.power += p.power;
        byNetwork.set(p.network, n);
    }
    for (const [network, n] of byNetwork) {
        // offline/total > max/100, in whole numbers
        if (n.power * 100n <= BigInt(maxPercent) * n.total) continue;
        const who = batch.length === 1 ? `${batch[0]} alone` : `batch ${i + 1} of the ${role}s (${batch.join(", ")})`;
        out.push(
            `rollout: ${who} would take ${n.power} of network ${network}'s voting power ${n.total} offline at once (${percentOf(n.power, n.total)}: ${n.nodes.join(", ")}), more than rollout.maxOfflinePower (${maxPercent}%); ` +
                `CometBFT stops committing with a third or more offline. ${batch.length > 1 ? `Lower rollout.roles.${role}.batchSize, or raise` : "Raise"} rollout.maxOfflinePower (above 33% accepts that the network halts while the batch restarts)`,
        );
    }
    return out;
}

/**
 * A node's network RPC (`field`: its config path, `nodes[3].validator.consensusRpcUrl`): the URL
 * (undefined when its secret is not set) and how messages name it (the URL only when it is plain
 * config, never a secret's value).
 */
export function consensusRpc(
    plan: FleetPlan,
    field: string,
    ref: string | { readonly secret: string },
): { readonly where: string; readonly url: string | undefined } {
    const where = `${field}${typeof ref === "string" ? ` (${ref})` : ".secret"}`;
    return { where, url: typeof ref === "string" ? ref : plan.secrets.get(ref.secret) };
}

/**
 * Each validator's power, read at its `consensusRpcUrl` (one read per URL), matched by its key's
 * consensus address. A validator without the URL is warned of; an RPC that cannot be read, or
 * a key the set does not hold, stops the plan (named by the config path, never a secret URL).
 * A validator not in the set holds no power: it is logged, not refused (it may be joining).
 */
export async function validatorPowers(
    plan: FleetPlan,
    warn: (message: string) => void,
    get: Get = httpGet,
): Promise<Map<string, ValidatorPower>> {
    const out = new Map<string, ValidatorPower>();
    const sets = new Map<string, Promise<ValidatorSet>>();
    const unknown: string[] = [];
    for (const [i, node] of plan.spec.nodes.entries()) {
        const contract = contractOf(node);
        if (contract.network === undefined || contract.signing?.consensusAddress === undefined) continue;
        const rpc = contract.network(node);
        if (rpc === undefined) {
            unknown.push(node.name);
            continue;
        }
        const { where, url } = consensusRpc(plan, `nodes[${i}].${rpc.field}`, rpc.url);
        if (url === undefined) throw new Error(`${where}: the secret is not set`);
        if (!sets.has(url)) sets.set(url, readValidatorSet(url, get));
        let set: ValidatorSet;
        try {
            set = await sets.get(url)!;
        } catch (e) {
            throw new Error(
                `${where}: the network's validator set cannot be read, so the rollout cannot keep its voting power online: ${e instanceof RpcAnswerError ? e.message : "request failed"}`,
            );
        }
        const json = plan.secrets.get(contract.signing.secret(node));
        const address = json === undefined ? undefined : contract.signing.consensusAddress(json);
        if (address === undefined)
            throw new Error(
                `nodes[${i}].${node.role}.${contract.signing.secretField}: no consensus address in the key (checked with the config)`,
            );
        out.set(node.name, { network: set.network, power: set.power.get(address) ?? 0n, total: set.total });
    }
    if (unknown.length > 0)
        warn(
            `rollout: voting power not known (no consensusRpcUrl): ${unknown.join(", ")}; batches count ${unknown.length === 1 ? "it as a node" : "them as nodes"} only`,
        );
    return out;
}

/** The figures preview shows: per network, its total and each validator's share. */
export function describePower(power: ReadonlyMap<string, ValidatorPower>): string[] {
    const networks = new Map<string, { total: bigint; nodes: string[] }>();
    for (const [node, p] of power) {
        const n = networks.get(p.network) ?? { total: p.total, nodes: [] };
        n.nodes.push(`${node} ${p.power} (${percentOf(p.power, p.total)})${p.power === 0n ? ", not in the validator set" : ""}`);
        networks.set(p.network, n);
    }
    return [...networks].map(([network, n]) => `rollout: voting power of network ${network}: ${n.total}; ${n.nodes.join(", ")}`);
}
