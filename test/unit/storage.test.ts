// The storage role: rendered files (golden copies checked by a TOML parser, systemd-analyze
// verify, shellcheck, python's compiler) and, with strict mocks, its steps, their order and
// where the miner key may go. The VM tier proves the scripts on a host.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import * as pulumi from "@pulumi/pulumi";
import { parseFleet } from "../../components/config/fleet";
import { renderStorageConfig, renderStorageConfigure, renderStorageKey, renderStorageRemove, renderStorageUnits } from "../../components/roles/storage/node";
import { HOSTFILES_DIR } from "../../components/base/render";
import { golden, requireTool, runTool, verifyUnits } from "../support/golden";
import { baseFleet, secretSource, SECRETS, PEER_ID, RELEASES } from "../support/fixtures";
import { buildStack } from "../support/stack";
import { registered, inputsOf, scriptOf, deleteScriptOf } from "../support/mocks";
import { roleTools } from "../../components/hosts/tools";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-storage-"));

function storageSpec(mutate: (s: any) => void = () => {}) {
    const f = baseFleet();
    mutate(f.nodes[0].storage);
    const fleet = parseFleet(f, secretSource());
    return fleet.spec.nodes[0] as Extract<(typeof fleet.spec.nodes)[number], { role: "storage" }>;
}

function toml(file: string): any {
    const r = runTool("python3", ["-c", "import json,sys,tomllib;print(json.dumps(tomllib.load(open(sys.argv[1],'rb'))))", file]);
    assert.equal(r.status, 0, `TOML parse of ${file}:\n${r.output}`);
    return JSON.parse(r.output);
}

