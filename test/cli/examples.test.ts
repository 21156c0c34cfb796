// Real-CLI tier: the shipped examples as a new operator takes them, their placeholders filled (keys,
// addresses, digests): the README's stack and Pulumi.prod.yaml preview clean with the real engine
// under their own policy config (policy/config/prod.json, every rule mandatory, host keys pinned),
// the Hetzner host through the real hcloud provider with a dummy token (no API call: a preview
// makes none); `nodefleet check` passes each. Pulumi.staging.yaml's AWS host cannot be previewed
// here: no aws provider plugin can be built in this workplace (its source is not among the pinned
// upstream archives); its config checks run in the unit tier (test/unit/pipeline.test.ts).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { PLACEHOLDER_KEY, pool, ROOT, ScratchProject, type Run } from "../support/cli";
import { ADDR, NODE_ID, SECRETS, SEQUENCER_KEY_ADDRESS } from "../support/fixtures";
import { newHostKey } from "../../components/hosts/host-key-provider";

const DUMMY_TOKEN = "0".repeat(64); // a Hetzner API token is 64 characters

/** The README's stack (its "Configure a stack" block), as the operator copies it. */
function readmeStack(): string {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    const m = /```yaml\n(config:\n[\s\S]*?)```/.exec(readme);
    assert.ok(m, "the README's stack block");
    return m[1]!;
}

