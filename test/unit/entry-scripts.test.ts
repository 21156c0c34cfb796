// The project's entry scripts as a user starts them: the test command (scripts/test.sh --list, which
// runs the same prologue as a whole run and stops before installing anything) and scripts/dev.sh's
// argument handling, in a clean environment without CI's variables. A whole run of every tier is
// what CI proves; these prove that the entry cannot again exit without a word, inside or outside CI.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");
const TEST_SH = path.join(ROOT, "scripts/test.sh");
const DEV_SH = path.join(ROOT, "scripts/dev.sh");

/** A user's environment: PATH and HOME, nothing of CI's or of this test run's. */
function clean(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", ...extra };
}
function run(script: string, args: string[], env: NodeJS.ProcessEnv) {
    const r = spawnSync("bash", [script, ...args], { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
/** The tiers and suites `--list` printed: "tier NAME" lines, each followed by its suites. */
function listed(stdout: string): Map<string, string[]> {
    const tiers = new Map<string, string[]>();
    let current: string[] | undefined;
    for (const line of stdout.split("\n")) {
        const tier = /^tier (\S+)$/.exec(line);
        if (tier) tiers.set(tier[1]!, (current = []));
        else if (line.startsWith("  ") && current) current.push(line.trim());
    }
    return tiers;
}

describe("the test command's entry (scripts/test.sh --list)", () => {
    for (const [name, env] of [
        ["outside CI", clean()],
        ["under CI=true", clean({ CI: "true" })],
        ["with the old budget variable set (there is no budget: it is ignored)", clean({ NODEFLEET_TEST_BUDGET: "3600" })],
    ] as const) {
        it(`lists every tier and its suites ${name}`, () => {
            const r = run(TEST_SH, ["--list"], env);
            assert.equal(r.status, 0, `exit ${r.status}; stderr:\n${r.stderr}`);
            const tiers = listed(r.stdout);
            assert.deepEqual([...tiers.keys()], ["unit", "cli", "e2e"]);
            assert.ok(tiers.get("unit")!.includes("test/unit/entry-scripts.test.ts"), r.stdout);
            assert.ok(tiers.get("cli")!.length > 0 && tiers.get("e2e")!.length > 0, r.stdout);
            for (const suites of tiers.values()) for (const s of suites) assert.ok(fs.existsSync(path.join(ROOT, s)), `listed ${s}, which does not exist`);
        });
    }

    it("lists only the tiers NODEFLEET_TIERS names, and refuses an unknown one naming it", () => {
        const r = run(TEST_SH, ["--list"], clean({ NODEFLEET_TIERS: "unit cli" }));
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual([...listed(r.stdout).keys()], ["unit", "cli"]);
        const bad = run(TEST_SH, ["--list"], clean({ NODEFLEET_TIERS: "unit e3e" }));
        assert.equal(bad.status, 2);
        assert.match(bad.stderr, /NODEFLEET_TIERS: unknown tier 'e3e'/);
    });

    it("refuses an unknown argument with its usage", () => {
        const r = run(TEST_SH, ["--lsit"], clean());
        assert.equal(r.status, 2);
        assert.match(r.stderr, /usage: scripts\/test\.sh \[--list\]/);
    });

    it("the budget line it had until 2026-11-29 stops it outside CI, and the script now says where", () => {
        // That line's command substitution ends with a failing `[ … ]` outside CI: under set -e the
        // assignment ended the script with status 1 and no output. Put back into a copy of today's
        // script, it must still fail (this test would otherwise prove nothing), and say so.
        const old = 'budget="${NODEFLEET_TEST_BUDGET:-$([ "${CI:-}" = true ] && echo 5400)}"';
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-entry-"));
        try {
            fs.mkdirSync(path.join(dir, "scripts/lib"), { recursive: true });
            fs.copyFileSync(path.join(ROOT, "scripts/lib/fail.sh"), path.join(dir, "scripts/lib/fail.sh"));
            const text = fs.readFileSync(TEST_SH, "utf8");
            const anchor = 'cd "$ROOT"\n';
            assert.ok(text.includes(anchor), "the test command changes to the checkout first");
            fs.writeFileSync(path.join(dir, "scripts/test.sh"), text.replace(anchor, `${anchor}${old}\n`));
            const r = run(path.join(dir, "scripts/test.sh"), ["--list"], clean());
            assert.equal(r.status, 1, `the old line must fail outside CI; stdout:\n${r.stdout}`);
            assert.equal(r.stdout, "", "it stopped before listing anything");
            assert.match(r.stderr, /test\.sh: stopped \(exit status 1\) by a failing command at scripts\/test\.sh:\d+: budget=/);
            const underCi = run(path.join(dir, "scripts/test.sh"), ["--list"], clean({ CI: "true" }));
            assert.equal(underCi.status, 0, "under CI=true it passed: why CI never saw it");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe("scripts/dev.sh's arguments", () => {
    it("with no argument prints its usage and exits 2", () => {
        const r = run(DEV_SH, [], clean());
        assert.equal(r.status, 2);
        assert.match(r.stdout + r.stderr, /scripts\/dev\.sh up\s/);
        assert.match(r.stdout + r.stderr, /scripts\/dev\.sh status/);
    });

    it("status on a stack that was never brought up says so and exits 1", () => {
        const state = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-devstate-"));
        try {
            const r = run(DEV_SH, ["status"], clean({ NODEFLEET_STATE: state }));
            assert.equal(r.status, 1, r.stderr);
            assert.match(r.stderr, /the dev stack is not up .*run scripts\/dev\.sh up first/);
        } finally {
            fs.rmSync(state, { recursive: true, force: true });
        }
    });
});

describe("scripts/lib/fail.sh", () => {
    it("names the command and line that stopped a script under set -e, and stays quiet on success or a script's own exit", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-fail-"));
        try {
            const script = path.join(dir, "s.sh");
            fs.writeFileSync(script, [
                "set -euo pipefail",
                `source ${JSON.stringify(path.join(ROOT, "scripts/lib/fail.sh"))}`,
                "f() { grep -q needle /dev/null; }",
                'if ! grep -q x /dev/null; then echo tolerated; fi',
                'case "${1:-}" in fn) f ;; own) echo "said why" >&2; exit 3 ;; esac',
                "echo done",
                "",
            ].join("\n"));
            const ok = run(script, [], clean());
            assert.equal(ok.status, 0);
            assert.equal(ok.stderr, "");
            const fn = run(script, ["fn"], clean());
            assert.equal(fn.status, 1);
            assert.match(fn.stderr, /s\.sh: stopped \(exit status 1\) by a failing command at .*s\.sh:3: grep -q needle \/dev\/null/);
            const own = run(script, ["own"], clean());
            assert.equal(own.status, 3);
            assert.equal(own.stderr, "said why\n");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe("every shell script of the project passes shellcheck", () => {
    it("scripts/, lab/ and .ci/run, by the files git tracks (rendered host scripts: their own golden tests)", () => {
        const tracked = spawnSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" });
        assert.equal(tracked.status, 0, "git ls-files");
        const files = tracked.stdout.split("\0").filter((f) => f && /^(scripts|lab|\.ci)\//.test(f) && !f.startsWith("lab/sim/")).filter((f) => {
            if (f.endsWith(".sh")) return true;
            const head = fs.readFileSync(path.join(ROOT, f), "utf8").slice(0, 40);
            return /^#!\/(usr\/bin\/env (ba)?sh|bin\/(ba)?sh)\b/.test(head);
        });
        assert.ok(files.includes("scripts/test.sh") && files.includes(".ci/run") && files.includes("lab/vm.sh"), files.join(" "));
        const r = spawnSync("shellcheck", ["-x", ...files], { cwd: ROOT, encoding: "utf8" });
        assert.equal(r.status, 0, r.stdout + r.stderr);
    });
});
