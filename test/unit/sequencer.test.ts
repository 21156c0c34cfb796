// The sequencer role: rendered files (golden copies checked by systemd-analyze verify,
// shellcheck, python's compiler) and, with strict mocks, its steps, their order, what re-runs on
// which change, and where the validator key may go. What mocks cannot prove (the unit starting,
// the key staying out of ps and the journal, registration against a real L1 node, health read
// from a running node) the host-script tests below and the VM tier prove.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { parseFleet } from "../../components/config/fleet";
import { renderSequencerConfigure, renderSequencerKey, renderSequencerRegistration, renderSequencerRemove, renderSequencerUnit, renderSequencerVersion, sequencerJson } from "../../components/roles/sequencer/node";
import { HOSTFILES_DIR, unitWord } from "../../components/base/render";
import { golden, requireTool, runTool, verifyUnits } from "../support/golden";
import { aztecRelease, baseFleet, secretSource, SECRETS, ADDR, SEQUENCER_KEY_ADDRESS, sequencerV4Settings, l1Urls } from "../support/fixtures";
import { buildStack } from "../support/stack";
import { registrationSettings } from "../support/aztec";
import { registered, inputsOf, scriptOf, deleteScriptOf } from "../support/mocks";

const Q = 1;

function sequencerSpec(mutate: (s: any) => void = () => {}, v4 = false) {
    const f = baseFleet();
    if (v4) f.nodes[Q].sequencer = sequencerV4Settings();
    mutate(f.nodes[Q].sequencer);
    const fleet = parseFleet(f, secretSource());
    return fleet.spec.nodes[Q] as Extract<(typeof fleet.spec.nodes)[number], { role: "sequencer" }>;
}

/** verify of one unit; docker.service, which the docker runtime requires, is not installed here. */
const verifyUnit = (name: string, text: string) => verifyUnits({ [name]: text }, /docker\.service/);

/** The ExecStart= words after the program, split the simple way (the values here need no quotes). */
function startFlags(unit: string): string[] {
    const line = unit.split("\n").find((l) => l.startsWith("ExecStart="))!;
    const words = line.slice("ExecStart=".length).split(" ");
    return words.slice(words.indexOf("start"));
}

const SEED_2_4_FLAGS = ["--node", "--archiver", "--sequencer", "--network", "--l1-rpc-urls", "--l1-consensus-host-urls", "--sequencer.coinbase", "--p2p.p2pIp"];

