// The project's entry scripts as a user starts them: the test command (scripts/test.sh --list, which
// runs the same prologue as a whole run and stops before installing anything) and scripts/dev.sh's
// argument handling, in a clean environment without CI's variables. A whole run of every tier is
// what CI proves; these prove that the entry cannot again exit without a word, inside or outside CI.
// scripts/dev.sh up's order of steps is checked with its lab scripts replaced by recorders.
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
        else if (line.startsWith("  ") && current) current.push(line.trim().replace(/ \(again, on stock Pulumi\)$/, "")); // the suite's file
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

    it("stops before installing anything when the disk cannot hold a run, saying how much it needs and where", () => {
        // A stand-in df reports the free space; NODEFLEET_TIERS=unit keeps the lab's hosts out of it.
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-disk-"));
        try {
            const df = (freeKib: number) => {
                fs.writeFileSync(path.join(dir, "df"), `#!/bin/sh\necho "Filesystem 1024-blocks Used Available Capacity Mounted on"\necho "/dev/x 100 1 ${freeKib} 1% /"\n`, { mode: 0o755 });
            };
            const env = (tiers: string, cache: string) => clean({ PATH: `${dir}:${process.env.PATH}`, NODEFLEET_TIERS: tiers, NODEFLEET_CACHE: cache });
            const warm = path.join(dir, "cache");
            fs.mkdirSync(path.join(warm, "hosts"), { recursive: true });
            df(2 * 1048576);
            const unit = run(TEST_SH, [], env("unit", warm));
            assert.equal(unit.status, 1, unit.stderr);
            assert.match(unit.stderr, /== 2 GiB free on the disk of \S+; the tiers 'unit' need 3 GiB/);
            const cold = run(TEST_SH, [], env("unit", path.join(dir, "none")));
            assert.match(cold.stderr, /the tiers 'unit' need 8 GiB .*the build cache \S+\/none\)/);
            df(9 * 1048576);
            const e2e = run(TEST_SH, [], env("unit e2e", warm));
            assert.equal(e2e.status, 1, e2e.stderr);
            assert.match(e2e.stderr, /== 9 GiB free .*need 10 GiB/);
            assert.equal(unit.stdout + cold.stdout + e2e.stdout, "", "nothing ran");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
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

/**
 * scripts/dev.sh up in a copy of the checkout whose lab scripts, setup and `pulumi` are recorders:
 * each logs its start and end, sleeps as the plan says (in a child, as a build runs children) and
 * exits with the plan's status. What this cannot prove: that the real scripts are safe to run side by
 * side (their caches and locks); the e2e tier's main job runs the real ones, on a warm lab.
 */
function devUpWithRecorders(plan: Record<string, [seconds: number, status: number]>, stamp: { before?: string; after: string }) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-devup-"));
    for (const d of ["scripts/lib", "lab/aztec", ".tools/bin", "pids", "state/devchain"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
    for (const f of ["scripts/dev.sh", "scripts/lib/fail.sh", "scripts/pulumi-env.sh"]) fs.copyFileSync(path.join(ROOT, f), path.join(dir, f));
    if (stamp.before !== undefined) fs.writeFileSync(path.join(dir, "state/devchain/stamp"), stamp.before);
    fs.writeFileSync(path.join(dir, "plan"), Object.entries(plan).map(([what, [sec, rc]]) => `${what}|${sec}|${rc}\n`).join(""));
    const recorder = [
        "#!/usr/bin/env bash",
        "set -u",
        'what="${0#"$REC_ROOT"/}${*:+ $*}"; what="${what#.tools/bin/}"',
        'echo "start $what" >>"$REC_ROOT/log"',
        'line="$(grep -F "$what|" "$REC_ROOT/plan" | head -1)"; IFS="|" read -r _ sec rc <<<"${line:-x|0|0}"',
        '[ "$what" != "lab/devchain.sh start" ] || printf %s "$REC_STAMP" >"$NODEFLEET_STATE/devchain/stamp"',
        '[ "$what" != "pulumi config get devSequencerKey --stack dev" ] || echo 0xfeed',
        'sleep "$sec" & echo "$$ $!" >>"$REC_ROOT/pids/all"; wait $!',
        'echo "end $what" >>"$REC_ROOT/log"',
        'exit "$rc"',
        "",
    ].join("\n");
    for (const f of ["scripts/setup.sh", "lab/toolchain.sh", "lab/vm.sh", "lab/artifacts.sh", "lab/devchain.sh", "lab/aztec/dev-l1.sh", ".tools/bin/pulumi"]) {
        fs.writeFileSync(path.join(dir, f), recorder, { mode: 0o755 });
    }
    const t0 = Date.now();
    const r = run(path.join(dir, "scripts/dev.sh"), ["up"], clean({ REC_ROOT: dir, REC_STAMP: stamp.after, NODEFLEET_STATE: path.join(dir, "state") }));
    const seconds = (Date.now() - t0) / 1000;
    const lines = (f: string, sep: RegExp) => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f), "utf8").trim().split(sep).filter(Boolean) : []);
    const log = lines("log", /\n/);
    /** Recorders (and their children) still alive 2 s after dev.sh ended (a SIGTERM is not instant). */
    const pids = lines("pids/all", /\s+/).map(Number);
    const running = () => pids.filter((pid) => {
        try { process.kill(pid, 0); return true; } catch { return false; }
    });
    for (let i = 0; i < 40 && running().length > 0; i++) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    const alive = running();
    for (const pid of alive) try { process.kill(pid, "SIGKILL"); } catch { /* gone meanwhile */ }
    fs.rmSync(dir, { recursive: true, force: true });
    const at = (line: string) => {
        const i = log.indexOf(line);
        assert.ok(i >= 0, `"${line}" in the order dev.sh up ran them:\n${log.join("\n")}`);
        return i;
    };
    return { status: r.status, stderr: r.stderr, log, alive, seconds, at };
}

