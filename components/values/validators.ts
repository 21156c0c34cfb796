// Pure format checks for the values operators put in stack config.
// Each returns undefined when the value is acceptable, otherwise the reason it is not;
// the schema turns that reason into "<config path>: <reason>".
import { keccak_256 } from "@noble/hashes/sha3";
import * as crypto from "node:crypto";
import * as net from "node:net";
import { parseAddress, parseCidr } from "../base/cidr";
import { ENV_FILE_VALUE } from "../base/render";
import { blsPublicKey } from "./bls12381";

export type Reason = string | undefined;

const HEX40 = /^0x[0-9a-fA-F]{40}$/;

/** EVM address: 0x + 40 hex; a mixed-case address must carry a valid EIP-55 checksum. */
export function evmAddressReason(value: string): Reason {
    if (!HEX40.test(value)) return "not an EVM address (0x followed by 40 hex digits)";
    const hex = value.slice(2);
    if (hex === hex.toLowerCase() || hex === hex.toUpperCase()) return undefined;
    return hex === eip55(hex) ? undefined : "EVM address has mixed case but its EIP-55 checksum does not match";
}

/** EIP-55: uppercase the letter at i when nibble i of keccak256(lowercase hex) is >= 8. */
export function eip55(hex: string): string {
    const lower = hex.toLowerCase();
    const digest = keccak_256(new TextEncoder().encode(lower));
    let out = "";
    for (let i = 0; i < lower.length; i++) {
        const nibble = (digest[i >> 1] >> (i % 2 === 0 ? 4 : 0)) & 0xf;
        out += nibble >= 8 ? lower[i].toUpperCase() : lower[i];
    }
    return out;
}

// Order of the secp256k1 group: a private key must lie in [1, n-1].
const SECP256K1_N = BigInt("0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");

/** 0x-prefixed 32-byte secp256k1 private key (docs/spec.md §2.4 <VALIDATOR_PRIVATE_KEY>). */
export function privateKeyReason(value: string): Reason {
    if (!/^0x[0-9a-fA-F]{64}$/.test(value)) return "not a 0x-prefixed 32-byte hex private key";
    const k = BigInt(value);
    if (k === 0n || k >= SECP256K1_N) return "private key is outside the secp256k1 range";
    return undefined;
}

/** BN254 scalar field order: an Aztec attester's BLS secret key is a nonzero element below it. */
const BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

/** Aztec 4.x BLS secret key (`add-l1-validator --bls-secret-key`): 0x and 1-64 hex digits, a nonzero BN254 scalar. */
export function blsSecretKeyReason(value: string): Reason {
    if (!/^0x[0-9a-fA-F]{1,64}$/.test(value)) return "not a 0x-prefixed hex BLS secret key (a BN254 scalar, up to 64 hex digits)";
    const k = BigInt(value);
    if (k === 0n || k >= BN254_R) return "BLS secret key is outside the BN254 scalar field (nonzero, below its order)";
    return undefined;
}

/** 0G storage miner key: 64 hex digits without 0x (zgs_node's config.toml `miner_key`). */
export function minerKeyReason(value: string): Reason {
    return /^[0-9a-fA-F]{64}$/.test(value) ? undefined : "not a miner key (64 hex digits, no 0x prefix)";
}

/** An OpenSSH/PEM private key block. */
export function sshPrivateKeyReason(value: string): Reason {
    const v = value.trim();
    return /^-----BEGIN (OPENSSH|RSA|EC) PRIVATE KEY-----\n[\s\S]+\n-----END \1 PRIVATE KEY-----$/.test(v)
        ? undefined
        : "not a PEM/OpenSSH private key block";
}

/** CometBFT priv_validator_key.json: {address, pub_key, priv_key: {type, value}}. */
export function validatorKeyJsonReason(value: string): Reason {
    let parsed: unknown;
    try {
        parsed = JSON.parse(value);
    } catch {
        return "not JSON (expected the contents of priv_validator_key.json)";
    }
    const p = parsed as { address?: unknown; priv_key?: { value?: unknown } };
    if (typeof p !== "object" || p === null || typeof p.address !== "string" || typeof p.priv_key?.value !== "string") {
        return "priv_validator_key.json must hold address and priv_key.value";
    }
    return undefined;
}

