// The workflows as a new operator copies them into a repository (.github/workflows), read as data:
// actions pinned by the commits ../shared/actions holds, Pulumi installed before every stack step
// and never built from source, no lab in the deploy path, the stages in order, and every GitHub
// setting they name listed in docs/gitops.md. What this cannot prove: that a runner runs them; a
// runner's run is not part of the test command yet (docs/gitops.md says what it takes).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { parse } from "yaml";
import { ROOT } from "../support/cli";

const NAMES = ["deploy.yml", "preview.yml", "drift.yml"] as const;

interface Step {
    readonly uses?: string;
    readonly run?: string;
}
interface Job {
    readonly needs?: string[];
    readonly if?: string;
    readonly environment?: string;
    readonly steps: Step[];
}
interface Workflow {
    readonly env?: Record<string, string>;
    readonly jobs: Record<string, Job>;
}

const text = (name: string) => fs.readFileSync(path.join(ROOT, ".github/workflows", name), "utf8");
const workflow = (name: string) => parse(text(name)) as Workflow;

/** ../shared/actions/README.md's table: repository -> tag and commit of the archive it holds. */
function sharedActions(): Map<string, { tag: string; commit: string }> {
    const readme = fs.readFileSync(path.join(ROOT, "../shared/actions/README.md"), "utf8");
    const out = new Map<string, { tag: string; commit: string }>();
    for (const m of readme.matchAll(/^\| `[^`]+` \| ([\w.-]+\/[\w.-]+) \| (v[\d.]+) \| ([0-9a-f]{40}) \|/gm)) out.set(m[1]!, { tag: m[2]!, commit: m[3]! });
    return out;
}

/** The section of docs/gitops.md that lists the GitHub settings. */
function settingsSection(): string {
    const doc = fs.readFileSync(path.join(ROOT, "docs/gitops.md"), "utf8");
    const start = doc.indexOf("**GitHub settings the workflows need**");
    assert.notEqual(start, -1, "docs/gitops.md has its GitHub settings");
    return doc.slice(start, doc.indexOf("\n\n**", start + 1));
}

describe("the workflows as an operator copies them", () => {
    it("pin every action by the commit of the tag ../shared/actions holds, the tag named beside it", () => {
        const shared = sharedActions();
        assert.ok(shared.size >= 2, "the shared actions' table was read");
        let seen = 0;
        for (const name of NAMES) {
            for (const line of text(name).split("\n")) {
                const m = /^\s*- uses: (\S+)(?:\s+#\s*(\S+))?$/.exec(line);
                if (!m) continue;
                seen++;
                const [repo, ref] = m[1]!.split("@");
                const pin = shared.get(repo!);
                assert.ok(pin, `${name}: ${repo} is not among the actions ../shared/actions holds (an offline runner could not run it)`);
                assert.equal(ref, pin.commit, `${name}: ${repo} pinned by ${ref}, not the commit of ${pin.tag}`);
                assert.equal(m[2], pin.tag, `${name}: ${repo}'s pin names its tag in a comment`);
            }
        }
        assert.ok(seen >= 8, `every job's actions were read (${seen})`);
    });

    it("install Pulumi for the same stack before every stack step, build nothing from source, and leave the lab and sudo out", () => {
        for (const name of NAMES) {
            const wf = workflow(name);
            assert.equal(wf.env?.NODEFLEET_NO_SOURCE_BUILD, "1", `${name}: no source build in a job`);
            assert.equal(wf.env?.NODEFLEET_TOOLCHAIN, "${{ vars.NODEFLEET_TOOLCHAIN || 'stock' }}", `${name}: stock Pulumi unless the repository says otherwise`);
            let stackSteps = 0;
            for (const [id, job] of Object.entries(wf.jobs)) {
                const runs = job.steps.map((s) => s.run ?? "");
                job.steps.forEach((s) => assert.doesNotMatch(s.uses ?? "", /setup-go/, `${name}/${id}: nothing is compiled in a job`));
                runs.forEach((r) => assert.doesNotMatch(r, /\bsudo\b|scripts\/dev\.sh|\blab\//, `${name}/${id}: ${r}`));
                runs.forEach((r, i) => {
                    const m = /bash scripts\/ci\/stack\.sh (preview|up|drift) ("\$\{\{ matrix\.stack \}\}")/.exec(r);
                    if (!m) return;
                    stackSteps++;
                    assert.ok(runs.slice(0, i).some((before) => before.includes(`bash scripts/ci/install-pulumi.sh ${m[2]}`)), `${name}/${id}: Pulumi installed for the stack before its ${m[1]}`);
                });
            }
            assert.ok(stackSteps >= 1, `${name} runs a stack step`);
        }
    });

    it("deploy the team's dev stacks, then staging, then prod, each stage after the one before and never after a failure", () => {
        const jobs = workflow("deploy.yml").jobs;
        assert.deepEqual(Object.keys(jobs), ["stacks", "dev", "staging", "prod"]);
        assert.deepEqual(jobs.dev!.needs, ["stacks"]);
        assert.deepEqual(jobs.staging!.needs, ["stacks", "dev"]);
        assert.deepEqual(jobs.prod!.needs, ["stacks", "staging"]);
        for (const stage of ["staging", "prod"]) assert.match(jobs[stage]!.if ?? "", /^\$\{\{ !cancelled\(\) && !failure\(\) && /, `${stage} runs after a passed-over stage, never after a failed one`);
        for (const stage of ["dev", "staging", "prod"]) assert.equal(jobs[stage]!.environment, stage);
        assert.match(jobs.stacks!.steps.map((s) => s.run ?? "").join("\n"), /stacks\.sh dev\)/, "the dev stage's stacks are listed (the lab's dev is never among them: scripts/ci/stacks.sh)");
    });

    it("name only environments, secrets and variables that docs/gitops.md lists in its GitHub settings", () => {
        const section = settingsSection();
        const named = new Set<string>();
        for (const name of NAMES) {
            const t = text(name);
            for (const m of t.matchAll(/\b(secrets|vars)\.([A-Z0-9_]+)/g)) if (m[2] !== "GITHUB_TOKEN") named.add(m[2]!);
            for (const job of Object.values(workflow(name).jobs)) {
                if (job.environment === undefined) continue;
                for (const env of ["dev", "staging", "prod"]) named.add(job.environment.replace("${{ matrix.env }}", env));
            }
        }
        for (const must of ["SEQUENCER_BLS_KEY", "NODEFLEET_TOOLCHAIN", "prod", "staging-preview"]) assert.ok(named.has(must), `${must} was read from the workflows`);
        for (const n of named) assert.ok(section.includes(`\`${n}\``), `docs/gitops.md's GitHub settings do not list ${n}`);
    });

    it("install the provider plugins each stack's hosts need: aws for AWS hosts, hcloud for Hetzner, none for existing servers", () => {
        const providers = (stack: string) => spawnSync("node", ["scripts/lib/fleet-field.mjs", stack, "providers"], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
        assert.equal(providers("staging"), "aws");
        assert.equal(providers("prod"), "hcloud");
        assert.equal(providers("dev"), "");
    });
});
