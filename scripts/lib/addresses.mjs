// Whether a stack's hosts can fetch from a URL, judged by its address alone (nothing is resolved
// or dialled): scripts/promote.mjs refuses to write a release address that no production host
// reaches. An address is read as the URL parser reads it, so every spelling of one address
// (http://2130706433/, http://0x7f.1/, http://[::ffff:127.0.0.1]/) is judged as that address.
import * as net from "node:net";

/** The lab's networks (lab/vm.sh): the runner and its hosts at 10.0.2.0/24, the lab network 10.77.0.0/24. */
const LAB = ["10.0.2.0/24", "10.77.0.0/24"];

const V4 = [
    ["0.0.0.0/8", "is 'this network' (0.0.0.0/8), no host's address"],
    ["127.0.0.0/8", "is a loopback address (127.0.0.0/8): each host's own"],
    ["169.254.0.0/16", "is a link-local address (169.254.0.0/16)"],
    ["224.0.0.0/4", "is a multicast address (224.0.0.0/4)"],
    ["240.0.0.0/4", "is a reserved address (240.0.0.0/4)"],
];
const V4_PRIVATE = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "198.18.0.0/15"];
const V6 = [
    ["::/128", "is the unspecified address (::)"],
    ["::1/128", "is a loopback address (::1): each host's own"],
    ["fe80::/10", "is a link-local address (fe80::/10)"],
    ["ff00::/8", "is a multicast address (ff00::/8)"],
];
const V6_PRIVATE = ["fc00::/7"];

function v4Number(text) {
    return text.split(".").reduce((n, part) => n * 256n + BigInt(Number(part)), 0n);
}

/** The 128-bit number of an IPv6 address in any of its spellings (:: and a dotted IPv4 tail included). */
function v6Number(text) {
    let s = text.toLowerCase();
    const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
    if (tail) {
        const n = v4Number(tail[1]);
        s = `${s.slice(0, -tail[1].length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
    }
    const [head, rest] = s.includes("::") ? s.split("::") : [s, undefined];
    const left = head ? head.split(":") : [];
    const right = rest === undefined ? [] : rest ? rest.split(":") : [];
    const groups = rest === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
    return groups.reduce((n, g) => n * 65536n + BigInt(parseInt(g, 16)), 0n);
}

/** Whether an address (its number and family) lies in a CIDR of that family. */
function inCidr(value, family, cidr) {
    const [base, lenText] = String(cidr).split("/");
    const isV6 = base.includes(":");
    if ((family === 6) !== isV6) return false;
    const bits = isV6 ? 128n : 32n;
    const len = BigInt(Number(lenText ?? bits));
    const shift = bits - len;
    const baseValue = isV6 ? v6Number(base) : v4Number(base);
    return value >> shift === baseValue >> shift;
}

function v4Reason(value, allowed) {
    if (LAB.some((c) => inCidr(value, 4, c))) return `is in the lab's networks (${LAB.join(", ")})`;
    for (const [c, why] of V4) if (inCidr(value, 4, c)) return why;
    const priv = V4_PRIVATE.find((c) => inCidr(value, 4, c));
    if (priv && !allowed.some((c) => inCidr(value, 4, c))) return `is a private address (${priv}) outside the target's privateMirrorCidrs`;
    return undefined;
}

/**
 * Why a stack's hosts cannot fetch from `text`, or undefined when its address may be reached (a
 * public address, an allowed private one, or a name their resolver answers). `allowed`: the target
 * stack's privateMirrorCidrs.
 */
export function unreachableReason(text, allowed = []) {
    let url;
    try {
        url = new URL(String(text));
    } catch {
        return "is not a URL";
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return `is not an http or https URL`;
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "").toLowerCase();
    if (host === "localhost" || host.endsWith(".localhost")) return "is the host itself (localhost)";
    if (net.isIPv4(host)) return v4Reason(v4Number(host), allowed);
    if (net.isIPv6(host)) {
        const value = v6Number(host);
        // An IPv4 address written as IPv6 (::ffff:a.b.c.d) is judged as that IPv4 address.
        if (value >> 32n === 0xffffn) return v4Reason(value & 0xffffffffn, allowed);
        for (const [c, why] of V6) if (inCidr(value, 6, c)) return why;
        const priv = V6_PRIVATE.find((c) => inCidr(value, 6, c));
        if (priv && !allowed.some((c) => inCidr(value, 6, c))) return `is a private address (${priv}) outside the target's privateMirrorCidrs`;
        return undefined;
    }
    return undefined;
}