export function httpUrlReason(value: string): Reason {
    let url: URL;
    try {
        url = new URL(value);
    } catch {
        return "not a URL";
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
        return `URL scheme must be http or https, not ${url.protocol.replace(":", "")}`;
    if (!url.hostname) return "URL has no host";
    // What reaches a host is the string that was checked: it must be the parser's own spelling
    // (the parser drops tabs and newlines, lowercases, resolves dot segments...), the bare
    // origin written with or without its "/".
    const canonical =
        url.pathname === "/" && !value.endsWith("/") && url.search === "" && url.hash === "" ? url.href.slice(0, -1) : url.href;
    if (canonical !== value) return `URL is not in its canonical form; write it as ${canonical}`;
    return undefined;
}

/** Dotted-quad IPv4 with no leading zeros. */
export function isIpv4(value: string): boolean {
    return parseAddress(value)?.family === 4;
}

export function ipv4Reason(value: string): Reason {
    return isIpv4(value) ? undefined : "not an IPv4 address";
}

export function isPort(n: number): boolean {
    return Number.isInteger(n) && n >= 1 && n <= 65535;
}

function portTextReason(text: string): Reason {
    if (!/^[1-9][0-9]{0,4}$/.test(text) || !isPort(Number(text))) return `port ${text} is not in 1-65535`;
    return undefined;
}

// libp2p peer ids in base58btc: Qm… (RSA, 46 chars), 12D3KooW… (ed25519, 52), 16Uiu2… (secp256k1, 53).
const PEER_ID = /^(Qm[1-9A-HJ-NP-Za-km-z]{44}|12D3KooW[1-9A-HJ-NP-Za-km-z]{44}|16Uiu2[1-9A-HJ-NP-Za-km-z]{47})$/;

/** Boot node multiaddr /ip4/<ip>/udp/<port>/p2p/<peer_id> (docs/spec.md §2.1). */
export function multiaddrReason(value: string): Reason {
    const m = /^\/ip4\/([^/]+)\/udp\/([^/]+)\/p2p\/([^/]+)$/.exec(value);
    if (!m) return "not a multiaddr of the form /ip4/<ip>/udp/<port>/p2p/<peer_id>";
    if (!isIpv4(m[1])) return `multiaddr ip ${m[1]} is not an IPv4 address`;
    const port = portTextReason(m[2]);
    if (port) return `multiaddr ${port}`;
    if (!PEER_ID.test(m[3])) return `multiaddr peer id ${m[3]} is not a base58 libp2p peer id`;
    return undefined;
}

/** enode://<128 hex node id>@<ipv4>:<port> (docs/spec.md §2.6 --bootnodes), optional ?discport=N. */
export function enodeReason(value: string): Reason {
    const m = /^enode:\/\/([^@]*)@([^:]+):([^?]+)(\?discport=([0-9]+))?$/.exec(value);
    if (!m) return "not an enode URL of the form enode://<node_id>@<ip>:<port>";
    if (!/^[0-9a-fA-F]{128}$/.test(m[1])) return "enode node id must be 128 hex digits";
    if (!onSecp256k1(m[1])) return "enode node id is not a secp256k1 public key (the point is not on the curve); geth and reth refuse it";
    if (!isIpv4(m[2])) return `enode host ${m[2]} is not an IPv4 address`;
    return portTextReason(m[3]) ?? (m[5] !== undefined ? portTextReason(m[5]) : undefined);
}

/**
 * A CometBFT peer address, as `--p2p.persistent_peers` and `--p2p.seeds` take them:
 * `<node id>@<host>:<port>`, the node id 40 lowercase hex digits (`comet show-node-id`), the host
 * an IPv4 address or a DNS name.
 */
export function cometPeerReason(value: string): Reason {
    const m = /^([^@]*)@([^:]*):([^:]*)$/.exec(value);
    if (!m) return "not a CometBFT peer of the form <node id>@<host>:<port>";
    if (!/^[0-9a-f]{40}$/.test(m[1]!)) return "the node id must be 40 lowercase hex digits (`show-node-id` prints it)";
    const host = m[2]!;
    const dns = host.length <= 253 && host.split(".").every((l) => /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(l));
    if (!isIpv4(host) && (!dns || /^[0-9.]+$/.test(host))) return `host ${host} is neither an IPv4 address nor a DNS name`;
    return portTextReason(m[3]!);
}

/** Whether 128 hex digits (x || y) are a point on secp256k1: y^2 = x^3 + 7 (mod p). */
function onSecp256k1(hex: string): boolean {
    const p = 2n ** 256n - 2n ** 32n - 977n;
    const x = BigInt(`0x${hex.slice(0, 64)}`);
    const y = BigInt(`0x${hex.slice(64)}`);
    if (x >= p || y >= p) return false;
    return (y * y - (x * x * x + 7n)) % p === 0n;
}

/** IPv4 or IPv6 CIDR, with the host bits cleared so the rule means what it says. */
export function cidrReason(value: string): Reason {
    const parsed = parseCidr(value);
    return "reason" in parsed ? parsed.reason : undefined;
}

/** One line of an OpenSSH public host key, as in known_hosts without the host column. */
export function hostKeyReason(value: string): Reason {
    const m = /^(ssh-ed25519|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|ssh-rsa) ([A-Za-z0-9+/]+={0,2})( .*)?$/.exec(
        value.trim(),
    );
    if (!m) return 'not an SSH public host key ("<type> <base64>")';
    const blob = Buffer.from(m[2], "base64");
    const typeLen = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
    if (typeLen <= 0 || blob.subarray(4, 4 + typeLen).toString() !== m[1]) return "SSH host key blob does not match its type";
    return undefined;
}

/** Hostname or IPv4 literal an SSH client can dial. */
export function sshAddressReason(value: string): Reason {
    if (isIpv4(value) || net.isIPv6(value)) return undefined;
    return /^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/.test(value)
        ? undefined
        : "not an IP address or hostname";
}

/**
 * A plain config value that looks like key material. Secrets live in their own
 * config keys set with `pulumi config set --secret` and are referenced by name.
 */
export function looksLikeSecretMaterial(value: string): boolean {
    return /^(0x)?[0-9a-fA-F]{64}$/.test(value) || /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(value) || /"priv_key"/.test(value);
}

// ---- keys against the addresses and files that name them ---------------------------

/** The EIP-55 address of a secp256k1 private key (0x + 64 hex, already checked by privateKeyReason). */
export function addressOfPrivateKey(key: string): string {
    const ecdh = crypto.createECDH("secp256k1");
    ecdh.setPrivateKey(Buffer.from(key.replace(/^0x/, ""), "hex"));
    const pub = ecdh.getPublicKey(); // 0x04 || x || y
    const hash = keccak_256(pub.subarray(1));
    return `0x${eip55(Buffer.from(hash.subarray(12)).toString("hex"))}`;
}

/** 0G storage miner key: 64 hex digits without 0x, a secp256k1 scalar (what the node signs with). */
export function minerKeyScalarReason(value: string): Reason {
    const format = minerKeyReason(value);
    if (format) return format;
    const k = BigInt(`0x${value}`);
    return k === 0n || k >= SECP256K1_N ? "miner key is outside the secp256k1 range (nonzero, below the group order)" : undefined;
}

/** The ed25519 public key of a 32-byte seed (Node's own ed25519, as a PKCS#8 private key). */
export function ed25519PublicOfSeed(seed: Buffer): Buffer {
    const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
    const spki = crypto
        .createPublicKey(crypto.createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }))
        .export({ format: "der", type: "spki" });
    return Buffer.from(spki.subarray(spki.length - 32));
}