describe("sequencer role: rendered files", () => {
    it("the release-runtime unit matches its golden copy, passes systemd-analyze verify, carries docs/spec.md §2.4's flags and no key", () => {
        const spec = sequencerSpec((s) => (s.runtime = "release"));
        const unit = fs.readFileSync(golden("sequencer/aztec-sequencer-1.service", renderSequencerUnit(spec, "/data", aztecRelease(), "198.51.100.20")), "utf8");
        verifyUnit("aztec-sequencer-1.service", unit);
        const flags = startFlags(unit);
        // docs/spec.md §2.4's flags but the L1 endpoints: a URL may carry an API key, so they come from the
        // root-only env file as ETHEREUM_HOSTS / L1_CONSENSUS_HOST_URLS (the key step's test).
        assert.deepEqual(flags.filter((w) => w.startsWith("--")), SEED_2_4_FLAGS.filter((f) => !["--l1-rpc-urls", "--l1-consensus-host-urls"].includes(f)));
        assert.deepEqual(flags.slice(flags.indexOf("--network"), flags.indexOf("--network") + 2), ["--network", "alpha-testnet"]);
        assert.doesNotMatch(unit, /sepolia\.example\.org|beacon\.example\.org/);
        assert.equal(flags[flags.indexOf("--sequencer.coinbase") + 1], ADDR.b);
        assert.equal(flags[flags.indexOf("--p2p.p2pIp") + 1], "198.51.100.20");
        // From the version's own directory: a new release changes the unit, and the configure step restarts the node onto it.
        assert.match(unit, new RegExp(`^ExecStart=/opt/nodefleet/releases/aztec-${"a2".repeat(12)}/bin/aztec start `, "m"));
        assert.match(unit, /^User=nodefleet$/m);
        assert.match(unit, /^EnvironmentFile=\/etc\/nodefleet\/sequencer-1\/aztec.env$/m);
        for (const env of ["DATA_DIRECTORY=/data/sequencer-1/data", "P2P_PORT=40400", "AZTEC_PORT=8080", "AZTEC_ADMIN_PORT=8880", "LOG_JSON=1"]) {
            assert.match(unit, new RegExp(`^Environment=${env}$`, "m"));
        }
        assert.match(unit, /^Restart=on-failure$/m);
        assert.match(unit, /^LimitNOFILE=65535$/m);
        assert.doesNotMatch(unit, /validatorPrivateKey|PRIVATE_KEY=|4c0883a6/);
    });

    it("the docker-runtime unit runs the image with --env-file, never the aztec wrapper, and passes systemd-analyze verify", () => {
        const spec = sequencerSpec((s) => (s.version = "2.0.2"));
        const unit = fs.readFileSync(golden("sequencer/aztec-sequencer-1-docker.service", renderSequencerUnit(spec, "/data", aztecRelease(), "198.51.100.20")), "utf8");
        verifyUnit("aztec-sequencer-1.service", unit);
        const start = unit.split("\n").find((l) => l.startsWith("ExecStart="))!;
        assert.match(start, /^ExecStart=\/usr\/bin\/docker run --rm --name aztec-sequencer-1 --network host --env-file \/etc\/nodefleet\/sequencer-1\/aztec.env /);
        // Non-secret settings are passed by name (-e NAME takes the value from the unit's environment).
        assert.match(start, / -e DATA_DIRECTORY -e P2P_PORT -e AZTEC_PORT -e AZTEC_ADMIN_PORT -e LOG_JSON /);
        assert.match(start, / aztecprotocol\/aztec:2\.0\.2 start --node --archiver --sequencer /);
        assert.doesNotMatch(start, /bin\/aztec |-e [A-Z_]+=/);
        assert.match(unit, /^Requires=docker.service$/m);
    });

    it("a 2.0.x patch release changes no line of the release runtime's unit (the restart comes from the version step alone)", () => {
        const a = renderSequencerUnit(sequencerSpec((s) => Object.assign(s, { runtime: "release", version: "2.0.1" })), "/data", aztecRelease(), "198.51.100.20");
        const b = renderSequencerUnit(sequencerSpec((s) => Object.assign(s, { runtime: "release", version: "2.0.2" })), "/data", aztecRelease(), "198.51.100.20");
        assert.equal(a, b);
    });

    it("a new aztec release changes the release runtime's unit (configure restarts the node onto that version); the docker runtime's not", () => {
        const next = { ...aztecRelease(), sha256: "a3".repeat(32) };
        const release = sequencerSpec((s) => (s.runtime = "release"));
        const changed = renderSequencerUnit(release, "/data", next, "198.51.100.20");
        assert.notEqual(changed, renderSequencerUnit(release, "/data", aztecRelease(), "198.51.100.20"));
        assert.match(changed, new RegExp(`^ExecStart=/opt/nodefleet/releases/aztec-${"a3".repeat(12)}/bin/aztec start `, "m"));
        const at = { host: "h", node: release, mount: "/data", publicIp: "198.51.100.20" };
        assert.notEqual(renderSequencerConfigure({ ...at, release: next }), renderSequencerConfigure({ ...at, release: aztecRelease() }));
        const docker = sequencerSpec();
        assert.equal(docker.sequencer.runtime, "docker");
        assert.equal(renderSequencerUnit(docker, "/data", next, "198.51.100.20"), renderSequencerUnit(docker, "/data", aztecRelease(), "198.51.100.20"));
    });

    it("4.1.2: the unit names VALIDATOR_PRIVATE_KEYS (not its fallback) and adds --l1-chain-id; golden, systemd-analyze verify", () => {
        const spec = sequencerSpec((s) => (s.runtime = "release"), true);
        const unit = fs.readFileSync(golden("sequencer/aztec-4.1.2.service", renderSequencerUnit(spec, "/data", aztecRelease(), "198.51.100.20")), "utf8");
        verifyUnit("aztec-sequencer-1.service", unit);
        const flags = startFlags(unit);
        assert.deepEqual(flags.filter((w) => w.startsWith("--")), ["--node", "--archiver", "--sequencer", "--network", "--l1-chain-id", "--sequencer.coinbase", "--p2p.p2pIp"]);
        assert.deepEqual(flags.slice(flags.indexOf("--network"), flags.indexOf("--network") + 2), ["--network", "testnet"]);
        assert.equal(flags[flags.indexOf("--l1-chain-id") + 1], "11155111");
        assert.match(unit, /VALIDATOR_PRIVATE_KEYS/);
        assert.doesNotMatch(unit, /VALIDATOR_PRIVATE_KEY\b|PRIVATE_KEY=|4c0883a6/);
        // 4.1.2 starts its P2P subsystem only when told to (the real node: no 40400 listener without it).
        assert.match(unit, /^Environment=P2P_ENABLED=true$/m);
        assert.doesNotMatch(renderSequencerUnit(sequencerSpec(), "/data", aztecRelease(), "198.51.100.20"), /P2P_ENABLED/);
        // An L1 of one's own with its block time: the node's ETHEREUM_SLOT_DURATION; absent, the node's 12.
        assert.doesNotMatch(unit, /ETHEREUM_SLOT_DURATION/);
        const fast = sequencerSpec((s) => Object.assign(s, { network: "local", l1ChainId: 16661, registryAddress: ADDR.b, l1SlotSeconds: 2 }), true);
        assert.match(renderSequencerUnit(fast, "/data", aztecRelease(), "198.51.100.20"), /^Environment=ETHEREUM_SLOT_DURATION=2$/m);
        const local = renderSequencerUnit(sequencerSpec(() => {}, true), "/data", aztecRelease(), "198.51.100.20");
        assert.match(local, / aztecprotocol\/aztec:4\.1\.2 start --node /);
        const dev = sequencerSpec((s) => Object.assign(s, { network: "local", l1ChainId: 16661, registryAddress: ADDR.b }), true);
        const devUnit = renderSequencerUnit(dev, "/data", aztecRelease(), "10.0.0.1");
        assert.deepEqual(startFlags(devUnit).slice(-6, -4), ["--l1-chain-id", "16661"]);
        // Not --registry-address: 4.1.2 accepts that flag and drops it (see aztec-versions.ts).
        assert.match(devUnit, new RegExp(`^Environment=REGISTRY_CONTRACT_ADDRESS=${ADDR.b}$`, "m"));
        assert.doesNotMatch(devUnit, /--registry-address/);
    });

    it("4.1.2: the key step writes VALIDATOR_PRIVATE_KEYS and, for the registration, PRIVATE_KEY and the BLS key; refuses without a BLS key", () => {
        requireTool("shellcheck", "shellcheck");
        const spec = sequencerSpec(() => {}, true);
        const file = golden("sequencer/validator-key-4.1.2.sh", renderSequencerKey(spec, "/data", SECRETS.sequencerKey!, SECRETS.blsKey, l1Urls(spec)));
        const text = fs.readFileSync(file, "utf8");
        assert.equal(runTool("shellcheck", ["--shell=sh", "--severity=style", file]).status, 0);
        // Run by sh, in a scratch /etc: the admin API key is made once, root-only, and the node's env
        // file holds its sha256 (what 4.1.2 compares the x-api-key header with), never the key.
        const etc = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-seqkey-"));
        const script = text.replaceAll("/etc/nodefleet/sequencer-1", etc).replaceAll("/var/lib/nodefleet/drift", path.join(etc, "drift"));
        const first = spawnSync("sh", ["-s"], { input: script, encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
        assert.equal(first.status, 0, first.stderr);
        const key = fs.readFileSync(path.join(etc, "admin-api.key"), "utf8");
        assert.match(key, /^[0-9a-f]{64}$/);
        assert.equal(fs.statSync(path.join(etc, "admin-api.key")).mode & 0o777, 0o600);
        const env = fs.readFileSync(path.join(etc, "aztec.env"), "utf8");
        const registerEnv = fs.readFileSync(path.join(etc, "register.env"), "utf8");
        // The files the shell wrote from the secrets the stdin sets: the keys under the names 4.1.2
        // reads, the L1 endpoints under the variables the CLI reads for them, in both files.
        assert.equal(env, `VALIDATOR_PRIVATE_KEYS=${SECRETS.sequencerKey}\nETHEREUM_HOSTS=https://sepolia.example.org/rpc\nL1_CONSENSUS_HOST_URLS=https://beacon.example.org\nAZTEC_ADMIN_API_KEY_HASH=${createHash("sha256").update(key).digest("hex")}\n`);
        assert.equal(registerEnv, `PRIVATE_KEY=${SECRETS.sequencerKey}\nETHEREUM_HOSTS=https://sepolia.example.org/rpc\nNODEFLEET_BLS_SECRET_KEY=${SECRETS.blsKey}\n`);
        assert.ok(!(first.stdout + first.stderr + env).includes(key), "the admin key itself is printed or in the env file");
        const second = spawnSync("sh", ["-s"], { input: script, encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
        assert.equal(second.status, 0, second.stderr);
        assert.match(second.stdout, /validator key unchanged/);
        assert.equal(fs.readFileSync(path.join(etc, "admin-api.key"), "utf8"), key, "a second run keeps the key");
        assert.ok(!fs.existsSync(path.join(etc, "aztec.env.nodefleet-in")), "the assembled env file is removed");
        // A new validator key restarts the running node (a systemctl stand-in records what it is asked).
        const bin = path.join(etc, "bin");
        fs.mkdirSync(bin);
        fs.writeFileSync(path.join(bin, "systemctl"), `#!/bin/sh\necho "$*" >> ${etc}/systemctl.calls\n`, { mode: 0o755 });
        const otherKey = `0x${"5a".repeat(32)}`;
        const rekey = renderSequencerKey(spec, "/data", otherKey, SECRETS.blsKey, l1Urls(spec)).replaceAll("/etc/nodefleet/sequencer-1", etc).replaceAll("/var/lib/nodefleet/drift", path.join(etc, "drift"));
        const third = spawnSync("sh", ["-s"], { input: rekey, encoding: "utf8", env: { PATH: `${bin}:/usr/bin:/bin` } });
        assert.equal(third.status, 0, third.stderr);
        assert.match(third.stdout, /restarted aztec-sequencer-1\.service for the new key/);
        assert.match(fs.readFileSync(path.join(etc, "systemctl.calls"), "utf8"), /^restart aztec-sequencer-1\.service$/m);
        fs.rmSync(etc, { recursive: true, force: true });
        assert.throws(() => renderSequencerKey(spec, "/data", SECRETS.sequencerKey!, undefined, l1Urls(spec)), /sequencer-1: the BLS secret key: it is missing/);
        assert.throws(() => renderSequencerKey(spec, "/data", SECRETS.sequencerKey!, "0x0", l1Urls(spec)), /sequencer-1: the BLS secret key: BLS secret key is outside the BN254 scalar field/);
        // 2.0.2 never gets a BLS key line, even when one is passed.
        assert.doesNotMatch(renderSequencerKey(sequencerSpec(), "/data", SECRETS.sequencerKey!, SECRETS.blsKey, l1Urls(sequencerSpec())), /NODEFLEET_BLS_SECRET_KEY|2a1f5c0e/);
    });

    it("4.1.2: the registration deposits into the rollup with the attester, withdrawer and chain id; no key in its arguments", () => {
        const spec = sequencerSpec(() => {}, true);
        const registration = fs.readFileSync(golden("sequencer/registration-4.1.2.sh", renderSequencerRegistration(spec, "/data", "aztec")), "utf8");
        const settings = registrationSettings(registration);
        assert.equal(settings.dialect, "rollup-deposit");
        assert.equal(settings.rollupAddress, ADDR.a);
        assert.equal(settings.argvPreload, "/usr/local/lib/nodefleet/aztec-argv.mjs");
        assert.deepEqual(settings.args, ["add-l1-validator", "--l1-chain-id", "11155111", "--attester", SEQUENCER_KEY_ADDRESS, "--withdrawer", ADDR.d, "--rollup", ADDR.a]);
        assert.doesNotMatch(registration, /--private-key|--bls-secret-key|--mnemonic|PRIVATE_KEY=|4c0883a6|2a1f5c0e/);
        const v2 = registrationSettings(renderSequencerRegistration(sequencerSpec(), "/data", "aztec"));
        assert.equal(v2.dialect, "staking-asset-handler");
        assert.equal(v2.argvPreload, null);
        assert.deepEqual(v2.args.filter((a: string) => a.startsWith("--")), ["--attester", "--proposer-eoa", "--staking-asset-handler", "--l1-chain-id"]);
    });

    it("unit arguments keep hostile values as one word (systemd quoting, % and $ doubled)", () => {
        assert.equal(unitWord("http://a.example/x"), "http://a.example/x");
        assert.equal(unitWord('a b"c'), '"a b\\"c"');
        assert.equal(unitWord("k=%h$HOME"), '"k=%%h$$HOME"');
        assert.equal(unitWord("x\ny`z`$(id)"), '"x\\ny`z`$$(id)"');
        // A hostile L1 URL no longer reaches the unit at all: it is a value of the root-only env file.
        const spec = sequencerSpec((s) => (s.l1RpcUrls = ["https://sepolia.example.org/v2/%7Bkey%7D?a=b&c=(d)"]));
        const unit = renderSequencerUnit(spec, "/data", aztecRelease(), "198.51.100.20");
        assert.doesNotMatch(unit, /sepolia/);
        verifyUnit("aztec-hostile.service", unit);
        assert.match(renderSequencerKey(spec, "/data", SECRETS.sequencerKey!, undefined, l1Urls(spec)), /^ETHEREUM_HOSTS=https:\/\/sepolia\.example\.org\/v2\/%7Bkey%7D\?a=b&c=\(d\)$/m);
        // What an env file cannot carry never gets this far: refused in the config, naming the character.
        assert.throws(() => sequencerSpec((s) => (s.l1RpcUrls = ["https://a.example/$x"])), /nodes\[1\]\.sequencer\.l1RpcUrls\[0\]: the URL holds "\$", which an environment file cannot carry unquoted: percent-encode it \(%24\)/);
    });

    it("the configure, key, version and remove scripts match golden copies and pass shellcheck", () => {
        requireTool("shellcheck", "shellcheck");
        const release = sequencerSpec((s) => (s.runtime = "release"));
        const files = [
            golden("sequencer/configure.sh", renderSequencerConfigure({ host: "h-sequencer", node: release, mount: "/data", release: aztecRelease(), publicIp: "198.51.100.20" })),
            golden("sequencer/configure-docker.sh", renderSequencerConfigure({ host: "h-sequencer", node: sequencerSpec(), mount: "/data", release: aztecRelease(), publicIp: "198.51.100.20" })),
            golden("sequencer/validator-key.sh", renderSequencerKey(release, "/data", SECRETS.sequencerKey!, undefined, l1Urls(release))),
            golden("sequencer/version.sh", renderSequencerVersion(release, "aztec")),
            golden("sequencer/remove.sh", renderSequencerRemove("h-sequencer", release, "/data")),
            golden("sequencer/registration.sh", renderSequencerRegistration(release, "/data", "aztec")),
        ];
        for (const f of files) {
            const r = runTool("shellcheck", ["--shell=sh", "--severity=style", f]);
            assert.equal(r.status, 0, `${path.basename(f)}:\n${r.output}`);
        }
        const registration = fs.readFileSync(golden("sequencer/registration.sh", renderSequencerRegistration(release, "/data", "aztec")), "utf8");
        const settings = registrationSettings(registration);
        assert.equal(settings.registerEnvFile, "/etc/nodefleet/sequencer-1/register.env");
        assert.deepEqual([settings.registryAddress, settings.validatorAddress, settings.l1ChainId], [ADDR.a, SEQUENCER_KEY_ADDRESS, 11155111]);
        assert.doesNotMatch(registration, /--private-key|PRIVATE_KEY=/);
        assert.deepEqual(JSON.parse(sequencerJson(release, "/data")), { node: "sequencer-1", service: "aztec-sequencer-1.service", rpcPort: 8080, api: "2.0.x" });
        assert.equal(JSON.parse(sequencerJson(sequencerSpec(() => {}, true), "/data")).api, "4.1.2", "the health script reads 4.1.2's RPC shapes");
    });

    it("the host scripts compile", () => {
        for (const f of ["nodefleet_rpc.py", "aztec-register.py", "aztec-health.py"]) {
            const r = runTool("python3", ["-m", "py_compile", path.join(HOSTFILES_DIR, f)]);
            assert.equal(r.status, 0, r.output);
        }
        const r = runTool("node", ["--check", path.join(HOSTFILES_DIR, "aztec-argv.mjs")]);
        assert.equal(r.status, 0, r.output);
    });

    it("refuses to render a key that is not a 0x 32-byte hex key", () => {
        assert.throws(() => renderSequencerKey(sequencerSpec(), "/data", "0xab\nNODEFLEET_EOF", undefined, l1Urls(sequencerSpec())), /must be 0x followed by 64 hex characters/);
    });
});

describe("sequencer role: steps", () => {
    it("chains release -> teardown -> key -> version -> configure -> registration -> health, the key only as a secret and never logged", async () => {
        const f = baseFleet();
        f.nodes = [f.nodes[Q]];
        f.releases = { aztec: f.releases.aztec };
        delete f.hosts["h-storage"];
        delete f.hosts["h-validator"];
        const { recorded } = await buildStack(f, SECRETS);
        const dep = (n: string) => recorded.find((r) => r.name === n)!.dependsOn;
        assert.deepEqual(dep("fleet-sequencer-1-teardown"), ["fleet-h-sequencer-release-aztec"]);
        assert.deepEqual(dep("fleet-sequencer-1-validator-key"), ["fleet-sequencer-1-teardown"]);
        // version and configure run scripts of the host's bundle: after its copy.
        assert.deepEqual(dep("fleet-sequencer-1-version"), ["fleet-sequencer-1-validator-key"]);
        assert.deepEqual(dep("fleet-sequencer-1-configure"), ["fleet-sequencer-1-version"]);
        assert.deepEqual(dep("fleet-sequencer-1-registration"), ["fleet-sequencer-1-configure"]);
        assert.deepEqual(dep("fleet-sequencer-1-health"), ["fleet-sequencer-1-registration"]);
        assert.match(deleteScriptOf("fleet-sequencer-1-teardown"), /systemctl disable --now aztec-sequencer-1.service/);
        const keyStep = registered.find((r) => r.name === "fleet-sequencer-1-validator-key")!;
        assert.ok(keyStep.secretPaths.includes("stdin"), "the key script travels as a secret");
        assert.equal(keyStep.inputs.logging, "none");
        // The stdin sets the env files' lines (its secrets); the bundled body writes them.
        assert.match(keyStep.inputs.stdin, new RegExp(`^nodefleet_secret_node_env='VALIDATOR_PRIVATE_KEY=${SECRETS.sequencerKey}$`, "m"));
        assert.match(keyStep.inputs.stdin, new RegExp(`^nodefleet_secret_register_env='PRIVATE_KEY=${SECRETS.sequencerKey}$`, "m"));
        assert.match(scriptOf("fleet-sequencer-1-validator-key"), /^put \/etc\/nodefleet\/sequencer-1\/register\.env 0600 root:root <<NODEFLEET_EOF\n\$nodefleet_secret_register_env\n/m);
        const props = recorded.find((r) => r.name === "fleet-sequencer-1-validator-key")!;
        for (const o of ["stdout", "stderr"]) assert.ok(props.additionalSecretOutputs.includes(o), `${o} must be a secret output`);
        assert.equal(await pulumi.isSecret(pulumi.output((props.props as any).stdin)), true);
        for (const r of registered.filter((x) => x.custom && x.name !== "fleet-sequencer-1-validator-key")) {
            assert.ok(!JSON.stringify(r.inputs).includes(SECRETS.sequencerKey!.slice(2)), `${r.name} carries the validator key`);
        }
        // The public IP defaults to the host's address (here an existing host's).
        assert.match(scriptOf("fleet-sequencer-1-configure"), / --p2p\.p2pIp 192\.0\.2\.11$/m);
        assert.match(scriptOf("fleet-sequencer-1-registration"), /aztec-register\.py sequencer-1 < \/etc\/nodefleet\/sequencer-1\/registration\.json$/m);
        assert.match(scriptOf("fleet-sequencer-1-health"), /aztec-health.py sequencer-1 --wait 90/);
    });

    it("re-runs exactly what a change needs: version -> version, configure, health; registry -> registration only", async () => {
        const triggers = async (mutate: (s: any) => void) => {
            const f = baseFleet();
            mutate(f.nodes[Q].sequencer);
            await buildStack(f, SECRETS);
            return Object.fromEntries(["validator-key", "version", "configure", "registration", "health"].map((s) => [s, JSON.stringify(inputsOf(`fleet-sequencer-1-${s}`).triggers)]));
        };
        const before = await triggers(() => {});
        // 2.0.2 -> 4.1.2: other variable names (key step), flags (configure) and registration.
        const version = await triggers((s) => {
            for (const k of Object.keys(s)) delete s[k];
            Object.assign(s, sequencerV4Settings());
        });
        const registry = await triggers((s) => (s.registryAddress = ADDR.c));
        const changed = (a: Record<string, string>) => Object.keys(a).filter((k) => a[k] !== before[k]);
        assert.deepEqual(changed(version), ["validator-key", "version", "configure", "registration", "health"]);
        assert.deepEqual(changed(registry), ["registration"]);
    });
});