describe("storage role: rendered files", () => {
    it("config.toml matches its golden copy, parses as TOML, binds RPC locally, carries no key", () => {
        const spec = storageSpec();
        const cfg = toml(golden("storage/config.toml", renderStorageConfig(spec, "/data")));
        assert.equal(cfg.log_contract_address, spec.storage.logContractAddress);
        assert.equal(cfg.mine_contract_address, spec.storage.mineContractAddress);
        assert.equal(cfg.reward_contract_address, undefined, "rendered only when the fleet config names it");
        assert.deepEqual(cfg.network_boot_nodes, spec.storage.networkBootNodes);
        assert.equal(cfg.network_enr_address, "198.51.100.4");
        assert.equal(cfg.blockchain_rpc_endpoint, "@NODEFLEET_RPC_ENDPOINT@");
        assert.equal(cfg.db_dir, "/data/storage-1/db");
        assert.equal(cfg.log_directory, "/data/storage-1/log");
        assert.deepEqual(cfg.rpc, { listen_address: "127.0.0.1:5678", listen_address_admin: "127.0.0.1:5679", listen_address_grpc: "127.0.0.1:50051" });
        // The key goes in on the host (zgs-endpoint, from the key step's root-only file): never here.
        assert.equal(cfg.miner_key, "@NODEFLEET_MINER_KEY@");
    });

    it("config.toml keeps hostile values inside their strings", () => {
        const hostile = `"]\nminer_key = "00"\n#`;
        const spec = storageSpec();
        (spec.storage as any).networkBootNodes = [hostile];
        const file = path.join(tmp, "hostile.toml");
        fs.writeFileSync(file, renderStorageConfig(spec, "/data"));
        const cfg = toml(file);
        assert.deepEqual(cfg.network_boot_nodes, [hostile]);
        assert.equal(cfg.miner_key, "@NODEFLEET_MINER_KEY@", "the hostile value set no key");
    });

    it("without boot nodes the ENR keys are left out and the list is empty", () => {
        const cfg = toml(golden("storage/config-no-boot-nodes.toml", renderStorageConfig(storageSpec((s) => { s.networkBootNodes = []; delete s.networkEnrAddress; }), "/data")));
        assert.deepEqual(cfg.network_boot_nodes, []);
        assert.equal(cfg.network_enr_address, undefined);
    });

    it("the units match golden copies and pass systemd-analyze verify", () => {
        const u = renderStorageUnits(storageSpec(), "/data", { name: "zgs", sha256: RELEASES().zgs.sha256 });
        verifyUnits({
            "zgs-storage-1.service": fs.readFileSync(golden("storage/zgs-storage-1.service", u.unit), "utf8"),
            "zgs-storage-1-failover.service": fs.readFileSync(golden("storage/zgs-storage-1-failover.service", u.failoverService), "utf8"),
            "zgs-storage-1-failover.timer": fs.readFileSync(golden("storage/zgs-storage-1-failover.timer", u.failoverTimer), "utf8"),
        });
        assert.match(u.unit, /^User=nodefleet$/m);
        assert.match(u.unit, /^LimitNOFILE=65535$/m);
        assert.match(u.unit, /^Restart=on-failure$/m);
        // zgs_node v1.1.0 does not read ZGS_NODE__MINER_KEY: the key is in config.toml, not the environment.
        assert.doesNotMatch(u.unit, /EnvironmentFile|MINER_KEY/);
        assert.match(u.unit, /^ExecStart=\/opt\/nodefleet\/releases\/zgs-(?:5a){12}\/zgs_node --config \/data\/storage-1\/run\/config.toml$/m);
        // Stopped by the stop tool, whose SIGUSR2 alone counts as clean (hostfiles/tests/test_zgs_stop.py runs
        // it); the configure step installs it (its put_tool comes before the unit: the golden copy).
        assert.match(u.unit, /^ExecStop=-\/usr\/bin\/python3 -S \/usr\/local\/lib\/nodefleet\/zgs-stop\.py --grace 5$/m);
        assert.match(u.unit, /^SuccessExitStatus=SIGUSR2$/m);
        assert.ok(roleTools("storage").some((t) => t.path === "zgs-stop.py" && t.mode === "0755"), "the storage role installs the stop tool");
    });

    it("the configure and key scripts match golden copies and pass shellcheck", () => {
        requireTool("shellcheck", "shellcheck");
        const files = [
            golden("storage/configure.sh", renderStorageConfigure({ host: "h-storage", node: storageSpec(), mount: "/data", release: { name: "zgs", sha256: RELEASES().zgs.sha256 } })),
            golden("storage/miner-key.sh", renderStorageKey(storageSpec(), "/data", "ab".repeat(32), ["https://evmrpc-testnet.0g.ai", "https://rpc.example.org/v2/KEYabc123def456ghi789"])),
            golden("storage/remove.sh", renderStorageRemove("h-storage", storageSpec(), "/data")),
        ];
        for (const f of files) {
            const r = runTool("shellcheck", ["--shell=sh", "--severity=style", f]);
            assert.equal(r.status, 0, `${path.basename(f)}:\n${r.output}`);
        }
    });

    // The tail of the configure script as rendered, run by sh with systemctl and journalctl stand-ins
    // (the service not running after its restart, as with a release that exits at start). What it
    // cannot prove: the restart itself and the gate after it (the rollout VM scenario does).
    it("a node that does not run after its restart is warned of, not failed: its health step (test/unit/health-step.test.ts) or gate judges it", () => {
        const release = { name: "zgs", sha256: RELEASES().zgs.sha256 };
        const bin = fs.mkdtempSync(path.join(tmp, "bin-"));
        fs.writeFileSync(path.join(bin, "systemctl"), "#!/bin/sh\n[ \"$1\" = is-active ] && exit 3\nexit 0\n", { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "journalctl"), "#!/bin/sh\necho 'zgs_node: exited at start: http://k:s3cret@rpc.example.com/apikey'\n", { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "sleep"), "#!/bin/sh\n", { mode: 0o755 });
        const tail = (script: string) => {
            const from = script.lastIndexOf("\nsleep 2\n");
            assert.ok(from > 0, "the check after the (re)start");
            const journal = script.slice(script.indexOf("journal_tail() {"), script.indexOf("\n}\n", script.indexOf("journal_tail() {")) + 3);
            return spawnSync("sh", ["-s"], { input: `node=storage-1\nservice=zgs-storage-1.service\n${journal}${script.slice(from)}`, encoding: "utf8", env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
        };
        for (const onFailure of [undefined, "halt", "rollback"] as const) {
            const r = tail(renderStorageConfigure({ host: "h-storage", node: storageSpec(), mount: "/data", release, onFailure }));
            assert.equal(r.status, 0, `${onFailure}: ${r.stderr}`);
            const judge = onFailure ? "its health step \\(gated: its rollout gate\\) judges it" : "its health step judges it";
            assert.match(r.stderr, new RegExp(`zgs_node: exited at start: http://rpc\\.example\\.com/…\nstorage storage-1: warning: zgs-storage-1\\.service is not running: ${judge}\n$`));
        }
    });

    it("the host scripts compile", () => {
        for (const f of ["zgs-endpoint.py", "zgs-health.py"]) {
            const r = runTool("python3", ["-m", "py_compile", path.join(HOSTFILES_DIR, f)]);
            assert.equal(r.status, 0, r.output);
        }
    });

    it("refuses to render a key that is not 64 hex characters", () => {
        assert.throws(() => renderStorageKey(storageSpec(), "/data", "ab\nEOF", []), /must be 64 hex characters/);
    });

    it("the endpoint script picks the first candidate that answers and renders config.toml from the template", () => {
        // Real run of zgs-endpoint.py against a local JSON-RPC server and a dead port.
        const dir = fs.mkdtempSync(path.join(tmp, "endpoint-"));
        const server = runTool("python3", ["-c", `
import json, subprocess, sys, socket, os
from http.server import HTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": "0x2a"}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
srv = HTTPServer(("127.0.0.1", 0), H)
dead = socket.socket(); dead.bind(("127.0.0.1", 0)); dead_port = dead.getsockname()[1]; dead.close()
good = f"http://127.0.0.1:{srv.server_address[1]}"
spec = {"template": "${dir}/config.toml.nodefleet", "config": "${dir}/config.toml", "urls": "${dir}/urls.json", "minerKey": "${dir}/miner.key", "service": "x"}
open(spec["minerKey"], "w").write("ab" * 32 + "\\n")
# The good endpoint with an API key in its path (the server answers any path): never printed.
json.dump({"rpcEndpoints": [f"http://127.0.0.1:{dead_port}", good + "/v2/SECRETkey0123456789"]}, open(spec["urls"], "w"))
os.makedirs("/etc/nodefleet/nodefleet-test-endpoint", exist_ok=True)
json.dump(spec, open("/etc/nodefleet/nodefleet-test-endpoint/storage.json", "w"))
open(spec["template"], "w").write('a = 1\\nblockchain_rpc_endpoint = "@NODEFLEET_RPC_ENDPOINT@"\\nminer_key = "@NODEFLEET_MINER_KEY@"\\n')
import threading; threading.Thread(target=srv.serve_forever, daemon=True).start()
r = subprocess.run([sys.executable, "${path.join(HOSTFILES_DIR, "zgs-endpoint.py")}", "nodefleet-test-endpoint"], capture_output=True, text=True)
again = subprocess.run([sys.executable, "${path.join(HOSTFILES_DIR, "zgs-endpoint.py")}", "nodefleet-test-endpoint"], capture_output=True, text=True)
import shutil; shutil.rmtree("/etc/nodefleet/nodefleet-test-endpoint")
print(r.returncode); print(again.returncode); print(json.dumps(open(spec["config"]).read())); print(json.dumps(good + "/v2/SECRETkey0123456789"))
print(oct(os.stat(spec["config"]).st_mode & 0o777)); print(json.dumps(r.stdout + r.stderr + again.stdout + again.stderr))
`]);
        assert.equal(server.status, 0, server.output);
        const [rc, rc2, config, good, mode, said] = server.output.trim().split("\n");
        assert.equal(rc, "10", "first run rewrites config.toml");
        assert.equal(rc2, "0", "second run changes nothing");
        assert.equal(JSON.parse(config!), `a = 1\nblockchain_rpc_endpoint = ${good}\nminer_key = "${"ab".repeat(32)}"\n`);
        assert.equal(mode, "0o600", "config.toml holds the endpoint: the node's user's alone");
        assert.match(JSON.parse(said!), /blockchain_rpc_endpoint = http:\/\/127\.0\.0\.1:\d+\/…/);
        assert.doesNotMatch(JSON.parse(said!), /SECRETkey/, "the endpoint's key was printed");
        assert.doesNotMatch(JSON.parse(said!), /abab/, "the miner key was printed");
    });
});

describe("storage role: steps", () => {
    it("chains release -> teardown -> miner key -> configure -> health, the key only as a secret and never logged", async () => {
        const f = baseFleet();
        f.nodes = [f.nodes[0]];
        delete f.hosts["h-sequencer"];
        delete f.hosts["h-validator"];
        const { recorded } = await buildStack(f, SECRETS);
        const dep = (n: string) => recorded.find((r) => r.name === n)!.dependsOn;
        assert.deepEqual(dep("fleet-storage-1-teardown"), ["fleet-h-storage-release-zgs"]);
        assert.deepEqual(dep("fleet-storage-1-miner-key"), ["fleet-storage-1-teardown"], "after the teardown, which follows the bundle's copy (the key's body runs from it)");
        assert.match(deleteScriptOf("fleet-storage-1-teardown"), /systemctl disable --now zgs-storage-1-failover.timer zgs-storage-1.service/);
        assert.deepEqual(dep("fleet-storage-1-configure"), ["fleet-storage-1-miner-key"], "configure runs a script of the host's bundle: after its copy, through the key step");
        assert.deepEqual(dep("fleet-storage-1-health"), ["fleet-storage-1-configure"]);
        const keyStep = registered.find((r) => r.name === "fleet-storage-1-miner-key")!;
        assert.ok(keyStep.secretPaths.includes("stdin"), "the key script travels as a secret");
        assert.equal(keyStep.inputs.logging, "none");
        // The stdin sets the key (its secret), the bundled body writes it: the key is in no bundle.
        assert.match(keyStep.inputs.stdin, new RegExp(`^nodefleet_secret_key=${SECRETS.minerKey}$`, "m"));
        assert.match(scriptOf("fleet-storage-1-miner-key"), /^put \/etc\/nodefleet\/storage-1\/miner\.key 0600 root:root <<NODEFLEET_EOF\n\$nodefleet_secret_key\nNODEFLEET_EOF$/m);
        const bundle = registered.find((r) => r.type === "command:remote:CopyToRemote")!.archivePath!;
        for (const f of fs.readdirSync(bundle)) assert.ok(!fs.readFileSync(path.join(bundle, f), "utf8").includes(SECRETS.minerKey!), `bundled ${f} holds the miner key`);
        const props = recorded.find((r) => r.name === "fleet-storage-1-miner-key")!;
        for (const o of ["stdout", "stderr"]) assert.ok(props.additionalSecretOutputs.includes(o), `${o} must be a secret output`);
        assert.equal(await pulumi.isSecret(pulumi.output((props.props as any).stdin)), true);
        // Nowhere else: not in a command line, not in any other script.
        for (const r of registered.filter((x) => x.custom && x.name !== "fleet-storage-1-miner-key")) {
            assert.ok(!JSON.stringify(r.inputs).includes(SECRETS.minerKey!), `${r.name} carries the miner key`);
        }
        assert.match(scriptOf("fleet-storage-1-configure"), /refusing to start/);
        assert.match(scriptOf("fleet-storage-1-health"), /zgs-health.py storage-1 --wait 60/);
    });

    it("an endpoint given as a secret reaches the host only in the key step's secret script: in no other input, and its change re-runs configure through a secret trigger", async () => {
        const url = "https://eth.example.org/v2/KEYabc123def456ghi789";
        const secrets = { ...SECRETS, storageRpc: url };
        const f = baseFleet();
        f.nodes = [f.nodes[0]];
        f.nodes[0].storage.rpcEndpoints = [{ secret: "storageRpc" }, "http://10.0.0.9:8545"];
        delete f.hosts["h-sequencer"];
        delete f.hosts["h-validator"];
        await buildStack(f, secrets);
        const keyStep = registered.find((r) => r.name === "fleet-storage-1-miner-key")!;
        assert.ok(keyStep.secretPaths.includes("stdin"));
        assert.match(scriptOf("fleet-storage-1-miner-key"), /put \/etc\/nodefleet\/storage-1\/urls\.json 0600 root:root <<NODEFLEET_EOF\n\$nodefleet_secret_urls\n/);
        assert.ok(keyStep.inputs.stdin.includes(JSON.stringify(url)), "the key step's stdin sets the endpoint");
        for (const r of registered.filter((x) => x.custom && x.name !== "fleet-storage-1-miner-key")) {
            assert.ok(!JSON.stringify(r.inputs).includes("KEYabc123"), `${r.name} carries the endpoint`);
        }
        const configure = registered.find((r) => r.name === "fleet-storage-1-configure")!;
        assert.ok(configure.secretPaths.some((p) => p.startsWith("triggers")), "the endpoints' hash is a secret trigger");
        const before = inputsOf("fleet-storage-1-configure").triggers;
        const healthBefore = inputsOf("fleet-storage-1-health").triggers;
        await buildStack(f, { ...secrets, storageRpc: "https://eth.example.org/v2/KEYother000111222333" });
        assert.equal(inputsOf("fleet-storage-1-configure").triggers[0], before[0], "the script is the same");
        assert.notEqual(inputsOf("fleet-storage-1-configure").triggers[1], before[1], "the endpoints' hash changed");
        // The health report (the stack output) is taken again: it names the endpoint in use.
        assert.notDeepEqual(inputsOf("fleet-storage-1-health").triggers, healthBefore);
    });

    it("a boot node list change re-renders config.toml and so re-runs configure (and health) only", async () => {
        const f1 = baseFleet();
        await buildStack(f1, SECRETS);
        const before = inputsOf("fleet-storage-1-configure").triggers[0];
        const keyBefore = inputsOf("fleet-storage-1-miner-key").triggers[0];
        const f2 = baseFleet();
        f2.nodes[0].storage.networkBootNodes = [`/ip4/203.0.113.11/udp/1234/p2p/${PEER_ID}`];
        await buildStack(f2, SECRETS);
        assert.notEqual(inputsOf("fleet-storage-1-configure").triggers[0], before);
        assert.equal(inputsOf("fleet-storage-1-miner-key").triggers[0], keyBefore);
    });
});
