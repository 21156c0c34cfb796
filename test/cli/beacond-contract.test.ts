// Contract test: the consensus unit and app.toml nodefleet renders for a release whose
// daemon is BeaconKit's beacond (the open core of 0gchaind), read by the real beacond v1.1.0
// (lab/beacond.sh: the pinned prebuilt artifact, or built from the Go module proxy). Every flag of
// the rendered ExecStart must be one `beacond start --help` lists (a misspelt flag fails here);
// then a dry start on loopback: a home made by `beacond init`, nodefleet's default app.toml and
// config.toml in it, the rendered argv and environment with only the host paths mapped to a
// scratch directory and the release's KZG file to the module's. beacond must get as far as dialling
// the execution client at the rendered rpc-dial-url (nothing listens there), which it does only
// after it has read the JWT file, the trusted setup and the chain spec. It also pins where the real
// program differs from what nodefleet assumed before: a JWT file without 0x stops it; its validator
// keys are BLS12-381 (`cometbft/PrivKeyBls12_381`), which nodefleet's key check takes (fresh keys
// from `beacond init` here); it reads app.toml without defaults, so nodefleet's app.toml carries
// every beacon-kit key `beacond init` writes (the payload builder was off without it).
// What this cannot show: beacond driving geth or reth (the dev chain, lab/devchain.sh).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { validatorKeyFileReason } from "../../components/values/validators";
import { renderAppToml, renderConfigToml, renderConsensusUnit } from "../../components/roles/validator/units";
import { validatorPaths } from "../../components/roles/validator/contract";
import { releaseLink } from "../../components/hosts/scripts";
import { HOSTFILES_DIR } from "../../components/base/render";
import { baseFleet, chainRelease, secretSource } from "../support/fixtures";
import { systemdWords } from "../support/aztec";
import { ROOT } from "../support/cli";
import { until } from "../support/process";

const V = 2;
const PREFIX = 62; // ports 62551 (the engine URL nobody serves), 62656/62657 (CometBFT): loopback only
const BEACOND = chainRelease({ consensus: { daemon: "beacond", chainSpec: "devnet" } });

function validator() {
    const f = baseFleet();
    // Peers on loopback where nothing listens: the flags are parsed, nothing leaves this machine.
    f.nodes[V].validator = { ...f.nodes[V].validator, portPrefix: PREFIX, consensusSeeds: [`${"ab".repeat(20)}@127.0.0.1:9`], consensusPeers: [`${"cd".repeat(20)}@localhost:9`] };
    return parseFleet(f, secretSource()).spec.nodes[V] as Extract<ReturnType<typeof parseFleet>["spec"]["nodes"][number], { role: "validator" }>;
}

function lab(...args: string[]): string {
    const r = spawnSync("bash", [path.join(ROOT, "lab/beacond.sh"), ...args], { encoding: "utf8", timeout: 3 * 3600_000 });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
}

/** The unit's ExecStart words and its Environment= assignments. */
function unitCommand(unit: string): { words: string[]; env: Record<string, string> } {
    const line = (key: string) => unit.split("\n").filter((l) => l.startsWith(`${key}=`)).map((l) => l.slice(key.length + 1));
    const env = Object.fromEntries(line("Environment").flatMap((l) => systemdWords(l)).map((a) => [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]));
    return { words: systemdWords(line("ExecStart")[0]!), env };
}

/** The long flags a `--help` text lists. */
function helpFlags(help: string): Set<string> {
    return new Set([...help.matchAll(/^\s+(?:-\w, )?(--[a-z0-9._-]+)/gm)].map((m) => m[1]!));
}