describe("scripts/dev.sh up's order (the lab's scripts replaced by recorders)", () => {
    it("builds the toolchain, the hosts' root and the archives beside the dev chain; boots the hosts after the root, pulumi up after the toolchain and the funding", () => {
        const r = devUpWithRecorders({
            "lab/toolchain.sh": [1.5, 0], "lab/vm.sh image": [1, 0], "lab/artifacts.sh build": [0.8, 0], "lab/devchain.sh start": [0.5, 0],
        }, { after: "chain-1" });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.log[0], "start scripts/setup.sh");
        assert.ok(r.at("end scripts/setup.sh") < r.at("start lab/devchain.sh start"), "setup first");
        for (const bg of ["lab/toolchain.sh", "lab/vm.sh image", "lab/artifacts.sh build"]) {
            assert.ok(r.at(`start ${bg}`) < r.at("end lab/devchain.sh start"), `${bg} runs beside the dev chain`);
        }
        assert.ok(r.at("start lab/devchain.sh start") < r.at("end lab/toolchain.sh"), "the dev chain does not wait for the toolchain");
        assert.ok(r.at("end lab/artifacts.sh build") < r.at("start lab/artifacts.sh serve"));
        assert.ok(r.at("end lab/vm.sh image") < r.at("start lab/vm.sh up 2") && r.at("end lab/devchain.sh start") < r.at("start lab/vm.sh up 2"));
        const up = r.at("start pulumi up --stack dev --yes --skip-preview --non-interactive");
        assert.ok(r.at("end lab/toolchain.sh") < up && r.at("end lab/aztec/dev-l1.sh fund http://127.0.0.1:8545") < up && r.at("end lab/vm.sh up 2") < up);
        assert.ok(r.at("end lab/toolchain.sh") < r.at("start pulumi config get devSequencerKey --stack dev"), "the key is read with the toolchain's pulumi");
        assert.equal(r.log.filter((l) => /^start (lab\/toolchain\.sh|scripts\/setup\.sh)$/.test(l)).length, 2, "setup and the toolchain run once each");
        assert.ok(!r.log.some((l) => /vm\.sh wipe|stack rm/.test(l)), "a first chain wipes nothing");
        assert.deepEqual(r.alive, []);
    });

    it("a dev chain that fails stops it at once, and the builds beside it with everything they started", () => {
        const r = devUpWithRecorders({
            "lab/toolchain.sh": [30, 0], "lab/vm.sh image": [30, 0], "lab/artifacts.sh build": [30, 0], "lab/devchain.sh start": [0.3, 1],
        }, { after: "chain-1" });
        assert.equal(r.status, 1);
        assert.match(r.stderr, /dev\.sh: stopped \(exit status 1\) by a failing command at .*lab\/devchain\.sh" start/);
        assert.ok(r.seconds < 10, `it returned after ${r.seconds} s, not after the builds' 30 s`);
        assert.deepEqual(r.alive, [], "no build (nor its child) left running");
        assert.ok(!r.log.some((l) => /^start (pulumi up|lab\/vm\.sh up)/.test(l)), r.log.join("\n"));
    });

    it("a dev chain made afresh wipes the hosts before they boot and makes the stack anew before pulumi up", () => {
        const r = devUpWithRecorders({}, { before: "chain-1", after: "chain-2" });
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stderr, /the dev chain was made afresh/);
        assert.ok(r.at("end lab/vm.sh image") < r.at("start lab/vm.sh wipe") && r.at("end lab/vm.sh wipe") < r.at("start lab/vm.sh up 2"));
        const rm = r.at("start pulumi stack rm dev --yes --force --preserve-config");
        const init = r.log.lastIndexOf("start pulumi stack init dev");
        assert.ok(rm < init && init < r.at("start pulumi up --stack dev --yes --skip-preview --non-interactive"), r.log.join("\n"));
        const same = devUpWithRecorders({}, { before: "chain-2", after: "chain-2" });
        assert.equal(same.status, 0, same.stderr);
        assert.ok(!same.log.some((l) => /vm\.sh wipe|stack rm/.test(l)), "the same chain wipes nothing");
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

describe("scripts/lib/failed-tests.sh", () => {
    // The shape of node's spec reporter in the e2e tier's log: tests inline with their errors, then
    // its own "failing tests" section, which repeats them.
    const LOG = [
        "▶ dev stack on the lab's hosts",
        "  ✔ switch: migrate (60146.0ms)",
        "  ✖ switch: migrate again (72210.4ms)",
        "    AssertionError [ERR_ASSERTION]: Diagnostics:",
        "      command:remote:Command (fleet-validator-1-switch-rollback):",
        "        error: Process exited with status 1",
        "# took 3 s: a line of the tests' stderr",
        "  ✖ validator-1 moves to dev-1 and back (1000.0ms)",
        "    AssertionError [ERR_ASSERTION]: a switch to reth stopped after s08-trim",
        "  ✖ taking the cloud-init hosts out leaves the fleet as before (7653.2ms)",
        "    AssertionError [ERR_ASSERTION]: 1 !== 0",
        "✖ dev stack on the lab's hosts (1743614.3ms)",
        "✖ failing tests:",
        "",
        "✖ switch: migrate again (72210.4ms)",
        "  AssertionError [ERR_ASSERTION]: Diagnostics:",
        "",
    ].join("\n");
    const failed = (log: string) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-failed-"));
        try {
            fs.writeFileSync(path.join(dir, "tier.log"), log);
            return run("-c", [`source ${JSON.stringify(path.join(ROOT, "scripts/lib/failed-tests.sh"))}; nf_failed_tests "$1"`, "x", path.join(dir, "tier.log")], clean());
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    };

    it("lists each failed test once, in the order it ran, then the first one's error alone", () => {
        const r = failed(LOG);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout, [
            "the tests that failed, in the order they ran:",
            "  ✖ switch: migrate again (72210.4ms)",
            "  ✖ validator-1 moves to dev-1 and back (1000.0ms)",
            "  ✖ taking the cloud-init hosts out leaves the fleet as before (7653.2ms)",
            "  ✖ dev stack on the lab's hosts (1743614.3ms)",
            "the first one's error:",
            "    AssertionError [ERR_ASSERTION]: Diagnostics:",
            "      command:remote:Command (fleet-validator-1-switch-rollback):",
            "        error: Process exited with status 1",
            "# took 3 s: a line of the tests' stderr",
            "",
        ].join("\n"));
    });

    it("prints nothing when no test failed", () => {
        const r = failed("▶ a\n  ✔ b (1.0ms)\n✔ a (2.0ms)\n");
        assert.deepEqual([r.status, r.stdout], [0, ""]);
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
