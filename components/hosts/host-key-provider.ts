// The providers of a cloud host's first boot (first-boot.ts): the ed25519 host key nodefleet makes
// for the server's user-data, and the swap to the key the host then makes itself. The state keeps
// only loaders of this module (first-boot.ts), so it is loaded by the dynamic provider's process: it
// imports nothing of the program but node's modules, the OpenSSH runner and the templates.
import * as crypto from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { render } from "../base/render";
import type { Connection } from "./connection";
import { runSsh, sshFailure } from "./openssh";
import { PKCS8_ED25519_PREFIX } from "./ssh-key";

/** Where the host keeps the key it made itself (the one every connection after the swap pins). */
export const HOST_KEY_DIR = "/etc/ssh/nodefleet";
/** The sshd drop-in that serves that key alone (Debian's sshd_config includes sshd_config.d first). */
export const HOST_KEY_CONF = "/etc/ssh/sshd_config.d/10-nodefleet-host-key.conf";

/** An OpenSSH public key of the one type nodefleet pins: `ssh-ed25519 <base64 of its 51-byte blob>`. */
const ED25519_PUBLIC = /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]{43}=?$/;

/** The key's first two fields when it is an ed25519 public key, else undefined (the host is not trusted to say one). */
export function ed25519PublicKey(text: string): string | undefined {
    const key = text.trim().split(/\s+/).slice(0, 2).join(" ");
    if (!ED25519_PUBLIC.test(key)) return undefined;
    const blob = Buffer.from(key.slice("ssh-ed25519 ".length), "base64");
    return blob.length === 51 && blob.readUInt32BE(0) === 11 && blob.readUInt32BE(15) === 32 ? key : undefined;
}

function sshString(b: Buffer | string): Buffer {
    const body = typeof b === "string" ? Buffer.from(b, "latin1") : b;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length);
    return Buffer.concat([len, body]);
}

export interface HostKeyPair {
    /** OpenSSH's format, unencrypted, as cloud-init writes it to /etc/ssh/ssh_host_ed25519_key. */
    readonly privateKey: string;
    /** `ssh-ed25519 AAAA…` (no comment): what the connections pin. */
    readonly publicKey: string;
}

/**
 * A new ed25519 host key in OpenSSH's formats (PROTOCOL.key: "openssh-key-v1", no cipher, no KDF).
 * `seed` (32 bytes) makes a given key, for golden files; without it the key is random: 32 random
 * bytes read as a key, never `generateKeyPairSync`, whose job, finalized by a garbage collection
 * inside the JWK export below, took the key's lock the export held (Node 20: the process hung for
 * good, its main thread in ~KeyGenJob under ExportJWKEdKey; seen in an e2e run).
 */
