// The GitOps pieces that run without a cloud: the example stacks pass nodefleet's config checks,
// actionlint (built from the Go module proxy) accepts the workflows and rejects a broken one, and
// the promotion script changes exactly the promoted values of the target stack file.
import { after, before, beforeEach, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { parse } from "yaml";
import { parseFleet } from "../../components/config/fleet";
import { FleetConfigError } from "../../components/config/errors";
import { SECRETS, secretSource } from "../support/fixtures";
import { ROOT } from "../support/cli";

const run = (cmd: string, args: string[], cwd = ROOT) => {
    const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 600_000 });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
};

/** The keys the pipeline sets from the CI secret store (.github/workflows), here test values. */
const CI_SECRETS = { ...SECRETS, sequencerBlsKey: SECRETS.blsKey! };

/** Every file a comment of `text` names by a path in this repository's layout, for the existence check. */
function citedFiles(text: string): string[] {
    const comments = text.split("\n").map((l) => /(?:^|\s)#(.*)$/.exec(l)?.[1] ?? "").join("\n");
    return [...comments.matchAll(/(?<![\w/.-])((?:scripts|docs|components|lab|policy|test|templates|hostfiles|\.github)\/[A-Za-z0-9_./-]*[A-Za-z0-9_-])/g)].map((m) => m[1]!);
}

describe("example stacks", () => {
    for (const stack of ["staging", "prod"]) {
        it(`Pulumi.${stack}.yaml passes the config checks (keys from the CI secret store, here test values), sets storage boot nodes, runs the Aztec version the lab proves, fetches from a mirror of its own`, () => {
            const text = fs.readFileSync(path.join(ROOT, `Pulumi.${stack}.yaml`), "utf8");
            const config = parse(text).config;
            assert.ok(!JSON.stringify(config).includes("secure:"), "no secret in the repository");
            const fleet = parseFleet(config["nodefleet:fleet"], secretSource(CI_SECRETS));
            assert.deepEqual(fleet.spec.hosts[`${stack === "prod" ? "prd" : "stg"}-val-1`].kind, "existing");
            assert.equal(fleet.spec.hardwareCheck, "enforce");
            assert.deepEqual(fleet.warnings, [], "every existing host pins its key");
            const storage = fleet.spec.nodes.find((n) => n.role === "storage");
            assert.ok(storage?.role === "storage" && storage.storage.networkBootNodes.length > 0, "a new storage node starts with peers");
            const sequencer = fleet.spec.nodes.find((n) => n.role === "sequencer");
            assert.ok(sequencer?.role === "sequencer" && sequencer.sequencer.version === "4.1.2", "the Aztec dialect the lab runs");
            assert.equal(sequencer.sequencer.runtime, "release");
            // No lab address anywhere in an example: its releases come from its own mirror.
            assert.doesNotMatch(text, /10\.0\.2\.|10\.77\.0\.|127\.0\.0\.1|localhost/);
            for (const r of Object.values(fleet.spec.releases)) assert.ok(r.file !== undefined && r.url === undefined && r.version !== undefined, JSON.stringify(r));
            // Without the keys the pipeline sets, the stack stops, naming what is missing.
            assert.throws(() => parseFleet(config["nodefleet:fleet"], secretSource({})), (e: unknown) => e instanceof FleetConfigError && /validatorKeySecret/.test(String(e)));
        });

        it(`Pulumi.${stack}.yaml cites only files this repository holds, and names only the CI secrets the workflows pass`, () => {
            const text = fs.readFileSync(path.join(ROOT, `Pulumi.${stack}.yaml`), "utf8");
            const cited = citedFiles(text);
            assert.ok(cited.length >= 3, `cited: ${cited.join(", ")}`);
            for (const f of cited) assert.ok(fs.existsSync(path.join(ROOT, f)), `${stack}: a comment cites ${f}, which does not exist`);
            const workflow = fs.readFileSync(path.join(ROOT, ".github/workflows/deploy.yml"), "utf8");
            const names = [...text.matchAll(/\b(\w+)Secret: (\w+)/g)].map((m) => m[2]!);
            for (const n of new Set(names)) assert.match(workflow, new RegExp(`NODEFLEET_SECRET_${n}:`), `the deploy workflow sets ${n}`);
        });
    }

    it("the cited-file check finds a missing file (it can fail)", () => {
        assert.deepEqual(citedFiles("a: b # made by scripts/ci-secrets.sh and scripts/promote.ts\nc: d"), ["scripts/ci-secrets.sh", "scripts/promote.ts"]);
        assert.equal(fs.existsSync(path.join(ROOT, "scripts/ci-secrets.sh")), false);
    });
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
    it("an environment's stack and its shards, each a job of the matrix, never the lab's dev; a bad environment name refused", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-stacks-"));
        try {
            fs.mkdirSync(path.join(dir, "scripts/ci"), { recursive: true });
            for (const f of ["scripts/ci/stacks.sh", "scripts/lib/fail.sh"]) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
            for (const s of ["dev", "dev-team", "staging", "prod-eu", "prod-us", "production"]) fs.writeFileSync(path.join(dir, `Pulumi.${s}.yaml`), "config: {}\n");
            const stacks = (...envs: string[]) => run("bash", ["scripts/ci/stacks.sh", ...envs], dir);
            assert.deepEqual(JSON.parse(stacks("dev").output), [{ stack: "dev-team", env: "dev" }], "the lab's dev stack is never the pipeline's; a team's dev stack is");
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
    const edit = (stack: string, f: (y: string) => string) => {
        const file = path.join(dir, `Pulumi.${stack}.yaml`);
        const was = fs.readFileSync(file, "utf8");
        const now = f(was);
        assert.notEqual(now, was, `the edit of ${stack} changes it`);
        fs.writeFileSync(file, now);
    };
    const SUM = "c0ffee".padEnd(64, "0");
    const AZTEC_SUM = "a4".repeat(32);
    let pristine: Record<string, string>;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-promote-"));
        for (const f of ["Pulumi.dev.yaml", "Pulumi.staging.yaml", "Pulumi.prod.yaml", "scripts/promote.mjs", "scripts/lib/addresses.mjs"]) fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true });
        fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
        const sums = path.join(dir, ".state/artifacts/current/SHA256SUMS");
        fs.mkdirSync(path.dirname(sums), { recursive: true });
        fs.writeFileSync(sums, `${SUM}  zgs_node-v1.1.0.tar.gz\n${"6".repeat(64)}  aristotle-v1.0.6.tar.gz\n${AZTEC_SUM}  aztec-v4.1.2.tar.gz\n`);
        pristine = files();
    });
    beforeEach(() => {
        for (const [f, text] of Object.entries(pristine)) fs.writeFileSync(path.join(dir, f), text);
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("carries a release's name, version and digest from dev into staging's own mirror: no address of the lab's, one line changed, comments kept", () => {
        const r = promote("dev", "staging", "zgs", "aztec");
        assert.equal(r.status, 0, r.output);
        const now = files();
        assert.equal(now["Pulumi.dev.yaml"], pristine["Pulumi.dev.yaml"]);
        assert.equal(now["Pulumi.prod.yaml"], pristine["Pulumi.prod.yaml"]);
        const was = pristine["Pulumi.staging.yaml"]!.split("\n"), is = now["Pulumi.staging.yaml"]!.split("\n");
        assert.equal(is.length, was.length);
        assert.deepEqual(is.map((l, i) => [was[i], l]).filter(([a, b]) => a !== b).map(([, b]) => b!.trim()), [
            `sha256: ${AZTEC_SUM}  # PLACEHOLDER`,
            `sha256: ${SUM}  # PLACEHOLDER`,
        ]);
        assert.doesNotMatch(now["Pulumi.staging.yaml"]!, /10\.0\.2\.2|8700/);
        const staging = parse(now["Pulumi.staging.yaml"]!).config["nodefleet:fleet"];
        assert.deepEqual(staging.releases.zgs, { file: "zgs_node-v1.1.0.tar.gz", version: "v1.1.0", sha256: SUM });
        assert.equal(staging.releaseMirror, "https://releases.example.org/nodefleet/");
        // A second run changes nothing; the sequencer version is the same end to end (4.1.2).
        const again = promote("dev", "staging", "zgs", "aztec", "--sequencer-version");
        assert.equal(again.status, 0, again.output);
        assert.match(again.output, /nothing to change/);
        // staging -> prod: the same three values, prod's mirror its own.
        const on = promote("staging", "prod", "zgs", "aztec", "--sequencer-version");
        assert.equal(on.status, 0, on.output);
        assert.deepEqual(parse(files()["Pulumi.prod.yaml"]!).config["nodefleet:fleet"].releases.zgs, { file: "zgs_node-v1.1.0.tar.gz", version: "v1.1.0", sha256: SUM });
    });

    it("writes a new version and file name into a stack that has none yet", () => {
        edit("dev", (y) => y.replace("zgs_node-v1.1.0.tar.gz\n        sha256File", "zgs_node-v1.2.0.tar.gz\n        sha256File").replace("        version: v1.1.0\n", "        version: v1.2.0\n"));
        fs.appendFileSync(path.join(dir, ".state/artifacts/current/SHA256SUMS"), `${"12".repeat(32)}  zgs_node-v1.2.0.tar.gz\n`);
        edit("staging", (y) => y.replace("        version: v1.1.0\n", ""));
        const r = promote("dev", "staging", "zgs");
        assert.equal(r.status, 0, r.output);
        assert.match(r.output, /releases\.zgs\.file: zgs_node-v1\.1\.0\.tar\.gz -> zgs_node-v1\.2\.0\.tar\.gz/);
        assert.match(r.output, /releases\.zgs\.version: \(none\) -> v1\.2\.0/);
        assert.deepEqual(parse(files()["Pulumi.staging.yaml"]!).config["nodefleet:fleet"].releases.zgs, { file: "zgs_node-v1.2.0.tar.gz", sha256: "12".repeat(32), version: "v1.2.0" });
    });

    it("refuses, naming the value and writing nothing, an address the target's hosts cannot reach: the lab's, loopback in any spelling, link-local, a private range the target does not allow", () => {
        const cases: [string, RegExp][] = [
            ["http://10.0.2.2:8700/", /releaseMirror: "http:\/\/10\.0\.2\.2:8700\/" is in the lab's networks/],
            ["http://10.77.0.9/", /is in the lab's networks/],
            ["http://127.0.0.1:8700/", /is a loopback address/],
            ["http://2130706433/", /releaseMirror: "http:\/\/2130706433\/" is a loopback address/],
            ["http://0x7f.0.0.1/", /is a loopback address/],
            ["http://[::1]/", /is a loopback address \(::1\)/],
            ["http://[::ffff:127.0.0.1]/", /is a loopback address/],
            ["http://localhost/", /is the host itself \(localhost\)/],
            ["http://169.254.169.254/", /is a link-local address/],
            ["http://[fe80::1]/", /is a link-local address/],
            ["http://192.168.7.1/mirror/", /is a private address \(192\.168\.0\.0\/16\) outside the target's privateMirrorCidrs/],
            ["http://[fd12::1]/", /is a private address \(fc00::\/7\)/],
            ["http://0.0.0.0/", /'this network'/],
        ];
        for (const [base, why] of cases) {
            edit("staging", (y) => y.replace("releaseMirror: https://releases.example.org/nodefleet/", `releaseMirror: ${JSON.stringify(base)}`));
            const before = files();
            const r = promote("dev", "staging", "zgs");
            assert.notEqual(r.status, 0, base);
            assert.match(r.output, /promote: staging: /, base);
            assert.match(r.output, why, `${base}: ${r.output}`);
            assert.deepEqual(files(), before, `${base}: nothing written`);
            fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), pristine["Pulumi.staging.yaml"]!);
        }
        // A target release given by URL keeps its own location; the lab's address is refused there too.
        edit("staging", (y) => y.replace("        file: zgs_node-v1.1.0.tar.gz\n", "        url: http://10.0.2.2:8700/zgs_node-v1.0.0.tar.gz\n"));
        const byUrl = promote("dev", "staging", "zgs");
        assert.notEqual(byUrl.status, 0);
        assert.match(byUrl.output, /staging: releases\.zgs\.url: "http:\/\/10\.0\.2\.2:8700\/zgs_node-v1\.1\.0\.tar\.gz" is in the lab's networks/);
    });

    it("a private mirror the target allows (privateMirrorCidrs), and a target URL of its own, take the release", () => {
        edit("staging", (y) => y.replace("releaseMirror: https://releases.example.org/nodefleet/", "releaseMirror: http://192.168.7.1/mirror/\n    privateMirrorCidrs: [192.168.0.0/16]"));
        const r = promote("dev", "staging", "zgs");
        assert.equal(r.status, 0, r.output);
        fs.writeFileSync(path.join(dir, "Pulumi.staging.yaml"), pristine["Pulumi.staging.yaml"]!);
        edit("staging", (y) => y.replace("        file: zgs_node-v1.1.0.tar.gz\n", "        url: https://dl.example.org/zgs/old/zgs_node-v1.0.0.tar.gz\n"));
        const u = promote("dev", "staging", "zgs");
        assert.equal(u.status, 0, u.output);
        assert.equal(parse(files()["Pulumi.staging.yaml"]!).config["nodefleet:fleet"].releases.zgs.url, "https://dl.example.org/zgs/old/zgs_node-v1.1.0.tar.gz");
    });

    it("never carries a simulator out of dev, nor into a stack that marks one", () => {
        const before = files();
        const r = promote("dev", "staging", "0g-chain");
        assert.notEqual(r.status, 0);
        assert.match(r.output, /dev: releases\.0g-chain carries a simulator \(simulator: true\): it never leaves the lab's dev stack/);
        // Every release by default: the simulator stops the whole promotion.
        assert.notEqual(promote("dev", "staging").status, 0);
        assert.deepEqual(files(), before);
    });

    it("refuses hostile values, naming them: a file name that is not one, a version that is not one, a digest that is not one", () => {
        const cases: [(y: string) => string, RegExp][] = [
            [(y) => y.replace("http://10.0.2.2:8700/zgs_node-v1.1.0.tar.gz", "http://10.0.2.2:8700/zgs%0Aruncmd.tar.gz"), /the archive's file name "zgs\\nruncmd\.tar\.gz" is not a file name/],
            [(y) => y.replace("http://10.0.2.2:8700/zgs_node-v1.1.0.tar.gz", "http://10.0.2.2:8700/zgs.zip"), /the archive's file name "zgs\.zip" is not a file name ending in \.tar\.gz/],
            [(y) => y.replace("        version: v1.1.0\n", '        version: "1.1 # x: y"\n'), /releases\.zgs\.version: "1\.1 # x: y" is not a version/],
            [(y) => y.replace("        version: v1.1.0\n", "        version: [1, 2]\n"), /releases\.zgs\.version: .* is not a version/],
        ];
        for (const [f, why] of cases) {
            edit("dev", f);
            const before = files();
            const r = promote("dev", "staging", "zgs");
            assert.notEqual(r.status, 0);
            assert.match(r.output, why, r.output);
            assert.deepEqual(files(), before);
            fs.writeFileSync(path.join(dir, "Pulumi.dev.yaml"), pristine["Pulumi.dev.yaml"]!);
        }
        edit("staging", (y) => y.replace(/(zgs:\n {8}file: \S+\n {8}version: \S+\n {8}sha256: )"0{64}"/, '$1"0x12"'));
        const sha = promote("staging", "prod", "zgs");
        assert.notEqual(sha.status, 0);
        assert.match(sha.output, /staging: releases\.zgs: "0x12" is not a sha256/);
    });

    it("refuses, changing nothing: an unknown release, a digest its SHA256SUMS lacks, an unpinned or another major sequencer version", () => {
        const before = files();
        assert.match(promote("dev", "staging", "nope").output, /dev: defines no release nope/);
        fs.writeFileSync(path.join(dir, ".state/artifacts/current/SHA256SUMS"), `${SUM}  zgs_node-v1.1.0.tar.gz\n`);
        assert.match(promote("dev", "staging", "aztec").output, /dev: releases\.aztec\.sha256File: \.state\/artifacts\/current\/SHA256SUMS lists no aztec-v4\.1\.2\.tar\.gz/);
        fs.writeFileSync(path.join(dir, ".state/artifacts/current/SHA256SUMS"), `${SUM}  zgs_node-v1.1.0.tar.gz\n${"6".repeat(64)}  aristotle-v1.0.6.tar.gz\n${AZTEC_SUM}  aztec-v4.1.2.tar.gz\n`);
        edit("dev", (y) => y.replace('version: "4.1.2"', "version: latest"));
        const v = promote("dev", "staging", "--sequencer-version");
        assert.notEqual(v.status, 0);
        assert.match(v.output, /sequencer-1: sequencer.version is 'latest', not a version: pin it before promoting/);
        fs.writeFileSync(path.join(dir, "Pulumi.dev.yaml"), pristine["Pulumi.dev.yaml"]!);
        // Another major version has other settings: promotion refuses rather than write a config `up` rejects.
        edit("prod", (y) => y.replace('version: "4.1.2"', 'version: "2.0.2"'));
        const major = promote("staging", "prod", "--sequencer-version");
        assert.notEqual(major.status, 0);
        assert.match(major.output, /prod: sequencer-1: sequencer.version 2.0.2 -> 4.1.2 changes the sequencer's settings/);
        fs.writeFileSync(path.join(dir, "Pulumi.prod.yaml"), pristine["Pulumi.prod.yaml"]!);
        assert.deepEqual(files(), before);
    });

    it("moves the sequencer version from staging to prod", () => {
        edit("staging", (y) => y.replace('version: "4.1.2"', 'version: "4.1.3"'));
        const r = promote("staging", "prod", "--sequencer-version", "zgs");
        assert.equal(r.status, 0, r.output);
        assert.match(r.output, /sequencer-1: sequencer.version 4.1.2 -> 4.1.3/);
        const prod = parse(files()["Pulumi.prod.yaml"]!).config["nodefleet:fleet"];
        assert.equal(prod.nodes.find((n: { name: string }) => n.name === "sequencer-1").sequencer.version, "4.1.3");
    });

    it("a release URL held in a secret: only the digest and version move, both stacks must name their secret alike, and the source gives its sha256 inline", () => {
        const toSecret = (y: string) => y.replace("        file: zgs_node-v1.1.0.tar.gz\n", "        url: {secret: zgsUrl}\n");
        edit("staging", (y) => toSecret(y).replace(/(zgs:\n {8}url: \{secret: zgsUrl\}\n {8}version: v1\.1\.0\n {8}sha256: )"0{64}"/, `$1"${"5".repeat(64)}"`));
        const before = files();
        const unlike = promote("staging", "prod", "zgs");
        assert.notEqual(unlike.status, 0);
        assert.match(unlike.output, /releases\.zgs: staging holds its URL in a secret, so its file name is unknown here/);
        assert.deepEqual(files(), before, "nothing changed");
        edit("prod", toSecret);
        const r = promote("staging", "prod", "zgs");
        assert.equal(r.status, 0, r.output);
        const prod = parse(files()["Pulumi.prod.yaml"]!).config["nodefleet:fleet"];
        assert.deepEqual(prod.releases.zgs, { url: { secret: "zgsUrl" }, version: "v1.1.0", sha256: "5".repeat(64) });
        // A sha256File needs the URL's file name, which is in the secret.
        edit("dev", (y) => y.replace("url: http://10.0.2.2:8700/zgs_node-v1.1.0.tar.gz", "url: {secret: zgsUrl}"));
        const sums = promote("dev", "staging", "zgs");
        assert.notEqual(sums.status, 0);
        assert.match(sums.output, /dev: releases\.zgs: its URL is held in a secret, so its line in sha256File cannot be looked up here: give its sha256 inline/);
    });
});
