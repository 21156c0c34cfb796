// The user's dev stack as the test command found it (scripts/lib/dev-stack.sh), with the lab's
// scripts and `scripts/dev.sh status` replaced by recorders: what it reads as running, the order in
// which it starts the dev stack again, and the wait for each node that was healthy before. What this
// cannot prove: that the real hosts and dev chain come back healthy; a run of the test command after
// `scripts/dev.sh up` does (docs/development.md, "The two commands in either order").
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../..");

interface Lab {
    /** `lab/vm.sh status`'s lines, `lab/devchain.sh status`'s, and the status documents in order (the last one repeats). */
    readonly vms?: string[];
    readonly chain?: string[];
    readonly artifactsPid?: number;
    readonly statuses?: object[];
    /** Scripts (by path under the checkout) that exit 1. */
    readonly failing?: string[];
}

/** Runs `body` with dev-stack.sh sourced in a copy of the checkout whose lab scripts are recorders. */
function withLab(lab: Lab, body: string, env: Record<string, string> = {}) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dev-stack-"));
    try {
        fs.mkdirSync(path.join(dir, "scripts/lib"), { recursive: true });
        fs.mkdirSync(path.join(dir, "lab"));
        fs.mkdirSync(path.join(dir, ".state/artifacts"), { recursive: true });
        fs.copyFileSync(path.join(ROOT, "scripts/lib/dev-stack.sh"), path.join(dir, "scripts/lib/dev-stack.sh"));
        const answers = { "lab/vm.sh status": lab.vms ?? [], "lab/devchain.sh status": lab.chain ?? [] };
        fs.writeFileSync(path.join(dir, "answers.json"), JSON.stringify(answers));
        fs.writeFileSync(path.join(dir, "statuses.json"), JSON.stringify(lab.statuses ?? []));
        if (lab.artifactsPid !== undefined) fs.writeFileSync(path.join(dir, ".state/artifacts/server.pid"), `${lab.artifactsPid}\n`);
        for (const script of ["lab/vm.sh", "lab/devchain.sh", "lab/artifacts.sh", "scripts/dev.sh"]) {
            const fails = (lab.failing ?? []).includes(script);
            // Each call: its script, arguments and NODEFLEET_STATE (set or not) on a line of calls.log.
            fs.writeFileSync(path.join(dir, script), `#!/usr/bin/env bash
echo "${script} $* state=\${NODEFLEET_STATE-unset}" >> "${dir}/calls.log"
${fails ? "exit 1" : ""}
if [ "${script}" = scripts/dev.sh ]; then
    n=$(grep -c '^scripts/dev.sh status' "${dir}/calls.log")
    node -e 'const s = require(process.argv[1]); const d = s[Math.min(+process.argv[2], s.length) - 1]; if (d) { console.log(JSON.stringify(d)); process.exit(d.healthy ? 0 : 1); } process.exit(2);' "${dir}/statuses.json" "$n"
    exit $?
fi
node -e 'const a = require(process.argv[1])[process.argv[2]]; if (a) console.log(a.join("\\n"));' "${dir}/answers.json" "${script} $1" > "${dir}/answer.out"
cat "${dir}/answer.out" # as a shell script writes: a closed pipe kills it (SIGPIPE)
`, { mode: 0o755 });
        }
        // As both callers run it: a pipeline that fails fails the command.
        const r = spawnSync("bash", ["-c", `set -euo pipefail; ROOT=${JSON.stringify(dir)}; source "$ROOT/scripts/lib/dev-stack.sh"; ${body}`], { encoding: "utf8", env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
        const log = path.join(dir, "calls.log");
        const calls = fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [];
        return { status: r.status, stdout: r.stdout, stderr: r.stderr, calls, dir };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

const doc = (nodes: Record<string, boolean>) => ({ stack: "dev", healthy: Object.values(nodes).every(Boolean), nodes: Object.entries(nodes).map(([node, healthy]) => ({ node, healthy })) });

describe("the dev stack as the test command found it (scripts/lib/dev-stack.sh, the lab replaced by recorders)", () => {
    // The chain's status is long here: a reader that stops at its first match would make the writer
    // fail on the closed pipe, which under pipefail read as a chain that is not running.
    it("reads what runs of the checkout's own dev stack, whatever NODEFLEET_STATE the caller set", () => {
        const r = withLab(
            { vms: ["dev-1 running pid=12 ssh=10.0.2.11:22 lab=10.77.0.11 system=running", "dev-2 stopped", "dev-3 running pid=14 ssh=10.0.2.13:22 lab=10.77.0.13 system=degraded"], chain: ["geth running", ...Array<string>(20_000).fill("cl stopped")], artifactsPid: process.pid },
            "dev_stack_running",
            { NODEFLEET_STATE: "/elsewhere" },
        );
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout.trim(), "dev-1 dev-3 chain artifacts");
        assert.deepEqual(r.calls, ["lab/vm.sh status state=unset", "lab/devchain.sh status state=unset"]);
    });

    it("reads nothing when nothing of it runs (a dead artifact server's pid file included)", () => {
        const r = withLab({ vms: ["dev-1 stopped", "dev-2 stopped"], chain: ["geth stopped", "cl stopped"], artifactsPid: 2 ** 22 + 17 }, "dev_stack_running");
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout.trim(), "");
    });

    it("starts the chain, the artifact server, then the hosts that ran, and waits until every node healthy before is healthy again", () => {
        const before = doc({ "storage-1": true, "sequencer-1": true, "validator-1": false });
        const r = withLab(
            { statuses: [before, doc({ "storage-1": true, "sequencer-1": false, "validator-1": false }), doc({ "storage-1": true, "sequencer-1": true, "validator-1": false })] },
            `dev_stack_health "$ROOT/before.json" && dev_stack_restore "dev-1 dev-2 chain artifacts" "$ROOT/before.json"`,
            { NODEFLEET_STATE: "/elsewhere", NODEFLEET_DEV_RESTORE_POLL: "0" },
        );
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual(r.calls, [
            "scripts/dev.sh status --json --timeout 30 state=unset",
            "lab/devchain.sh start state=unset",
            "lab/artifacts.sh serve state=unset",
            "lab/vm.sh start dev-1 dev-2 state=unset",
            "scripts/dev.sh status --json --timeout 30 state=unset",
            "scripts/dev.sh status --json --timeout 30 state=unset",
        ]);
        // validator-1 was unhealthy before: it is not waited for.
        assert.match(r.stderr, /every node healthy before is healthy again/);
    });

    it("fails naming each node healthy before and not after its deadline", () => {
        const r = withLab(
            { statuses: [doc({ "storage-1": true, "sequencer-1": true }), doc({ "storage-1": false, "sequencer-1": true })] },
            `dev_stack_health "$ROOT/before.json" && dev_stack_restore "dev-1 chain" "$ROOT/before.json"`,
            { NODEFLEET_DEV_RESTORE_SECONDS: "0" },
        );
        assert.equal(r.status, 1);
        assert.match(r.stderr, /not as the run found it: healthy before, not now: storage-1 \n/);
        assert.doesNotMatch(r.stderr, /sequencer-1 /);
    });

    it("a host that does not boot again fails it, saying so, and nothing is waited for", () => {
        const r = withLab({ statuses: [doc({ "storage-1": true })], failing: ["lab/vm.sh"] }, `dev_stack_health "$ROOT/before.json" && dev_stack_restore "dev-1 chain" "$ROOT/before.json"`);
        assert.equal(r.status, 1);
        assert.match(r.stderr, /the dev stack's hosts did not boot again/);
        assert.deepEqual(r.calls.slice(1), ["lab/devchain.sh start state=unset", "lab/vm.sh start dev-1 state=unset"]);
    });

    it("with nothing found running it starts nothing; with no status before (no state) it waits for nothing", () => {
        const none = withLab({}, `dev_stack_restore "" "$ROOT/none.json"`);
        assert.equal(none.status, 0, none.stderr);
        assert.deepEqual(none.calls, []);
        const noState = withLab({ statuses: [] }, `dev_stack_health "$ROOT/before.json" && dev_stack_restore "dev-1" "$ROOT/before.json"`);
        assert.equal(noState.status, 0, noState.stderr);
        assert.deepEqual(noState.calls, ["scripts/dev.sh status --json --timeout 30 state=unset", "lab/vm.sh start dev-1 state=unset"]);
    });
});
