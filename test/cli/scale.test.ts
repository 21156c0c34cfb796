// Real-CLI tier: a fleet past the size one stack's config can carry. Pulumi hands the whole config,
// secrets decrypted, to the program and the policy pack in one environment variable that Linux caps
// at 128 KiB; a fleet in a file of the project (nodefleet:fleetFile) with its keys in a secrets
// directory has no such ceiling (docs/configuration.md, "A fleet in a file"). Proves with the real
// engine and policy pack: the same fleet, too large inline, is planned from the file, and inline it
// is refused by `nodefleet check` with the fix, before Pulumi fails as the check says it would.
// Preview only: nothing connects to the hosts (test/bench/engine.ts brings such fleets up).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { CONFIG_ENV_LIMIT, configEnvBytes } from "../../components/config/definition";
import { ScratchProject } from "../support/cli";
import { generate } from "../bench/fleet-gen";

/** Nodes enough that the fleet inline is over the cap by a margin (about 170 fit). */
const NODES = 240;
const STACK = "big";

describe("a fleet too large for one stack's config", () => {
    const generated = generate(NODES, (i) => ({ kind: "existing", address: "127.0.0.1", port: 20000 + i, user: "root", sshPrivateKeyFile: ".state/vm/id_ed25519", adminCidrs: ["10.0.2.2/32"] }));
    const { sshKey: _unused, ...secrets } = generated.secrets;
    const fleet = { hardwareCheck: "warn", ...generated.fleet };
    let project: ScratchProject;
    let secretsDir: string;
    const check = () => project.exec(process.execPath, [path.join(__dirname, "../../status/main.js"), "check", "--stack", STACK]);

    before(() => {
        secretsDir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-secrets-"));
        for (const [k, v] of Object.entries(secrets)) fs.writeFileSync(path.join(secretsDir, k), v, { mode: 0o600 });
        project = new ScratchProject(STACK, stringify({ config: { "nodefleet:fleetFile": "fleets/big.yaml" } }));
        project.writeDevFiles("placeholder");
        fs.mkdirSync(path.join(project.dir, "fleets"));
        fs.writeFileSync(path.join(project.dir, "fleets/big.yaml"), stringify({ secretsDir, ...fleet }));
    });
    after(() => {
        project?.dispose();
        fs.rmSync(secretsDir, { recursive: true, force: true });
    });

    it(`inline, ${NODES} nodes and their keys are over the cap`, () => {
        const inline = configEnvBytes({ "nodefleet:fleet": JSON.stringify(fleet), ...Object.fromEntries(Object.entries(secrets).map(([k, v]) => [`nodefleet:${k}`, v])) });
        assert.ok(inline > CONFIG_ENV_LIMIT * 1.2, `${inline} bytes`);
    });

    it("in a file, with its keys in a secrets directory: planned whole by the real engine, the policy pack on, and the size check passes", async () => {
        const ok = check();
        assert.equal(ok.status, 0, ok.output);
        assert.match(ok.stdout, new RegExp(`^stack ${STACK}: config \\d+ bytes of the ${CONFIG_ENV_LIMIT}`));
        const r = await project.previewAsync("--json", "--policy-pack", path.join(project.dir, "policy"));
        assert.equal(r.status, 0, r.output.slice(-4000));
        const steps = (JSON.parse(r.stdout) as { steps: { op: string; urn: string }[] }).steps;
        // A URN names its parents' types before its own: ...::nodefleet:fleet:Fleet$nodefleet:host:ExistingHost::name.
        const created = (type: string) => steps.filter((s) => s.op === "create" && (s.urn.includes(`$${type}::`) || s.urn.includes(`::${type}::`))).length;
        assert.equal(created("nodefleet:host:ExistingHost"), NODES);
        assert.equal(created("nodefleet:role:StorageNode") + created("nodefleet:role:SequencerNode") + created("nodefleet:role:ValidatorNode"), NODES);
        assert.equal(created("nodefleet:role:ValidatorNode"), NODES / 3);
    });

    it("inline, it is refused by nodefleet check with the reason and the fix; Pulumi itself then fails as the check says", () => {
        fs.rmSync(path.join(project.dir, "fleets"), { recursive: true });
        project.writeConfig(stringify({ config: { "nodefleet:fleet": fleet } }));
        const set = project.pulumi(["config", "set-all", "--stack", STACK, ...Object.entries(secrets).flatMap(([k, v]) => ["--secret", `nodefleet:${k}=${v}`])]);
        assert.equal(set.status, 0, set.output.slice(-2000));
        const refused = check();
        assert.equal(refused.status, 1, refused.output);
        assert.match(refused.output, /nodefleet check: refused: the stack's config is \d+\.\d KiB, over the 128\.0 KiB Linux allows one environment variable: .*argument list too long.*Move the fleet into a file of the project \(nodefleet:fleetFile\) and the node keys into a secrets directory \(secretsDir\)/);
        for (const v of Object.values(secrets)) assert.ok(!refused.output.includes(v), "no secret in the message");
        const preview = project.preview();
        assert.notEqual(preview.status, 0);
        assert.match(preview.output, /argument list too long/);
    });
});