export function newHostKey(comment: string, seed?: Buffer): HostKeyPair {
    const privateKey = crypto.createPrivateKey({
        key: Buffer.concat([PKCS8_ED25519_PREFIX, seed ?? crypto.randomBytes(32)]),
        format: "der",
        type: "pkcs8",
    });
    const jwk = privateKey.export({ format: "jwk" });
    const secret = Buffer.from(String(jwk.d), "base64url");
    const pub = Buffer.from(String(jwk.x), "base64url");
    const blob = Buffer.concat([sshString("ssh-ed25519"), sshString(pub)]);
    const check = seed === undefined ? crypto.randomBytes(4) : seed.subarray(0, 4);
    let priv = Buffer.concat([
        check,
        check,
        sshString("ssh-ed25519"),
        sshString(pub),
        sshString(Buffer.concat([secret, pub])),
        sshString(comment),
    ]);
    const pad: number[] = [];
    for (let i = 1; (priv.length + pad.length) % 8 !== 0; i++) pad.push(i);
    priv = Buffer.concat([priv, Buffer.from(pad)]);
    const whole = Buffer.concat([
        Buffer.from("openssh-key-v1\0", "latin1"),
        sshString("none"),
        sshString("none"),
        sshString(""),
        Buffer.from([0, 0, 0, 1]),
        sshString(blob),
        sshString(priv),
    ]);
    const lines = whole.toString("base64").match(/.{1,70}/g) ?? [];
    return {
        privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join("\n")}\n-----END OPENSSH PRIVATE KEY-----\n`,
        publicKey: `ssh-ed25519 ${blob.toString("base64")}`,
    };
}

export interface FirstBootKeyProps {
    readonly host: string;
    readonly publicKey?: string;
    readonly privateKey?: string;
}

/** Made once, kept for the server's life: a new key would be a new server (its user-data). */
export const firstBootKeyProvider: pulumi.dynamic.ResourceProvider = {
    async create(inputs: FirstBootKeyProps) {
        const key = newHostKey(`nodefleet-first-boot-${inputs.host}`);
        return { id: `first-boot-key-${inputs.host}`, outs: { host: inputs.host, ...key } };
    },
    async diff() {
        return { changes: false };
    },
};

export interface HostKeySwapProps {
    readonly host: string;
    readonly connection: Connection;
    /** The key of the server's user-data: accepted until the swap, never after it. */
    readonly firstBootKey: string;
    /** The key the host made (read over a connection pinned to the first-boot key). */
    readonly hostKey: string;
}

/** Seconds the swap, then the check after it, has to answer. */
const SWAP_TIMEOUT_SECONDS = 120;

/** The script that has sshd serve the key the host made, alone (templates/hosts/host-key-swap.sh.hbs). */
export function swapScript(host: string, hostKey: string): string {
    return render("host-key-swap.sh", { host, hostKey, dir: HOST_KEY_DIR, conf: HOST_KEY_CONF });
}

/** The script that has the host make its own key and print the public half (templates/hosts/host-key-make.sh.hbs). */
export function makeKeyScript(host: string): string {
    return render("host-key-make.sh", { host, dir: HOST_KEY_DIR, comment: `nodefleet-${host}` });
}

async function swap(p: HostKeySwapProps): Promise<void> {
    const hostKey = ed25519PublicKey(p.hostKey);
    if (hostKey === undefined) throw new Error(`host ${p.host}: the host key to swap to is not an ed25519 public key`);
    const run = { host: p.host, connection: p.connection, timeoutSeconds: SWAP_TIMEOUT_SECONDS };
    // Either key: a swap cut short after sshd took the new key is run again over that key.
    const r = await runSsh({
        ...run,
        hostKeys: [p.firstBootKey, hostKey],
        command: "/bin/sh -s",
        stdin: swapScript(p.host, hostKey),
        what: "the host key swap",
    });
    if (r.code !== 0)
        throw new Error(`host ${p.host}: the host key swap failed (${r.code === 255 ? "ssh" : `exit ${r.code}`}): ${sshFailure(r)}`);
    // Only the new key from here on: a host that still shows the first-boot key is refused. sshd
    // re-executes itself on the reload and refuses connections for that moment: tried again then.
    for (let attempt = 1; ; attempt++) {
        const check = await runSsh({
            ...run,
            hostKeys: [hostKey],
            command: "/bin/true",
            stdin: "",
            what: "the check after the host key swap",
        });
        if (check.code === 0) return;
        if (check.code === 255 && RELOADING.test(check.err) && attempt < CHECK_ATTEMPTS) {
            await new Promise((resolve) => setTimeout(resolve, 1000));
            continue;
        }
        throw new Error(
            `host ${p.host}: after the swap the host does not present the key it made (${sshFailure(check)}); nothing more runs on it`,
        );
    }
}

/** What ssh says while sshd restarts: no session, no key shown yet (a key mismatch is never retried). */
const RELOADING = /Connection refused|Connection reset|Connection closed|kex_exchange_identification/;
const CHECK_ATTEMPTS = 15;

function sameSwap(a: HostKeySwapProps, b: HostKeySwapProps): boolean {
    const key = (p: HostKeySwapProps) =>
        JSON.stringify([p.connection.host, p.connection.port, p.connection.user, p.connection.privateKey, p.firstBootKey, p.hostKey]);
    return key(a) === key(b);
}

export const hostKeySwapProvider: pulumi.dynamic.ResourceProvider = {
    async create(inputs: HostKeySwapProps) {
        await swap(inputs);
        return { id: `host-key-swap-${inputs.host}`, outs: inputs };
    },
    async diff(_id: string, olds: HostKeySwapProps, news: HostKeySwapProps) {
        return { changes: !sameSwap(olds, news) };
    },
    async update(_id: string, _olds: HostKeySwapProps, news: HostKeySwapProps) {
        await swap(news);
        return { outs: news };
    },
};