describe("the rendered consensus unit and app.toml are read by the real beacond", () => {
    let beacond: string;
    let kzg: string;
    let dir: string;
    let child: ChildProcess | undefined;

    before(() => {
        beacond = lab("path");
        kzg = lab("kzg");
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-beacond-contract-"));
    });
    after(() => {
        child?.kill("SIGKILL");
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("lists every flag of the rendered ExecStart in `beacond start --help`, and misses a misspelt one", () => {
        const help = spawnSync(beacond, ["start", "--help"], { encoding: "utf8" });
        assert.equal(help.status, 0, help.stderr);
        const known = helpFlags(help.stdout);
        assert.ok(known.has("--beacon-kit.engine.rpc-dial-url") && known.has("--home"), "the help text was read");
        const { words } = unitCommand(renderConsensusUnit(validator(), "/data", BEACOND));
        assert.equal(words[1], "start");
        const used = words.filter((w) => w.startsWith("--"));
        assert.deepEqual(used, ["--home", "--beacon-kit.engine.jwt-secret-path", "--beacon-kit.kzg.trusted-setup-path", "--p2p.seeds", "--p2p.persistent_peers"]);
        for (const flag of used) assert.ok(known.has(flag), `beacond start has no flag ${flag}`);
        assert.ok(!known.has("--beacon-kit.engine.jwt-secret-paths"), "a misspelling is not a flag");
        // 0gchaind's flags are beacond's with the prefix renamed: the same check, prefix mapped.
        const zg = unitCommand(renderConsensusUnit(validator(), "/data", chainRelease())).words.filter((w) => w.startsWith("--"));
        for (const flag of zg) assert.ok(known.has(flag.replace(/^--chaincfg\./, "--beacon-kit.")), `0gchaind flag ${flag} has no beacond counterpart`);
    });

    it("takes the priv_validator_key.json `beacond init` makes (BLS12-381) as a validator key, and refuses one with a changed byte", () => {
        for (const n of [1, 2, 3]) {
            const home = path.join(dir, `key-${n}`);
            const init = spawnSync(beacond, ["init", `key-${n}`, "--chain-id", "beacond-2061", "--home", home], { encoding: "utf8", env: { ...process.env, HOME: dir, CHAIN_SPEC: "devnet" } });
            assert.equal(init.status, 0, init.stderr);
            const file = fs.readFileSync(path.join(home, "config/priv_validator_key.json"), "utf8");
            assert.equal(JSON.parse(file).priv_key.type, "cometbft/PrivKeyBls12_381");
            assert.equal(validatorKeyFileReason(file), undefined, `beacond's key ${n}`);
            const edited = JSON.parse(file);
            const secret = Buffer.from(edited.priv_key.value, "base64");
            secret[n] ^= 0x10;
            edited.priv_key.value = secret.toString("base64");
            assert.match(validatorKeyFileReason(JSON.stringify(edited)) ?? "", /pub_key\.value is not the public key of priv_key|not below the group order/);
        }
    });

    it("writes every key of the app.toml `beacond init` makes, with its value, but the engine link, the JWT, the trusted setup and pruning (beacond reads its tables without defaults: a key left out is zero; its rollback panics without a pruning strategy)", () => {
        const home = path.join(dir, "init-defaults");
        const init = spawnSync(beacond, ["init", "defaults", "--chain-id", "beacond-2061", "--home", home], { encoding: "utf8", env: { ...process.env, HOME: dir, CHAIN_SPEC: "devnet" } });
        assert.equal(init.status, 0, init.stderr);
        const mine = path.join(dir, "nodefleet-app.toml");
        fs.writeFileSync(mine, renderAppToml(validator(), dir, BEACOND));
        /** Every key of an app.toml as its dotted path -> value, by Python's TOML parser. */
        const kit = (file: string): Record<string, unknown> => {
            const r = spawnSync("python3", ["-c", "import json, sys, tomllib\ndef flat(d, p=''):\n    for k, v in d.items():\n        yield from flat(v, p + k + '.') if isinstance(v, dict) else [(p + k, v)]\nprint(json.dumps(dict(flat(tomllib.load(open(sys.argv[1], 'rb'))))))", file], { encoding: "utf8" });
            assert.equal(r.status, 0, r.stderr);
            return JSON.parse(r.stdout);
        };
        const theirs = kit(path.join(home, "config/app.toml")), ours = kit(mine);
        const rendered = ["beacon-kit.engine.rpc-dial-url", "beacon-kit.engine.jwt-secret-path", "beacon-kit.kzg.trusted-setup-path", "pruning"];
        assert.deepEqual(Object.keys(ours).sort(), Object.keys(theirs).sort(), "the same keys");
        for (const key of Object.keys(theirs).filter((k) => !rendered.includes(k))) assert.deepEqual(ours[key], theirs[key], key);
        assert.equal(ours["beacon-kit.payload-builder.enabled"], true, "a validator proposes with its local payload builder");
        assert.equal(theirs.pruning, "everything");
        assert.equal(ours.pruning, "default", "a height rollback needs the states it goes back to");
        // And the comparison finds a key left out.
        const without = path.join(dir, "without.toml");
        fs.writeFileSync(without, fs.readFileSync(mine, "utf8").replace(/^payload-timeout = .*\n/m, ""));
        assert.notDeepEqual(Object.keys(kit(without)).sort(), Object.keys(theirs).sort());
    });

    it("starts from a beacond-init home with nodefleet's app.toml and config.toml, and dials the rendered engine URL", async () => {
        const node = validator();
        const p = validatorPaths(node, dir);
        const env = { ...process.env, HOME: dir };
        const init = spawnSync(beacond, ["init", "contract", "--chain-id", "beacond-2061", "--home", p.consensusHome], { encoding: "utf8", env: { ...env, CHAIN_SPEC: "devnet" } });
        assert.equal(init.status, 0, init.stderr);
        // nodefleet writes its default files where a home has none: here they replace init's.
        fs.writeFileSync(path.join(p.consensusHome, "config/app.toml"), renderAppToml(node, dir, BEACOND));
        fs.writeFileSync(path.join(p.consensusHome, "config/config.toml"), renderConfigToml(node).replace("tcp://0.0.0.0:", "tcp://127.0.0.1:"));
        // set-rpc-dial-url.py (docs/spec.md §4.5 step 12) finds the key in the file beacond reads.
        const edit = spawnSync("python3", [path.join(HOSTFILES_DIR, "set-rpc-dial-url.py"), path.join(p.consensusHome, "config/app.toml"), `http://localhost:${PREFIX}551`, "--dry-run"], { encoding: "utf8" });
        assert.equal(edit.status, 0, edit.stderr);
        const { words, env: unitEnv } = unitCommand(renderConsensusUnit(node, dir, BEACOND));
        assert.deepEqual(unitEnv, { CHAIN_SPEC: "devnet" });
        const release = `${releaseLink("0g-chain")}/kzg-trusted-setup.json`;
        const argv = [beacond, ...words.slice(1).map((w) => (w === release ? kzg : w))];
        assert.ok(argv.includes(kzg), "the unit names the release's trusted setup");

        const start = async (jwtText: string) => {
            fs.writeFileSync(p.jwt, jwtText, { mode: 0o600 });
            let output = "";
            const c = spawn(argv[0]!, argv.slice(1), { cwd: p.dataRoot, stdio: ["ignore", "pipe", "pipe"], env: { ...env, ...unitEnv } });
            for (const s of [c.stdout!, c.stderr!]) s.on("data", (d) => (output = (output + String(d)).slice(-30_000)));
            return { c, log: () => output };
        };
        // As setup writes it: 0x and 64 hex digits.
        const ok = await start(`0x${crypto.randomBytes(32).toString("hex")}\n`);
        child = ok.c;
        const plain = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");
        const dial = await until("beacond dialling the engine URL", 90, async () => /Waiting for execution client to start.*dial_url=(\S+)/.exec(plain(ok.log()))?.[1], ok.c, ok.log, "beacond");
        assert.equal(dial, `http://localhost:${PREFIX}551`);
        ok.c.kill("SIGKILL");
        await new Promise((r) => (ok.c.exitCode !== null || ok.c.signalCode !== null ? r(null) : ok.c.on("exit", r)));

        // Where beacond differs from what nodefleet wrote before: a JWT file without 0x stops it.
        const bare = await start(`${crypto.randomBytes(32).toString("hex")}\n`);
        child = bare.c;
        const code = await new Promise<number | null>((r) => (bare.c.exitCode !== null ? r(bare.c.exitCode) : bare.c.on("exit", (c) => r(c))));
        assert.notEqual(code, 0);
        assert.match(bare.log(), /hex string without 0x prefix/);
    });
});
