// The real Aztec CLI for the contract and registration tests (lab/aztec.sh installs it once into
// the cache), and what a rendered sequencer unit hands it: argv and environment, read back the
// way systemd and docker read them.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { releaseLink } from "../../components/hosts/scripts";
import { HOST_LIB } from "../../components/base/layout";
import { HOSTFILES_DIR } from "../../components/base/render";
import { ROOT, sh, stateDir } from "./cli";

/** The install directory of the real CLI (installs it when missing: minutes, once). */
export function aztecInstall(): string {
    const r = spawnSync("bash", [path.join(ROOT, "lab/aztec.sh"), "path"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 900_000 });
    if (r.status !== 0) throw new Error(`lab/aztec.sh path failed (${r.status})`);
    return r.stdout.trim();
}

/** The dev chain's funded account (lab/sim/nodefleet_sim/txgen.py: a public test key). */
export const devKey = (): string => sh("python3", ["-c", "from nodefleet_sim import txgen; print('0x%064x' % txgen.DEV_KEY)"], { cwd: path.join(ROOT, "lab/sim") }).stdout.trim();

/**
 * lab/aztec.sh with extra variables (keys go there, never into an argv); its stdout. A run that
 * pays from an account (DEPLOYER_KEY: the dev chain's funded one, in the e2e tier) holds a lock
 * while it sends: the e2e lane runs two test files side by side, and two senders of one account
 * at once would take the same nonce.
 */
export const aztecLab = (args: string[], env: Record<string, string> = {}): string => {
    const argv = ["bash", path.join(ROOT, "lab/aztec.sh"), ...args];
    if (env.DEPLOYER_KEY !== undefined) {
        fs.mkdirSync(stateDir(), { recursive: true });
        argv.unshift("flock", path.join(stateDir(), "l1-sender.lock"));
    }
    return sh(argv[0]!, argv.slice(1), { env, timeoutMs: 600_000 }).stdout;
};

/**
 * The newest blob transaction on an L1 and the blobs its beacon node API serves for that block
 * (versioned hashes from their KZG commitments), found as the node's blob client finds them: the
 * slot of the block's parent beacon root, + 1. The newest, because beacond v1.1.0 maps a block root
 * to its slot from an in-memory cache of the blocks it saw since it started (storage/block/store.go,
 * an LRU): an older root may be "slot not found at block root", though its sidecars are on disk.
 */
