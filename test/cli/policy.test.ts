// The policy pack (policy/) with the real engine: `pulumi preview --policy-pack policy
// --policy-pack-config policy/config/<stack>.json`, the pack run by the language host's RunPlugin.
// Each rule rejects a violating stack and accepts a clean one. The violating stacks come from a
// fixture program shaped like nodefleet (test/cli/policy-fixture), because nodefleet's own config
// checks refuse most of these before any resource exists; the real program is checked clean
// under the dev config and rejected under prod's (unpinned host keys, hardwareCheck: warn).
// Not proven here: the AWS and Hetzner shapes of the port and hardware rules; unit tests cover
// those (no aws plugin can be built here; the hcloud plugin can, and test/cli/hetzner-preview.test.ts
// previews a Hetzner host with it, but not yet with the policy pack).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { pool, ROOT, ScratchProject, type Run } from "../support/cli";

const DEV_CONFIG = fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8");
const FIXTURE = [["test/cli/policy-fixture/Pulumi.yaml", "Pulumi.yaml"], ["test/cli/policy-fixture/fixture.ts", "fixture.ts"], "tsconfig.json", "package.json", "components", "templates", "hostfiles", "policy"] as const;

function withPack(project: ScratchProject, configFor: string): Promise<Run> {
    return project.previewAsync("--policy-pack", path.join(project.dir, "policy"), "--policy-pack-config", path.join(project.dir, "policy", "config", `${configFor}.json`));
}

const cases: [kase: string, rule: string, message: RegExp][] = [
    ["rpc-open", "rpc-open-to-world", /fleet-dev-2-firewall-apply: port 56545\/tcp is an RPC\/engine\/admin port and is open to the world/],
    ["ssh-open", "ssh-open-to-world", /fleet-dev-2-firewall-apply: SSH is open to the world/],
    ["metrics-open", "metrics-open-to-world", /fleet-dev-2-firewall-apply: port 9100\/tcp serves metrics or the monitoring stack and is open to the world/],
    ["same-key", "same-validator-key", /fleet-validator-2-validator-key: the same validator key as fleet-validator-1-validator-key/],
    ["unpinned", "unpinned-host-key", /SSH to 10\.77\.0\.12:22 does not pin the host key/],
    ["key-plain", "key-in-plain-text", /fleet-validator-1-configure: a key reaches the input 'environment' in plain text/],
    ["guard-order", "migration-guard-order", /fleet-validator-1-switch-s06-delete-geth deletes the geth datadir but does not depend on fleet-validator-1-switch-s05-export/],
    ["hardware", "hardware-below-target", /fleet-dev-2 \(validator\): the preflight checks for 4 cores, the nodes need 8/],
];

describe("policy pack with the real engine", () => {
    const projects: ScratchProject[] = [];
    // Every preview of the suite, run two at a time (one scratch project per fixture case) before
    // the tests read their results: 18 previews one after the other took 150 s on 2 cores.
    const runs = new Map<string, Run>();

    before(async () => {
        const fixture = (kase: string) => {
            const p = new ScratchProject(`policy-${kase}`, `config:\n  policyfixture:case: ${kase}\n`, "nodefleet-dev", FIXTURE);
            projects.push(p);
            return p;
        };
        const real = new ScratchProject("policyreal", DEV_CONFIG);
        projects.push(real);
        real.writeDevFiles("placeholder");
        // A project's two previews far apart in the queue, so that they do not run side by side.
        const clean = fixture("clean");
        const kases = cases.map(([kase]) => [kase, fixture(kase)] as const);
        const jobs: [string, () => Promise<Run>][] = [
            ["real dev", () => withPack(real, "dev")],
            ["clean prod", () => withPack(clean, "prod")],
            ...kases.map(([kase, p]) => [`${kase} prod`, () => withPack(p, "prod")] as [string, () => Promise<Run>]),
            ...kases.map(([kase, p]) => [`${kase} dev`, () => withPack(p, "dev")] as [string, () => Promise<Run>]),
            ["real prod", () => withPack(real, "prod")],
        ];
        const results = await pool(2, jobs.map(([, job]) => job));
        jobs.forEach(([name], i) => runs.set(name, results[i]!));
    });
    after(() => {
        for (const p of projects) p.dispose();
    });

    it("accepts the clean fixture under prod's mandatory config", () => {
        const r = runs.get("clean prod")!;
        assert.equal(r.status, 0, r.output);
        assert.match(r.output, /Policies:/i, "the pack ran");
        assert.doesNotMatch(r.output, /\[(advisory|mandatory)\]/, r.output);
    });

    for (const [kase, rule, message] of cases) {
        it(`${rule}: rejects the '${kase}' stack under prod's config (mandatory); dev's only warns (advisory)`, () => {
            const mandatory = runs.get(`${kase} prod`)!;
            assert.notEqual(mandatory.status, 0, mandatory.output);
            assert.match(mandatory.output, new RegExp(`\\[mandatory\\]\\s+${rule}\\s`), mandatory.output);
            assert.match(mandatory.output, message);
            const advisory = runs.get(`${kase} dev`)!;
            assert.equal(advisory.status, 0, advisory.output);
            if (rule === "unpinned-host-key") assert.doesNotMatch(advisory.output, /\[(advisory|mandatory)\]/, "host keys are required in prod only");
            else assert.match(advisory.output, new RegExp(`\\[advisory\\]\\s+${rule}\\s`), advisory.output);
        });
    }

    it("accepts nodefleet's dev stack under the dev config: no rule fires on the real program", () => {
        const r = runs.get("real dev")!;
        assert.equal(r.status, 0, r.output);
        assert.doesNotMatch(r.output, /\[(advisory|mandatory)\]/, r.output);
    });

    it("rejects nodefleet's dev stack under prod's config: unpinned host keys and hardwareCheck: warn", () => {
        const r = runs.get("real prod")!;
        assert.notEqual(r.status, 0, r.output);
        assert.match(r.output, /\[mandatory\]\s+unpinned-host-key\s/);
        assert.match(r.output, /\[mandatory\]\s+hardware-below-target\s/);
        assert.match(r.output, /hardwareCheck is warn/);
        assert.doesNotMatch(r.output, /\]\s+(rpc-open-to-world|ssh-open-to-world|metrics-open-to-world|same-validator-key|key-in-plain-text|migration-guard-order)\s/);
    });
});
