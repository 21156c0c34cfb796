// The SSH key as the command provider's steps carry it. Every step keeps its connection, private
// key included, in Pulumi's state twice (inputs and outputs), each an encrypted secret: with a
// dozen steps per host, the key was a fifth of the state. An Ed25519 key in OpenSSH's format
// (399 characters) is the same key as a PKCS#8 PEM of 119, which the provider's SSH library reads
// (golang.org/x/crypto/ssh ParsePrivateKey). OpenSSH's own client (9.2, Debian 12) does not read
// that form, so the drift check and `nodefleet status`, which run it, keep the key as it was given.
import * as crypto from "node:crypto";

const OPENSSH_MAGIC = "openssh-key-v1\0";
/** The DER of a PKCS#8 Ed25519 private key before its 32-byte seed (RFC 8410). */
export const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/**
 * The key in its shortest form the command provider reads: an unencrypted Ed25519 key in
 * OpenSSH's format becomes a PKCS#8 PEM of the same key (checked: the same public key); any other
 * key (RSA, ECDSA, a passphrase-protected key, a key that does not parse) is returned as it is,
 * and the provider reports it as before.
 */
export function compactSshKey(key: string): string {
    try {
        const seed = openSshEd25519Seed(key);
        if (seed === undefined) return key;
        const pem = `-----BEGIN PRIVATE KEY-----\n${Buffer.concat([PKCS8_ED25519_PREFIX, seed.seed]).toString("base64")}\n-----END PRIVATE KEY-----\n`;
        const pub = crypto.createPublicKey(crypto.createPrivateKey(pem)).export({ format: "der", type: "spki" }).subarray(-32);
        return pub.equals(seed.publicKey) ? pem : key;
    } catch {
        return key;
    }
}

/** The 32-byte secret seed and the public key of an unencrypted single Ed25519 key in OpenSSH's format, else undefined. */
function openSshEd25519Seed(key: string): { seed: Buffer; publicKey: Buffer } | undefined {
    const m = /^-----BEGIN OPENSSH PRIVATE KEY-----\r?\n([A-Za-z0-9+/=\r\n]+)-----END OPENSSH PRIVATE KEY-----\s*$/.exec(key.trim() + "\n");
    if (m === null) return undefined;
    const blob = Buffer.from(m[1]!.replace(/\s/g, ""), "base64");
    if (blob.toString("latin1", 0, OPENSSH_MAGIC.length) !== OPENSSH_MAGIC) return undefined;
    const r = reader(blob, OPENSSH_MAGIC.length);
    const cipher = r.string().toString("latin1");
    const kdf = r.string().toString("latin1");
    r.string(); // kdf options
    if (cipher !== "none" || kdf !== "none" || r.uint32() !== 1) return undefined;
    r.string(); // the public key blob
    const priv = reader(r.string(), 0);
    if (priv.uint32() !== priv.uint32()) return undefined; // the check integers differ: not a clear key
    if (priv.string().toString("latin1") !== "ssh-ed25519") return undefined;
    const publicKey = priv.string();
    const secret = priv.string();
    if (publicKey.length !== 32 || secret.length !== 64 || !secret.subarray(32).equals(publicKey)) return undefined;
    return { seed: secret.subarray(0, 32), publicKey };
}

function reader(buf: Buffer, start: number) {
    let at = start;
    const need = (n: number) => {
        if (at + n > buf.length) throw new Error("truncated");
    };
    return {
        uint32(): number {
            need(4);
            const v = buf.readUInt32BE(at);
            at += 4;
            return v;
        },
        string(): Buffer {
            const n = this.uint32();
            need(n);
            const s = buf.subarray(at, at + n);
            at += n;
            return s;
        },
    };
}