export async function checkpointBlobs(l1: string, beacon: string): Promise<{ block: number; slot: number; versionedHashes: string[]; served: string[] }> {
    const rpc = async (method: string, params: unknown[]) =>
        ((await (await fetch(l1, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json()) as any).result;
    const head = Number(await rpc("eth_blockNumber", []));
    for (let n = head; n >= 1; n--) {
        const block = await rpc("eth_getBlockByNumber", [`0x${n.toString(16)}`, true]);
        const versionedHashes: string[] = block.transactions.flatMap((tx: any) => tx.blobVersionedHashes ?? []);
        if (versionedHashes.length === 0) continue;
        const header = (await (await fetch(`${beacon}/eth/v1/beacon/headers/${block.parentBeaconBlockRoot}`)).json()) as any;
        assert.ok(header.data, `block ${n}'s parent beacon root ${block.parentBeaconBlockRoot}: ${JSON.stringify(header)}`);
        const slot = Number(header.data.header.message.slot) + 1;
        const sidecars = (await (await fetch(`${beacon}/eth/v1/beacon/blob_sidecars/${slot}`)).json()) as any;
        const served = sidecars.data.map((s: any) => `0x01${createHash("sha256").update(Buffer.from(s.kzg_commitment.slice(2), "hex")).digest("hex").slice(2)}`);
        return { block: n, slot, versionedHashes, served };
    }
    return { block: 0, slot: 0, versionedHashes: [], served: [] };
}

/**
 * Makes this machine a host of `node` as the configure step would: the given host files in HOST_LIB.
 * Refuses if the node's /etc/nodefleet directory or the release link already exist (not ours to
 * touch). Appends to `created`, in order, what the test made and must remove in reverse: the
 * release link (the caller fills it), the host files and the node's /etc/nodefleet directory.
 */
export function prepareAztecHost(node: string, release: string, hostFiles: string[], created: string[]): void {
    const etc = path.join("/etc/nodefleet", node);
    for (const p of [etc, releaseLink(release)]) assert.ok(!fs.existsSync(p), `${p} exists on this machine: not touching it`);
    for (const p of ["/etc/nodefleet", path.dirname(releaseLink(release))]) if (!fs.existsSync(p)) created.push(p);
    created.push(releaseLink(release));
    if (!fs.existsSync(HOST_LIB)) created.push(HOST_LIB);
    fs.mkdirSync(HOST_LIB, { recursive: true });
    for (const f of hostFiles) {
        const to = path.join(HOST_LIB, f);
        if (!fs.existsSync(to)) created.push(to);
        fs.copyFileSync(path.join(HOSTFILES_DIR, f), to);
    }
    created.push(etc);
}

export interface ProbeResult {
    readonly flags: string[];
    readonly error: string | null;
    readonly env: Record<string, "option" | "fallback" | "config" | "direct" | "unread">;
    readonly parsed: Record<string, any> | null;
}

/** The real CLI's parser and config readers on argv and env (lab/aztec/probe.mjs); `preload` as NODE_OPTIONS --import would load it. */
export function probe(install: string, argv: string[], env: Record<string, string>, preload?: string): ProbeResult {
    const node = path.join(install, "bin/node");
    const args = [...(preload ? ["--import", preload] : []), path.join(ROOT, "lab/aztec/probe.mjs"), install, "--", ...argv];
    const r = spawnSync(node, args, { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", ...env }, timeout: 120_000 });
    if (r.status !== 0) throw new Error(`probe failed (${r.status}): ${r.stderr}`);
    return JSON.parse(r.stdout) as ProbeResult;
}

/** One systemd word of an ExecStart= line or setting: quotes removed, %% and $$ undoubled. */
export function systemdWords(line: string): string[] {
    const words: string[] = [];
    let i = 0;
    while (i < line.length) {
        while (line[i] === " ") i++;
        if (i >= line.length) break;
        let word = "";
        while (i < line.length && line[i] !== " ") {
            if (line[i] === '"') {
                i++;
                while (i < line.length && line[i] !== '"') {
                    if (line[i] === "\\") i++;
                    word += line[i++];
                }
                i++;
            } else word += line[i++];
        }
        words.push(word.replace(/%%/g, "%").replace(/\$\$/g, "$"));
    }
    return words;
}

export interface UnitLaunch {
    readonly argv: string[];
    /** The variables the process gets: Environment= lines (docker: those named by -e) and the env file. */
    readonly env: Record<string, string>;
}

/**
 * What the unit starts the CLI with: the words after the program (release) or after the image
 * (docker), and its environment, with the env file's content given (the key step writes it).
 */
export function unitLaunch(unit: string, envFile: string): UnitLaunch {
    const lines = unit.split("\n");
    const settings: Record<string, string> = {};
    for (const l of lines.filter((x) => x.startsWith("Environment="))) {
        const [assignment] = systemdWords(l.slice("Environment=".length));
        const eq = assignment!.indexOf("=");
        settings[assignment!.slice(0, eq)] = assignment!.slice(eq + 1);
    }
    const fileEnv: Record<string, string> = {};
    for (const l of envFile.split("\n").filter((x) => x.includes("="))) fileEnv[l.slice(0, l.indexOf("="))] = l.slice(l.indexOf("=") + 1);
    const words = systemdWords(lines.find((l) => l.startsWith("ExecStart="))!.slice("ExecStart=".length));
    if (words[0] === "/usr/bin/docker") {
        const named = words.flatMap((w, i) => (words[i - 1] === "-e" ? [w] : []));
        const image = words.findIndex((w) => w.startsWith("aztecprotocol/aztec:"));
        const env = Object.fromEntries(named.map((n) => [n, settings[n]!]));
        return { argv: words.slice(image + 1), env: { ...env, ...fileEnv } };
    }
    return { argv: words.slice(1), env: { ...settings, ...fileEnv } };
}

/** A value the host computes while writing an env file (the admin API key's sha256), as a sample. */
export const HOST_COMPUTED = "ab".repeat(32);

/**
 * The env file a key script writes (the whole script, scripts.ts wholeScript): the here-document
 * after `put <file>`, or, where the script assembles a block into `<file>.nodefleet-in` for put,
 * that block's here-document and its `printf 'NAME=%s\n'` lines (values the host computes, given
 * here as HOST_COMPUTED). A here-document of a secret's variable is expanded by sh from the
 * script's assignments, as the host's shell expands it.
 */
export function heredocOf(script: string, file: string): string {
    let heredoc: string;
    let computed = "";
    const start = script.indexOf(`put ${file} 0600 root:root <<NODEFLEET_EOF\n`);
    if (start >= 0) {
        const body = script.slice(script.indexOf("\n", start) + 1);
        heredoc = body.slice(0, body.indexOf("NODEFLEET_EOF"));
    } else {
        const end = script.indexOf(`} > ${file}.nodefleet-in\n`);
        if (end < 0) throw new Error(`no put ${file} in the script`);
        const block = script.slice(script.lastIndexOf("{\n\tcat <<NODEFLEET_EOF\n", end), end);
        const body = block.slice(block.indexOf("\n", block.indexOf("cat <<")) + 1);
        heredoc = body.slice(0, body.indexOf("NODEFLEET_EOF"));
        computed = [...block.matchAll(/^\s*printf '([A-Z_]+)=%s\\n'/gm)].map((m) => `${m[1]}=${HOST_COMPUTED}\n`).join("");
    }
    const assignments = script.slice(script.indexOf("\n") + 1, script.indexOf("\n# nodefleet: ") + 1);
    const expanded = spawnSync("sh", ["-s"], { input: `${assignments}cat <<NODEFLEET_EOF\n${heredoc}NODEFLEET_EOF\n`, encoding: "utf8" });
    assert.equal(expanded.status, 0, expanded.stderr);
    return expanded.stdout + computed;
}

/** The JSON settings a rendered registration script hands aztec-register.py (its heredoc). */
export function registrationSettings(script: string): Record<string, any> {
    return JSON.parse(script.split("<<'NODEFLEET_EOF'\n")[1]!.split("NODEFLEET_EOF")[0]!);
}
