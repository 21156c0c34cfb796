// The policy pack (policy/) with the real engine: `pulumi preview --policy-pack policy
// --policy-pack-config policy/config/<stack>.json`, the pack run by the language host's RunPlugin.
// Each rule rejects a violating stack and accepts a clean one. The violating stacks come from a
// fixture program shaped like nodefleet (test/cli/policy-fixture), because nodefleet's own config
// checks refuse most of these before any resource exists; the real program is checked clean
// under the dev config and rejected under prod's (unpinned host keys, hardwareCheck: warn).
// Not proven here: the AWS and Hetzner shapes of the port and hardware rules (no aws or hcloud
// provider plugin can be built here for the engine to plan them); unit tests cover those.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, ScratchProject } from "../support/cli";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const FIXTURE = [["test/cli/policy-fixture/Pulumi.yaml", "Pulumi.yaml"], ["test/cli/policy-fixture/fixture.ts", "fixture.ts"], "tsconfig.json", "package.json", "components", "templates", "hostfiles", "policy"] as const;

function withPack(project: ScratchProject, configFor: string) {
    return project.preview("--policy-pack", path.join(project.dir, "policy"), "--policy-pack-config", path.join(project.dir, "policy", "config", `${configFor}.json`));
}

describe("policy pack with the real engine", () => {
    let fixture: ScratchProject;
    let real: ScratchProject;

    before(() => {
        fixture = new ScratchProject("policytest", "config:\n  policyfixture:case: clean\n", "nodefleet-dev", FIXTURE);
        real = new ScratchProject("policyreal", DEV_CONFIG);
        const key = path.join(real.dir, ".state/vm/id_ed25519");
        fs.mkdirSync(path.dirname(key), { recursive: true });
        fs.writeFileSync(key, "-----BEGIN OPENSSH PRIVATE KEY-----\nbm90LWEtcmVhbC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n", { mode: 0o600 });
        const sums = path.join(real.dir, ".state/artifacts/current/SHA256SUMS");
        fs.mkdirSync(path.dirname(sums), { recursive: true });
        fs.writeFileSync(sums, ["aristotle-v1.0.6", "zgs_node-v1.1.0", "aztec-v2.0.2"].map((n, i) => `${String(i + 1).repeat(64)}  ${n}.tar.gz\n`).join(""));
    });
    after(() => {
        fixture?.dispose();
        real?.dispose();
    });

    it("accepts the clean fixture under prod's mandatory config", () => {
        const r = withPack(fixture, "prod");
        assert.equal(r.status, 0, r.output);
        assert.match(r.output, /Policies:/i, "the pack ran");
        assert.doesNotMatch(r.output, /\[(advisory|mandatory)\]/, r.output);
    });

    const cases: [kase: string, rule: string, message: RegExp][] = [
        ["rpc-open", "rpc-open-to-world", /fleet-dev-2-firewall-apply: port 56545\/tcp is an RPC\/engine\/admin port and is open to the world/],
        ["ssh-open", "ssh-open-to-world", /fleet-dev-2-firewall-apply: SSH is open to the world/],
        ["same-key", "same-validator-key", /fleet-validator-2-validator-key: the same validator key as fleet-validator-1-validator-key/],
        ["unpinned", "unpinned-host-key", /SSH to 10\.77\.0\.12:22 does not pin the host key/],
        ["key-plain", "key-in-plain-text", /fleet-validator-1-configure: a key reaches the input 'environment' in plain text/],
        ["guard-order", "migration-guard-order", /fleet-validator-1-switch-s06-delete-geth deletes the geth datadir but does not depend on fleet-validator-1-switch-s05-export/],
        ["hardware", "hardware-below-target", /fleet-dev-2 \(validator\): the preflight checks for 4 cores, the nodes need 8/],
    ];
    for (const [kase, rule, message] of cases) {
        it(`${rule}: rejects the '${kase}' stack under prod's config (mandatory); dev's only warns (advisory)`, () => {
            fixture.writeConfig(`config:\n  policyfixture:case: ${kase}\n`);
            const mandatory = withPack(fixture, "prod");
            assert.notEqual(mandatory.status, 0, mandatory.output);
            assert.match(mandatory.output, new RegExp(`\\[mandatory\\]\\s+${rule}\\s`), mandatory.output);
            assert.match(mandatory.output, message);
            const advisory = withPack(fixture, "dev");
            assert.equal(advisory.status, 0, advisory.output);
            if (rule === "unpinned-host-key") assert.doesNotMatch(advisory.output, /\[(advisory|mandatory)\]/, "host keys are required in prod only");
            else assert.match(advisory.output, new RegExp(`\\[advisory\\]\\s+${rule}\\s`), advisory.output);
        });
    }

    it("accepts nodefleet's dev stack under the dev config: no rule fires on the real program", () => {
        const r = withPack(real, "dev");
        assert.equal(r.status, 0, r.output);
        assert.doesNotMatch(r.output, /\[(advisory|mandatory)\]/, r.output);
    });

    it("rejects nodefleet's dev stack under prod's config: unpinned host keys and hardwareCheck: warn", () => {
        const r = withPack(real, "prod");
        assert.notEqual(r.status, 0, r.output);
        assert.match(r.output, /\[mandatory\]\s+unpinned-host-key\s/);
        assert.match(r.output, /\[mandatory\]\s+hardware-below-target\s/);
        assert.match(r.output, /hardwareCheck is warn/);
        assert.doesNotMatch(r.output, /\]\s+(rpc-open-to-world|ssh-open-to-world|same-validator-key|key-in-plain-text|migration-guard-order)\s/);
    });
});
