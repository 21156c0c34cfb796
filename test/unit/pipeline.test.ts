// The GitOps pieces that run without a cloud: the example stacks pass nodefleet's config checks,
// actionlint (built from the Go module proxy) accepts the workflows and rejects a broken one, and
// the promotion script changes exactly the promoted values of the target stack file.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { parse } from "yaml";
import { parseFleet, FleetConfigError } from "../../components/config/fleet";
import { secretSource } from "../support/fixtures";
import { ROOT } from "../support/cli";

const run = (cmd: string, args: string[], cwd = ROOT) => {
    const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 600_000 });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
};

describe("example stacks", () => {
    for (const stack of ["staging", "prod"]) {
        it(`Pulumi.${stack}.yaml passes the config checks (keys from the CI secret store, here test values)`, () => {
            const config = parse(fs.readFileSync(path.join(ROOT, `Pulumi.${stack}.yaml`), "utf8")).config;
            assert.ok(!JSON.stringify(config).includes("secure:"), "no secret in the repository");
            const fleet = parseFleet(config["nodefleet:fleet"], secretSource());
            assert.deepEqual(fleet.spec.hosts[`${stack === "prod" ? "prd" : "stg"}-val-1`].kind, "existing");
            assert.equal(fleet.spec.hardwareCheck, "enforce");
            assert.deepEqual(fleet.warnings, [], "every existing host pins its key");
            // Without the keys the pipeline sets, the stack stops, naming what is missing.
            assert.throws(() => parseFleet(config["nodefleet:fleet"], secretSource({})), (e: unknown) => e instanceof FleetConfigError && /validatorKeySecret/.test(String(e)));
        });
    }
});

describe("workflows", () => {
    it("actionlint accepts .github/workflows", () => {
        const r = run("bash", ["lab/actionlint.sh"]);
        assert.equal(r.status, 0, r.output);
    });

    it("actionlint rejects a workflow whose job needs a job that does not exist", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-actionlint-"));
        const broken = fs.readFileSync(path.join(ROOT, ".github/workflows/deploy.yml"), "utf8").replace("needs: [stacks, staging]", "needs: [stacks, stagin]");
        fs.writeFileSync(path.join(dir, "deploy.yml"), broken);
        const r = run("bash", ["lab/actionlint.sh", path.join(dir, "deploy.yml")]);
        fs.rmSync(dir, { recursive: true });
        assert.notEqual(r.status, 0);
        assert.match(r.output, /job "prod" needs job "stagin" which does not exist/);
    });
});

