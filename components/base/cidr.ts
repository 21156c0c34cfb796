// Address math for firewall rules: parse IPv4/IPv6 addresses and CIDRs into numbers and decide
// "open to the world" by whether a set of ranges covers a whole address family, whatever the
// spelling (`::/0`, `0::0/0`, `0.0.0.0/0`) or split (`0.0.0.0/1` + `128.0.0.0/1`). Pure; used by the
// config checks and by the policy pack, so both apply the same rule.
import * as net from "node:net";

export type Family = 4 | 6;

export interface Address {
    readonly family: Family;
    readonly value: bigint;
}

/** An inclusive range of addresses of one family. */
export interface Range {
    readonly family: Family;
    readonly first: bigint;
    readonly last: bigint;
}

const BITS: Record<Family, number> = { 4: 32, 6: 128 };
const MAPPED_V4 = 0xffffn << 32n; // ::ffff:0:0/96, IPv4-mapped IPv6 addresses

function parseV4(text: string): bigint | undefined {
    // Dotted quad only, no leading zeros (some parsers read 010 as octal).
    if (!net.isIPv4(text) || text.split(".").some((o) => o.length > 1 && o.startsWith("0"))) return undefined;
    return text.split(".").reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);
}

function parseV6(text: string): bigint | undefined {
    if (text.includes("%") || !net.isIPv6(text)) return undefined; // no zone ids in firewall rules
    let head = text;
    let tail: bigint[] = [];
    const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
    if (dotted) {
        const v4 = parseV4(dotted[2]!);
        if (v4 === undefined) return undefined;
        head = `${dotted[1]}0:0`;
        tail = [v4];
    }
    const [left, right] = head.includes("::") ? head.split("::") : [head, undefined];
    const groups = (s: string | undefined) => (s ? s.split(":").filter((g) => g !== "") : []);
    const l = groups(left);
    const r = groups(right);
    const zeros = right === undefined ? 0 : 8 - l.length - r.length;
    const all = [...l, ...Array<string>(zeros).fill("0"), ...r];
    if (all.length !== 8) return undefined;
    let value = all.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
    if (tail.length) value = (value & ~0xffffffffn) | tail[0]!;
    return value;
}

/** An IPv4 or IPv6 address as a number, or undefined when it is neither. */
export function parseAddress(text: string): Address | undefined {
    const v4 = parseV4(text);
    if (v4 !== undefined) return { family: 4, value: v4 };
    const v6 = parseV6(text);
    return v6 !== undefined ? { family: 6, value: v6 } : undefined;
}

/** The identity of a host address: IPv4-mapped IPv6 addresses are the IPv4 address they carry. */
export function addressKey(text: string): string {
    const a = parseAddress(text);
    if (!a) return `name:${text.toLowerCase().replace(/\.$/, "")}`;
    if (a.family === 6 && a.value >> 32n === 0xffffn) return `4:${a.value & 0xffffffffn}`;
    return `${a.family}:${a.value}`;
}

export type CidrParse = { readonly range: Range; readonly prefix: number } | { readonly reason: string };

/** A CIDR `address/prefix` with its host bits cleared, as a range; or why it is not one. */
export function parseCidr(text: string): CidrParse {
    const m = /^([^/]+)\/(0|[1-9][0-9]{0,2})$/.exec(text);
    if (!m) return { reason: "not a CIDR (address/prefix length, the length without leading zeros)" };
    const addr = parseAddress(m[1]!);
    if (!addr) return { reason: "not a CIDR (address/prefix length)" };
    const bits = BITS[addr.family];
    const prefix = Number(m[2]);
    if (prefix > bits) return { reason: `IPv${addr.family} prefix length must be 0-${bits}` };
    const hostMask = (1n << BigInt(bits - prefix)) - 1n;
    if ((addr.value & hostMask) !== 0n) return { reason: `host bits are set in ${text}` };
    return { range: { family: addr.family, first: addr.value, last: addr.value | hostMask }, prefix };
}

/** The ranges a CIDR stands for: an IPv4-mapped IPv6 range also stands for the IPv4 addresses it maps. */
function rangesOf(cidr: string): Range[] {
    const p = parseCidr(cidr);
    if ("reason" in p) return [];
    const r = p.range;
    const out = [r];
    if (r.family === 6) {
        const lo = r.first > MAPPED_V4 ? r.first : MAPPED_V4;
        const hi = r.last < (MAPPED_V4 | 0xffffffffn) ? r.last : MAPPED_V4 | 0xffffffffn;
        if (lo <= hi) out.push({ family: 4, first: lo & 0xffffffffn, last: hi & 0xffffffffn });
    }
    return out;
}

/**
 * The address families whose whole space the union of `cidrs` covers: what "open to the world"
 * means. Unparseable entries count for nothing (the config checks refuse them separately).
 */
export function worldFamilies(cidrs: readonly string[]): Family[] {
    const out: Family[] = [];
    for (const family of [4, 6] as const) {
        const ranges = cidrs
            .flatMap(rangesOf)
            .filter((r) => r.family === family)
            .sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
        let next = 0n; // the first address not yet covered
        for (const r of ranges) {
            if (r.first > next) break;
            if (r.last + 1n > next) next = r.last + 1n;
        }
        if (next === 1n << BigInt(BITS[family])) out.push(family);
    }
    return out;
}

/** Whether the union of `cidrs` is open to the whole IPv4 or IPv6 internet. */
export function coversWorld(cidrs: readonly string[]): boolean {
    return worldFamilies(cidrs).length > 0;
}

/** "every IPv4 address", "every IPv4 and IPv6 address": for messages. */
export function describeWorld(families: readonly Family[]): string {
    return `every ${families.map((f) => `IPv${f}`).join(" and ")} address`;
}