/** CometBFT's validator address: the first 20 bytes of sha256(public key as serialized), upper-case hex. */
export function cometAddressOf(pub: Buffer): string {
    return crypto.createHash("sha256").update(pub).digest().subarray(0, 20).toString("hex").toUpperCase();
}

/**
 * A priv_validator_key.json CometBFT accepts, of either key type a 0G validator may hold:
 * - ed25519 (`tendermint/PrivKeyEd25519`, CometBFT's default): priv_key.value the base64 of
 *   seed || public key (64 bytes), pub_key.value that public key (32 bytes);
 * - BLS12-381 (`cometbft/PrivKeyBls12_381`, what BeaconKit's beacond, the open core of 0gchaind,
 *   makes and signs with): priv_key.value the 32-byte secret scalar, pub_key.value sk·G1 uncompressed
 *   (96 bytes);
 * and address the first 20 bytes of sha256(pub_key). Which type a chain takes is in its genesis
 * (consensus params, pub_key_types); beacond v1.1.0 starts with either (checked: an ed25519 file
 * gets as far as waiting for its execution client). Reasons name fields and derived public values
 * (an address is public), never the private key.
 */
export function validatorKeyFileReason(value: string): Reason {
    const format = validatorKeyJsonReason(value);
    if (format) return format;
    const p = JSON.parse(value) as {
        address: string;
        pub_key?: { type?: unknown; value?: unknown };
        priv_key: { type?: unknown; value: string };
    };
    const kind = KEY_KINDS.find((k) => k.priv === p.priv_key.type);
    if (!kind) return `priv_key.type must be ${KEY_KINDS.map((k) => `${k.priv} (${k.name})`).join(" or ")}`;
    if (p.pub_key?.type !== kind.pub || typeof p.pub_key.value !== "string") return `pub_key must be {type: ${kind.pub}, value: <base64>}`;
    const b64 = /^[A-Za-z0-9+/]+={0,2}$/;
    const priv = b64.test(p.priv_key.value) ? Buffer.from(p.priv_key.value, "base64") : Buffer.alloc(0);
    if (priv.length !== kind.privBytes) return `priv_key.value must be the base64 of ${kind.privBytes} bytes (${kind.privShape})`;
    const pubField = b64.test(p.pub_key.value) ? Buffer.from(p.pub_key.value, "base64") : Buffer.alloc(0);
    if (pubField.length !== kind.pubBytes) return `pub_key.value must be the base64 of the ${kind.pubBytes}-byte ${kind.name} public key`;
    const derived = kind.derive(priv);
    if (typeof derived === "string") return derived;
    if (!derived.equals(pubField))
        return `pub_key.value is not the public key of priv_key (the key's public key is ${derived.toString("base64")}): the file mixes two keys`;
    const address = cometAddressOf(derived);
    if (p.address.toUpperCase() !== address)
        return `address ${p.address} is not the address of this key: its pub_key derives ${address} (the first 20 bytes of sha256(pub_key), as \`0gchaind tendermint show-address\` prints it)`;
    return undefined;
}

