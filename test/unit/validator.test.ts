// The validator role: its units (golden copies checked by systemd-analyze verify, reth's command
// line compared flag by flag with docs/spec.md §2.6), its scripts (shellcheck), default config files (a
// TOML parser) and, with strict mocks, its steps and the order of the switch's 14 steps. What
// the steps do on a host is proven by the host tool's python tests and the VM tier.
import { afterEach, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import { parseFleet } from "../../components/config/fleet";
import * as path from "node:path";
import { renderValidatorConfigure, renderValidatorKey, renderValidatorRemove, validatorSettingsJson } from "../../components/roles/validator/node";
import { renderAppToml, renderConfigToml, renderConsensusUnit, renderGethUnit, renderRethUnit } from "../../components/roles/validator/units";
import { LOW_DOWNTIME_STEPS, SWITCH_STEPS } from "../../components/roles/validator/switch-steps";
import { validatorPaths } from "../../components/roles/validator/contract";
import { roleTools } from "../../components/hosts/tools";
import { HOSTFILES_DIR } from "../../components/base/render";
import { golden, requireTool, runTool, verifyUnits } from "../support/golden";
import { baseFleet, chainRelease, ENODE, SECRETS, secretSource } from "../support/fixtures";
import { buildStack } from "../support/stack";
import { inputsOf, previousStackOutputs, registered, scriptOf, deleteScriptOf } from "../support/mocks";

const V = 2;
const REL = chainRelease();

function validatorSpec() {
    const fleet = parseFleet(baseFleet(), secretSource());
    return fleet.spec.nodes[V] as Extract<(typeof fleet.spec.nodes)[number], { role: "validator" }>;
}

/** ExecStart's words as flag -> value ("" for a switch), after the program and subcommand. */
function flags(unit: string): Map<string, string> {
    const words = unit.split("\n").find((l) => l.startsWith("ExecStart="))!.slice("ExecStart=".length).split(" ");
    const out = new Map<string, string>();
    for (let i = 1; i < words.length; i++) {
        const w = words[i]!;
        if (!w.startsWith("--")) continue;
        const next = words[i + 1];
        out.set(w, next !== undefined && !next.startsWith("--") ? next : "");
    }
    return out;
}

describe("validator role: execution-client units", () => {
    it("reth's unit carries exactly docs/spec.md §2.6's parameters and unit settings, and leaves its log to the journal", () => {
        const node = validatorSpec();
        const unit = fs.readFileSync(golden("validator/reth-validator-1.service", renderRethUnit(node, "/data", REL, "198.51.100.30")), "utf8");
        verifyUnits({ "reth-validator-1.service": unit });
        // docs/spec.md §4.5 step 1: reth is copied from the release to /usr/local/bin.
        assert.match(unit, /^ExecStart=\/usr\/local\/bin\/reth node /m);
        assert.deepEqual(Object.fromEntries(flags(unit)), {
            "--chain": "/opt/nodefleet/0g-chain/geth-genesis.json",
            "--datadir": "/data/validator-1/reth",
            "--ipcpath": "/data/validator-1/reth/reth.ipc",
            "--http": "", "--http.addr": "127.0.0.1", "--http.port": "56545", "--http.api": "eth,net,admin",
            "--ws": "", "--ws.addr": "127.0.0.1", "--ws.port": "56546",
            "--authrpc.addr": "127.0.0.1", "--authrpc.port": "56551", "--authrpc.jwtsecret": "/data/validator-1/jwt.hex",
            "--engine.persistence-threshold": "0", "--engine.memory-block-buffer-target": "0",
            "--port": "56303",
            "--bootnodes": ENODE,
            "--nat": "extip:198.51.100.30",
            // Not in the spec: the real reth colours its output and writes debug log files under the
            // operator's home unless told not to; the journal is the log.
            "--color": "never", "--log.file.max-files": "0",
        });
        for (const line of ["User=nodefleet", "Group=nodefleet", "WorkingDirectory=/data/validator-1", "Restart=always", "RestartSec=3", "LimitNOFILE=65535", "After=network-online.target", "Wants=network-online.target", "WantedBy=multi-user.target"]) {
            assert.match(unit, new RegExp(`^${line}$`, "m"), line);
        }
    });

    it("geth's unit uses the same ports, bind addresses and JWT file, and passes systemd-analyze verify", () => {
        const node = validatorSpec();
        const geth = flags(fs.readFileSync(golden("validator/geth-validator-1.service", renderGethUnit(node, "/data", REL, "198.51.100.30")), "utf8"));
        const reth = flags(renderRethUnit(node, "/data", REL, "198.51.100.30"));
        verifyUnits({ "geth-validator-1.service": renderGethUnit(node, "/data", REL, "198.51.100.30") });
        for (const f of ["--http.addr", "--http.port", "--ws.addr", "--ws.port", "--authrpc.addr", "--authrpc.port", "--authrpc.jwtsecret", "--port", "--bootnodes", "--nat"]) {
            assert.equal(geth.get(f), reth.get(f), f);
        }
        assert.equal(geth.get("--datadir"), validatorPaths(node, "/data").gethDir);
        assert.equal(geth.get("--networkid"), "16661");
    });
});

describe("validator role: consensus unit, config files and scripts", () => {
    it("0gchaind's unit names the JWT file reth's and geth's units name (docs/spec.md §5)", () => {
        const node = validatorSpec();
        const unit = fs.readFileSync(golden("validator/0gchaind-validator-1.service", renderConsensusUnit(node, "/data", REL)), "utf8");
        verifyUnits({ "0gchaind-validator-1.service": unit });
        const cl = flags(unit);
        assert.equal(cl.get("--home"), "/data/validator-1/0gchaind");
        assert.equal(cl.get("--chaincfg.engine.jwt-secret-path"), flags(renderRethUnit(node, "/data", REL, "198.51.100.30")).get("--authrpc.jwtsecret"));
        assert.equal(cl.get("--chaincfg.engine.jwt-secret-path"), flags(renderGethUnit(node, "/data", REL, "198.51.100.30")).get("--authrpc.jwtsecret"));
        assert.match(unit, /^User=nodefleet$/m);
    });

    it("its stop goes through consensus-stop.py, installed with the role, whose own parser takes the rendered arguments (docs/roles.md, \"Its stop\")", () => {
        const unit = renderConsensusUnit(validatorSpec(), "/data", REL);
        const stop = /^ExecStop=-\/usr\/bin\/python3 -S \/usr\/local\/lib\/nodefleet\/(consensus-stop\.py) (.*)$/m.exec(unit);
        assert.ok(stop, unit);
        assert.equal(stop[2], "--rpc http://127.0.0.1:56657 --within 10");
        assert.ok(roleTools("validator").some((t) => t.path === "consensus-stop.py" && t.mode === "0755"), "the validator role installs the stop tool");
        // Its argparse on the rendered words (no MAINPID here: a daemon that has exited, so it returns
        // at once once they parse); a misspelt flag is refused, so the check can fail.
        const run = (args: string) => runTool("env", ["-u", "MAINPID", "python3", "-S", path.join(HOSTFILES_DIR, stop[1]!), ...args.split(" ")]);
        assert.deepEqual(run(stop[2]!), { status: 0, output: "" });
        const misspelt = run(stop[2]!.replace("--within", "--withn"));
        assert.equal(misspelt.status, 2);
        assert.match(misspelt.output, /unrecognized arguments: --withn/);
    });

    it("the release's consensus daemon decides the unit: beacond's flags in its prefix, its chain spec from the environment; 0gchaind's as a flag", () => {
        const node = validatorSpec();
        const beacond = chainRelease({ consensus: { daemon: "beacond", chainSpec: "devnet" } });
        const unit = fs.readFileSync(golden("validator/beacond-validator-1.service", renderConsensusUnit(node, "/data", beacond)), "utf8");
        verifyUnits({ "0gchaind-validator-1.service": unit });
        assert.match(unit, new RegExp(`^ExecStart=/opt/nodefleet/releases/0g-chain-${"06".repeat(12)}/bin/beacond start `, "m"));
        assert.deepEqual([...flags(unit).keys()], ["--home", "--beacon-kit.engine.jwt-secret-path", "--beacon-kit.kzg.trusted-setup-path"]);
        assert.match(unit, /^Environment=CHAIN_SPEC=devnet$/m);
        const zg = chainRelease({ consensus: { daemon: "0gchaind", chainSpec: "mainnet" } });
        const zgUnit = renderConsensusUnit(node, "/data", zg);
        assert.equal(flags(zgUnit).get("--chaincfg.chain-spec"), "mainnet");
        assert.doesNotMatch(zgUnit, /CHAIN_SPEC/);
        assert.doesNotMatch(renderConsensusUnit(node, "/data", REL), /chain-spec|CHAIN_SPEC/);
        // The host tool learns the daemon from its settings.
        assert.deepEqual(JSON.parse(validatorSettingsJson(node, "/data", beacond)).consensus, { daemon: "beacond", flagPrefix: "beacon-kit" });
        assert.deepEqual(JSON.parse(validatorSettingsJson(node, "/data", REL)).consensus, { daemon: "0gchaind", flagPrefix: "chaincfg" });
        // The network's consensus genesis: a path in the release, given to the host tool whole (unset: null).
        const withGenesis = chainRelease({ consensus: { daemon: "beacond", genesis: "0g-home/config/genesis.json" } });
        const settings = JSON.parse(validatorSettingsJson(node, "/data", withGenesis));
        assert.equal(settings.consensusGenesis, `${settings.releaseDir}/0g-home/config/genesis.json`);
        assert.match(settings.releaseDir, /^\/opt\/nodefleet\//);
        assert.equal(JSON.parse(validatorSettingsJson(node, "/data", beacond)).consensusGenesis, null);
    });

    it("a new release version changes geth's and the consensus daemon's units (configure restarts them onto it), not reth's nor the settings", () => {
        const node = validatorSpec();
        const next = { ...REL, sha256: "07".repeat(32) };
        const start = (unit: string) => unit.split("\n").find((l) => l.startsWith("ExecStart="))!.split(" ")[0];
        assert.equal(start(renderGethUnit(node, "/data", REL, "198.51.100.30")), `ExecStart=/opt/nodefleet/releases/0g-chain-${"06".repeat(12)}/bin/geth`);
        assert.equal(start(renderGethUnit(node, "/data", next, "198.51.100.30")), `ExecStart=/opt/nodefleet/releases/0g-chain-${"07".repeat(12)}/bin/geth`);
        assert.equal(start(renderConsensusUnit(node, "/data", next)), `ExecStart=/opt/nodefleet/releases/0g-chain-${"07".repeat(12)}/bin/0gchaind`);
        assert.equal(renderRethUnit(node, "/data", next, "198.51.100.30"), renderRethUnit(node, "/data", REL, "198.51.100.30"));
        assert.equal(validatorSettingsJson(node, "/data", next), validatorSettingsJson(node, "/data", REL));
        const at = { host: "h", node, mount: "/data", publicIp: "198.51.100.30" };
        assert.notEqual(renderValidatorConfigure({ ...at, release: next }), renderValidatorConfigure({ ...at, release: REL }));
    });

    it("the network's CometBFT seeds and persistent peers go on the daemon's command line, comma-joined", () => {
        const node = validatorSpec();
        assert.doesNotMatch(renderConsensusUnit(node, "/data", REL), /--p2p\./);
        const a = `${"ab".repeat(20)}@10.0.0.7:26656`, b = `${"cd".repeat(20)}@seed-1.example.org:26656`;
        const peered = { ...node, validator: { ...node.validator, consensusPeers: [a, b], consensusSeeds: [b] } };
        const unit = renderConsensusUnit(peered, "/data", REL);
        verifyUnits({ "0gchaind-validator-1.service": unit });
        assert.equal(flags(unit).get("--p2p.persistent_peers"), `${a},${b}`);
        assert.equal(flags(unit).get("--p2p.seeds"), b);
    });

    it("monitored: reth and geth serve their metrics on <prefix>661 and CometBFT on <prefix>660, on every address; unmonitored, none", () => {
        const node = validatorSpec();
        const reth = fs.readFileSync(golden("validator/reth-validator-1-monitored.service", renderRethUnit(node, "/data", REL, "198.51.100.30", true)), "utf8");
        const geth = fs.readFileSync(golden("validator/geth-validator-1-monitored.service", renderGethUnit(node, "/data", REL, "198.51.100.30", true)), "utf8");
        verifyUnits({ "reth-validator-1.service": reth, "geth-validator-1.service": geth });
        assert.equal(flags(reth).get("--metrics"), "0.0.0.0:56661");
        assert.deepEqual([flags(geth).get("--metrics"), flags(geth).get("--metrics.addr"), flags(geth).get("--metrics.port")], ["", "0.0.0.0", "56661"]);
        // Everything else as unmonitored.
        const without = (unit: Map<string, string>) => [...unit].filter(([f]) => !f.startsWith("--metrics"));
        assert.deepEqual(without(flags(reth)), [...flags(renderRethUnit(node, "/data", REL, "198.51.100.30"))]);
        assert.deepEqual(without(flags(geth)), [...flags(renderGethUnit(node, "/data", REL, "198.51.100.30"))]);
        for (const unit of [renderRethUnit(node, "/data", REL, "198.51.100.30"), renderGethUnit(node, "/data", REL, "198.51.100.30")]) assert.doesNotMatch(unit, /--metrics/);
        const cfg = golden("validator/config-monitored.toml", renderConfigToml(node, true));
        const doc = JSON.parse(runTool("python3", ["-c", "import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1],'rb'))))", cfg]).output);
        assert.deepEqual(doc.instrumentation, { prometheus: true, prometheus_listen_addr: ":56660" });
        assert.doesNotMatch(renderConfigToml(node), /instrumentation/);
        // setup's edit of an existing home's config.toml reads this from the settings.
        assert.deepEqual(JSON.parse(validatorSettingsJson(node, "/data", REL, null, true)).metrics, { prometheusListenAddr: ":56660" });
        assert.equal(JSON.parse(validatorSettingsJson(node, "/data", REL)).metrics, undefined);
    });

    it("default app.toml and config.toml parse as TOML, point at <prefix>551 and <prefix>657 on loopback, and take the rpc-dial-url edit", () => {
        const node = validatorSpec();
        const app = golden("validator/app.toml", renderAppToml(node, "/data", REL));
        const cfg = golden("validator/config.toml", renderConfigToml(node));
        const read = (f: string) => JSON.parse(runTool("python3", ["-c", "import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1],'rb'))))", f]).output);
        // The rendered values; the rest are BeaconKit's defaults (test/cli/beacond-contract.test.ts
        // compares them with what the real `beacond init` writes).
        const kit = read(app)["beacon-kit"];
        assert.deepEqual([kit.engine["rpc-dial-url"], kit.engine["jwt-secret-path"], kit.kzg["trusted-setup-path"]], ["http://localhost:56551", "/data/validator-1/jwt.hex", "/opt/nodefleet/0g-chain/kzg-trusted-setup.json"]);
        assert.equal(kit["payload-builder"].enabled, true);
        assert.deepEqual(Object.keys(read(app)), ["pruning", "pruning-keep-recent", "pruning-interval", "halt-height", "halt-time", "min-retain-blocks", "inter-block-cache", "iavl-cache-size", "iavl-disable-fastnode", "telemetry", "beacon-kit"]);
        assert.equal(read(app).pruning, "default");
        assert.deepEqual(read(cfg), {
            genesis_file: "config/genesis.json", priv_validator_key_file: "config/priv_validator_key.json", priv_validator_state_file: "data/priv_validator_state.json", node_key_file: "config/node_key.json",
            rpc: { laddr: "tcp://127.0.0.1:56657" }, p2p: { laddr: "tcp://0.0.0.0:56656" },
        });
        const edit = runTool("python3", [path.join(HOSTFILES_DIR, "set-rpc-dial-url.py"), app, "http://localhost:56551", "--dry-run"]);
        assert.equal(edit.status, 0, edit.output);
        assert.equal(JSON.parse(edit.output.trim()).changed, false);
    });

    it("key, remove and configure scripts pass shellcheck; the key and remove scripts match golden copies", () => {
        requireTool("shellcheck", "shellcheck");
        const node = validatorSpec();
        const files = [
            golden("validator/validator-key.sh", renderValidatorKey(node, "/data", SECRETS.validatorKey!)),
            golden("validator/remove.sh", renderValidatorRemove("h-validator", node, "/data")),
        ];
        const dir = fs.mkdtempSync(path.join(require("node:os").tmpdir(), "nodefleet-validator-"));
        const configure = path.join(dir, "configure.sh");
        fs.writeFileSync(configure, renderValidatorConfigure({ host: "h-validator", node, mount: "/data", release: REL, publicIp: "198.51.100.30" }));
        for (const f of [...files, configure]) {
            const r = runTool("shellcheck", ["--shell=sh", "--severity=style", f]);
            assert.equal(r.status, 0, `${path.basename(f)}:\n${r.output}`);
        }
        // configure installs each host tool from the host's copy of the tools, by the sha256 of its
        // file (hosts/tools.ts), and ends in the tool's setup.
        const text = fs.readFileSync(configure, "utf8");
        const tools = roleTools("validator");
        for (const tool of ["zg-validator.py", "consensus-height-rollback.py", "set-rpc-dial-url.py", "nodefleet_rpc.py", "trim_export.py", "zgvalidator/__init__.py", "zgvalidator/switch.py", "zgvalidator/steps.json"]) {
            assert.ok(tools.some((t) => t.path === tool), `${tool} is installed`);
        }
        for (const tool of tools) {
            assert.equal(tool.digest, crypto.createHash("sha256").update(fs.readFileSync(path.join(HOSTFILES_DIR, tool.path))).digest("hex"), `${tool.path}: the digest of its file`);
            assert.ok(text.includes(`put_tool /usr/local/lib/nodefleet/${tool.path} ${tool.mode} root:root ${tool.digest}\n`), `${tool.path} installed from its copy`);
        }
        assert.match(text, /^exec python3 -S \/usr\/local\/lib\/nodefleet\/zg-validator\.py \/etc\/nodefleet\/validator-1\/validator\.json setup$/m);
        fs.rmSync(dir, { recursive: true });
        assert.match(fs.readFileSync(files[1]!, "utf8"), /systemctl disable --now 0gchaind-validator-1\.service/);
    });

    it("the settings the host tool reads name the paths, units and ports of this node", () => {
        const node = validatorSpec();
        const s = JSON.parse(validatorSettingsJson(node, "/data", REL));
        assert.deepEqual(s.ports, { http: 56545, ws: 56546, engine: 56551, p2p: 56303, cometRpc: 56657 });
        assert.deepEqual(s.services, { geth: "geth-validator-1.service", reth: "reth-validator-1.service", consensus: "0gchaind-validator-1.service" });
        assert.equal(s.jwt, validatorPaths(node, "/data").jwt);
        // One dial URL: the one the default app.toml carries is the one the tool sets.
        assert.equal(s.dialUrl, "http://localhost:56551");
        assert.match(renderAppToml(node, "/data", REL), new RegExp(`^rpc-dial-url = "${s.dialUrl}"$`, "m"));
        assert.equal(s.rethBinary, "/usr/local/bin/reth");
        assert.deepEqual([s.executionClient, s.switch, s.heightTolerance, s.importRetries, s.cleanupAfterHours], ["geth", null, 5, 5, 24]);
    });

    it("the validator tool runs from the layout configure installs (every module of its package is installed)", () => {
        const lib = fs.mkdtempSync(path.join(require("node:os").tmpdir(), "nodefleet-lib-"));
        for (const t of roleTools("validator")) {
            fs.mkdirSync(path.dirname(path.join(lib, t.path)), { recursive: true });
            fs.writeFileSync(path.join(lib, t.path), fs.readFileSync(path.join(HOSTFILES_DIR, t.name)), { mode: Number.parseInt(t.mode, 8) });
        }
        const modules = fs.readdirSync(path.join(HOSTFILES_DIR, "zgvalidator")).filter((f) => f.endsWith(".py")).map((f) => `zgvalidator.${f.replace(/\.py$/, "")}`);
        const r = runTool("python3", ["-S", "-c", `import sys; sys.path.insert(0, ${JSON.stringify(lib)}); import ${modules.join(", ")}; print(list(zgvalidator.switch.STEPS))`]);
        assert.equal(r.status, 0, r.output);
        assert.equal(r.output.trim(), `[${SWITCH_STEPS.map((s) => `'${s}'`).join(", ")}]`);
        const low = runTool("python3", ["-S", "-c", `import sys; sys.path.insert(0, ${JSON.stringify(lib)}); import zgvalidator.switch; print(list(zgvalidator.switch.LOW_STEPS))`]);
        assert.equal(low.output.trim(), `[${LOW_DOWNTIME_STEPS.map((s) => `'${s}'`).join(", ")}]`);
        const usage = runTool("python3", ["-S", path.join(lib, "zg-validator.py")]);
        assert.match(usage.output, /zg-validator\.py <settings\.json> migrate <step> <inputs-hash>/);
        fs.rmSync(lib, { recursive: true });
    });

    it("the host tools compile", () => {
        for (const f of ["zg-validator.py", "consensus-height-rollback.py", "set-rpc-dial-url.py"]) {
            const r = runTool("python3", ["-m", "py_compile", path.join(HOSTFILES_DIR, f)]);
            assert.equal(r.status, 0, r.output);
        }
    });
});

describe("validator role: steps", () => {
    async function stack(mutate: (v: any) => void = () => {}) {
        const f = baseFleet();
        f.nodes = [f.nodes[V]];
        f.releases = { "0g-chain": f.releases["0g-chain"] };
        delete f.hosts["h-storage"];
        delete f.hosts["h-sequencer"];
        mutate(f.nodes[0].validator);
        return buildStack(f, SECRETS);
    }
    const dep = (recorded: any[], n: string) => recorded.find((r) => r.name === n)?.dependsOn;

    it("without a switch: release -> teardown -> key -> configure -> health; the key only as a secret, never logged", async () => {
        const { recorded, fleet } = await stack();
        assert.deepEqual(dep(recorded, "fleet-validator-1-teardown"), ["fleet-h-validator-release-0g-chain"]);
        assert.deepEqual(dep(recorded, "fleet-validator-1-validator-key"), ["fleet-validator-1-teardown"]);
        assert.deepEqual(dep(recorded, "fleet-validator-1-configure"), ["fleet-validator-1-validator-key"], "configure runs a script of the host's bundle: after its copy, through the key step");
        assert.deepEqual(dep(recorded, "fleet-validator-1-health"), ["fleet-validator-1-configure"]);
        assert.equal(recorded.filter((r) => r.name.includes("-switch-")).length, 0);
        assert.equal(fleet.validatorSwitch["validator-1"], undefined);
        const key = registered.find((r) => r.name === "fleet-validator-1-validator-key")!;
        assert.equal(key.inputs.logging, "none");
        assert.ok(key.secretPaths.includes("stdin"));
        const material = JSON.parse(SECRETS.validatorKey!).priv_key.value as string;
        assert.ok(key.inputs.stdin.includes(material));
        for (const r of registered.filter((x) => x.custom && x.name !== key.name)) assert.ok(!JSON.stringify(r.inputs).includes(material), `${r.name} carries the consensus key`);
        assert.match(deleteScriptOf("fleet-validator-1-teardown"), /0gchaind-validator-1\.service/);
        assert.match(scriptOf("fleet-validator-1-health"), /zg-validator\.py \/etc\/nodefleet\/validator-1\/validator\.json health/);
    });

    describe("a validator moving host", () => {
        // The mocks show what is planned and in which order; that the old host's 0gchaind is
        // stopped before the new one starts is the engine's ordering (test/cli/switch-state.test.ts
        // runs it) and the handover's work on a host (hostfiles/tests, the Handover cases).
        afterEach(() => delete previousStackOutputs.validatorHosts);
        async function moved(mutate: (f: any) => void = () => {}) {
            const f = baseFleet();
            f.nodes = [f.nodes[V]];
            f.releases = { "0g-chain": f.releases["0g-chain"] };
            delete f.hosts["h-storage"];
            mutate(f);
            return buildStack(f, SECRETS);
        }

        it("is handed over on the host it leaves before its key is written on the new one, and its signing state carried into setup", async () => {
            previousStackOutputs.validatorHosts = { "validator-1": "h-sequencer" };
            const { recorded, fleet } = await moved();
            assert.deepEqual(dep(recorded, "fleet-validator-1-validator-key")?.sort(), ["fleet-validator-1-handover", "fleet-validator-1-teardown"]);
            const handover = registered.find((r) => r.name === "fleet-validator-1-handover")!;
            assert.match(handover.inputs.stdin, /zg-validator\.py \/etc\/nodefleet\/validator-1\/validator\.json handover$/m);
            assert.equal(handover.inputs.connection.host, "192.0.2.11");
            assert.equal(inputsOf("fleet-validator-1-configure").connection.host, "192.0.2.12");
            assert.match(scriptOf("fleet-validator-1-configure"), /"carriedSigningState": null/);
            // Its script carries what the handover read: inline, not in the new host's bundle, whose
            // copy (the host's first step, which everything else follows) would otherwise wait for the handover.
            assert.doesNotMatch(inputsOf("fleet-validator-1-configure").stdin, /^nodefleet_run=/m);
            assert.deepEqual(dep(recorded, "fleet-validator-1-configure"), ["fleet-validator-1-validator-key"]);
            assert.deepEqual(dep(recorded, "fleet-h-validator-tools"), []);
            assert.deepEqual(fleet.validatorHosts, { "validator-1": "h-validator" });
        });

        it("stays put: no handover", async () => {
            previousStackOutputs.validatorHosts = { "validator-1": "h-validator" };
            const { recorded } = await moved();
            assert.equal(recorded.filter((r) => r.name.endsWith("-handover")).length, 0);
            assert.deepEqual(dep(recorded, "fleet-validator-1-validator-key"), ["fleet-validator-1-teardown"]);
        });

        it("from a host no longer in the config: refused, naming the override; with it, no handover", async () => {
            previousStackOutputs.validatorHosts = { "validator-1": "h-gone" };
            await assert.rejects(moved(), /validator-1: the validator ran on host h-gone, which is no longer in the config.*set validator\.abandonHost: h-gone/s);
            const { recorded } = await moved((f) => (f.nodes[0].validator.abandonHost = "h-gone"));
            assert.equal(recorded.filter((r) => r.name.endsWith("-handover")).length, 0);
        });

        it("abandonHost naming a host the validator did not run on is refused with the one it can abandon", async () => {
            previousStackOutputs.validatorHosts = { "validator-1": "h-gone" };
            await assert.rejects(moved((f) => (f.nodes[0].validator.abandonHost = "h-elsewhere")), /validator-1: validator\.abandonHost names host h-elsewhere, but the validator last ran on h-gone .*the only host it can abandon is h-gone/s);
            // The same mistake for a configured old host would skip its handover: refused as well.
            previousStackOutputs.validatorHosts = { "validator-1": "h-sequencer" };
            await assert.rejects(moved((f) => (f.nodes[0].validator.abandonHost = "h-elsewhere")), /the only host it can abandon is h-sequencer/);
        });
    });

    it("switch: migrate chains the 14 steps of docs/spec.md §4.5 in order between configure and health, all bound to one inputs hash", async () => {
        const { recorded, fleet } = await stack((v) => { v.executionClient = "reth"; v.switch = "migrate"; });
        const names = SWITCH_STEPS.map((s) => `fleet-validator-1-switch-${s}`);
        assert.equal(names.length, 14);
        assert.deepEqual(dep(recorded, names[0]!), ["fleet-validator-1-configure"]);
        for (let i = 1; i < names.length; i++) assert.deepEqual(dep(recorded, names[i]!), [names[i - 1]!], names[i]!);
        assert.deepEqual(dep(recorded, "fleet-validator-1-health"), [names[13]!]);
        const hashes = new Set<string>();
        for (const [i, n] of names.entries()) {
            const m = /zg-validator\.py \S+ migrate (\S+) ([0-9a-f]{16,})$/m.exec(scriptOf(n));
            assert.ok(m, n);
            assert.equal(m[1], SWITCH_STEPS[i]);
            hashes.add(m[2]!);
        }
        assert.equal(hashes.size, 1);
        assert.ok(fleet.validatorSwitch["validator-1"], "the switch report is a stack output");
        assert.match(scriptOf("fleet-validator-1-configure"), /"switch": "migrate"/);
    });

    it("switch: migrate with lowDowntime chains the low-downtime switch's 14 steps instead, its last one giving the report", async () => {
        const { recorded, fleet } = await stack((v) => { v.executionClient = "reth"; v.switch = "migrate"; v.lowDowntime = true; });
        const names = LOW_DOWNTIME_STEPS.map((s) => `fleet-validator-1-switch-${s}`);
        assert.deepEqual(LOW_DOWNTIME_STEPS.slice(0, 3), ["l01-install-reth", "l02-note-head", "l03-export-live"]);
        assert.deepEqual(dep(recorded, names[0]!), ["fleet-validator-1-configure"]);
        for (let i = 1; i < names.length; i++) assert.deepEqual(dep(recorded, names[i]!), [names[i - 1]!], names[i]!);
        assert.deepEqual(dep(recorded, "fleet-validator-1-health"), [names[13]!]);
        assert.equal(recorded.filter((r) => /-switch-s\d\d-/.test(r.name)).length, 0, "no step of the ordered switch");
        for (const [i, n] of names.entries()) assert.match(scriptOf(n), new RegExp(`zg-validator\\.py \\S+ migrate ${LOW_DOWNTIME_STEPS[i]} [0-9a-f]{16,}$`, "m"));
        assert.ok(fleet.validatorSwitch["validator-1"], "the switch report is a stack output");
    });

    it("the switch steps' inputs are the same from one program run to the next; only a new attempt (or the cleanup options) changes them", async () => {
        // What the mocks can show: the inputs Pulumi diffs. That an unchanged step is not run again,
        // a failed one records nothing, and a preview lists only what is left is the engine's part:
        // test/cli/switch-state.test.ts runs the real engine and provider for it.
        const inputs = () => Object.fromEntries(["configure", "health", ...SWITCH_STEPS.map((s) => `switch-${s}`)].map((n) => [n, JSON.stringify(inputsOf(`fleet-validator-1-${n}`))]));
        await stack((v) => { v.executionClient = "reth"; v.switch = "migrate"; });
        const first = inputs();
        await new Promise((r) => setTimeout(r, 5));
        await stack((v) => { v.executionClient = "reth"; v.switch = "migrate"; });
        assert.deepEqual(inputs(), first, "a second run plans the same inputs");
        await stack((v) => { v.executionClient = "reth"; v.switch = "migrate"; v.switchAttempt = 2; });
        const second = inputs();
        for (const step of SWITCH_STEPS) {
            assert.notEqual(second[`switch-${step}`], first[`switch-${step}`], step);
            assert.ok(inputsOf(`fleet-validator-1-switch-${step}`).triggers.includes("attempt 2"), step);
        }
        assert.notEqual(second.health, first.health);
        await stack((v) => { v.executionClient = "geth"; v.switch = "rollback"; });
        assert.ok(inputsOf("fleet-validator-1-switch-rollback").triggers.includes("attempt 1"));
        await stack((v) => { v.executionClient = "reth"; v.switch = "cleanup"; });
        const cleanup = JSON.stringify(inputsOf("fleet-validator-1-switch-cleanup"));
        await stack((v) => { v.executionClient = "reth"; v.switch = "cleanup"; v.cleanup = { removeBackup: true }; });
        assert.notEqual(JSON.stringify(inputsOf("fleet-validator-1-switch-cleanup")), cleanup, "new cleanup options run cleanup again");
        const { recorded } = await stack(() => {});
        for (const r of recorded) assert.ok(!/attempt \d/.test(JSON.stringify(r.props.triggers ?? [])), `${r.name} carries an attempt without a switch`);
    });

    it("switch: rollback and cleanup are one step each; tunables do not change the steps' inputs hash", async () => {
        const { recorded } = await stack((v) => { v.executionClient = "geth"; v.switch = "rollback"; });
        assert.deepEqual(dep(recorded, "fleet-validator-1-switch-rollback"), ["fleet-validator-1-configure"]);
        assert.match(scriptOf("fleet-validator-1-switch-rollback"), / rollback$/m);
        const c = await stack((v) => { v.executionClient = "reth"; v.switch = "cleanup"; v.cleanup = { removeBackup: true }; });
        assert.deepEqual(dep(c.recorded, "fleet-validator-1-health"), ["fleet-validator-1-switch-cleanup"]);
        assert.match(scriptOf("fleet-validator-1-configure"), /"removeBackup": true/);
        const a = await stack((v) => { v.executionClient = "reth"; v.switch = "migrate"; });
        const before = scriptOf("fleet-validator-1-switch-s05-export");
        await stack((v) => { v.executionClient = "reth"; v.switch = "migrate"; v.heightTolerance = 2; v.importRetries = 9; });
        assert.equal(scriptOf("fleet-validator-1-switch-s05-export"), before);
        assert.ok(a);
    });
});
