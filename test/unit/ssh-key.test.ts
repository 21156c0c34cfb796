// The SSH key as the steps carry it (components/hosts/ssh-key.ts), against keys made by the real
// ssh-keygen. That the command provider reads the PKCS#8 form is proven where it connects: the cli
// tier (its SSH library parses the key before the scripted host answers) and the dev VMs (real sshd).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { compactSshKey } from "../../components/hosts/ssh-key";

function keygen(dir: string, name: string, args: string[]): { key: string; pub: string } {
    const file = path.join(dir, name);
    const r = spawnSync("ssh-keygen", ["-q", "-N", "", "-C", "", "-f", file, ...args], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return { key: fs.readFileSync(file, "utf8"), pub: fs.readFileSync(`${file}.pub`, "utf8").trim() };
}

describe("SSH key in the steps' connection", () => {
    it("an Ed25519 key in OpenSSH's format becomes the PKCS#8 PEM of the same key, a third of its length", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-sshkey-"));
        try {
            for (let i = 0; i < 5; i++) {
                const { key, pub } = keygen(dir, `ed${i}`, ["-t", "ed25519"]);
                const compact = compactSshKey(key);
                assert.match(compact, /^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=]{64}\n-----END PRIVATE KEY-----\n$/);
                assert.ok(compact.length * 3 < key.length + 60, `${compact.length} against ${key.length}`);
                // The same key: its public half is the one ssh-keygen wrote.
                const spki = crypto.createPublicKey(crypto.createPrivateKey(compact)).export({ format: "der", type: "spki" }).subarray(-32);
                const wire = Buffer.from(pub.split(" ")[1]!, "base64");
                assert.deepEqual(spki, wire.subarray(wire.length - 32), `key ${i}`);
                // Without the final newline, or with CRLF line ends: the same.
                assert.equal(compactSshKey(key.trimEnd()), compact);
                assert.equal(compactSshKey(key.replace(/\n/g, "\r\n")), compact);
            }
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("any other key is left as it is: RSA, ECDSA, a passphrase-protected key, a damaged one", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-sshkey-"));
        try {
            for (const [name, args] of [["rsa", ["-t", "rsa", "-b", "2048"]], ["ecdsa", ["-t", "ecdsa"]]] as const) {
                const { key } = keygen(dir, name, [...args]);
                assert.equal(compactSshKey(key), key, name);
            }
            const file = path.join(dir, "locked");
            assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "a passphrase", "-f", file]).status, 0);
            const locked = fs.readFileSync(file, "utf8");
            assert.equal(compactSshKey(locked), locked, "passphrase-protected");
            const { key } = keygen(dir, "ed", ["-t", "ed25519"]);
            const lines = key.trim().split("\n");
            const truncated = [...lines.slice(0, 2), lines.at(-1)!].join("\n") + "\n";
            assert.equal(compactSshKey(truncated), truncated, "truncated");
            // The public half altered: not the same key, left for the provider to refuse.
            const blob = Buffer.from(lines.slice(1, -1).join(""), "base64");
            blob[blob.length - 40] ^= 1;
            const altered = `${lines[0]}\n${blob.toString("base64")}\n${lines.at(-1)}\n`;
            assert.equal(compactSshKey(altered), altered, "altered");
            for (const other of ["", "not a key", "-----BEGIN PRIVATE KEY-----\nMC4=\n-----END PRIVATE KEY-----\n"]) assert.equal(compactSshKey(other), other);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