/** The README block with what an operator fills in: a pinned host key, addresses, digests, a boot node. */
function fillReadme(yaml: string): string {
    const addresses = [ADDR.a, ADDR.b, ADDR.c, ADDR.d, "0x52908400098527886E0F7030069857D2E4169EE7", "0x8617E340B3D01FA5F11F306F4090FD50E238070D"];
    let i = 0;
    const out = yaml
        .replace("ssh-ed25519 AAAA…", newHostKey("readme's host").publicKey)
        .replace('"<address of sequencerKey>"', `"${SEQUENCER_KEY_ADDRESS}"`)
        .replace("<128 hex>", NODE_ID)
        .replace(/"0x…"/g, () => `"${addresses[i++]!}"`)
        .replace(/sha256: 4f…/g, `sha256: "${"4f".repeat(32)}"`);
    const values = out.split("\n").map((l) => l.replace(/\s+#.*$/, "")).join("\n");
    assert.doesNotMatch(values, /…|<[a-z0-9 ]+>/, `a placeholder left:\n${values}`);
    return out;
}

/** The example stacks' placeholders are values already (each marked PLACEHOLDER): only the keys are set. */
function setKeys(project: ScratchProject, keys: Record<string, string>): void {
    for (const [key, value] of Object.entries(keys)) {
        const r = project.pulumi(["config", "set", "--secret", "--stack", project.stack, `nodefleet:${key}`], value); // on stdin
        assert.equal(r.status, 0, r.output);
    }
}

const KEYS = { sshKey: PLACEHOLDER_KEY, minerKey: SECRETS.minerKey!, sequencerKey: SECRETS.sequencerKey!, sequencerBlsKey: SECRETS.blsKey!, validatorKey: SECRETS.validatorKey! };
const README_KEYS = {
    opsSshKey: PLACEHOLDER_KEY, minerKey: SECRETS.minerKey!, sequencerKey: SECRETS.sequencerKey!, sequencerBlsKey: SECRETS.blsKey!, validatorKey: SECRETS.validatorKey!,
    paidRpcUrl: "https://rpc.example.org/v2/k3yAbCdEfGhIjKlMnOpQrStUv", sepoliaRpc: "https://sepolia.example.org/v2/k3yAbCdEfGhIjKlMnOpQrStUv", sepoliaBeacon: "https://beacon.example.org/v2/k3yAbCdEfGhIjKlMnOpQrStUv",
};

function withPolicy(project: ScratchProject): Promise<Run> {
    return project.previewAsync("--policy-pack", path.join(project.dir, "policy"), "--policy-pack-config", path.join(project.dir, "policy/config/prod.json"));
}

/** `nodefleet check --stack S` in the scratch project (status/check.ts, as tsc compiled it). */
function check(project: ScratchProject): Run {
    const main = path.join(ROOT, "dist/status/check.js");
    return project.exec("node", ["-e", `require(${JSON.stringify(main)}).checkMain(["--stack", ${JSON.stringify(project.stack)}], process.cwd()).then((c) => process.exit(c))`]);
}

describe("the shipped examples, their placeholders filled, under their own policy", () => {
    const projects: ScratchProject[] = [];
    const runs = new Map<string, Run>();

    before(async () => {
        // The projects' previews take it (their environment is made from this process's): no Hetzner call is made.
        process.env.HCLOUD_TOKEN = DUMMY_TOKEN;
        const prod = new ScratchProject("prod", fs.readFileSync(path.join(ROOT, "Pulumi.prod.yaml"), "utf8"));
        setKeys(prod, KEYS);
        const readme = new ScratchProject("prod", fillReadme(readmeStack()));
        setKeys(readme, README_KEYS);
        // The prod example with its existing server's key taken out: the same pack must refuse it.
        const unpinned = new ScratchProject("prod", fs.readFileSync(path.join(ROOT, "Pulumi.prod.yaml"), "utf8").replace(/^ {8}hostKey: .*\n/m, ""));
        setKeys(unpinned, KEYS);
        projects.push(prod, readme, unpinned);
        const jobs: [string, ScratchProject][] = [["prod", prod], ["readme", readme], ["unpinned", unpinned]];
        const results = await pool(2, jobs.map(([, p]) => () => withPolicy(p)));
        jobs.forEach(([name], i) => runs.set(name, results[i]!));
        for (const [name, p] of jobs) runs.set(`${name} check`, check(p));
    });
    after(() => {
        delete process.env.HCLOUD_TOKEN;
        for (const p of projects) p.dispose();
    });

    it("Pulumi.prod.yaml previews clean under policy/config/prod.json: its Hetzner host pinned from its first boot, its existing server by its key", () => {
        const r = runs.get("prod")!;
        assert.equal(r.status, 0, r.output.slice(-6000));
        assert.doesNotMatch(r.output, /mandatory|Policy Violations/i, r.output.slice(-4000));
        assert.doesNotMatch(r.output, /can't run policy/, "every rule ran");
        assert.match(r.output, /fleet-prd-hz-1-first-boot-key/);
        assert.match(r.output, /fleet-prd-hz-1-host-key-swap/);
        assert.match(r.output, /create/);
    });

    it("the README's stack previews clean under the same policy", () => {
        const r = runs.get("readme")!;
        assert.equal(r.status, 0, r.output.slice(-6000));
        assert.doesNotMatch(r.output, /mandatory|Policy Violations/i, r.output.slice(-4000));
        assert.doesNotMatch(r.output, /can't run policy/, "every rule ran");
    });

    it("the same pack refuses the prod example with its existing server's key taken out, naming the connection (the rule is live on this stack)", () => {
        const r = runs.get("unpinned")!;
        assert.notEqual(r.status, 0);
        assert.match(r.output, /unpinned-host-key/);
        assert.match(r.output, /SSH to 203\.0\.113\.21:22 does not pin the host key/);
        assert.doesNotMatch(r.output, /prd-hz-1[^\n]*does not pin the host key/, "the cloud host is pinned by its first-boot key");
    });

    it("nodefleet check passes each: the config fits what Pulumi hands the program", () => {
        for (const name of ["prod", "readme"]) {
            const r = runs.get(`${name} check`)!;
            assert.equal(r.status, 0, `${name}: ${r.output}`);
            assert.match(r.stdout, /^stack prod: config \d+ bytes of the \d+ one environment variable holds/m);
        }
    });
});
