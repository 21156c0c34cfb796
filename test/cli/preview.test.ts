// Real-CLI tier: `pulumi preview` with the real engine (the toolchain's CLI, language host and
// command provider) on a throwaway copy of the project, configured like the dev stack.
// Proves what mocks cannot: the program loads through the engine, config and secrets come
// from a real stack file, bad config stops the preview with its path and reason before any
// resource is planned. It does not connect to hosts (preview runs no remote command).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, ScratchProject } from "../support/cli";
import { NODE_ID } from "../support/fixtures";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");

function withConfig(edit: (yaml: string) => string): string {
    const out = edit(DEV_CONFIG);
    assert.notEqual(out, DEV_CONFIG, "the edit must change the config");
    return out;
}

describe("pulumi preview with the real engine", () => {
    let project: ScratchProject;

    before(() => {
        project = new ScratchProject("clitest", DEV_CONFIG);
        project.writeDevFiles("placeholder"); // preview only checks the key file exists, is private and looks like a key
    });
    after(() => project?.dispose());

    it("plans the dev fleet: preflight, bootstrap and the firewall chain on both hosts", () => {
        project.writeConfig(DEV_CONFIG);
        const r = project.preview();
        assert.equal(r.status, 0, r.output);
        for (const host of ["dev-1", "dev-2"]) {
            const releases = (host === "dev-1" ? ["release-aztec", "release-zgs"] : ["release-0g-chain"]).flatMap((r) => [r, `${r}-teardown`]);
            for (const step of ["preflight", "bootstrap", "firewall-teardown", "firewall-apply", "firewall-confirm", ...releases]) {
                assert.match(r.output, new RegExp(`command:remote:Command\\s+fleet-${host}-${step}\\s+create`), `${host} ${step}`);
            }
            // The host's drift check (read by `pulumi refresh`), through the real dynamic provider.
            assert.match(r.output, new RegExp(`pulumi-nodejs:dynamic:Resource\\s+fleet-${host}-drift\\s+create`), `${host} drift`);
        }
        assert.match(r.output, /\+ 42 to create/);
        for (const step of ["teardown", "miner-key", "configure", "health"]) assert.match(r.output, new RegExp(`command:remote:Command\\s+fleet-storage-1-${step}\\s+create`));
        for (const step of ["teardown", "validator-key", "version", "configure", "registration", "health"]) assert.match(r.output, new RegExp(`command:remote:Command\\s+fleet-sequencer-1-${step}\\s+create`));
        for (const step of ["teardown", "validator-key", "configure", "health"]) assert.match(r.output, new RegExp(`command:remote:Command\\s+fleet-validator-1-${step}\\s+create`));
        assert.match(r.output, /hosts\.dev-1\.hostKey: not pinned/);
        // The plugins are where Pulumi looks for them (lab/toolchain.sh), not on PATH.
        assert.doesNotMatch(r.output, /from \$PATH/, "a plugin warning");
    });

    it("with a rollout section: logs each role's batches and plans a gate after each node's health step", () => {
        project.writeConfig(withConfig((y) => y.replace(/^ {4}releases:\n/m, "    rollout:\n      roles:\n        storage:\n          soakSeconds: 30\n    releases:\n")));
        const r = project.preview();
        assert.equal(r.status, 0, r.output);
        assert.match(r.output, /rollout storage: 1 node\(s\) in 1 batch\(es\) of up to 1 \(25% of the role\), each healthy within 900 s and for 30 s, on failure halt: 1\. storage-1/);
        assert.match(r.output, /rollout validator: 1 node\(s\) in 1 batch\(es\) of up to 1, each healthy within 600 s and for 120 s, on failure halt: 1\. validator-1/);
        for (const node of ["storage-1", "sequencer-1", "validator-1"]) {
            assert.match(r.output, new RegExp(`nodefleet:rollout:Gate\\s+fleet-${node}-gate\\s+create`), `${node}: its gate component`);
            assert.match(r.output, new RegExp(`command:remote:Command\\s+fleet-${node}-gate\\s+create`), `${node}: its gate step`);
        }
        assert.match(r.output, /\+ 48 to create/, "the dev fleet's 42 resources, and three gates: a component and its step each");
    });

    it("stops on a sequencer RPC open to the world, naming the config path, before planning any resource", () => {
        project.writeConfig(withConfig((y) => y.replace("          publicIp: 10.77.0.11\n", "          publicIp: 10.77.0.11\n          rpcAllowedCidrs: [0.0.0.0/0]\n")));
        const r = project.preview();
        assert.notEqual(r.status, 0, r.output);
        assert.match(r.output, /nodes\[1\]\.sequencer\.rpcAllowedCidrs\[0\]: the sequencer RPC must not be open to the world/);
        assert.doesNotMatch(r.output, /command:remote:Command/);
    });

    it("stops on one validator key used by two nodes", () => {
        const second = "      - name: validator-2\n        role: validator\n        host: dev-1\n        release: 0g-chain\n        validator:\n          portPrefix: 57\n          bootnode: \"enode://" + NODE_ID + "@10.77.0.12:56303\"\n          validatorKeySecret: devValidatorKey\n";
        project.writeConfig(withConfig((y) => y.replace("      - name: validator-1\n", second + "      - name: validator-1\n")));
        const r = project.preview();
        assert.notEqual(r.status, 0, r.output);
        assert.match(r.output, /nodes\[3\]\.validator\.validatorKeySecret: the same validator key as nodes\[2\]\.validator\.validatorKeySecret/);
    });

    it("stops on a key stored in plain text, without printing it", () => {
        const plain = "33".repeat(32);
        project.writeConfig(withConfig((y) => y.replace(/  nodefleet:devMinerKey:\n    secure: [^\n]+\n/, `  nodefleet:devMinerKey: "${plain}"\n`)));
        const r = project.preview();
        assert.notEqual(r.status, 0, r.output);
        assert.match(r.output, /nodes\[0\]\.storage\.minerKeySecret: the config key it names is stored in plain text/);
        assert.ok(!r.output.includes(plain), "the plain key must not be echoed");
    });

    it("never shows a decrypted secret in the preview of the dev stack", () => {
        project.writeConfig(DEV_CONFIG);
        const r = project.preview("--diff");
        assert.equal(r.status, 0, r.output);
        const secrets = project.pulumi(["config", "--stack", "clitest", "--show-secrets", "--json"]);
        assert.equal(secrets.status, 0, secrets.output);
        const values = JSON.parse(secrets.output) as Record<string, { value?: string; secret: boolean }>;
        const plain = Object.values(values).filter((v) => v.secret && v.value).map((v) => v.value!);
        assert.ok(plain.length >= 3, "the dev stack holds at least three secrets");
        for (const p of plain) assert.ok(!r.output.includes(p), "a secret value appeared in the preview");
    });
});