/**
 * The consensus address of a validator key file, either kind (upper-case hex, as CometBFT prints
 * it); undefined for a file validatorKeyFileReason refuses. Only the address leaves this function.
 */
export function validatorKeyAddress(value: string): string | undefined {
    if (validatorKeyFileReason(value) !== undefined) return undefined;
    return (JSON.parse(value) as { address: string }).address.toUpperCase();
}

const KEY_KINDS: {
    name: string;
    priv: string;
    pub: string;
    privBytes: number;
    privShape: string;
    pubBytes: number;
    derive: (priv: Buffer) => Buffer | string;
}[] = [
    {
        name: "ed25519, CometBFT's default",
        priv: "tendermint/PrivKeyEd25519",
        pub: "tendermint/PubKeyEd25519",
        privBytes: 64,
        privShape: "the ed25519 seed and its public key",
        pubBytes: 32,
        derive: (priv) => {
            const pub = ed25519PublicOfSeed(priv.subarray(0, 32));
            return pub.equals(priv.subarray(32))
                ? pub
                : "priv_key.value is not an ed25519 key: its second half is not the public key of its first (a truncated or hand-edited file?)";
        },
    },
    {
        name: "BLS12-381, BeaconKit's: beacond, 0gchaind",
        priv: "cometbft/PrivKeyBls12_381",
        pub: "cometbft/PubKeyBls12_381",
        privBytes: 32,
        privShape: "the BLS12-381 secret scalar",
        pubBytes: 96,
        derive: (priv) => {
            try {
                return blsPublicKey(priv);
            } catch {
                return "priv_key.value is not a BLS12-381 secret key: zero, or not below the group order (a hand-edited file?)";
            }
        },
    },
];