describe("the stacks a change touches (scripts/ci/changed-stacks.sh)", () => {
    it("lists a stack whose file or fleet file changed, every stack but dev when the program changed, none otherwise", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-changed-"));
        const git = (...a: string[]) => {
            const r = run("git", ["-c", "user.email=t@example.invalid", "-c", "user.name=t", ...a], dir);
            assert.equal(r.status, 0, r.output);
            return r.output.trim();
        };
        for (const f of ["Pulumi.dev.yaml", "Pulumi.staging.yaml", "Pulumi.prod.yaml", "scripts/ci/changed-stacks.sh", "scripts/lib/fail.sh", "scripts/lib/fleet-field.mjs", "README.md"]) fs.cpSync(path.join(ROOT, f), path.join(dir, f));
        fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
        fs.writeFileSync(path.join(dir, ".gitignore"), "node_modules\n");
        // A stack whose fleet is in a file of the project (nodefleet:fleetFile).
        fs.mkdirSync(path.join(dir, "fleets"));
        fs.writeFileSync(path.join(dir, "fleets/big.yaml"), "nodes: []\n");
        fs.writeFileSync(path.join(dir, "Pulumi.big.yaml"), "config:\n  nodefleet:fleetFile: fleets/big.yaml\n");
        fs.mkdirSync(path.join(dir, "components"));
        fs.writeFileSync(path.join(dir, "components/x.ts"), "// x\n");
        git("init", "-q", "-b", "main");
        git("add", ".");
        git("commit", "-qm", "base");
        const changed = (edit: () => void) => {
            git("checkout", "-q", "-B", `change-${Math.random().toString(36).slice(2)}`, "main");
            edit();
            git("commit", "-qam", "change");
            return JSON.parse(run("bash", ["scripts/ci/changed-stacks.sh", "main"], dir).output);
        };
        try {
            assert.deepEqual(changed(() => fs.appendFileSync(path.join(dir, "Pulumi.staging.yaml"), "# a change\n")), [{ stack: "staging", env: "staging" }]);
            assert.deepEqual(changed(() => fs.appendFileSync(path.join(dir, "Pulumi.dev.yaml"), "# a change\n")), []);
            assert.deepEqual(changed(() => fs.appendFileSync(path.join(dir, "components/x.ts"), "// y\n")), [{ stack: "big", env: "big" }, { stack: "prod", env: "prod" }, { stack: "staging", env: "staging" }]);
            assert.deepEqual(changed(() => fs.appendFileSync(path.join(dir, "fleets/big.yaml"), "# a change\n")), [{ stack: "big", env: "big" }]);
            assert.deepEqual(changed(() => fs.appendFileSync(path.join(dir, "README.md"), "more\n")), []);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe("the stacks of an environment (scripts/ci/stacks.sh)", () => {
    it("an environment's stack and its shards, each a job of the matrix; a bad environment name refused", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-stacks-"));
        try {
            fs.mkdirSync(path.join(dir, "scripts/ci"), { recursive: true });
            for (const f of ["scripts/ci/stacks.sh", "scripts/lib/fail.sh"]) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
            for (const s of ["dev", "staging", "prod-eu", "prod-us", "production"]) fs.writeFileSync(path.join(dir, `Pulumi.${s}.yaml`), "config: {}\n");
            const stacks = (...envs: string[]) => run("bash", ["scripts/ci/stacks.sh", ...envs], dir);
            assert.deepEqual(JSON.parse(stacks("prod").output), [{ stack: "prod-eu", env: "prod" }, { stack: "prod-us", env: "prod" }], "production is not a shard of prod");
            assert.deepEqual(JSON.parse(stacks("staging", "prod").output).map((x: { stack: string }) => x.stack), ["prod-eu", "prod-us", "staging"]);
            assert.deepEqual(JSON.parse(stacks("qa").output), []);
            const bad = stacks("prod-eu");
            assert.equal(bad.status, 2);
            assert.match(bad.output, /stacks\.sh: prod-eu: an environment is lowercase letters and digits/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe("promotion (scripts/promote.mjs)", () => {
    let dir: string;
    const files = () => Object.fromEntries(["Pulumi.dev.yaml", "Pulumi.staging.yaml", "Pulumi.prod.yaml"].map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")]));
    const promote = (...args: string[]) => run("node", [path.join(dir, "scripts/promote.mjs"), ...args], dir);
    const SUM = "c0ffee".padEnd(64, "0");

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-promote-"));
        for (const f of ["Pulumi.dev.yaml", "Pulumi.staging.yaml", "Pulumi.prod.yaml", "scripts/promote.mjs"]) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
        fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
        const sums = path.join(dir, ".state/artifacts/current/SHA256SUMS");
        fs.mkdirSync(path.dirname(sums), { recursive: true });
        fs.writeFileSync(sums, `${"1".repeat(64)}  zgs_node-v1.1.0.tar.gz\n${SUM}  aristotle-v1.0.6.tar.gz\n`);
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("moves a release from dev to staging as a diff of Pulumi.staging.yaml only: two lines, comments kept", () => {
        const before = files();
        const r = promote("dev", "staging", "0g-chain");
        assert.equal(r.status, 0, r.output);
        const afterFiles = files();
        assert.equal(afterFiles["Pulumi.dev.yaml"], before["Pulumi.dev.yaml"]);
        assert.equal(afterFiles["Pulumi.prod.yaml"], before["Pulumi.prod.yaml"]);
        const was = before["Pulumi.staging.yaml"].split("\n"), now = afterFiles["Pulumi.staging.yaml"].split("\n");
        assert.equal(now.length, was.length);
        const changed = now.map((l, i) => [was[i], l]).filter(([a, b]) => a !== b);
        assert.deepEqual(changed.map(([, b]) => b.trim()), [
            "url: http://10.0.2.2:8700/aristotle-v1.0.6.tar.gz  # PLACEHOLDER",
            `sha256: ${SUM}                               # PLACEHOLDER`,
        ]);
        // The digest came from dev's SHA256SUMS file and is now inline; a second run changes nothing.
        assert.equal(parse(afterFiles["Pulumi.staging.yaml"]).config["nodefleet:fleet"].releases["0g-chain"].sha256, SUM);
        const again = promote("dev", "staging", "0g-chain");
        assert.equal(again.status, 0, again.output);
        assert.match(again.output, /nothing to change/);
        assert.deepEqual(files(), afterFiles);
    });

    it("refuses, changing nothing: an unknown release, a digest its SHA256SUMS lacks, an unpinned sequencer version", () => {
        const before = files();
        assert.match(promote("dev", "staging", "nope").output, /dev: defines no release nope/);
        assert.match(promote("dev", "staging", "aztec").output, /dev: releases\.aztec\.sha256File: \.state\/artifacts\/current\/SHA256SUMS lists no aztec-v4\.1\.2\.tar\.gz/);
        const devFile = path.join(dir, "Pulumi.dev.yaml");
        const dev = fs.readFileSync(devFile, "utf8");
        fs.writeFileSync(devFile, dev.replace('version: "4.1.2"', "version: latest"));
        const v = promote("dev", "staging", "--sequencer-version");
        assert.notEqual(v.status, 0);
        assert.match(v.output, /sequencer-1: sequencer.version is 'latest', not a version: pin it before promoting/);
        // Another major version has other settings (dev runs 4.1.2, staging 2.0.2): promotion refuses
        // rather than write a config `up` rejects.
        fs.writeFileSync(devFile, dev);
        const major = promote("dev", "staging", "--sequencer-version");
        assert.notEqual(major.status, 0);
        assert.match(major.output, /staging: sequencer-1: sequencer.version 2.0.2 -> 4.1.2 changes the sequencer's settings/);
        fs.writeFileSync(devFile, dev);
        assert.deepEqual(files(), before);
    });

    it("moves the sequencer version from staging to prod", () => {
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), fs.readFileSync(path.join(dir, "Pulumi.staging.yaml"), "utf8").replace("version: 2.0.2", "version: 2.0.3"));
        const r = promote("staging", "prod", "--sequencer-version", "zgs");
        assert.equal(r.status, 0, r.output);
        assert.match(r.output, /sequencer-1: sequencer.version 2.0.2 -> 2.0.3/);
        const prod = parse(files()["Pulumi.prod.yaml"]).config["nodefleet:fleet"];
        assert.equal(prod.nodes.find((n: { name: string }) => n.name === "sequencer-1").sequencer.version, "2.0.3");
    });

    it("a release URL held in a secret: only the digest moves, both stacks must name their secret alike, and the source gives its sha256 inline", () => {
        const PLAIN_URL = "url: https://github.com/0gfoundation/0g-storage-node/releases/download/v1.1.0/zgs_node-v1.1.0.tar.gz  # PLACEHOLDER";
        const edit = (stack: string, f: (y: string) => string) => fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), f(fs.readFileSync(path.join(dir, `Pulumi.${stack}.yaml`), "utf8")));
        edit("staging", (y) => y.replace(PLAIN_URL, "url: {secret: zgsUrl}").replace(/(zgs:\n {8}url: \{secret: zgsUrl\}\n {8}sha256: )"0{64}"/, `$1"${"5".repeat(64)}"`));
        const before = files();
        const unlike = promote("staging", "prod", "zgs");
        assert.notEqual(unlike.status, 0);
        assert.match(unlike.output, /releases\.zgs\.url: held in a secret in staging and not alike in prod: give both \{secret: <name>\}/);
        assert.deepEqual(files(), before, "nothing changed");
        edit("prod", (y) => y.replace(PLAIN_URL, "url: {secret: zgsUrl}"));
        const r = promote("staging", "prod", "zgs");
        assert.equal(r.status, 0, r.output);
        const prod = parse(files()["Pulumi.prod.yaml"]).config["nodefleet:fleet"];
        assert.deepEqual(prod.releases.zgs, { url: { secret: "zgsUrl" }, sha256: "5".repeat(64) });
        // A sha256File needs the URL's file name, which is in the secret.
        edit("dev", (y) => y.replace("url: http://10.0.2.2:8700/zgs_node-v1.1.0.tar.gz", "url: {secret: zgsUrl}"));
        const sums = promote("dev", "staging", "zgs");
        assert.notEqual(sums.status, 0);
        assert.match(sums.output, /dev: releases\.zgs: its URL is held in a secret, so its line in sha256File cannot be looked up here: give its sha256 inline/);
    });
});