// ---- addresses nobody can sign for ---------------------------------------------------

/**
 * Why an address can receive nothing and call nothing: the zero address, the conventional burn
 * address 0x…dEaD, and the precompiles (0x…01 to 0x…ff, and the P-256 verifier at 0x…0100), for
 * which no private key exists. Funds sent there are gone; a contract call there does nothing.
 */
export function unusableAddressReason(value: string): Reason {
    if (!HEX40.test(value)) return undefined;
    const n = BigInt(value);
    if (n === 0n) return "the zero address: nobody can sign for it, so what is sent there is lost and no contract is there";
    if (n === 0xdeadn) return "the burn address 0x…dEaD: nobody can sign for it";
    if (n <= 0x100n) return `a precompile address (${value}): no key and no contract of yours is there`;
    return undefined;
}

// ---- URLs that carry a credential ----------------------------------------------------

/** Query parameters hosted RPC endpoints put keys in. */
const CREDENTIAL_PARAM = /key|token|secret|auth|pass|sig|credential/i;

/**
 * Why a URL given as plain config carries a credential, naming where (never the value): a
 * `user:password@`, a query parameter like `apikey`, or (`pathKeys`, RPC URLs) a path segment
 * shaped like an API key (16 or more letters and digits, both present, or 32+ hex digits:
 * `…/v2/<key>`, `…/v3/<project id>`). A release's URL is not read for path keys: artifact stores
 * put content digests and build ids there.
 */
export function urlCredentialReason(value: string, pathKeys = true): Reason {
    let url: URL;
    try {
        url = new URL(value);
    } catch {
        return undefined; // not a URL: said by httpUrlReason
    }
    // Without the value on the command line: pulumi asks for it (off the shell history and ps).
    const how = "store it as a secret (pulumi config set --secret <name>, which asks for the value) and write {secret: <name>} here";
    if (url.username !== "" || url.password !== "") return `this URL carries a credential in user:password@: ${how}`;
    for (const name of url.searchParams.keys()) {
        if (CREDENTIAL_PARAM.test(name))
            return `this URL carries a credential in its query (parameter ${/^[A-Za-z0-9_.-]{1,32}$/.test(name) ? name : "…"}): ${how}`;
    }
    for (const segment of pathKeys ? url.pathname.split("/") : []) {
        if (/^[A-Za-z0-9_-]{16,}$/.test(segment) && /[0-9]/.test(segment) && /[A-Za-z]/.test(segment))
            return `this URL carries what looks like an API key in its path: ${how}`;
        if (/^[0-9a-fA-F]{32,}$/.test(segment)) return `this URL carries what looks like an API key in its path: ${how}`;
    }
    return undefined;
}

/** A URL held in a secret: the same rules as httpUrlReason, without echoing any of it. */
export function secretUrlReason(value: string): Reason {
    const reason = httpUrlReason(value);
    if (reason === undefined) return envSafeUrlReason(value);
    return reason.startsWith("URL is not in its canonical form")
        ? "the URL is not in its canonical form (as the WHATWG URL parser writes it: lower-case scheme and host, no default port, no dot segments)"
        : reason;
}

/**
 * An RPC URL reaches hosts as a value of a root-only environment file (the sequencer's, read by
 * systemd and `docker --env-file`, neither of which unquotes alike): only characters both read
 * literally. The WHATWG parser leaves `$`, `'` and `;` unencoded in a path; they are refused here
 * (write %24, %27, %3B). Names the character, never the URL.
 */
export function envSafeUrlReason(value: string): Reason {
    const bad = [...value].find((c) => !ENV_FILE_VALUE.test(c));
    return bad === undefined
        ? undefined
        : `the URL holds ${JSON.stringify(bad)}, which an environment file cannot carry unquoted: percent-encode it (%${bad.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")})`;
}
